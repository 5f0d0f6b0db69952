"""The one simulator interface: run a program or a bundle, get memory and counters.

Five implementations, chosen by name: ``golden`` (the instruction-level model),
``amaranth`` (Amaranth's simulator on the RTL), ``icarus`` and ``verilator``
(the exported Verilog), ``cxxrtl`` (the chip compiled by Yosys' CXXRTL).  Callers use :func:`get_simulator`; nothing else knows
how a simulator is started.

Every simulator simulates one chip, ``get_simulator(name, config=...)`` (a
required keyword): the RTL, the testbench and the external-memory model are
built for that configuration, and a bundle made for another one is refused
before anything runs (:func:`check_bundle_chip`).
"""
from __future__ import annotations

import contextlib
import importlib
import os
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator, Protocol, Sequence

from ga2_hdl import isa
from ga2_hdl.config import Config
from ga2_hdl.isa import FETCH_ISSUE_CYCLES, HALT, Instruction
from ga2_hdl.formats.results import Mismatch, RunResult
from ga2_hdl.support.safe_io import check_output, temporary_sibling
from ga2_hdl.support.reporter import Reporter
from ..support.toolchain import SimulatorError  # noqa: F401  (the interface's error, re-exported)

#: name -> "module:factory"; the module is imported only when the simulator is asked for.
SIMULATORS: dict[str, str] = {
    "golden": "gen.sim.golden:GoldenSimulator",
    "amaranth": "gen.sim.amaranth_sim:AmaranthSimulator",
    "icarus": "gen.sim.verilog_sim:IcarusSimulator",
    "verilator": "gen.sim.verilog_sim:VerilatorSimulator",
    "cxxrtl": "gen.sim.cxxrtl:CxxrtlSimulator",
}


@dataclass
class BundleReport:
    """What replaying a bundle in one simulator gave."""
    simulator: str
    programs: int
    results: list[RunResult]
    mismatch: Mismatch | None
    wall_seconds: float
    build_seconds: float = 0.0
    #: what compiling the simulation took when it was made (None: nothing is compiled, or unknown),
    #: also when this run found it in the cache
    compile_seconds: float | None = None
    notes: list[str] = field(default_factory=list)
    #: what the simulation itself reported (errors, timeouts), also among the notes
    messages: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.mismatch is None and len(self.results) == self.programs

    @property
    def cycles(self) -> int:
        return sum(r.counters.total for r in self.results)

    @property
    def cycles_per_second(self) -> float:
        run = self.wall_seconds - self.build_seconds
        return self.cycles / run if run > 0 else float("inf")

    def line(self) -> str:
        """The one-line verdict every simulator prints."""
        if self.passed:
            return (f"PASS: {self.programs} programs match the golden model (memory and all five cycle "
                    f"counters), {self.cycles} cycles in total")
        if self.mismatch is not None:
            return f"MISMATCH: {self.mismatch}"
        return f"FAIL: {len(self.results)} of {self.programs} programs ran"


class Simulator(Protocol):
    name: str

    def run_program(self, program: Sequence[Instruction], ext: Sequence[int], *,
                    ext_words: int | None = None, vcd: str | None = None) -> RunResult:
        """Run one program on an external-memory image; return its end state."""

    def run_bundle(self, bundle, *, vcd: str | None = None, vcd_program: int | None = None,
                   reporter: Reporter | None = None) -> BundleReport:
        """Run every program of a bundle and compare each with its expected result; ``reporter`` gets
        ``step(programs done, programs, simulator's name)`` as each finishes."""

    # Optional: ``prepare(ext_words)`` makes what runs need (export, compiled simulation) ahead of
    # them, so that runs in several processes find it cached (gen.sim.replay.ReplayPool calls it once).


#: The watchdog, one rule for every simulator: a program that has not halted after
#: WATCHDOG_FACTOR x its expected cycles + WATCHDOG_SLACK "does not halt".
WATCHDOG_FACTOR = 2
WATCHDOG_SLACK = 1000


def watchdog_cycles(expected_cycles: int) -> int:
    """The cycles a simulator waits for ``halted`` on a program expected to take ``expected_cycles``."""
    return WATCHDOG_FACTOR * expected_cycles + WATCHDOG_SLACK


def expected_cycles(program: Sequence[Instruction], *, config: Config) -> int:
    """The cycles ``program`` takes on the chip ``config`` up to its first HALT (or to its end), by
    that chip's timing (its instruction set's busy times).

    An undefined op code counts as its fetch and issue alone.  For a legal program this is its
    ``total`` counter; for one that faults it is an upper bound.
    """
    iset = isa.instruction_set(config)
    total = 0
    for ins in program:
        if ins.op == HALT.op:
            return total + FETCH_ISSUE_CYCLES
        total += iset.cycles(ins) if ins.op in iset.by_code else FETCH_ISSUE_CYCLES
    return total


