"""Replay one bundle on several simulators at once, split over worker processes.

A thin layer over the simulator interface (:func:`gen.sim.simulator.get_simulator`
and ``run_bundle``): it knows nothing about how a simulator is started.  It

* cuts the bundle into contiguous *pieces* per simulator, each small enough for
  the simulator's smallest build (``min_bundle_cap`` words, when the simulator
  has one), so that every piece reuses the same cached build, and, for a slow
  simulator, into enough pieces to keep every worker busy;
* runs the pieces of all simulators in a pool of worker processes (one per
  core by default), longest first, after each simulator's export and build
  (made once, before its pieces), so that Icarus can use both cores while
  Verilator builds and its short run slips in between;
* with :class:`ReplayPool`, takes bundles as they become known and runs other
  work in the same pool (``ga2 ch16`` replays each run while the next ones are
  decoded);
* puts the results back in bundle order, so that a caller who concatenated
  several runs into one bundle can attribute programs, cycles and mismatches
  back to each run (:meth:`SimulatorReplay.span`).

A piece stops at its first mismatch (as ``run_bundle`` does); the other pieces
still run, so every run of a concatenated bundle gets a verdict.
"""
from __future__ import annotations

import heapq
import itertools
import math
import multiprocessing
import os
import queue
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

from ga2_hdl.config import Config
from ga2_hdl.formats.bundle import Bundle
from ga2_hdl.isa import Counters, ErrorCode
from ga2_hdl.formats.results import Mismatch
from ga2_hdl.support.reporter import Reporter, or_quiet

from .simulator import SimulatorError, get_simulator
from ..support.cpu import cpu_seconds
from ..support.workers import fork_pool

#: rough cycles per second, used only to plan the pieces and their order (never reported)
SPEED_HINT = {"golden": 400_000, "amaranth": 8_000, "icarus": 28_000, "verilator": 2_500_000,
              "cxxrtl": 100_000}
#: rough CPU seconds of a simulator's build from an empty cache, used only to plan which build to
#: start first (never reported); a simulator missing here builds nothing worth planning for
BUILD_HINT = {"icarus": 3.0, "verilator": 15.0, "cxxrtl": 35.0}
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
    bundle: int = 0      #: which bundle of a :class:`ReplayPool` (the order they were added)


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
    #: the export and build made before the pieces ran (None: each piece made or found its own)
    preparation: "Preparation | None" = None

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
        """Export and build: the preparation's and what each piece spent finding them."""
        return (self.preparation.seconds if self.preparation else 0.0) + sum(p.setup_seconds for p in self.pieces)

    @property
    def cpu_seconds(self) -> float:
        """CPU time of the preparation and the pieces (simulation, export, build, bundle writing): a
        measure of the work that does not depend on what else the machine is doing."""
        return (self.preparation.cpu_seconds if self.preparation else 0.0) + sum(p.cpu_seconds for p in self.pieces)

    @property
    def wall_seconds(self) -> float:
        """From the first piece's start to the last piece's end (the preparation not included)."""
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
    return [len(Bundle(bundle.ext_words, [entry], config=bundle.config).words()) - BUNDLE_OVERHEAD_WORDS
            for entry in bundle.programs]


def plan_pieces(bundle: Bundle, simulator: str, *, workers: int, max_words: int | None,
                words: Sequence[int] | None = None, pieces_per_worker: int = 2) -> list[Piece]:
    """Contiguous pieces of ``bundle`` for ``simulator``: each at most ``max_words`` bundle words
    (None: no limit), and, when the simulator is slow, of equal cycles, about ``PIECE_SECONDS``
    each and at least ``pieces_per_worker * workers`` of them."""
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
        wanted = max(pieces_per_worker * workers, min(MAX_PIECES_PER_WORKER * workers,
                                                      math.ceil(seconds / PIECE_SECONDS)))
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
# The progress queue and the simulators' options reach the workers by fork (module globals set
# before the pool starts); a piece travels with its own programs (a sub-bundle), so bundles that
# become known after the workers started can be replayed by them.
_PROGRESS = None
_OPTIONS: dict[str, dict] = {}




