"""Program bundles: many programs, their memory images and expected results, in one file.

The format (v1, see ``docs/bundle.md``) is a stream of 32-bit words, one per
line as 8 lowercase hex digits, so that a Verilog testbench reads it with
``$readmemh``; lines starting with ``//`` are comments.  Words:

    magic "GA2B", version 1, P programs, ext_words, then P records of
    n_code, 4 words per instruction (most significant first),
    the initial external memory as runs (n_runs, then start, length, words...),
    expected status, status_pc, the five counters, expected final memory as runs,
    and the end marker "ENDB".

The writer names each program in a ``// program I: NAME`` comment before its
record; the reader takes the names back from those comments.  A bundle made for
a chip other than the book's records that chip's configuration in one
``// config: {JSON}`` comment before the magic word (:meth:`Config.to_dict`); a
bundle for the book chip has no such line, so book bundles are byte for byte
what they were before configurations existed.  The Verilog testbenches skip
comments like every other; the simulators compare the bundle's configuration
with their chip's before they run anything.  The program
count and the end marker make a truncated file detectable; the writer writes
atomically (:func:`ga2_hdl.support.safe_io.atomic_write`).

Memory images (initial and expected final) are held as
:class:`~ga2_hdl.formats.memimage.MemoryImage` s, so a bundle costs memory in
proportion to the words its programs touch, not to ``ext_words``.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from .. import golden, isa
from ..config import Config, ConfigError
from .files import FileFormatError
from ..isa import ErrorCode, Instruction
from .memimage import MemoryImage, as_image
from .results import RunResult, first_mismatch
from ..support.safe_io import atomic_write

MAGIC = 0x47413242       # "GA2B"
END_MARKER = 0x454E4442  # "ENDB"
VERSION = 1
WORDS_PER_INSTRUCTION = isa.INSTR_BITS // isa.WORD_BITS
MERGE_GAP = 2            # zero words a run may swallow (a new run costs 2 header words)
_NAME_PREFIX = "// program "
_CONFIG_PREFIX = "// config: "


class ChipMismatch(ValueError):
    """A bundle replayed on a chip of another configuration than the one it was made for."""


def check_same_chip(bundle_config: Config, chip_config: Config, what: str = "the bundle") -> None:
    """Refuse, in one line naming every differing parameter, to run ``what`` (made for
    ``bundle_config``) on the chip ``chip_config``."""
    if not chip_config.same_chip(bundle_config):
        diffs = bundle_config.differences(chip_config)
        raise ChipMismatch(f"{what} was made for configuration {bundle_config.name!r}, not for this chip "
                           f"({chip_config.name!r}): " + ", ".join(
                               d.replace("(theirs:", "(chip:") for d in diffs))


@dataclass
class BundleEntry:
    """One program of a bundle: its code, its initial external memory and its expected result."""
    name: str
    code: list[Instruction]
    ext: MemoryImage               # the whole initial image, ext_words words (a list is accepted)
    expected: RunResult


@dataclass
class Bundle:
    """Programs for one chip: ``config`` , ``ext_words`` words of external memory."""
    ext_words: int
    programs: list[BundleEntry] = field(default_factory=list)
    config: Config = field(kw_only=True)

    # ------------------------------------------------------------- building
    @classmethod
    def from_programs(cls, items: Iterable[tuple[str, Sequence[Instruction | int], Sequence[int] | None]],
                      ext_words: int | None = None, *, config: Config) -> "Bundle":
        """A bundle for the chip ``config`` whose expected results come from the golden model.

        ``items`` are ``(name, code, ext)``; ``ext`` may be shorter than
        ``ext_words`` (the configuration's by default; zero-padded) or None.
        """
        ext_words = config.ext_words if ext_words is None else ext_words
        bundle = cls(ext_words, config=config)
        for name, code, ext in items:
            code = golden.as_instructions(code)
            golden.check_program(code, config)
            dense = golden.ext_image(ext, ext_words)
            expected = golden.run(code, dense, ext_words=ext_words, sparse=True, config=config)
            bundle.programs.append(BundleEntry(str(name), code, MemoryImage.from_words(dense, ext_words),
                                               expected))
        return bundle

    def verify(self) -> list[str]:
        """Re-run every program in the golden model; the differences from the stored expectations."""
        problems = []
        for i, p in enumerate(self.programs):
            got = golden.run(p.code, p.ext, ext_words=self.ext_words, sparse=True, config=self.config)
            mm = first_mismatch(p.expected, got, program=i)
            if mm:
                problems.append(str(mm))
        return problems

    @property
    def total_cycles(self) -> int:
        return sum(p.expected.counters.total for p in self.programs)

    # -------------------------------------------------------------- writing
    def words(self) -> list[tuple[int, str | None]]:
        """The word stream, each word with an optional comment line to put before it."""
        header = f"// GA2 program bundle v{VERSION}: {len(self.programs)} programs, ext_words {self.ext_words}"
        if self.config != isa.BOOK:       # the book chip's bundles stay as they always were
            header += "\n" + _CONFIG_PREFIX + json.dumps(self.config.to_dict(), separators=(", ", ": "))
        out: list[tuple[int, str | None]] = [
            (MAGIC, header),
            (VERSION, None), (len(self.programs), None), (self.ext_words, None)]
        for i, p in enumerate(self.programs):
            name = " ".join(p.name.split())
            out.append((len(p.code), f"{_NAME_PREFIX}{i}: {name}"))
            for ins in p.code:
                w = ins.encode()
                for j in reversed(range(WORDS_PER_INSTRUCTION)):
                    out.append(((w >> (j * isa.WORD_BITS)) & isa.WORD_MASK, None))
            out.extend((w, None) for w in _runs_words(p.ext, self.ext_words))
            exp = p.expected
            out.append((int(exp.error), None))
            out.append((exp.error_pc, None))
            out.extend((c, None) for c in exp.counters)
            out.extend((w, None) for w in _runs_words(exp.ext, self.ext_words))
        out.append((END_MARKER, None))
        return out

    def to_text(self) -> str:
        lines = []
        for w, comment in self.words():
            if comment is not None:
                lines.append(comment)
            if not 0 <= w <= isa.WORD_MASK:
                raise ValueError(f"bundle word {w} is not a 32-bit value")
            lines.append(f"{w:08x}")
        return "\n".join(lines) + "\n"

    def write(self, path: str | os.PathLike) -> None:
        atomic_write(path, self.to_text())

    # -------------------------------------------------------------- reading
    @classmethod
    def read(cls, path: str | os.PathLike) -> "Bundle":
        """The bundle in ``path``, read line by line (a bundle's text is never held whole)."""
        with open(path, "rb") as f:
            return _Reader(_utf8_lines(f, os.fspath(path)), str(path)).bundle()

    @classmethod
    def parse(cls, text: str, source: str = "<bundle>") -> "Bundle":
        return _Reader(iter(text.splitlines()), source).bundle()


def _utf8_lines(f, source: str):
    """The lines of the binary file ``f`` as text; a line that is not UTF-8 is an IsaError naming the
    file, the line and the offset (as ``safe_io.read_text`` says it)."""
    offset = 0
    for lineno, raw in enumerate(f, 1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise isa.IsaError(f"{source}:{lineno}: not UTF-8 text (byte 0x{raw[e.start]:02x} at offset "
                               f"{offset + e.start})") from None
        offset += len(raw)


def is_bundle_text(text: str) -> bool:
    """Whether ``text`` starts (after comments and blank lines) with the bundle magic."""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("//"):
            continue
        return line.lower() == f"{MAGIC:08x}"
    return False


def is_bundle_file(path: str | os.PathLike) -> bool:
    with open(path, "rb") as f:
        head = f.read(4096)
    return is_bundle_text(head.decode("utf-8", errors="replace"))


def _runs(words: Sequence[int]) -> list[tuple[int, list[int]]]:
    """The non-zero stretches of ``words`` as (start, words), merging gaps of up to MERGE_GAP zeros."""
    image = as_image(words, len(words))
    runs: list[tuple[int, list[int]]] = []
    for start, ws in image.runs():
        if runs and start - (runs[-1][0] + len(runs[-1][1])) <= MERGE_GAP:
            prev_start, prev = runs[-1]
            prev.extend([0] * (start - prev_start - len(prev)))
            prev.extend(ws)
        else:
            runs.append((start, list(ws)))
    return runs


def _runs_words(words: Sequence[int], ext_words: int) -> list[int]:
    if len(words) != ext_words:
        raise ValueError(f"memory image of {len(words)} words in a bundle for {ext_words} words")
    runs = _runs(words)
    out = [len(runs)]
    for start, ws in runs:
        out += [start, len(ws), *ws]
    return out


class _Reader:
    """Parses the word stream as it reads the lines (one word of look-ahead), keeping each word's
    line number for error messages: a bundle's words are never held all at once."""

    def __init__(self, lines: Iterable[str], source: str):
        self.source = source
        self.config: Config = isa.BOOK             # the chip the bundle was made for (a file naming none: the book's)
        self._lines = lines
        self._tokens = self._read()
        self._ahead: tuple[int, int, str | None] | None = None    # (line, word, the name before it)
        self._done = False
        self.pos = 0                               # words taken
        self.line = 1                              # the line of the word taken last
        self.last_line = 0                         # the last line read
        self.name = None                           # the name comment before the word taken last

    def _read(self):
        config_line = None
        pending_name = None
        words = 0
        for lineno, raw in enumerate(self._lines, 1):
            self.last_line = lineno
            line = raw.strip()
            if not line:
                continue
            if line.startswith("//"):
                if line.startswith(_CONFIG_PREFIX):
                    if config_line is not None or words:
                        self.fail_at(lineno, "a configuration line (// config: ...) may appear once, before "
                                             "the magic word")
                    config_line = lineno
                    self.config = self._config(line[len(_CONFIG_PREFIX):], lineno)
                elif line.startswith(_NAME_PREFIX) and ":" in line:
                    pending_name = line.split(":", 1)[1].strip()
                continue
            if len(line) != 8 or not all(c in "0123456789abcdef" for c in line):
                self.fail_at(lineno, f"expected a word as exactly 8 lowercase hex digits, got {line[:40]!r}")
            words += 1
            yield lineno, int(line, 16), pending_name
            pending_name = None

    def peek(self) -> tuple[int, int, str | None] | None:
        """The next word (line, word, name before it) without taking it; None at the end."""
        if self._ahead is None and not self._done:
            self._ahead = next(self._tokens, None)
            self._done = self._ahead is None
        return self._ahead

    def _config(self, text: str, lineno: int) -> Config:
        try:
            data = json.loads(text)
        except ValueError as e:
            self.fail_at(lineno, f"the configuration line is not JSON: {e}")
        try:
            config = Config.from_dict(data, source=f"{self.source}:{lineno}")
            isa.instruction_set(config)
        except (ConfigError, isa.IsaError) as e:
            raise FileFormatError(f"{self.source}:{lineno}: {e}") from None
        return config

    def fail_at(self, lineno: int, why: str):
        raise FileFormatError(f"{self.source}:{lineno}: {why}")

    def fail(self, why: str):
        """Fail at the word just read."""
        self.fail_at(self.line, why)

    def next(self, what: str) -> int:
        item = self.peek()
        if item is None:
            self.fail_at(self.last_line, f"bundle ends early: expected {what}")
        self._ahead = None
        self.pos += 1
        self.line, word, self.name = item
        return word

    def runs(self, ext_words: int, what: str) -> MemoryImage:
        runs: list[tuple[int, list[int]]] = []
        n_runs = self.next(f"the number of runs of the {what}")
        if n_runs > ext_words:
            self.fail(f"{n_runs} runs of the {what} cannot fit a memory of {ext_words} words")
        end = 0
        for r in range(n_runs):
            start = self.next(f"the start of run {r} of the {what}")
            if start < end:
                self.fail(f"run {r} of the {what} starts at {start}, before the end of the previous run "
                          f"({end}): runs must be in increasing address order and not overlap")
            if start >= ext_words:
                self.fail(f"run {r} of the {what} starts at {start}, outside the external memory of "
                          f"{ext_words} words")
            length = self.next(f"the length of run {r} of the {what}")
            if length == 0:
                self.fail(f"run {r} of the {what} has length 0")
            if start + length > ext_words:
                self.fail(f"run {r} of the {what} covers words {start}..{start + length - 1}, outside "
                          f"the external memory of {ext_words} words")
            runs.append((start, [self.next(f"word {k} of run {r} of the {what}") for k in range(length)]))
            end = start + length
        return MemoryImage(ext_words, runs)

    def bundle(self) -> Bundle:
        if self.peek() is None:
            raise FileFormatError(f"{self.source}: empty: no words (a GA2 bundle starts with the magic "
                                  f"{MAGIC:08x})")
        if self.next("the magic word") != MAGIC:
            self.fail(f"not a GA2 bundle: the first word must be the magic {MAGIC:08x} (\"GA2B\")")
        version = self.next("the version")
        if version != VERSION:
            self.fail(f"bundle version {version} is not supported (this reader reads version {VERSION})")
        n_programs = self.next("the number of programs")
        ext_words = self.next("ext_words")
        problem = isa.ext_words_problem(ext_words)
        if problem:
            self.fail(f"ext_words={ext_words}: {problem}")
        bundle = Bundle(ext_words, config=self.config)
        imem_words = self.config.imem_words
        for p in range(n_programs):
            n_code = self.next(f"the instruction count of program {p}")
            given_name = self.name
            if not 1 <= n_code <= imem_words:
                self.fail(f"program {p} has {n_code} instructions; a program has 1 .. {imem_words}")
            code = []
            for k in range(n_code):
                ahead = self.peek()
                op_line = ahead[0] if ahead is not None else self.last_line
                w = 0
                for j in range(WORDS_PER_INSTRUCTION):
                    w = (w << isa.WORD_BITS) | self.next(f"word {j} of instruction {k} of program {p}")
                code.append(Instruction.decode(w))
            if code[-1].op != isa.HALT.op:
                self.fail_at(op_line, f"program {p} does not end with HALT (its last instruction has op code "
                                      f"{code[-1].op})")
            ext = self.runs(ext_words, f"initial memory of program {p}")
            status = self.next(f"the expected status of program {p}")
            try:
                status = ErrorCode(status)
            except ValueError:
                self.fail(f"expected status {status} of program {p} is not an ErrorCode "
                          f"({', '.join(f'{e.value}={e.name}' for e in ErrorCode)})")
            status_pc = self.next(f"the expected status_pc of program {p}")
            if status_pc >= n_code:
                self.fail(f"expected status_pc {status_pc} of program {p} is beyond its {n_code} instructions")
            counters = [self.next(f"expected counter {name} of program {p}") for name in isa.COUNTER_NAMES]
            final = self.runs(ext_words, f"expected final memory of program {p}")
            name = given_name if given_name is not None else f"program {p}"
            bundle.programs.append(BundleEntry(name, code, ext, RunResult(counters, final, status, status_pc)))
        if self.next("the end marker") != END_MARKER:
            self.fail(f"expected the end marker {END_MARKER:08x} (\"ENDB\") after {n_programs} programs")
        if self.peek() is not None:
            self.fail_at(self.peek()[0], "data after the end marker")
        return bundle
