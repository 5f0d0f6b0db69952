"""Fuzz campaigns that scale: pieces, resume, minimal mismatching programs, coverage, a cluster.

A campaign of N random programs is cut into *pieces* of ``piece_size``
programs.  Piece k is a bundle of its own: its programs come from
:func:`gen.fuzz.programs.random_bundle` with the seed :func:`piece_seed` (piece 0 with
the campaign's seed itself, so ``ga2 bundle fuzz --seed S --programs P`` is
its first piece), so any piece can be made, run and checked on any machine,
in any order.  Running a piece (:func:`run_piece`) means

* making its bundle (the golden model gives the expected results);
* replaying it in every simulator of the campaign; a simulator's replay stops
  at a mismatch, so the rest of the piece is replayed after it and every
  mismatching program is found;
* shrinking each mismatching program (:func:`gen.fuzz.shrink.shrink`: fewer instructions,
  smaller lengths and shapes, external memory only where it is used) while it
  still mismatches in that simulator, and returning it as a one-program bundle;
* counting its functional coverage (:mod:`gen.fuzz.coverage`).

The result of a piece is a small JSON document.  :func:`run_campaign` keeps the
campaign in a directory: ``campaign.json`` (the parameters), one
``pieces/piece-K.json`` per finished piece and ``mismatches/*.hex``, each
written atomically (a temporary file renamed over the name), the piece's
result last; so a killed campaign loses at most the pieces in flight, and
running it again on the same directory (``ga2 fuzz --resume DIR``) runs only
the pieces without a result.  The pieces run in a local pool of processes, or
on a Dask distributed scheduler (:class:`DaskRunner`): the same function, the
same results.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import signal
import socket
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

from ga2_hdl import isa
from ga2_hdl.formats.bundle import Bundle
from ga2_hdl.config import Config
from ga2_hdl.support.safe_io import atomic_write
from ga2_hdl.support.reporter import Reporter, or_quiet

from . import coverage as cov
from .programs import random_bundle
from .directed import directed_bundle
from .shrink import DEFAULT_SHRINK_SECONDS, Shrunk, shrink  # noqa: F401  (re-exported: the campaign's API)
from ..sim.testbench import testbench_problems
from ..support.cpu import cpu_seconds
from ..support import runner

FORMAT = "ga2-fuzz-campaign"
VERSION = 1
DEFAULT_PIECE_SIZE = 100
DEFAULT_ILLEGAL = 0.05
#: a simulator that mismatches this many programs of one piece is not replayed further in it
MAX_MISMATCHES_PER_PIECE = 10
DIRECTED = "directed"


class CampaignError(ValueError):
    """Options or a campaign directory that cannot be used (one line, no traceback)."""


# ----------------------------------------------------------------------------- the parameters

@dataclass(frozen=True)
class CampaignSpec:
    """Everything that decides a campaign's programs and verdicts."""
    programs: int
    seed: int = 1
    sims: tuple[str, ...] = ("golden",)
    ext_words: int | None = None          #: None: the configuration's (8192 on the book chip)
    max_cycles: int | None = None         #: None: gen.fuzz.programs.default_max_cycles(config) (3000 on the book chip)
    piece_size: int = DEFAULT_PIECE_SIZE
    illegal: float = DEFAULT_ILLEGAL
    directed: bool = False
    config: Config = field(kw_only=True)  #: the chip every program is made for and every simulator builds

    def __post_init__(self):
        from .programs import default_max_cycles
        if self.ext_words is None:
            object.__setattr__(self, "ext_words", self.config.ext_words)
        if self.max_cycles is None:
            object.__setattr__(self, "max_cycles", default_max_cycles(config=self.config))

    def validate(self) -> None:
        """Refuse, in one line naming the option, anything that would fail later."""
        from .programs import min_max_cycles
        from ..sim.simulator import SimulatorError, parse_sims
        if self.programs < 1:
            raise CampaignError(f"--programs {self.programs}: a campaign needs at least one program")
        if self.piece_size < 1:
            raise CampaignError(f"--piece-size {self.piece_size}: a piece needs at least one program")
        if not self.sims:
            raise CampaignError("--sims names no simulator")
        try:
            parse_sims(",".join(self.sims))
        except SimulatorError as e:
            raise CampaignError(f"--sims: {e}") from None
        # the option to blame: --ext-words when it is not the configuration's own size
        ext_option = (f"--config {self.config.name} (ext_words = {self.ext_words})"
                      if self.ext_words == self.config.ext_words else f"--ext-words {self.ext_words}")
        if self.ext_words < 16:
            raise CampaignError(f"{ext_option}: random programs need an external memory of at "
                                f"least 16 words")
        if self.directed and self.ext_words < 512:
            raise CampaignError(f"{ext_option}: the directed suite (--directed) needs at least "
                                f"512 words")
        verilog_sims = [n for n in self.sims if n in ("icarus", "verilator", "cxxrtl")]
        for problem in testbench_problems(self.config) if verilog_sims else ():
            raise CampaignError(f"--config {self.config.name}: {', '.join(verilog_sims)}: {problem}")
        if self.directed:
            from .directed import directed_suite
            try:
                directed_suite(self.ext_words, config=self.config)
            except ValueError as e:
                raise CampaignError(f"--directed: {e}") from None
        if not 0.0 <= self.illegal <= 1.0:
            raise CampaignError(f"--illegal {self.illegal}: a fraction of the programs lies in 0..1")
        least = min_max_cycles(self.illegal)
        if self.max_cycles < least:
            raise CampaignError(f"--max-cycles {self.max_cycles}: a program needs at least {least} cycles "
                                f"(its HALT{' and a faulting instruction' if self.illegal else ''})")
        # a campaign that compares something: a budget and an instruction memory in which a random
        # program can do more than HALT (derived from the chip's busy times)
        from .programs import FAULT_INSTRUCTIONS, useful_program
        cycles, instructions = useful_program(self.config)
        if self.max_cycles < cycles:
            raise CampaignError(f"--max-cycles {self.max_cycles}: every program would be a HALT alone (an LD and "
                                f"an ST of one word and the HALT take {cycles} cycles on {self.config.name}); "
                                f"nothing would be compared")
        # and the programs themselves: a sample made as the campaign makes them, not all HALT alone
        import random as _random
        from .programs import random_program
        rng = _random.Random(self.seed)
        sample = [random_program(rng, self.ext_words, max_cycles=self.max_cycles, illegal=0.0, config=self.config)[0]
                  for _ in range(min(self.programs, 20))] if self.config.imem_words >= instructions else []
        if sample and all(len(code) == 1 for code in sample):
            raise CampaignError(f"--max-cycles {self.max_cycles}: {len(sample)} of {len(sample)} sample programs are "
                                f"a HALT alone on {self.config.name} (the generator keeps room for loads and stores "
                                f"within the budget); nothing would be compared: give a larger --max-cycles")
        instructions += FAULT_INSTRUCTIONS if self.illegal > 0 else 0
        if self.config.imem_words < instructions:
            raise CampaignError(f"--config {self.config.name}: its instruction memory holds {self.config.imem_words} "
                                f"instructions; a random program that does anything needs {instructions} (an LD, an "
                                f"ST and the HALT{', and room for a fault' if self.illegal > 0 else ''})")

    @property
    def random_pieces(self) -> int:
        return math.ceil(self.programs / self.piece_size)

    def pieces(self) -> list["PieceTask"]:
        tasks = [PieceTask(self, DIRECTED, 0, 0)] if self.directed else []
        for k in range(self.random_pieces):
            start = k * self.piece_size
            tasks.append(PieceTask(self, k, start, min(start + self.piece_size, self.programs)))
        return tasks

    def to_json(self) -> dict:
        d = asdict(self)
        d["sims"] = list(self.sims)
        del d["config"]
        if self.config != isa.BOOK:      # a book campaign's manifest is what it always was
            d["config"] = self.config.to_dict()
        return d

    @classmethod
    def from_json(cls, d: dict) -> "CampaignSpec":
        d = dict(d)
        d["sims"] = tuple(d["sims"])
        d["config"] = Config.from_dict(d["config"], "campaign.json") if "config" in d else isa.BOOK
        return cls(**d)


