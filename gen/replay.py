"""Replay one bundle on several simulators at once, split over worker processes.

A thin layer over the simulator interface (:func:`gen.simulator.get_simulator`
and ``run_bundle``): it knows nothing about how a simulator is started.  It

* cuts the bundle into contiguous *pieces* per simulator, each small enough for
  the simulator's smallest build (``min_bundle_cap`` words, when the simulator
  has one), so that every piece reuses the same cached build, and, for a slow
  simulator, into enough pieces to keep every worker busy;
* runs the pieces of all simulators in a pool of worker processes (one per
  core by default), longest first, so that Icarus can use both cores while
  Verilator's short run slips in between;
* puts the results back in bundle order, so that a caller who concatenated
  several runs into one bundle can attribute programs, cycles and mismatches
  back to each run (:meth:`SimulatorReplay.span`).

A piece stops at its first mismatch (as ``run_bundle`` does); the other pieces
still run, so every run of a concatenated bundle gets a verdict.
"""
from __future__ import annotations

import math
import multiprocessing
import os
import queue
import resource
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

from ga2_hdl.bundle import Bundle
from ga2_hdl.isa import Counters, ErrorCode
from ga2_hdl.results import Mismatch

from .simulator import SimulatorError, get_simulator

#: rough cycles per second, used only to plan the pieces and their order (never reported)
SPEED_HINT = {"golden": 400_000, "amaranth": 8_000, "icarus": 28_000, "verilator": 2_500_000,
              "cxxrtl": 100_000}
#: a simulator expected to take longer than this (seconds) is split into at least 2 pieces per worker
SPLIT_ABOVE_SECONDS = 8.0
#: and into pieces of about this many seconds, so that the last piece to finish is a short one,
PIECE_SECONDS = 4.0
#: but no more than this many per worker (each piece pays the simulator's start-up)
MAX_PIECES_PER_WORKER = 8
#: words of a bundle that are not part of any program record (header and end marker)
BUNDLE_OVERHEAD_WORDS = 5


@dataclass(frozen=True)
class Piece:
    """Programs ``start`` .. ``stop - 1`` of the bundle, for one simulator."""
    simulator: str
    start: int
    stop: int
    cycles: int          #: the golden model's total for these programs
    words: int           #: the size of the piece as a bundle


@dataclass
class ProgramOutcome:
    """What a simulator reported for one program (memory is compared in the worker, not kept)."""
    counters: Counters
    error: ErrorCode | int
    error_pc: int


@dataclass
class PieceResult:
    piece: Piece
    outcomes: list[ProgramOutcome]
    mismatch: Mismatch | None            #: program numbered in the whole bundle
    run_seconds: float                   #: the simulation itself
    setup_seconds: float                 #: export and build (cached: small)
    started: float                       #: wall-clock (time.time()) start and end in the worker
    ended: float
    error: str | None = None             #: the simulator could not run the piece
    cpu_seconds: float = 0.0             #: CPU time of the worker and the simulator processes it ran