def _error_text(e: Exception) -> str:
    """A simulator's error in one line; anything else with its traceback (a bug of ours)."""
    detail = str(e) if isinstance(e, SimulatorError) else traceback.format_exc()
    return f"{type(e).__name__}: {detail}"


def _run_piece(piece: Piece, sub: Bundle) -> PieceResult:
    started = time.time()
    cpu0 = cpu_seconds()
    done = [0]

    class ToParent:                     # the piece's steps, sent to the pool's process as increments
        def step(self, k: int, _n: int, _what: str = "") -> None:
            if _PROGRESS is not None and k > done[0]:
                _PROGRESS.put((piece.simulator, k - done[0]))
                done[0] = k

        def note(self, message: str) -> None:
            pass

    try:
        sim = get_simulator(piece.simulator, **_OPTIONS.get(piece.simulator, {}))
        report = sim.run_bundle(sub, reporter=ToParent())
    except Exception as e:          # reported as this piece's error; the other pieces go on
        return PieceResult(piece, [], None, 0.0, 0.0, started, time.time(), _error_text(e))
    outcomes = [ProgramOutcome(r.counters, r.error, r.error_pc) for r in report.results]
    mismatch = report.mismatch
    if mismatch is not None:
        mismatch = replace(mismatch, program=(mismatch.program or 0) + piece.start)
    return PieceResult(piece, outcomes, mismatch, report.wall_seconds - report.build_seconds,
                       report.build_seconds, started, time.time(), cpu_seconds=cpu_seconds() - cpu0)


@dataclass
class Preparation:
    """A simulator's export and build, made once before its pieces run (see :meth:`ReplayPool.prepare`)."""
    simulator: str
    seconds: float
    cpu_seconds: float
    error: str | None = None


def _prepare(name: str, ext_words: int) -> Preparation:
    t0, cpu0 = time.perf_counter(), cpu_seconds()
    try:
        get_simulator(name, **_OPTIONS.get(name, {})).prepare(ext_words)
    except Exception as e:          # the simulator's pieces are then reported with this error
        return Preparation(name, time.perf_counter() - t0, cpu_seconds() - cpu0, _error_text(e))
    return Preparation(name, time.perf_counter() - t0, cpu_seconds() - cpu0)