def piece_seed(seed: int, k: int) -> int:
    """The seed of random piece ``k``: the campaign's own for piece 0, a hash of both for the others."""
    if k == 0:
        return seed
    return int.from_bytes(hashlib.sha256(f"ga2 fuzz campaign {seed} piece {k}".encode()).digest()[:8], "big")


@dataclass(frozen=True)
class PieceTask:
    spec: CampaignSpec
    piece: int | str          #: random piece number, or "directed"
    start: int                #: the campaign's program numbers start .. stop - 1 (random pieces)
    stop: int

    @property
    def file_name(self) -> str:
        return f"piece-{self.piece}.json" if self.piece == DIRECTED else f"piece-{self.piece:06d}.json"

    def bundle(self) -> Bundle:
        spec = self.spec
        if self.piece == DIRECTED:
            return directed_bundle(spec.ext_words, config=spec.config)
        b = random_bundle(self.stop - self.start, piece_seed(spec.seed, self.piece), spec.ext_words,
                          spec.max_cycles, illegal=spec.illegal, config=spec.config)
        for i, p in enumerate(b.programs):
            p.name = f"random seed={spec.seed} piece={self.piece} size={spec.piece_size} #{self.start + i}"
        return b


# ----------------------------------------------------------------------------- one piece

_SIMULATORS: dict[tuple[str, int, Config], object] = {}
_SIM_LOCK = threading.Lock()


