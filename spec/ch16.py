"""The chapter's results on the chip, to the cycle: ``ga2 ch16``.

1. The software checks of speculative decoding (``spec.checks``).
2. The seven runs of the chapter's table (structured model: plain and k = 3
   with a perfect, a noisy and a poor draft; random model seed 1: plain, k = 1
   and k = 3), decoded by the host loop with every program's cycles predicted by
   the ISA.
3. Every program of every run replayed on the RTL in each named simulator.  One
   pool of worker processes (:class:`gen.sim.replay.ReplayPool`) builds the simulators,
   decodes the seven runs side by side, replays each run as soon as it is decoded
   (in pieces that share one cached build per simulator) and runs the checks; the
   results are put together as one bundle of all the runs and attributed back to them.
4. The table, with the book's figures beside ours and a mark where they differ.

The figures of the book are data here (:data:`BOOK_TABLE`), used only to compare;
every number in the table is computed.  A difference from the book is a failure
unless :data:`EXPLAINED` gives its exact explanation.

On another chip (``config``): every program is compiled for it, the bundle is made
for it (its expectations from that chip's golden model) and each simulator is
built for it; the figures that no chip changes (tokens, accepted, proposed,
blocks, programs) must still be the book's, the cycles and speedups are that chip's.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ga2_hdl import isa
from ga2_hdl.formats.bundle import Bundle
from ga2_hdl.config import Config
from ga2_hdl.support.reporter import Reporter, or_quiet

from .book import BOOK_TABLE, BookRow  # noqa: F401  (the chapter's table, read here)
from .runs import CHAPTER_RUNS, TABLE_TOKENS, TableRow, bundle_of
from .tiny_lm import float_generate, make_model


#: the names the table prints, by label of ``spec.runs``
DISPLAY = {
    "plain greedy decoding": "plain greedy decoding",
    "k=3, draft noise 0": "k=3, perfect draft (noise 0)",
    "k=3, draft noise 3": "k=3, noisy draft (noise 3)",
    "k=3, draft noise 4": "k=3, poor draft (noise 4)",
    "random model: plain decoding": "random model, plain",
    "random model: k=1": "random model, k=1",
    "random model: k=3": "random model, k=3",
}

#: (label, figure) -> the exact explanation of a difference from the book.  Empty: every
#: figure of the table is reproduced; a difference not listed here fails the command.
EXPLAINED: dict[tuple[str, str], str] = {}


@dataclass
class Ch16Row:
    """One run of the table, with its replays."""
    label: str
    tokens_equal: bool
    reference_kind: str          #: what the tokens were compared with
    accepted: int | None
    proposed: int | None
    blocks: int | None
    programs: int
    cycles: int                  #: the golden model's (ISA's) prediction
    speedup: float
    first_program: int           #: index of the run's first program in the combined bundle
    book: BookRow | None
    sims: dict[str, dict] = field(default_factory=dict)   #: name -> {"pass", "cycles", "verdict", "line"}
    book_chip: bool = True       #: compiled for the book's chip (else only chip-independent figures are compared)

    @property
    def display(self) -> str:
        return DISPLAY.get(self.label, self.label)

    def differences(self) -> list[tuple[str, object, object]]:
        """(figure, ours, book's) for every figure that differs from the book."""
        if self.book is None:
            return []
        b = self.book
        pairs = (("accepted", self.accepted, b.accepted), ("proposed", self.proposed, b.proposed),
                 ("blocks", self.blocks, b.blocks), ("programs", self.programs, b.programs))
        if self.book_chip:          # cycles and speedups are the book chip's: another chip has its own
            pairs += (("cycles", self.cycles, b.cycles), ("speedup", round(self.speedup, 2), b.speedup))
        return [(what, ours, theirs) for what, ours, theirs in pairs if ours != theirs]

    def as_json(self) -> dict:
        return {"run": self.display, "label": self.label, "tokens_equal": self.tokens_equal,
                "tokens_compared_with": self.reference_kind,
                "accepted": self.accepted, "proposed": self.proposed, "blocks": self.blocks,
                "programs": self.programs, "cycles": self.cycles, "speedup": round(self.speedup, 4),
                "book_cycles": self.book.cycles if self.book else None,
                "book": None if self.book is None else {
                    "accepted": self.book.accepted, "proposed": self.book.proposed, "blocks": self.book.blocks,
                    "programs": self.book.programs, "cycles": self.book.cycles, "speedup": self.book.speedup},
                "differences": [{"figure": w, "ours": o, "book": t,
                                 "explanation": EXPLAINED.get((self.label, w))} for w, o, t in self.differences()],
                "sims": self.sims}


# ------------------------------------------------------------------ the chip against the job
class ChipTooSmall(ValueError):
    """The configuration lacks what the workload's programs need (one line: what, for which program)."""


def _largest_programs(spec, n: int, config: Config):
    """(what, thunk) for the largest programs run ``spec`` of ``n`` tokens compiles on ``config``: the
    decode step at the longest context; the verifier at the largest cache + block and at the largest
    block the float host loop visits (its calibration records every shape), and the draft."""
    from .draft import make_draft
    from .on_chip import PlainChip, SpeculativeChip
    from .runs import DRAFT_SEED
    model = make_model("structured") if spec.model == "structured" else make_model("random", 1)
    if spec.k is None:
        chip = PlainChip(model, n, config=config)
        return [(f"the decode step at context {n}", lambda: chip.program(n))]
    chip = SpeculativeChip(model, make_draft(model, spec.noise, DRAFT_SEED), n, spec.k, config=config)
    shapes = dict.fromkeys([max(chip.verifier_samples, key=sum), max(chip.verifier_samples, key=lambda s: s[::-1])])
    out = [(f"the verifier for cache {c} and block {b}", lambda c=c, b=b: chip.verifier_program(c, b))
           for c, b in shapes]
    return out + [("the draft step", lambda: chip.draft_program)]


def chip_problems(config: Config, n: int = TABLE_TOKENS, runs=None) -> list[str]:
    """What the chapter's runs (``runs``, default all seven) of ``n`` tokens need that the chip
    ``config`` lacks, one sentence per kind of program, derived by compiling each run's largest
    programs for the chip (Capra checks them against the configuration's limits: the matrix unit's
    K, the memories, the instruction memory).  Empty when they fit.  Cheap next to the job: a few
    compilations per run, no decoding."""
    import re
    from compiler import CompileError
    from .runs import CHAPTER_RUNS
    # one sentence per kind of refusal (its text without numbers and node names): the program
    # that needs the most of it
    worst: dict[str, tuple[tuple[int, ...], str]] = {}
    for spec in CHAPTER_RUNS if runs is None else runs:
        for what, make in _largest_programs(spec, n, config):
            try:
                make()
            except CompileError as e:
                text = str(e)
                kind = re.sub(r"\d+|node [^:]*: |\(the largest is .*\)", "", text)
                need = tuple(int(x) for x in re.findall(r"\d+", re.sub(r"node \d+", "", text)))
                if kind not in worst or need > worst[kind][0]:
                    worst[kind] = (need, f"{what} ({spec.label}): {text}")
    return [line for _, line in worst.values()]


def check_chip(config: Config, n: int = TABLE_TOKENS, job: str = "the chapter's runs", runs=None) -> None:
    """Refuse (:class:`ChipTooSmall`, one line) a chip the workload's programs (``runs``: run specs of
    ``spec.runs``, default the chapter's seven) do not fit."""
    problems = chip_problems(config, n, runs)
    if problems:
        raise ChipTooSmall(f"{config.name}: {job} ({n} tokens) need what the chip lacks: " + "; ".join(problems))


def example_runs(noises, ks) -> list:
    """The run specs whose largest programs bound a sweep of draft noises and k (example B,
    ``ga2 beyond``'s fixed-k rows): the largest k with every noise, on both models."""
    from .runs import RunSpec
    k = max(ks)
    return [RunSpec(f"k={k}, draft noise {noise:g}", "structured", k, noise) for noise in noises] + \
        [RunSpec(f"random model: k={k}", "random", k)]


# ------------------------------------------------------------------ the software side
def software_problems() -> list[str]:
    """The five checks of ``spec.checks`` on the installed package (the chip checks on the book's
    chip, whichever chip the table runs on); empty when all pass."""
    from . import checks
    return checks.all_problems(checks.installed_modules(config=isa.BOOK))


def _run_job(index: int, n: int, config: Config) -> tuple[TableRow, Bundle]:
    """Run ``index`` of the chapter's table (:data:`spec.runs.CHAPTER_RUNS`) and its programs as a bundle
    (a worker's task: the runs are decoded side by side and each is replayed as soon as it is known)."""
    row = CHAPTER_RUNS[index].row(n, config=config)
    return row, bundle_of(row.log, row.label)


def _reference(rows: Sequence[TableRow], n: int) -> list[str]:
    """Each run's reference (set on the rows) and what it is, in words.  The structured model's runs
    carry the rule's tokens; the random model's plain run cannot be compared with itself, so it is
    compared with the float target, and its speculative runs with the chip's own plain tokens."""
    kinds = []
    plain_random = next(r for spec, r in zip(CHAPTER_RUNS, rows) if spec.model == "random" and spec.k is None)
    for spec, row in zip(CHAPTER_RUNS, rows):
        if spec.model == "structured":
            kinds.append("the rule f(t) = 5t + 3 mod 16")
        elif spec.k is None:
            row.reference = float_generate(make_model("random", 1), 0, n)
            kinds.append("the float target's greedy tokens")
        else:
            row.reference = plain_random.tokens
            kinds.append("the chip's own plain greedy tokens")
    return kinds


@dataclass
class Ch16Result:
    tokens: int
    problems: list[str]
    rows: list[Ch16Row]
    bundle: Bundle
    replays: dict                 #: simulator name -> gen.sim.replay.SimulatorReplay
    seconds: dict[str, float]     #: "software", "replay", "total"
    golden_problems: list[str] = field(default_factory=list)
    config: Config = field(kw_only=True)  #: the chip every program was compiled for

    @property
    def programs(self) -> int:
        return sum(r.programs for r in self.rows)

    @property
    def golden_cycles(self) -> int:
        """The golden model's cycles: its expectations in the bundle."""
        return self.bundle.total_cycles

    @property
    def simulator_names(self) -> list[str]:
        return list(dict.fromkeys(name for r in self.rows for name in r.sims))

    @property
    def mismatches(self) -> list[str]:
        return [f"{row.display}: {name}: {s['line']}" for row in self.rows for name, s in row.sims.items()
                if not s["pass"]]

    @property
    def unexplained(self) -> list[str]:
        return [f"{row.display}: {w} {o} (book {t})" for row in self.rows for w, o, t in row.differences()
                if (row.label, w) not in EXPLAINED]

    @property
    def ok(self) -> bool:
        return (not self.problems and not self.mismatches and not self.unexplained and not self.golden_problems
                and all(r.tokens_equal for r in self.rows))

    def as_json(self) -> dict:
        sims = {}
        for name, rep in self.replays.items():
            sims[name] = {"pass": rep.passed, "cycles": rep.cycles, "programs": rep.programs,
                          "pieces": len(rep.pieces), "run_seconds": round(rep.run_seconds, 3),
                          "setup_seconds": round(rep.setup_seconds, 3), "wall_seconds": round(rep.wall_seconds, 3),
                          "cpu_seconds": round(rep.cpu_seconds, 3),
                          "cycles_per_second": round(rep.cycles_per_second, 1),
                          "cycles_per_wall_second": round(rep.cycles / rep.wall_seconds, 1)
                          if rep.wall_seconds else None}
        book_chip = self.config.same_chip(isa.BOOK)
        with_book = self.tokens == TABLE_TOKENS
        compared = {"tokens_accepted_blocks_programs": "the book's" if with_book else "not compared with the book",
                    "cycles_and_speedups": ("the book's and the golden model's" if book_chip and with_book else
                                            "this chip's golden model (replayed on the RTL)")}
        return {"tokens": self.tokens, "config": self.config.to_dict(), "compared_with": compared,
                "problems": self.problems,
                "rows": [r.as_json() for r in self.rows],
                "simulators": sims, "programs": self.programs, "golden_cycles": self.golden_cycles,
                "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
                "mismatches": self.mismatches, "unexplained_differences": self.unexplained,
                "golden_problems": self.golden_problems, "ok": self.ok}


def run_ch16(n: int = TABLE_TOKENS, simulators: Sequence[str] = ("icarus", "verilator"), *,
             workers: int | None = None, checks: bool = True,
             reporter: Reporter | None = None,
             config: Config, meanwhile: Callable[[], object] | None = None) -> Ch16Result:
    """The whole job, every program compiled for the chip ``config``.  ``reporter`` gets each part's text
    as notes as soon as it is known and the replay's steps (programs done, programs, simulator);
    ``meanwhile()`` runs in this process while the workers work (:meth:`gen.sim.replay.ReplayPool.run`)."""
    from gen.sim.replay import BUILD_HINT, ReplayPool, concatenate

    reporter = or_quiet(reporter)
    say = reporter.note

    if n < 1:
        raise ValueError(f"--tokens must be at least 1, got {n}")
    book_chip = config.same_chip(isa.BOOK)
    if not book_chip:                   # before any work: the book's chip runs its own chapter
        check_chip(config, n)
    workers = workers or os.cpu_count() or 1
    t0 = time.perf_counter()
    # One pool does everything, so that no core waits while there is work: the simulators' builds
    # (the longest build first, beside the decoding), the seven runs, each run's replay as
    # soon as the run is decoded, and the software checks.
    pool = ReplayPool(simulators, config=config, workers=workers, reporter=reporter, pieces_per_worker=0)
    order = sorted(simulators, key=lambda name: -BUILD_HINT.get(name, 0.0))     # the longest build first
    for name in order[:1]:
        pool.prepare(name, config.ext_words, priority=ReplayPool.PREPARE)
    for name in order[1:]:
        pool.prepare(name, config.ext_words, priority=2)       # after the runs have started
    runs: dict[int, tuple[TableRow, Bundle]] = {}
    bundle_of_run: dict[int, int] = {}
    done: dict[str, float] = {}
    problems: list[str] = []

    def run_done(index: int, result: tuple[TableRow, Bundle]) -> None:
        runs[index] = result
        bundle_of_run[index] = pool.add(result[1])
        if len(runs) == len(CHAPTER_RUNS):
            done["runs"] = time.perf_counter() - t0

    def checks_done(found: list[str]) -> None:
        problems.extend(found)
        done["checks"] = time.perf_counter() - t0
        say("== 1. software checks: block form == sequential float step; exactness for every draft; "
            "causality on the chip; compiled verifier == interpreter and close to float; "
            "the rule through the chip's loop")
        say("  problems: " + ("none" if not problems else ""))
        for p in problems:
            say(f"    {p}")

    for index in range(len(CHAPTER_RUNS)):
        pool.submit(_run_job, index, n, config, priority=1, on_done=lambda r, i=index: run_done(i, r))
    if checks:
        pool.submit(software_problems, priority=3, on_done=checks_done)
    pool.run(meanwhile=meanwhile)
    t_software = max(done.values())

    ordered = [runs[i][0] for i in range(len(CHAPTER_RUNS))]
    kinds = _reference(ordered, n)
    rows: list[Ch16Row] = []
    bundles = [runs[i][1] for i in range(len(CHAPTER_RUNS))]
    combined = Bundle(bundles[0].ext_words, config=config)
    golden_problems = []
    plain_cycles = {}
    for row, kind, bundle in zip(ordered, kinds, bundles):
        if bundle.ext_words != combined.ext_words:
            raise ValueError("the runs' bundles were made for different external-memory sizes")
        elif bundle.total_cycles != row.cycles:
            golden_problems.append(f"{row.label}: the golden model's cycles {bundle.total_cycles} differ from the "
                                   f"ISA's prediction {row.cycles}")
        model = "random" if row.label.startswith("random") else "structured"
        if row.accepted is None:
            plain_cycles[model] = row.cycles
        book = BOOK_TABLE.get(row.label) if n == TABLE_TOKENS else None
        rows.append(Ch16Row(row.label, row.tokens_equal, kind, row.accepted, row.proposed, row.blocks,
                            row.programs, row.cycles, plain_cycles[model] / row.cycles,
                            sum(r.programs for r in rows), book, book_chip=book_chip))
        combined.programs.extend(bundle.programs)

    say("")
    say(f"== 2. {len(rows)} runs of {n} tokens"
        + ("" if book_chip else f" on {config.describe()}")
        + f": {sum(r.programs for r in rows)} programs, "
        f"{sum(r.cycles for r in rows):,} cycles, replayed on {', '.join(simulators) or 'no simulator'} "
        f"as each run was decoded ({workers} worker process{'es' if workers != 1 else ''})")
    per_bundle = pool.replays()
    replays = {name: concatenate([per_bundle[bundle_of_run[i]][name] for i in range(len(CHAPTER_RUNS))])
               for name in pool.names}
    pieces = [p for rep in replays.values() for p in rep.pieces]
    t_replay = (max(p.ended for p in pieces) - min(p.started for p in pieces)) if pieces else 0.0
    for row in rows:
        for name, rep in replays.items():
            v = rep.span(row.first_program, row.first_program + row.programs)
            cycles_ok = v.cycles == row.cycles
            row.sims[name] = {"pass": v.passed and cycles_ok, "cycles": v.cycles, "verdict": v.verdict
                              if cycles_ok or not v.passed else "MISMATCH",
                              "line": v.line() if cycles_ok or not v.passed else
                              f"MISMATCH: {v.cycles} cycles, golden {row.cycles}"}
    return Ch16Result(n, problems, rows, combined, replays,
                      {"software": t_software, "replay": t_replay, "total": time.perf_counter() - t0},
                      golden_problems, config=config)


# ------------------------------------------------------------------ the text
def _count(x) -> str:
    return "-" if x is None else f"{x:,}"


def format_table(result: Ch16Result) -> str:
    sims = result.simulator_names
    head = (f"{'run':30s} {'tokens':>6s} {'accepted':>9s} {'blocks':>6s} {'programs':>8s} {'cycles':>9s} "
            f"{'speedup':>7s} {'book':>9s}" + "".join(f"  {name:>19s}" for name in sims))
    lines = [head, "-" * len(head)]
    for r in result.rows:
        diff = {w for w, _, _ in r.differences()}
        acc = "-" if r.accepted is None else f"{r.accepted}/{r.proposed}"
        mark = lambda *figs: "*" if diff & set(figs) else " "
        book = "-" if r.book is None else f"{r.book.cycles:,}"
        line = (f"{r.display:30s} {'yes' if r.tokens_equal else 'NO':>6s} {acc:>8s}{mark('accepted', 'proposed')}"
                f"{_count(r.blocks):>6s}{mark('blocks')}{r.programs:>7d}{mark('programs')} "
                f"{r.cycles:>9,}{mark('cycles')}{r.speedup:>6.2f}x{mark('speedup')}{book:>9s}")
        for name in sims:
            s = r.sims[name]
            line += f"  {s['verdict']:>8s} {s['cycles']:>10,}"
        lines.append(line)
    lines.append("  tokens: compared with the rule f(t) = 5t + 3 mod 16 for the structured model, with the chip's "
                 "own plain greedy tokens for the random model's speculative runs, and with the float target's "
                 "greedy tokens for its plain run")
    if result.tokens == TABLE_TOKENS:
        lines.append("  book: the chapter's cycles for the run; '*' marks a figure of ours that differs from the "
                     "chapter's (accepted/proposed, blocks, programs, cycles or speedup)")
    else:
        lines.append(f"  book: the chapter's figures are for {TABLE_TOKENS} tokens; not compared at {result.tokens}")
    if not result.config.same_chip(isa.BOOK):
        lines.append(f"  chip: {result.config.describe()}: its cycles and speedups are its own (the book column is the "
                     f"book chip's); tokens, accepted/proposed, blocks and programs are compared with the book's")
    if sims:
        lines.append("  per simulator: PASS when every program of the run matched the golden model (memory, status "
                     "and all five counters), and the cycles the RTL counted")
    return "\n".join(lines)


def format_speeds(result: Ch16Result) -> str:
    lines = []
    for name, rep in result.replays.items():
        wall = rep.wall_seconds
        lines.append(f"  {name:9s} {rep.cycles:>10,} cycles in {rep.run_seconds:6.1f} s of simulation "
                     f"({len(rep.pieces)} piece{'s' if len(rep.pieces) != 1 else ''}, {rep.setup_seconds:.1f} s "
                     f"export/build, {wall:.1f} s from first start to last end, {rep.cpu_seconds:.1f} CPU s): "
                     f"{rep.cycles_per_second:,.0f} cycles/s per process")
    return "\n".join(lines)


def format_differences(result: Ch16Result) -> str:
    """What was compared with what, and every difference.  On the book's chip every figure is
    compared with the book's; on another chip the figures no chip changes (tokens, accepted/proposed,
    blocks, programs) are, and its cycles and speedups with its own golden model (the replays'
    verdicts), never called equal to the book's; at another number of tokens nothing is compared
    with the book (its figures are for 32)."""
    lines = []
    for row in result.rows:
        for what, ours, theirs in row.differences():
            why = EXPLAINED.get((row.label, what))
            lines.append(f"  {row.display}: {what} {ours} against the book's {theirs}: "
                         + (why if why else "NOT EXPLAINED"))
    if not any(r.book for r in result.rows):
        return (f"  not compared: the chapter's figures are for {TABLE_TOKENS} tokens, this run decoded "
                f"{result.tokens}")
    if result.config.same_chip(isa.BOOK):
        return "\n".join(lines) if lines else "  none: every figure of the table equals the book's"
    out = [f"  chip: {result.config.describe()}, not the book's: tokens, accepted/proposed, blocks and programs are "
           f"compared with the book's; cycles and speedups with this chip's own golden model"]
    out += lines or ["  tokens, accepted/proposed, blocks, programs: each equals the book's"]
    sims = result.simulator_names
    agree = [r for r in result.rows if r.sims and all(s["pass"] for s in r.sims.values())]
    out.append(f"  cycles: {len(agree)} of {len(result.rows)} runs replayed in {', '.join(sims)} with this chip's golden "
               f"model's cycles" if sims else "  cycles: not replayed on the RTL (no simulator named): the golden "
                                              "model's alone")
    for r in result.rows:
        if r.book is not None:
            out.append(f"    {r.display}: {r.cycles:,} cycles on this chip, {r.book.cycles:,} on the book's "
                       f"({r.cycles / r.book.cycles:.3f}x; speedup {r.speedup:.2f}x, the book's {r.book.speedup:.2f}x)")
    return "\n".join(out)
