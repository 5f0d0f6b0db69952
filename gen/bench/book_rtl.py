"""The book's hand-written Verilog of GA-2 as a speed reference for Icarus (``ga2 bench sim``).

The book's RTL is not part of this repository.  A user who has it (its
published sources, the chapter-7 testbench ``ga2_tb.v`` with the external
memory raised to the bundle's ``ext_words`` and the memory model's reset
wired, and whatever table files it reads) names the directory with
``--book-rtl DIR`` or ``$GA2_BOOK_RTL``; this module then replays a bundle
on it in Icarus and measures it the same way as our chip: simulated cycles
(the chip's own counters) per CPU-second of the ``vvp`` process.

The book's testbench reads ``out/ga2_programs.hex`` (relative to where it
runs): the number of programs, then per program its instruction count, the
instructions (four words each, most significant first), the initial external
memory (every word), the expected final memory (every word) and the five
expected counters.  Its program memory holds 256 instructions and its word
array 4,194,304 words, so a bundle is replayed in pieces that fit.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ga2_hdl import isa
from ga2_hdl.formats.bundle import Bundle
from ga2_hdl.isa import ErrorCode

from ..support import toolchain
from ..sim.simulator import SimulatorError
from ..support.cpu import cpu_seconds

ENV = "GA2_BOOK_RTL"
TOP = "ga2_tb"
IMEM_WORDS = 256              #: the book testbench's program memory
ARRAY_WORDS = 1 << 22         #: its word array
_PASS = re.compile(r"^PASS: (\d+) programs .*?, (\d+) cycles in total")


def directory(given: str | None) -> Path | None:
    """The book's RTL directory: ``given``, else ``$GA2_BOOK_RTL``, else None (not available)."""
    path = given or os.environ.get(ENV)
    if not path:
        return None
    p = Path(path)
    if not (p / f"{TOP}.v").is_file():
        raise SimulatorError(f"{p}: no {TOP}.v there; the book's RTL directory holds its Verilog and testbench")
    return p


def fitting(bundle: Bundle) -> Bundle:
    """The programs of ``bundle`` the book's RTL can run: at most 256 instructions, and no fault (the
    book's chip has none of our legality checks: a faulting program runs on there, or hangs)."""
    return Bundle(bundle.ext_words, [e for e in bundle.programs
                                     if len(e.code) <= IMEM_WORDS and e.expected.error == ErrorCode.OK],
                  config=isa.BOOK)


def program_words(bundle: Bundle, index: int) -> list[int]:
    entry = bundle.programs[index]
    words = [len(entry.code)]
    for ins in entry.code:
        value = ins.encode()
        words += [(value >> shift) & 0xFFFFFFFF for shift in (96, 64, 32, 0)]
    words += list(entry.ext) + list(entry.expected.ext) + list(entry.expected.counters)
    return words


def pieces(bundle: Bundle) -> list[list[int]]:
    """The bundle's programs in the book testbench's format, as few files as fit its array."""
    out: list[list[int]] = []
    current: list[int] = []
    count = 0
    for i, entry in enumerate(bundle.programs):
        if len(entry.code) > IMEM_WORDS:
            raise SimulatorError(f"program {i} has {len(entry.code)} instructions; the book's testbench holds "
                                 f"{IMEM_WORDS}")
        words = program_words(bundle, i)
        if count and 1 + len(current) + len(words) > ARRAY_WORDS:
            out.append([count] + current)
            current, count = [], 0
        current += words
        count += 1
    if count:
        out.append([count] + current)
    return out


@dataclass
class BookRun:
    programs: int
    cycles: int
    cpu_seconds: float       #: of the vvp processes
    wall_seconds: float
    build_seconds: float

    @property
    def cycles_per_cpu_second(self) -> float:
        return self.cycles / self.cpu_seconds if self.cpu_seconds > 0 else float("inf")


_EXT_ARRAY = re.compile(r"\breg\s*(?:\[[^\]]*\]\s*)?(\w*ext\w*)\s*\[\s*(\d+)\s*:\s*(\d+)\s*\]", re.I)