class ReplayPool:
    """Replay bundles in several simulators as the bundles become known, and run other work
    beside them, in one pool of ``workers`` forked processes.

    Work waits in one queue ordered by priority (a lower level first; a simulator's pieces
    longest expected time first, so that the last ones to finish are short), and only as
    many tasks as there are workers are handed to the pool, so a task added later with a
    higher priority still goes before the ones already waiting.

    * :meth:`prepare` queues a simulator's export and build; its pieces wait for it, so no
      worker sits on the build's lock while another builds.  A simulator not prepared by
      the caller is prepared when its first bundle is added.
    * :meth:`add` cuts a bundle into pieces per simulator (:func:`plan_pieces`) and queues them.
    * :meth:`submit` queues other work: ``fn(*args)`` runs in a worker and ``on_done(result)``
      in this process (it may add bundles or more work).
    * :meth:`run` works until the queue is empty; :meth:`replays` gives each bundle's results.

    Parameters
    ----------
    simulators : simulator names (unknown ones are refused here, before any work).
    workers : worker processes (default: one per core).
    reporter : gets ``step(programs done, programs added so far, simulator)``, in this process.
    config : the chip every simulator simulates (each bundle added must be made for it).
    options : other keyword arguments per simulator name for :func:`get_simulator`.
    pieces_per_worker : a slow simulator's bundle is cut into at least this many pieces per
        worker (2 when one bundle is all there is to keep the workers busy; 0 when many
        bundles come one after another and other work fills the gaps).
    """

    #: priority levels: preparations before everything else, pieces after other work of a lower level
    PREPARE = 0
    PIECES = 10

    def __init__(self, simulators: Sequence[str], *, config: Config, workers: int | None = None,
                 reporter: Reporter | None = None,
                 options: dict[str, dict] | None = None, pieces_per_worker: int = 2):
        self.workers = workers or os.cpu_count() or 1
        if self.workers < 1:
            raise ValueError("workers must be at least 1")
        self.names = list(dict.fromkeys(simulators))
        self.options = {name: {**(options or {}).get(name, {}), "config": config} for name in self.names}
        self._sims = {name: get_simulator(name, **self.options.get(name, {})) for name in self.names}
        self.pieces_per_worker = pieces_per_worker
        self.reporter = or_quiet(reporter)
        self.bundles: list[Bundle] = []
        self.results: list[PieceResult] = []
        self.preparations: dict[str, Preparation | None] = {}     # None: queued or running
        self._held: dict[str, list] = {name: [] for name in self.names}
        self._queue: list = []
        self._seq = itertools.count()
        self._done = {name: 0 for name in self.names}

    # ------------------------------------------------------------------ queueing
    def submit(self, fn: Callable, *args, priority: float = 1, on_done: Callable | None = None) -> None:
        """Queue ``fn(*args)`` (run in a worker; a picklable module-level function) at ``priority``."""
        heapq.heappush(self._queue, ((priority, 0.0), next(self._seq), fn, args, on_done))

    def prepare(self, simulator: str, ext_words: int, *, priority: float = PREPARE) -> None:
        """Queue ``simulator``'s export and build for bundles of ``ext_words`` (once per simulator)."""
        if simulator in self.preparations or not hasattr(self._sims[simulator], "prepare"):
            return
        self.preparations[simulator] = None
        self.submit(_prepare, simulator, ext_words, priority=priority, on_done=self._prepared)

    def _prepared(self, prep: Preparation) -> None:
        self.preparations[prep.simulator] = prep
        for item in self._held.pop(prep.simulator, []):
            if prep.error is None:
                heapq.heappush(self._queue, item)
            else:                    # a build that failed fails every piece of its simulator, once
                piece = item[3][0]
                now = time.time()
                self.results.append(PieceResult(piece, [], None, 0.0, 0.0, now, now, prep.error))

    def add(self, bundle: Bundle) -> int:
        """Queue ``bundle``'s pieces in every simulator; its number among the bundles added."""
        index = len(self.bundles)
        self.bundles.append(bundle)
        if not bundle.programs:
            return index
        words = program_words(bundle)
        for name in self.names:
            self.prepare(name, bundle.ext_words)
            for piece in plan_pieces(bundle, name, workers=self.workers, words=words,
                                     max_words=getattr(self._sims[name], "min_bundle_cap", None),
                                     pieces_per_worker=self.pieces_per_worker):
                piece = replace(piece, bundle=index)
                sub = Bundle(bundle.ext_words, bundle.programs[piece.start:piece.stop], config=bundle.config)
                seconds = piece.cycles / SPEED_HINT.get(name, 50_000)
                item = ((self.PIECES, -seconds), next(self._seq), _run_piece, (piece, sub), self.results.append)
                if name in self.preparations and self.preparations[name] is None:
                    self._held[name].append(item)
                else:
                    heapq.heappush(self._queue, item)
        return index

    @property
    def programs(self) -> int:
        return sum(len(b.programs) for b in self.bundles)

    # ------------------------------------------------------------------ working
    def run(self, *, meanwhile: Callable[[], object] | None = None) -> None:
        """Work until nothing is queued or running (what ``on_done`` adds included).

        ``meanwhile()`` is called once in this process as soon as the first tasks are with the
        workers (forked by then, so nothing it imports or starts reaches them): work the caller
        needs afterwards, such as importing what draws the results, done while this process
        would only wait."""
        global _PROGRESS, _OPTIONS
        ctx = multiprocessing.get_context("fork")
        progress_queue = ctx.Queue()
        _PROGRESS, _OPTIONS = progress_queue, self.options

        def drain() -> None:
            while True:
                try:
                    name, k = progress_queue.get_nowait()
                except queue.Empty:
                    return
                self._done[name] += k
                self.reporter.step(self._done[name], self.programs, name)

        try:
            # an interrupt (or an error) ends the workers at once, each ending its simulator's group
            with fork_pool(self.workers) as pool:
                running: dict = {}
                while self._queue or running:
                    while self._queue and len(running) < self.workers:
                        _, _, fn, args, on_done = heapq.heappop(self._queue)
                        running[pool.submit(fn, *args)] = on_done
                    if meanwhile is not None:
                        meanwhile, later = None, meanwhile
                        later()
                    finished, _ = wait(running, timeout=0.2, return_when=FIRST_COMPLETED)
                    drain()
                    for f in finished:
                        on_done = running.pop(f)
                        result = f.result()
                        if on_done is not None:
                            on_done(result)
            time.sleep(0.05)
            drain()
        finally:
            _PROGRESS, _OPTIONS = None, {}
            progress_queue.close()

    def replays(self) -> list[dict[str, SimulatorReplay]]:
        """Per bundle (in the order added), every simulator's replay of it."""
        out = []
        for index, bundle in enumerate(self.bundles):
            n = len(bundle.programs)
            mine_all = {}
            for name in self.names:
                mine = sorted((r for r in self.results if r.piece.simulator == name and r.piece.bundle == index),
                              key=lambda r: r.piece.start)
                outcomes: list[ProgramOutcome | None] = [None] * n
                for r in mine:
                    for i, o in enumerate(r.outcomes):
                        outcomes[r.piece.start + i] = o
                prep = self.preparations.get(name)
                mine_all[name] = SimulatorReplay(name, n, outcomes, [r.mismatch for r in mine if r.mismatch],
                                                 [r.error for r in mine if r.error], mine,
                                                 preparation=prep if index == 0 else None)
            out.append(mine_all)
        return out


