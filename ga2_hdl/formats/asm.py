"""GA-2 assembly: text <-> instructions, driven entirely by the instruction set.

Every function takes the chip's configuration (default the book's): its
instruction set (:func:`ga2_hdl.isa.instruction_set`) gives the mnemonics and
operands, an extension's operations included.

One instruction per line, the operation's mnemonic then its operands by name::

    LD   dst=0 src=0x100 len=64          # comments start with '#' or ';'
    MM   dst=0 A=64 B=128 M=4 K=16 N=4 tb=1 ldb=16
    HALT

Mnemonics are case-insensitive, operand names are not (``M`` is MM's row
count, ``m`` is RQ's mantissa).  Numbers are decimal or ``0x`` hex.  Every
operand without a default in its ``OpSpec`` must be given; defaults (``tb=0``,
``lda=K`` ...) fill the rest.  ``.word VALUE`` places a raw 128-bit word.

The disassembler prints every operand explicitly, in ``OpSpec`` order, so its
output assembles back to the same words.  A word it cannot express that way
(an undefined op code, or bits set outside its operation's operands) comes
out as ``.word 0x<32 hex digits>``; so any 128-bit word round-trips exactly.
"""
from __future__ import annotations

from typing import Iterable

from .. import isa
from ..config import Config
from ..isa import Instruction, IsaError

RAW_DIRECTIVE = ".word"
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


class AsmError(IsaError):
    """A line of assembly that is not a GA-2 instruction; the message starts with ``source:line:``."""


#: more significant digits than any operand (or a 128-bit .word) can hold: the number is too wide,
#: whatever it is (and Python refuses to convert very long decimal strings at all)
_MAX_DIGITS = 64


def _number(text: str) -> int | None:
    """A non-negative decimal or 0x-hex number, or None; one too long for any operand is 2**256."""
    if text[:2] in ("0x", "0X"):
        digits = text[2:]
        if not digits or not set(digits) <= _HEX_DIGITS:
            return None
    elif text.isascii() and text.isdigit():
        digits = text
    else:
        return None
    if len(digits.lstrip("0")) > _MAX_DIGITS:
        return 1 << 256
    return int(digits, 16 if digits is not text else 10)


def _shown(text: str) -> str:
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"


def _strip_comment(line: str) -> str:
    for mark in "#;":
        line = line.split(mark, 1)[0]
    return line.strip()


def assemble_line(line: str, where: str = "<asm>", *, config: Config) -> Instruction | None:
    """One line of assembly (None for a blank or comment-only line)."""
    text = _strip_comment(line)
    if not text:
        return None
    head, *rest = text.split()

    def fail(why: str):
        raise AsmError(f"{where}: {why}")

    if head.lower() == RAW_DIRECTIVE:
        if len(rest) != 1:
            fail(f"{RAW_DIRECTIVE} takes one value, got {len(rest)}")
        value = _number(rest[0])
        if value is None:
            fail(f"{RAW_DIRECTIVE} value {rest[0]!r} is not a decimal or 0x number")
        if value >= 1 << isa.INSTR_BITS:
            fail(f"{RAW_DIRECTIVE} value {_shown(rest[0])} does not fit in {isa.INSTR_BITS} bits")
        return Instruction.decode(value)

    iset = isa.instruction_set(config)
    spec = iset.by_name.get(head.upper())
    if spec is None:
        fail(f"unknown operation {head!r} (operations: {', '.join(iset.by_name)}, or {RAW_DIRECTIVE})")
    names = [o.name for o in spec.operands]
    values: dict[str, int] = {}
    for token in rest:
        key, eq, val = token.partition("=")
        if not eq or not key or not val:
            fail(f"{spec.mnemonic}: expected NAME=VALUE, got {token!r}")
        if key not in names:
            fail(f"{spec.mnemonic} has no operand {key!r} (operands: {', '.join(names) or 'none'})")
        if key in values:
            fail(f"{spec.mnemonic}: operand {key} given twice")
        number = _number(val)
        if number is None:
            fail(f"{spec.mnemonic} {key}={_shown(val)!r}: not a decimal or 0x number")
        bits = spec.operand(key).bits
        if number >= 1 << bits:
            fail(f"{spec.mnemonic} {key}={_shown(val)} does not fit in the operand's {bits} bits "
                 f"(0 .. {(1 << bits) - 1})")
        values[key] = number
    missing = [n for n in names if n not in values and n not in spec.defaults]
    if missing:
        fail(f"{spec.mnemonic} needs operand{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    return iset.make(spec.mnemonic, **values)


def assemble(text: str, source: str = "<asm>", *, config: Config) -> list[Instruction]:
    """Instructions from assembly text (no legality check and no HALT requirement here)."""
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        ins = assemble_line(line, f"{source}:{lineno}", config=config)
        if ins is not None:
            out.append(ins)
    return out


def disassemble_one(ins: Instruction | int, config: Config) -> str:
    """One instruction (or 128-bit word) as a line of assembly that assembles back to the same word."""
    if isinstance(ins, int):
        ins = Instruction.decode(ins)
    iset = isa.instruction_set(config)
    spec = iset.by_code.get(ins.op)
    if spec is not None:
        operands = ins.operands()
        if iset.make(spec.mnemonic, **operands) == ins:
            return " ".join([spec.mnemonic] + [f"{k}={v}" for k, v in operands.items()])
    return f"{RAW_DIRECTIVE} 0x{ins.encode():032x}"


def disassemble(program: Iterable[Instruction | int], config: Config) -> str:
    return "".join(disassemble_one(ins, config) + "\n" for ins in program)