#: the least speed (simulated cycles per wall second) a watchdog allows the book's RTL in Icarus;
#: it runs at about 10,000 (docs/results.md), so a run 20 times slower than that is stuck
WATCHDOG_CYCLES_PER_SECOND = 500
WATCHDOG_SLACK_SECONDS = 60.0


def external_memory_words(testbench: str) -> int | None:
    """The external memory the book's testbench declares (its largest word array with ``ext`` in its
    name), or None when no such array is found."""
    sizes = [abs(int(a) - int(b)) + 1 for _name, a, b in _EXT_ARRAY.findall(testbench)]
    return max(sizes, default=None)


def check_testbench(bundle: Bundle, rtl: Path) -> None:
    """Refuse, before anything is built, a testbench whose external memory is smaller than the bundle's:
    its programs would read and write outside it (the book's chip has no address checks) and hang."""
    words = external_memory_words((rtl / f"{TOP}.v").read_text(errors="replace"))
    if words is not None and words < bundle.ext_words:
        raise SimulatorError(f"{rtl / (TOP + '.v')}: the book's testbench holds an external memory of {words} words; "
                             f"the bundle needs {bundle.ext_words} (raise it to the bundle's ext_words)")


def watchdog_seconds(cycles: int) -> float:
    """The wall time after which a replay of ``cycles`` cycles on the book's RTL is stopped."""
    return WATCHDOG_SLACK_SECONDS + cycles / WATCHDOG_CYCLES_PER_SECOND



def run(bundle: Bundle, rtl: Path) -> BookRun:
    """Replay ``bundle`` on the book's RTL in Icarus; the cycles must be the golden model's."""
    check_testbench(bundle, rtl)
    iverilog, vvp = toolchain.require("iverilog"), toolchain.require("vvp")
    sources = sorted(str(p) for p in rtl.glob("*.v"))
    with tempfile.TemporaryDirectory(prefix="ga2_book_") as tmp:
        t0 = time.perf_counter()
        toolchain.run([iverilog, "-g2012", "-s", TOP, "-o", os.path.join(tmp, "book.vvp"), *sources],
                      cwd=tmp, what="iverilog (the book's RTL)")
        build = time.perf_counter() - t0
        for table in rtl.glob("*.hex"):          # tables the RTL reads with $readmemh
            shutil.copy(table, tmp)
        os.makedirs(os.path.join(tmp, "out"))
        programs = cycles = 0
        cpu = wall = 0.0
        for words in pieces(bundle):
            with open(os.path.join(tmp, "out", "ga2_programs.hex"), "w") as f:
                f.write("".join(f"{w:08x}\n" for w in words))
            c0, w0 = cpu_seconds(own=False), time.perf_counter()
            limit = watchdog_seconds(bundle.total_cycles)
            try:        # never without a watchdog: a testbench that does not fit the bundle can hang
                p = subprocess.run([vvp, "-n", os.path.join(tmp, "book.vvp")], cwd=tmp, capture_output=True,
                                   text=True, errors="replace", timeout=limit)
            except subprocess.TimeoutExpired:
                raise SimulatorError(f"the book's RTL did not finish within {limit:.0f} s (the bundle's "
                                     f"{bundle.total_cycles} cycles at {WATCHDOG_CYCLES_PER_SECOND} cycles/s and "
                                     f"{WATCHDOG_SLACK_SECONDS:.0f} s more): stopped; is its testbench built for "
                                     f"{bundle.ext_words} external words?") from None
            cpu += cpu_seconds(own=False) - c0
            wall += time.perf_counter() - w0
            found = [_PASS.match(line) for line in p.stdout.splitlines()]
            found = [m for m in found if m]
            if p.returncode != 0 or not found:
                tail = "\n".join((p.stdout + p.stderr).strip().splitlines()[-10:])
                raise SimulatorError(f"the book's RTL did not pass (exit status {p.returncode}):\n{tail}")
            programs += int(found[0].group(1))
            cycles += int(found[0].group(2))
    if cycles != bundle.total_cycles:
        raise SimulatorError(f"the book's RTL counted {cycles} cycles; the golden model {bundle.total_cycles}")
    return BookRun(programs, cycles, cpu, wall, build)