def _simulator(name: str, ext_words: int, *, config: Config):
    """This process's simulator ``name`` of the chip ``config``, made once (Verilog builds come from
    the shared cache)."""
    from ..sim.simulator import get_simulator
    with _SIM_LOCK:
        key = (name, ext_words, config)
        if key not in _SIMULATORS:
            _SIMULATORS[key] = get_simulator(name, ext_words=ext_words, config=config)
        return _SIMULATORS[key]


@functools.lru_cache(maxsize=8)
def coverage_model(ext_words: int, max_cycles: int | None, *, config: Config) -> cov.CoverageModel:
    return cov.CoverageModel(ext_words, max_cycles, config=config)




def replay_all(sim, bundle: Bundle, limit: int = MAX_MISMATCHES_PER_PIECE) -> dict:
    """Replay ``bundle`` in ``sim`` past every mismatch (up to ``limit`` of them).

    Returns ``{"programs_run", "cycles", "mismatches": [(program, text)], "error", "run_seconds",
    "setup_seconds"}``; a program after the ``limit``-th mismatch is not run.
    """
    out = {"programs_run": 0, "cycles": 0, "mismatches": [], "error": None, "run_seconds": 0.0,
           "setup_seconds": 0.0}
    at = 0
    n = len(bundle.programs)
    while at < n:
        sub = Bundle(bundle.ext_words, bundle.programs[at:], config=bundle.config)
        rep = sim.run_bundle(sub)
        out["run_seconds"] += rep.wall_seconds - rep.build_seconds
        out["setup_seconds"] += rep.build_seconds
        out["programs_run"] += len(rep.results)
        out["cycles"] += sum(r.counters.total for r in rep.results)
        if rep.mismatch is None:
            if not rep.passed:
                out["error"] = f"{sim.name}: {rep.line()} (programs {at} ..)"
            break
        k = at + (rep.mismatch.program or 0)
        out["mismatches"].append((k, str(rep.mismatch).split(": ", 1)[-1]))
        at = k + 1
        if len(out["mismatches"]) >= limit:
            break
    return out