def concatenate(parts: Sequence[SimulatorReplay]) -> SimulatorReplay:
    """One simulator's replays of several bundles as the replay of their concatenation (programs,
    mismatches and pieces renumbered in it), e.g. the runs of a table replayed one by one."""
    if not parts:
        raise ValueError("nothing to concatenate")
    outcomes, mismatches, errors, pieces, offset = [], [], [], [], 0
    for part in parts:
        outcomes += part.outcomes
        mismatches += [replace(m, program=(m.program or 0) + offset) for m in part.mismatches]
        errors += part.errors
        pieces += [replace(r, piece=replace(r.piece, start=r.piece.start + offset, stop=r.piece.stop + offset))
                   for r in part.pieces]
        offset += part.programs
    preparation = next((p.preparation for p in parts if p.preparation is not None), None)
    return SimulatorReplay(parts[0].simulator, offset, outcomes, mismatches, errors, pieces,
                           preparation=preparation)


def replay(bundle: Bundle, simulators: Sequence[str], *, workers: int | None = None,
           reporter: Reporter | None = None,
           options: dict[str, dict] | None = None) -> dict[str, SimulatorReplay]:
    """Replay ``bundle`` in every named simulator, pieces spread over ``workers`` processes.

    ``reporter`` gets ``step(programs done, programs in the bundle, simulator)`` in this
    process as programs finish.  The simulators are those of the bundle's chip (``bundle.config``);
    ``options`` are their other keyword arguments per simulator name for :func:`get_simulator`.
    """
    pool = ReplayPool(simulators, config=bundle.config, workers=workers, reporter=reporter, options=options)
    pool.add(bundle)
    pool.run()
    return pool.replays()[0]


def pieces_summary(replay_: SimulatorReplay) -> str:
    """'9 pieces, 41.2 s of simulation' for reports."""
    k = len(replay_.pieces)
    return f"{k} piece{'s' if k != 1 else ''}, {replay_.run_seconds:.1f} s of simulation"


__all__ = ["Piece", "PieceResult", "Preparation", "ProgramOutcome", "ReplayPool", "SimulatorReplay", "SpanVerdict",
           "concatenate", "plan_pieces", "program_words", "replay", "pieces_summary", "BUILD_HINT", "SPEED_HINT"]