def external_memory_words(requested: int | None, configured: int | None, *, config: Config) -> int:
    """The external-memory size a run uses: the caller's, else the simulator's, else the configuration's."""
    for words in (requested, configured):
        if words is not None:
            if words < 1:
                raise SimulatorError(f"ext_words={words}: the external memory needs at least one word")
            return words
    return config.ext_words


def cycle_bound(program: Sequence[Instruction], *, config: Config) -> int:
    """Every simulator's watchdog for ``program`` on the chip ``config``: :func:`watchdog_cycles` of
    its :func:`expected_cycles`.

    It comes from the program and the chip's timing alone, never from an expectation, so a wrong
    expectation is reported as the same MISMATCH by every simulator instead of a timeout in some of them.
    """
    return watchdog_cycles(expected_cycles(program, config=config))


def check_bundle_chip(sim, bundle) -> None:
    """Refuse (:class:`SimulatorError`, one line naming the differing parameters) a bundle made for
    another configuration than the simulator's chip."""
    from ga2_hdl.formats.bundle import ChipMismatch, check_same_chip
    try:
        check_same_chip(bundle.config, sim.config)
    except ChipMismatch as e:
        raise SimulatorError(f"{sim.name}: {e}") from None


def timeout_line(program: int, bound: int, expected_total: int) -> str:
    """The one TIMEOUT note of every simulator (the Verilog testbench prints the same words)."""
    return (f"TIMEOUT: program {program} did not halt within {bound} cycles "
            f"(the bundle expects {expected_total})")


def check_vcd(vcd: str | os.PathLike) -> None:
    """Refuse, before anything runs, a waveform path that cannot be written."""
    try:
        check_output(vcd, "waveform file")
    except OSError as e:
        raise SimulatorError(f"--vcd {os.fspath(vcd)}: {e.strerror}") from None


@dataclass
class VcdTarget:
    """Where a simulator writes a waveform (``tmp``), and whether it reached ``final`` (``written``)."""
    final: str | None
    tmp: str | None = None
    written: bool = False


@contextlib.contextmanager
def vcd_output(vcd: str | os.PathLike | None) -> Iterator[VcdTarget]:
    """A temporary waveform path next to ``vcd`` for the simulator to write; renamed to ``vcd`` when
    the block ends normally and the simulator did write something, removed otherwise.  So ``vcd`` is
    whole or as it was, and ``written`` says which (nobody says "written" of a file that is not there)."""
    target = VcdTarget(None if vcd is None else os.fspath(vcd))
    if vcd is None:
        yield target
        return
    check_vcd(vcd)
    target.tmp = temporary_sibling(vcd, ".vcd")
    try:
        yield target
        if os.path.getsize(target.tmp) > 0:
            # a temporary file is made 0600; a waveform is an ordinary output file (0644 less the umask,
            # as atomic_write makes every other)
            mask = os.umask(0)
            os.umask(mask)
            os.chmod(target.tmp, 0o644 & ~mask)
            os.replace(target.tmp, vcd)
            target.written = True
    finally:
        with contextlib.suppress(OSError):
            os.unlink(target.tmp)


def get_simulator(name: str, *, config: Config, **options) -> Simulator:
    """The simulator ``name`` of the chip ``config`` (``options``: the runner's other keyword arguments)."""
    try:
        target = SIMULATORS[name]
    except KeyError:
        raise SimulatorError(f"unknown simulator {name!r}; choose from {', '.join(SIMULATORS)}") from None
    module, factory = target.split(":")
    return getattr(importlib.import_module(module), factory)(config=config, **options)


def parse_sims(text: str) -> list[str]:
    """'amaranth,icarus' -> ['amaranth', 'icarus'], checked against the known names."""
    names = [s.strip() for s in text.split(",") if s.strip()]
    for n in names:
        if n not in SIMULATORS:
            raise SimulatorError(f"unknown simulator {n!r}; choose from {', '.join(SIMULATORS)}")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:            # the same simulator twice compares it with itself and doubles the work
        raise SimulatorError(f"{', '.join(twice)} named more than once; name each simulator once")
    return names


#: the simulators that have signals (a waveform): every one but the instruction-level golden model
RTL_SIMULATORS: tuple[str, ...] = tuple(n for n in SIMULATORS if n != "golden")


def replay_with(sim: Simulator, bundle, run_one: Callable[[int], RunResult],
                reporter: Reporter | None = None) -> BundleReport:
    """Shared loop for simulators that run a bundle one program at a time."""
    from ga2_hdl.formats.results import first_mismatch
    t0 = time.perf_counter()
    results: list[RunResult] = []
    mismatch = None
    n = len(bundle.programs)
    for i, entry in enumerate(bundle.programs):
        got = run_one(i)
        results.append(got)
        mismatch = first_mismatch(entry.expected, got, program=i)
        if reporter:
            reporter.step(i + 1, n, sim.name)
        if mismatch:
            break
    return BundleReport(sim.name, n, results, mismatch, time.perf_counter() - t0)