def run_piece(task: PieceTask, shrink_seconds: float = DEFAULT_SHRINK_SECONDS) -> dict:
    """Make, replay, shrink and cover one piece; a JSON-able result (see the module's docstring).

    A simulator that cannot run the piece (a missing tool, a failed build) is reported under
    its ``error``; the piece is then not finished and a resumed campaign runs it again.
    """
    spec = task.spec
    t0 = time.perf_counter()
    cpu0 = cpu_seconds()
    bundle = task.bundle()
    generate = time.perf_counter() - t0
    result: dict = {"piece": task.piece, "start": task.start, "stop": task.stop,
                    "programs": len(bundle.programs), "cycles": bundle.total_cycles,
                    "generate_seconds": round(generate, 3), "sims": {}, "kept": [],
                    "worker": f"{socket.gethostname()}:{os.getpid()}"}
    if task.piece != DIRECTED:       # coverage of the random programs (the directed suite breaks the budget)
        # programs that are a HALT alone compare nothing but the HALT: counted, so that a campaign of
        # them is reported as what it is
        result["halt_only"] = sum(len(entry.code) == 1 for entry in bundle.programs)
        result["coverage"] = dict(coverage_model(spec.ext_words, spec.max_cycles, config=spec.config).count_bundle(bundle))
    for name in spec.sims:
        s0 = time.perf_counter()
        c0 = cpu_seconds()
        try:
            sim = _simulator(name, spec.ext_words, config=spec.config)
            rep = replay_all(sim, bundle)
        except Exception as e:          # reported per simulator; the other simulators still run
            rep = {"programs_run": 0, "cycles": 0, "mismatches": [], "run_seconds": 0.0, "setup_seconds": 0.0,
                   "error": f"{name}: {type(e).__name__}: {e}"}
        kept = []
        for k, text in rep["mismatches"]:
            entry = bundle.programs[k]
            item = {"simulator": name, "program": task.start + k if task.piece != DIRECTED else k,
                    "name": entry.name, "mismatch": text, "instructions": len(entry.code),
                    "original": _one_program_text(bundle, k)}
            try:
                small = shrink(sim, entry.code, entry.ext, bundle.ext_words, seconds=shrink_seconds)
                item.update(shrunk_instructions=len(small.programs[0].code), shrunk_mismatch=small.mismatch,
                            bundle=small.bundle.to_text(), shrink_seconds=round(small.seconds, 1),
                            shrink_complete=small.complete)
            except Exception as e:
                item.update(shrink_error=f"{type(e).__name__}: {e}")
            kept.append(item)
        result["kept"] += kept
        result["sims"][name] = {"programs_run": rep["programs_run"], "cycles": rep["cycles"],
                                "mismatches": [{"program": it["program"], "mismatch": it["mismatch"]}
                                               for it in kept],
                                "error": rep["error"], "run_seconds": round(rep["run_seconds"], 3),
                                "setup_seconds": round(rep["setup_seconds"], 3),
                                "seconds": round(time.perf_counter() - s0, 3),
                                "cpu_seconds": round(cpu_seconds() - c0, 3)}
    result["seconds"] = round(time.perf_counter() - t0, 3)
    result["cpu_seconds"] = round(cpu_seconds() - cpu0, 3)
    return result


def _one_program_text(bundle: Bundle, k: int) -> str:
    return Bundle(bundle.ext_words, [bundle.programs[k]], config=bundle.config).to_text()


# ----------------------------------------------------------------------------- the directory

class CampaignDir:
    """``campaign.json``, ``pieces/`` and ``mismatches/`` under one directory."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.manifest = self.root / "campaign.json"
        self.pieces = self.root / "pieces"
        self.mismatches = self.root / "mismatches"

    def exists(self) -> bool:
        return self.manifest.exists()

    def read_spec(self) -> CampaignSpec:
        try:
            d = json.loads(self.manifest.read_text())
            if d.get("format") != FORMAT or d.get("version") != VERSION:
                raise ValueError(f"not a {FORMAT} v{VERSION} manifest")
            return CampaignSpec.from_json(d["spec"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise CampaignError(f"{self.manifest}: not a campaign this version can resume ({e})") from None

    def create(self, spec: CampaignSpec) -> None:
        if self.root.exists() and not self.root.is_dir():
            raise CampaignError(f"--resume {self.root}: exists and is not a directory")
        if not self.root.parent.is_dir():
            raise CampaignError(f"--resume {self.root}: its parent directory {self.root.parent} does not exist")
        if self.root.is_dir() and any(self.root.iterdir()):
            raise CampaignError(f"--resume {self.root}: holds other files and no campaign; give a new or empty "
                                f"directory")
        self.root.mkdir(exist_ok=True)
        self.pieces.mkdir(exist_ok=True)
        atomic_write(self.manifest, json.dumps({"format": FORMAT, "version": VERSION, "spec": spec.to_json()},
                                               indent=2) + "\n")

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the campaign's lock: one command runs a campaign at a time."""
        import fcntl
        with open(self.root / "lock", "w") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise CampaignError(f"{self.root}: another ga2 fuzz is running this campaign (it holds "
                                    f"{self.root / 'lock'}); ga2 fuzz --resume {self.root} --status shows "
                                    f"its progress") from None
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def finished(self, tasks: Sequence[PieceTask]) -> dict[str, dict]:
        """The results already saved, by file name (a file that does not parse is ignored: run again)."""
        out = {}
        for t in tasks:
            p = self.pieces / t.file_name
            try:
                out[t.file_name] = json.loads(p.read_text())
            except (OSError, ValueError):
                continue
        return out

    def save(self, task: PieceTask, result: dict) -> dict:
        """Write the piece's kept programs, then its result (the result file marks the piece done)."""
        kept = []
        for item in result.get("kept", []):
            item = dict(item)
            self.mismatches.mkdir(parents=True, exist_ok=True)
            stem = f"{item['simulator']}-program-{item['program']}" + (f"-{task.piece}" if task.piece == DIRECTED else "")
            if "bundle" in item:
                path = self.mismatches / f"{stem}.hex"
                atomic_write(path, item.pop("bundle"))
                item["file"] = str(path)
            path = self.mismatches / f"{stem}-original.hex"
            atomic_write(path, item.pop("original"))
            item["original_file"] = str(path)
            kept.append(item)
        result = {**result, "kept": kept}
        atomic_write(self.pieces / task.file_name, json.dumps(result) + "\n")
        return result


