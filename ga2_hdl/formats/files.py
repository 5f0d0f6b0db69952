"""Program files and memory files: plain hex text, one item per line.

A *program file* holds one instruction per line as 32 hex digits, most
significant digit first (the 128-bit word as ``f"{word:032x}"``).  A *memory
file* holds one 32-bit word per line as 8 hex digits, from address 0; words
not given are zero.  In both, blank lines, ``#`` comments (whole line or
after the value) and ``//`` comment lines are allowed, and readers report
``file:line`` for anything else.

Writers put one header line first, ``// GA2 memory file: N words, crc32
XXXXXXXX`` (or ``// GA2 program file: N instructions, ...``), then lowercase
digits with no comments, which ``$readmemh`` also reads; they write
atomically (:func:`ga2_hdl.support.safe_io.atomic_write`).  A reader that finds the
header checks the count and the CRC-32 of the value lines, so a truncated or
damaged file is refused instead of read as a shorter one.  A file without the
header (written by hand) is read as it is.
"""
from __future__ import annotations

import os
import re
import zlib
from typing import Iterable, Sequence

from .. import isa
from ..isa import Instruction, IsaError
from ..support.safe_io import atomic_write, read_text

_HEX = frozenset("0123456789abcdefABCDEF")


class FileFormatError(IsaError):
    """A malformed program, memory or bundle file; the message starts with ``file:line:``."""


_HEADER = re.compile(r"// GA2 (program|memory) file: (\d+) (instructions|words), crc32 ([0-9a-f]{8})$")
_KIND = {"an instruction": ("program", "instructions"), "a 32-bit word": ("memory", "words")}
#: the header's kind of each file, by what its lines hold
PROGRAM, MEMORY = "an instruction", "a 32-bit word"


def with_header(body: str, kind: str) -> str:
    """``body`` (the value lines of a program or memory file) after the header line that checks it."""
    file_kind, unit = _KIND[kind]
    count = sum(1 for line in body.splitlines() if line)
    return f"// GA2 {file_kind} file: {count} {unit}, crc32 {zlib.crc32(body.encode()):08x}\n" + body


def _values(text: str, digits: int, what: str, source: str) -> list[tuple[int, int]]:
    """(line number, value) for every non-blank, non-comment line of ``text``; the header, if any, checked."""
    out = []
    header = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if stripped.startswith("//"):
            if stripped.startswith("// GA2 "):
                m = _HEADER.match(stripped)
                if m is None or lineno != 1 or (m.group(1), m.group(3)) != _KIND[what]:
                    raise FileFormatError(f"{source}:{lineno}: malformed or misplaced header line "
                                          f"{stripped[:60]!r} (expected on line 1: "
                                          f"'// GA2 {_KIND[what][0]} file: N {_KIND[what][1]}, crc32 XXXXXXXX')")
                header = (int(m.group(2)), int(m.group(4), 16))
            continue
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if len(line) != digits or not set(line) <= _HEX:
            shown = line if len(line) <= 40 else line[:37] + "..."
            raise FileFormatError(f"{source}:{lineno}: expected {what} as exactly {digits} hex digits, "
                                  f"got {shown!r}")
        out.append((lineno, int(line, 16)))
    if header is not None:
        count, crc = header
        unit = _KIND[what][1]
        if len(out) != count:
            raise FileFormatError(f"{source}: truncated or damaged: the header says {count} {unit}, "
                                  f"the file holds {len(out)}")
        body = "".join(f"{v:0{digits}x}\n" for _, v in out)
        if zlib.crc32(body.encode()) != crc:
            raise FileFormatError(f"{source}: damaged: the CRC-32 of its {unit} is "
                                  f"{zlib.crc32(body.encode()):08x}, the header says {crc:08x}")
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
    return parse_program(read_text(path), str(path))


def read_memory(path: str | os.PathLike, ext_words: int | None = None) -> list[int]:
    return parse_memory(read_text(path), str(path), ext_words)


def write_program(path: str | os.PathLike, program: Iterable[Instruction | int]) -> None:
    atomic_write(path, with_header(format_program(program), PROGRAM))


def write_memory(path: str | os.PathLike, words: Sequence[int], trim: bool = True) -> None:
    atomic_write(path, with_header(format_memory(words, trim), MEMORY))
