"""Program files and memory files: plain hex text, one item per line.

A *program file* holds one instruction per line as 32 hex digits, most
significant digit first (the 128-bit word as ``f"{word:032x}"``).  A *memory
file* holds one 32-bit word per line as 8 hex digits, from address 0; words
not given are zero.  In both, blank lines and ``#`` comments (whole line or
after the value) are allowed, and readers report ``file:line`` for anything
else.  Writers emit lowercase digits with no comments, which ``$readmemh``
also reads.
"""
from __future__ import annotations

import os
from typing import Iterable, Sequence

from . import isa
from .isa import Instruction, IsaError

_HEX = frozenset("0123456789abcdefABCDEF")


class FileFormatError(IsaError):
    """A malformed program, memory or bundle file; the message starts with ``file:line:``."""


def _values(text: str, digits: int, what: str, source: str) -> list[tuple[int, int]]:
    """(line number, value) for every non-blank, non-comment line of ``text``."""
    out = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if len(line) != digits or not set(line) <= _HEX:
            shown = line if len(line) <= 40 else line[:37] + "..."
            raise FileFormatError(f"{source}:{lineno}: expected {what} as exactly {digits} hex digits, "
                                  f"got {shown!r}")
        out.append((lineno, int(line, 16)))
    return out


def parse_program(text: str, source: str = "<program>") -> list[Instruction]:
    """Instructions from the text of a program file (no legality check; see ``golden.check_program``)."""
    return [Instruction.decode(v) for _, v in _values(text, isa.INSTR_BITS // 4, "an instruction", source)]


def parse_memory(text: str, source: str = "<memory>", ext_words: int | None = None) -> list[int]:
    """Words from the text of a memory file; at most ``ext_words`` of them if given."""
    vals = _values(text, isa.WORD_BITS // 4, "a 32-bit word", source)
    if ext_words is not None and len(vals) > ext_words:
        lineno = vals[ext_words][0]
        raise FileFormatError(f"{source}:{lineno}: word {ext_words} is beyond the external memory "
                              f"of {ext_words} words")
    return [v for _, v in vals]


def format_program(program: Iterable[Instruction | int]) -> str:
    words = [ins.encode() if isinstance(ins, Instruction) else ins for ins in program]
    return "".join(f"{w:032x}\n" for w in words)


def format_memory(words: Sequence[int], trim: bool = True) -> str:
    """Memory words as text; ``trim`` leaves out trailing zero words (they are implied)."""
    words = [w & isa.WORD_MASK for w in words]
    if trim:
        while words and words[-1] == 0:
            words.pop()
    return "".join(f"{w:08x}\n" for w in words)


def read_program(path: str | os.PathLike) -> list[Instruction]:
    with open(path) as f:
        return parse_program(f.read(), str(path))


def read_memory(path: str | os.PathLike, ext_words: int | None = None) -> list[int]:
    with open(path) as f:
        return parse_memory(f.read(), str(path), ext_words)


def write_program(path: str | os.PathLike, program: Iterable[Instruction | int]) -> None:
    with open(path, "w") as f:
        f.write(format_program(program))


def write_memory(path: str | os.PathLike, words: Sequence[int], trim: bool = True) -> None:
    with open(path, "w") as f:
        f.write(format_memory(words, trim))