# ----------------------------------------------------------------------------- runners

class LocalRunner(runner.LocalRunner):
    """The pieces in a pool of ``jobs`` worker processes on this machine (1: in this process)."""

    def __init__(self, jobs: int | None = None, shrink_seconds: float = DEFAULT_SHRINK_SECONDS):
        super().__init__(jobs)
        self.shrink_seconds = shrink_seconds

    def run(self, tasks: Sequence[PieceTask]) -> Iterator[tuple[PieceTask, dict]]:
        """``(task, result)`` for every piece, as the pieces finish."""
        for i, result in self.map_unordered(functools.partial(run_piece, shrink_seconds=self.shrink_seconds),
                                            tasks, name="ga2-piece"):
            yield tasks[i], result


DASK_MISSING = runner.DASK_MISSING


class DaskRunner(runner.DaskRunner):
    """The pieces as tasks of a Dask distributed scheduler at ``address`` (or a ``Client``)."""

    def __init__(self, address, shrink_seconds: float = DEFAULT_SHRINK_SECONDS, timeout: float = 30):
        try:
            super().__init__(address, timeout)
        except runner.RunnerError as e:
            raise CampaignError(str(e)) from None
        self.shrink_seconds = shrink_seconds

    run = LocalRunner.run


# ----------------------------------------------------------------------------- the campaign

@dataclass
class CampaignProgress:
    """What the campaign reports as pieces finish."""
    pieces_done: int
    pieces_total: int
    programs_done: int
    programs_total: int
    mismatches: int
    errors: int
    seconds: float              #: wall time of this run
    programs_this_run: int

    @property
    def rate(self) -> float:
        return self.programs_this_run / self.seconds if self.seconds > 0 else 0.0

    def line(self) -> str:
        """The programs done, mismatches, errors, rate and time left (the pieces are the step's count)."""
        pct = 100 * self.programs_done / self.programs_total if self.programs_total else 100
        left = self.programs_total - self.programs_done
        eta = f", about {_duration(left / self.rate)} left" if self.rate > 0 and left else ""
        return (f"{self.programs_done:,}/{self.programs_total:,} programs ({pct:.1f}%), {self.mismatches} mismatch{'es' if self.mismatches != 1 else ''}"
                + (f", {self.errors} piece error{'s' if self.errors != 1 else ''}" if self.errors else "")
                + f", {self.rate:.1f} programs/s{eta}")


def _duration(s: float) -> str:
    s = int(round(s))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def run_campaign(spec: CampaignSpec, directory: str | os.PathLike, runner=None, *,
                 reporter: Reporter | None = None) -> dict:
    """Run (or resume) the campaign ``spec`` in ``directory``; the report (see :func:`report`).

    ``reporter`` gets ``step(pieces finished, pieces, the programs' line)`` as each piece ends
    (:meth:`CampaignProgress.line`).

    A directory holding a campaign must hold this one (same parameters).  Pieces already
    finished there are not run again.  SIGTERM stops the run like Ctrl-C (KeyboardInterrupt):
    the pieces in flight are lost, the finished ones stay.
    """
    spec.validate()
    d = CampaignDir(directory)
    if d.exists():
        old = d.read_spec()
        if old != spec:
            diff = [f"{k} {getattr(old, k)!r} there, {getattr(spec, k)!r} asked"
                    for k in spec.__dataclass_fields__ if getattr(old, k) != getattr(spec, k)]
            raise CampaignError(f"{directory} holds another campaign: {'; '.join(diff)}")
    else:
        d.create(spec)
    with d.locked():
        return _run(spec, d, runner or LocalRunner(), or_quiet(reporter))