@dataclass
class SimulatorReplay:
    """One simulator's replay of the whole bundle, reassembled from its pieces."""
    simulator: str
    programs: int
    outcomes: list[ProgramOutcome | None]
    mismatches: list[Mismatch]
    errors: list[str]
    pieces: list[PieceResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.mismatches and not self.errors and all(o is not None for o in self.outcomes)

    @property
    def cycles(self) -> int:
        return sum(o.counters.total for o in self.outcomes if o is not None)

    @property
    def run_seconds(self) -> float:
        """Simulation time summed over the pieces (one process's worth of work)."""
        return sum(p.run_seconds for p in self.pieces)

    @property
    def setup_seconds(self) -> float:
        return sum(p.setup_seconds for p in self.pieces)

    @property
    def cpu_seconds(self) -> float:
        """CPU time of the pieces (simulation, export, build, bundle writing): a measure of the work
        that does not depend on what else the machine is doing."""
        return sum(p.cpu_seconds for p in self.pieces)

    @property
    def wall_seconds(self) -> float:
        """From the first piece's start to the last piece's end."""
        if not self.pieces:
            return 0.0
        return max(p.ended for p in self.pieces) - min(p.started for p in self.pieces)

    @property
    def cycles_per_second(self) -> float:
        """Simulated cycles per second of one simulator process (build and setup excluded)."""
        return self.cycles / self.run_seconds if self.run_seconds > 0 else float("inf")

    def span(self, start: int, stop: int) -> "SpanVerdict":
        """The verdict for programs ``start`` .. ``stop - 1`` (one run of a concatenated bundle)."""
        outcomes = self.outcomes[start:stop]
        mismatch = next((m for m in self.mismatches if start <= (m.program or 0) < stop), None)
        if mismatch is not None:
            mismatch = replace(mismatch, program=mismatch.program - start)
        missing = sum(o is None for o in outcomes)
        error = next((p.error for p in self.pieces
                      if p.error and p.piece.start < stop and start < p.piece.stop), None)
        return SpanVerdict(self.simulator, stop - start, sum(o.counters.total for o in outcomes if o is not None),
                           mismatch, missing, error)


@dataclass
class SpanVerdict:
    simulator: str
    programs: int
    cycles: int
    mismatch: Mismatch | None
    missing: int          #: programs with no result (after a mismatch in their piece, or an error)
    error: str | None

    @property
    def passed(self) -> bool:
        return self.mismatch is None and self.missing == 0 and self.error is None

    @property
    def verdict(self) -> str:
        if self.passed:
            return "PASS"
        return "ERROR" if self.error and self.mismatch is None else "MISMATCH"

    def line(self) -> str:
        if self.passed:
            return f"PASS: {self.programs} programs, {self.cycles} cycles"
        if self.mismatch is not None:
            return f"MISMATCH: {self.mismatch}"
        if self.error:
            return f"ERROR: {self.error.splitlines()[0]}"
        return f"MISMATCH: {self.missing} of {self.programs} programs gave no result"


def program_words(bundle: Bundle) -> list[int]:
    """The size in bundle words of each program's record."""
    return [len(Bundle(bundle.ext_words, [entry], bundle.config).words()) - BUNDLE_OVERHEAD_WORDS
            for entry in bundle.programs]


def plan_pieces(bundle: Bundle, simulator: str, *, workers: int, max_words: int | None,
                words: Sequence[int] | None = None) -> list[Piece]:
    """Contiguous pieces of ``bundle`` for ``simulator``: each at most ``max_words`` bundle words
    (None: no limit), and, when the simulator is slow, about ``2 * workers`` of them of equal cycles."""
    words = list(words) if words is not None else program_words(bundle)
    cycles = [p.expected.counters.total for p in bundle.programs]
    n = len(cycles)
    if n == 0:
        return []
    total = sum(cycles)
    budget = None if max_words is None else max_words - BUNDLE_OVERHEAD_WORDS
    if budget is not None and max(words) > budget:
        i = max(range(n), key=words.__getitem__)
        raise SimulatorError(f"{simulator}: program {i} alone takes {words[i]} bundle words, more than a "
                             f"piece may hold ({budget})")
    seconds = total / SPEED_HINT.get(simulator, 50_000)
    wanted = 1
    if seconds > SPLIT_ABOVE_SECONDS and workers > 1:
        wanted = max(2 * workers, min(MAX_PIECES_PER_WORKER * workers, math.ceil(seconds / PIECE_SECONDS)))
    per_piece = total / min(wanted, n)
    pieces, start, acc_cycles, acc_words = [], 0, 0, 0
    for i in range(n):
        too_big = budget is not None and acc_words + words[i] > budget
        if i > start and (too_big or acc_cycles >= per_piece * 0.999):
            pieces.append(Piece(simulator, start, i, acc_cycles, acc_words + BUNDLE_OVERHEAD_WORDS))
            start, acc_cycles, acc_words = i, 0, 0
        acc_cycles += cycles[i]
        acc_words += words[i]
    pieces.append(Piece(simulator, start, n, acc_cycles, acc_words + BUNDLE_OVERHEAD_WORDS))
    return pieces


# ------------------------------------------------------------------ the workers
# The bundle and the progress queue reach the workers by fork (module globals set before the
# pool starts), so a task is only a Piece and no program is pickled on the way in.
_BUNDLE: Bundle | None = None
_PROGRESS = None
_OPTIONS: dict[str, dict] = {}


def _cpu_seconds() -> float:
    """CPU time of this process and of the child processes it has waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _run_piece(piece: Piece) -> PieceResult:
    started = time.time()
    cpu0 = _cpu_seconds()
    assert _BUNDLE is not None
    sub = Bundle(_BUNDLE.ext_words, _BUNDLE.programs[piece.start:piece.stop], _BUNDLE.config)   # the same chip
    done = [0]

    def progress(k: int, _n: int) -> None:
        if _PROGRESS is not None and k > done[0]:
            _PROGRESS.put((piece.simulator, k - done[0]))
            done[0] = k

    try:
        sim = get_simulator(piece.simulator, **_OPTIONS.get(piece.simulator, {}))
        report = sim.run_bundle(sub, progress=progress)
    except Exception as e:          # reported as this piece's error; the other pieces go on
        detail = str(e) if isinstance(e, SimulatorError) else traceback.format_exc()
        return PieceResult(piece, [], None, 0.0, 0.0, started, time.time(), f"{type(e).__name__}: {detail}")
    outcomes = [ProgramOutcome(r.counters, r.error, r.error_pc) for r in report.results]
    mismatch = report.mismatch
    if mismatch is not None:
        mismatch = replace(mismatch, program=(mismatch.program or 0) + piece.start)
    return PieceResult(piece, outcomes, mismatch, report.wall_seconds - report.build_seconds,
                       report.build_seconds, started, time.time(), cpu_seconds=_cpu_seconds() - cpu0)


def _order(pieces: list[Piece]) -> list[Piece]:
    """A simulator replayed in one piece (a fast one) goes first: its build, if it needs one,
    overlaps the slow simulator's pieces, and its verdict comes early.  The rest longest
    expected time first (LPT), so that the last pieces to finish are short ones."""
    count: dict[str, int] = {}
    for p in pieces:
        count[p.simulator] = count.get(p.simulator, 0) + 1
    return sorted(pieces, key=lambda p: (count[p.simulator] > 1, -p.cycles / SPEED_HINT.get(p.simulator, 50_000)))


def replay(bundle: Bundle, simulators: Sequence[str], *, workers: int | None = None,
           progress: Callable[[str, int, int], None] | None = None,
           options: dict[str, dict] | None = None) -> dict[str, SimulatorReplay]:
    """Replay ``bundle`` in every named simulator, pieces spread over ``workers`` processes.

    ``progress(simulator, programs done, programs in the bundle)`` is called in this
    process as programs finish.  ``options`` are keyword arguments per simulator name
    for :func:`get_simulator`.
    """
    global _BUNDLE, _PROGRESS, _OPTIONS
    workers = workers or os.cpu_count() or 1
    if workers < 1:
        raise ValueError("workers must be at least 1")
    names = list(dict.fromkeys(simulators))
    options = options or {}
    words = program_words(bundle)
    pieces: list[Piece] = []
    for name in names:
        sim = get_simulator(name, **options.get(name, {}))      # unknown names fail here, before any work
        pieces += plan_pieces(bundle, name, workers=workers, max_words=getattr(sim, "min_bundle_cap", None),
                              words=words)
    n = len(bundle.programs)
    done = {name: 0 for name in names}
    results: list[PieceResult] = []

    ctx = multiprocessing.get_context("fork")
    progress_queue = ctx.Queue()
    _BUNDLE, _PROGRESS, _OPTIONS = bundle, progress_queue, options

    def drain() -> None:
        while True:
            try:
                name, k = progress_queue.get_nowait()
            except queue.Empty:
                return
            done[name] += k
            if progress:
                progress(name, done[name], n)

    try:
        with ProcessPoolExecutor(max_workers=min(workers, len(pieces)) or 1, mp_context=ctx) as pool:
            pending = {pool.submit(_run_piece, p) for p in _order(pieces)}
            try:
                while pending:
                    finished, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                    drain()
                    for f in finished:
                        results.append(f.result())
            except BaseException:
                # an interrupt (or an error): the workers stop now instead of finishing their pieces;
                # each worker inherited ga2's signal handlers, so SIGTERM ends its simulator's group too
                pool.shutdown(wait=False, cancel_futures=True)
                for worker in multiprocessing.active_children():
                    worker.terminate()
                for worker in multiprocessing.active_children():
                    worker.join(timeout=10)
                raise
        time.sleep(0.05)
        drain()
    finally:
        _BUNDLE, _PROGRESS, _OPTIONS = None, None, {}
        progress_queue.close()

    out: dict[str, SimulatorReplay] = {}
    for name in names:
        mine = sorted((r for r in results if r.piece.simulator == name), key=lambda r: r.piece.start)
        outcomes: list[ProgramOutcome | None] = [None] * n
        for r in mine:
            for i, o in enumerate(r.outcomes):
                outcomes[r.piece.start + i] = o
        out[name] = SimulatorReplay(name, n, outcomes, [r.mismatch for r in mine if r.mismatch],
                                    [r.error for r in mine if r.error], mine)
    return out


def pieces_summary(replay_: SimulatorReplay) -> str:
    """'9 pieces, 41.2 s of simulation' for reports."""
    k = len(replay_.pieces)
    return f"{k} piece{'s' if k != 1 else ''}, {replay_.run_seconds:.1f} s of simulation"


__all__ = ["Piece", "PieceResult", "ProgramOutcome", "SimulatorReplay", "SpanVerdict", "plan_pieces",
           "program_words", "replay", "pieces_summary", "SPEED_HINT"]