def campaign_status(directory: str | os.PathLike) -> tuple[CampaignSpec, dict]:
    """The campaign in ``directory`` and the report of its finished pieces, running nothing
    (safe while another command runs it)."""
    d = CampaignDir(directory)
    if not d.exists():
        raise CampaignError(f"{directory}: no campaign there (no campaign.json)")
    spec = d.read_spec()
    tasks = spec.pieces()
    saved = d.finished(tasks)
    rep = report(spec, [saved.get(t.file_name) for t in tasks])
    rep["campaign"].update(directory=str(d.root), resumed_pieces=len(saved), pieces_run=0, wall_seconds=0.0,
                           runner="none (status only)")
    return spec, rep


def _run(spec: CampaignSpec, d: CampaignDir, runner, reporter: Reporter) -> dict:
    tasks = spec.pieces()
    saved = d.finished(tasks)
    results = {name: r for name, r in saved.items() if _complete(r)}
    todo = [t for t in tasks if t.file_name not in results]
    programs_total = sum(_task_programs(t) for t in tasks)
    t0 = time.perf_counter()
    state = {"done": sum(r["programs"] for r in results.values()), "now": 0,
             "mismatches": sum(len(r["kept"]) for r in results.values()), "errors": 0}
    errors: dict[str, dict] = {}

    def on_term(signum, frame):
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGTERM, on_term) if threading.current_thread() is threading.main_thread() else None
    try:
        for task, result in runner.run(todo):
            if _complete(result):
                results[task.file_name] = d.save(task, result)
                state["done"] += result["programs"]
                state["now"] += result["programs"]
                state["mismatches"] += len(result["kept"])
            else:
                errors[task.file_name] = result
                state["errors"] += 1
            now = CampaignProgress(len(results), len(tasks), state["done"], programs_total, state["mismatches"],
                                   state["errors"], time.perf_counter() - t0, state["now"])
            reporter.step(now.pieces_done, now.pieces_total, now.line())
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    rep = report(spec, [results.get(t.file_name) or errors.get(t.file_name) for t in tasks])
    rep["campaign"].update(directory=str(d.root), resumed_pieces=len(tasks) - len(todo),
                           pieces_run=len(todo), wall_seconds=round(time.perf_counter() - t0, 3),
                           runner=runner.describe())
    return rep


def _task_programs(t: PieceTask) -> int:
    return (len(directed_bundle(t.spec.ext_words, config=t.spec.config).programs) if t.piece == DIRECTED
            else t.stop - t.start)


def _complete(result: dict) -> bool:
    """A piece is finished when every simulator ran all of it (up to its mismatches) without error."""
    return all(s.get("error") is None for s in result.get("sims", {}).values())


def report(spec: CampaignSpec, results: Sequence[dict | None]) -> dict:
    """The campaign's JSON report from its pieces' results (None: a piece not run)."""
    present = [r for r in results if r is not None]
    finished = [r for r in present if _complete(r)]
    model = coverage_model(spec.ext_words, spec.max_cycles, config=spec.config)
    counts = cov.merge(r.get("coverage", {}) for r in finished)
    per_sim = {}
    first, first_incomplete = None, False
    for name in spec.sims:
        entries = [r["sims"][name] for r in present if name in r["sims"]]
        mism = [m for r in finished for m in r["sims"][name]["mismatches"]]
        errs = [r["sims"][name]["error"] for r in present if r["sims"].get(name, {}).get("error")]
        run = sum(e["run_seconds"] for e in entries)
        cpu = sum(e["cpu_seconds"] for e in entries)
        progs = sum(e["programs_run"] for e in entries)
        cycles = sum(e["cycles"] for e in entries)
        passed = not mism and not errs and len(finished) == len(results)
        if passed:
            line = (f"PASS: {progs} programs match the golden model (memory and all five cycle counters), "
                    f"{cycles} cycles in total")
        elif mism:
            line = f"MISMATCH: {len(mism)} program{'s' if len(mism) != 1 else ''}; first: program {mism[0]['program']}: {mism[0]['mismatch']}"
        elif errs:
            line = f"ERROR: {errs[0]}"
        else:
            line = (f"INCOMPLETE: {progs} programs match the golden model so far (memory and all five cycle "
                    f"counters); {len(results) - len(finished)} of {len(results)} pieces have no result yet")
        per_sim[name] = {"passed": passed, "programs_run": progs, "cycles": cycles,
                         "mismatching_programs": len(mism), "errors": errs[:5],
                         "run_seconds": round(run, 3),
                         "setup_seconds": round(sum(e["setup_seconds"] for e in entries), 3),
                         "cpu_seconds": round(sum(e["cpu_seconds"] for e in entries), 3),
                         "wall_seconds": round(sum(e["seconds"] for e in entries), 3),
                         "programs_per_second": round(progs / run, 2) if run > 0 else None,
                         "programs_per_cpu_second": round(progs / cpu, 2) if cpu > 0 else None,
                         "cycles_per_second": round(cycles / run) if run > 0 else None,
                         "line": line,
                         "mismatch": f"program {mism[0]['program']}: {mism[0]['mismatch']}" if mism else None,
                         "mismatch_program": _name_of(finished, name, mism[0]["program"]) if mism else None}
        # the first mismatch or error names the problem; a simulator that is only incomplete because
        # another one's pieces failed (the golden model's pieces end when a simulator's do) comes last
        if not passed and (first is None or (first_incomplete and (mism or errs))):
            first, first_incomplete = f"{name}: {per_sim[name]['mismatch'] or line}", not (mism or errs)
    kept = [k for r in finished for k in r["kept"]]
    random_programs = sum(r["programs"] for r in finished if r["piece"] != DIRECTED)
    return {
        "programs": sum(r["programs"] for r in finished), "random_programs": random_programs,
        "halt_only_programs": sum(r.get("halt_only", 0) for r in finished if r["piece"] != DIRECTED),
        "seed": spec.seed, "ext_words": spec.ext_words, "max_cycles": spec.max_cycles,
        **({"config": spec.config.to_dict()} if spec.config != isa.BOOK else {}),
        "cycles": sum(r["cycles"] for r in finished),
        "generate_seconds": round(sum(r["generate_seconds"] for r in finished), 3),
        "mismatches": len(kept), "first_mismatch": first,
        "sims": list(spec.sims), "results": per_sim,
        "kept": kept,
        "complete": len(finished) == len(results),
        "coverage": model.summary(counts),
        "campaign": {"spec": spec.to_json(), "pieces": len(results), "pieces_finished": len(finished),
                     "piece_errors": len(present) - len(finished)},
    }


def _name_of(results: Sequence[dict], sim: str, program: int) -> str | None:
    for r in results:
        for k in r["kept"]:
            if k["simulator"] == sim and k["program"] == program:
                return k["name"]
    return None


def coverage_table(spec: CampaignSpec, rep: dict) -> str:
    return coverage_model(spec.ext_words, spec.max_cycles, config=spec.config).table(rep["coverage"]["bins"])


def results_table(rep: dict) -> str:
    """Per simulator: programs, mismatches, cycles, time and programs per second."""
    lines = [f"  {'simulator':10} {'programs':>10} {'mismatch':>9} {'errors':>7} {'cycles':>13} "
             f"{'simulation':>11} {'CPU':>9} {'programs/s':>11} {'cycles/s':>11} {'prog/CPU-s':>11}"]
    for name, e in rep["results"].items():
        per_cpu = e["programs_run"] / e["cpu_seconds"] if e["cpu_seconds"] else 0
        lines.append(f"  {name:10} {e['programs_run']:>10,} {e['mismatching_programs']:>9} {len(e['errors']):>7} "
                     f"{e['cycles']:>13,} {e['run_seconds']:>10.1f}s {e['cpu_seconds']:>8.1f}s "
                     f"{(e['programs_per_second'] or 0):>11,.1f} {(e['cycles_per_second'] or 0):>11,} "
                     f"{per_cpu:>11,.1f}")
    lines.append("  simulation: wall seconds inside the simulator summed over pieces (one process's worth of "
                 "work); programs/s and cycles/s per process from them; CPU: the simulator's CPU seconds "
                 "(its processes included, setup too), which do not depend on what else the machine runs")
    return "\n".join(lines)


__all__ = ["CampaignSpec", "CampaignError", "CampaignDir", "PieceTask", "LocalRunner", "DaskRunner", "CampaignProgress", "Shrunk",
           "run_campaign", "run_piece", "shrink", "replay_all", "report", "results_table", "coverage_table",
           "piece_seed", "DASK_MISSING"]
