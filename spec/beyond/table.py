"""``ga2 beyond``: the chapter's rows beside sampling, trees, drafts without weights and adaptive k.

Every run decodes 32 tokens from token 0 on the golden model (each program's
cycles predicted by the ISA); every program of every run is then replayed on
the RTL in each named simulator.  Identical programs (same code and same
external memory: a draft program after the same token, say) are replayed once
and their verdict is shared by every run that executed them.

Rows, per model (structured: the chapter's drafts of noise 0, 3, 4; random
seed 1: noise 0 and, for the tree, 3):

* ``greedy``: the chapter's rows, decoded by the sampling loop at temperature 0
  (one-hot distributions from the chapter's own programs): tokens and cycles
  must equal the chapter's; and the linear blocks the other rows compare with;
* ``sampling``: plain sampling and speculative sampling (k = 3) at temperature 1,
  seed ``SAMPLING_SEED``; the speedup is against plain sampling;
* ``tree``: two legs from the root (2 + 2 and 3 + 3 guesses) against the linear
  block of as many rows (k = 4 and k = 6);
* ``ngram``, ``trigram``: drafts without weights (host lookups, no draft program), k = 3;
* ``adaptive_k``: the adaptive rule against every fixed k = 1 .. 5 on the chapter's drafts.
"""
from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass, field
from typing import Sequence

from ga2_hdl import isa
from gen.support.runner import LocalRunner
from ga2_hdl.formats.bundle import Bundle
from ga2_hdl.config import Config
from ga2_hdl.support.reporter import Reporter, or_quiet

from ..book import BOOK_PLAIN_CYCLES, TOKENS

#: the seed of every sampled run (every run decodes the chapter's TOKENS)
SAMPLING_SEED = 1
TEMPERATURE = 1.0
#: the adaptive rule must stay within this factor of the best fixed k (the issue's target)
ADAPTIVE_TOLERANCE = 1.05


@dataclass
class BeyondRow:
    name: str
    method: str
    model: str
    group: str
    tokens: list[int]
    reference: str                      #: what the tokens were compared with ("" : not compared)
    tokens_ok: bool | None
    cycles: int
    programs: int
    blocks: int = 0
    proposed: int = 0
    accepted: int = 0
    rows: int = 0
    baseline_cycles: int = 0            #: the plain run the speedup is against
    extra: dict = field(default_factory=dict)
    program_ids: list[int] = field(default_factory=list)   #: indices into the unique-program bundle
    sims: dict = field(default_factory=dict)

    @property
    def speedup(self) -> float:
        return self.baseline_cycles / self.cycles if self.cycles else 0.0

    @property
    def acceptance(self) -> float | None:
        return self.accepted / self.proposed if self.proposed else None

    def as_json(self) -> dict:
        return {"name": self.name, "method": self.method, "model": self.model, "group": self.group,
                "tokens": self.tokens, "tokens_compared_with": self.reference or None, "tokens_ok": self.tokens_ok,
                "cycles": self.cycles, "programs": self.programs, "blocks": self.blocks, "proposed": self.proposed,
                "accepted": self.accepted, "acceptance": None if self.acceptance is None else round(self.acceptance, 4),
                "rows_verified": self.rows, "speedup": round(self.speedup, 4),
                "speedup_against_cycles": self.baseline_cycles, **self.extra,
                "sims": {name: {k: v for k, v in s.items()} for name, s in self.sims.items()}}


def _row(name, method, model, group, run, reference_tokens=None, reference="", **extra):
    ok = None if reference_tokens is None else run.tokens == reference_tokens
    return (BeyondRow(name, method, model, group, list(run.tokens), reference, ok, run.cycles, run.programs,
                      run.blocks, run.proposed, run.accepted, run.rows, extra=dict(extra)), list(run.log))


def model_job(kind: str, n: int = TOKENS, *, config: Config) -> list[tuple[BeyondRow, list]]:
    """Every run of one model (see the module note), every program compiled for the chip ``config``."""
    from .host import K_MAX, AdaptiveK, ngram_next
    from .runs import adaptive_costs, linear_run, plain_sampling, speculative_sampling, trigram_draft, tree_run
    from .block_chip import BlockChip
    from ..draft import make_draft
    from ..runs import DRAFT_SEED
    from ..tiny_lm import make_model

    model = make_model(kind, 1)
    out = []
    plain = plain_sampling(model, n, 0.0, SAMPLING_SEED, config=config)
    plain_tokens = plain.tokens
    ref = "the plain greedy decoder's tokens"
    out.append(_row(f"{kind}: plain greedy", "greedy", kind, "chapter", plain))
    chapter = (((0.0, 3), (3.0, 3), (4.0, 3)) if kind == "structured" else ((0.0, 1), (0.0, 3)))
    for noise, k in chapter:
        r = speculative_sampling(model, make_draft(model, noise, DRAFT_SEED), n, k, 0.0, SAMPLING_SEED, config=config)
        out.append(_row(f"{kind}: k={k}, noise {noise:g}", "greedy", kind, "chapter", r, plain_tokens, ref,
                        noise=noise, k=k, temperature=0.0))

    # sampling at temperature 1
    chip = BlockChip(model, None, n, 8, config=config)
    splain = plain_sampling(model, n, TEMPERATURE, SAMPLING_SEED, chip=chip, config=config)
    out.append(_row(f"{kind}: plain sampling T=1", "sampling", kind, "sampling", splain,
                    temperature=TEMPERATURE, seed=SAMPLING_SEED))
    noise = 3.0 if kind == "structured" else 0.0
    for td in ((TEMPERATURE,) if kind == "structured" else (TEMPERATURE, 8.0)):
        r = speculative_sampling(model, make_draft(model, noise, DRAFT_SEED), n, 3, TEMPERATURE, SAMPLING_SEED,
                                 chip=chip.use_draft(make_draft(model, noise, DRAFT_SEED)), draft_temperature=td, config=config)
        out.append(_row(f"{kind}: sampling k=3, noise {noise:g}, draft T={td:g}", "sampling", kind, "sampling", r,
                        noise=noise, k=3, temperature=TEMPERATURE, draft_temperature=td, seed=SAMPLING_SEED))
    for row, _ in out[-(2 if kind == "structured" else 3):]:
        row.baseline_cycles = splain.cycles

    # trees against linear blocks of as many rows
    for noise in ((3.0, 4.0) if kind == "structured" else (0.0, 3.0)):
        Wd = make_draft(model, noise, DRAFT_SEED)
        chip.use_draft(Wd)
        for l0, l1 in ((2, 2), (3, 3)):
            lin = linear_run(model, Wd, n, l0 + l1, chip=chip, config=config)
            out.append(_row(f"{kind}: linear k={l0 + l1}, noise {noise:g}", "greedy", kind, "tree", lin,
                            plain_tokens, ref, noise=noise, k=l0 + l1, rows_per_block=l0 + l1 + 1))
            tr = tree_run(model, Wd, n, l0, l1, chip=chip, config=config)
            out.append(_row(f"{kind}: tree {l0}+{l1}, noise {noise:g}", "tree", kind, "tree", tr, plain_tokens, ref,
                            noise=noise, legs=[l0, l1], rows_per_block=l0 + l1 + 1))

    # drafts without weights
    out.append(_row(f"{kind}: n-gram draft k=3", "ngram", kind, "drafts",
                    linear_run(model, None, n, 3, draft=ngram_next, chip=chip, config=config), plain_tokens, ref, k=3))
    out.append(_row(f"{kind}: trigram draft k=3", "trigram", kind, "drafts",
                    linear_run(model, None, n, 3, draft=trigram_draft(model), chip=chip, config=config), plain_tokens, ref, k=3))

    # adaptive k against every fixed k on the chapter's drafts
    for noise in ((0.0, 3.0, 4.0) if kind == "structured" else (0.0,)):
        Wd = make_draft(model, noise, DRAFT_SEED)
        chip.use_draft(Wd)
        fixed = []
        for k in range(1, 6):
            r = linear_run(model, Wd, n, k, chip=chip, config=config)
            fixed.append(r.cycles)
            out.append(_row(f"{kind}: fixed k={k}, noise {noise:g}", "greedy", kind, "adaptive", r, plain_tokens, ref,
                            noise=noise, k=k))
        costs = adaptive_costs(chip, chip.draft_program().counters()[0], n, K_MAX)
        r = linear_run(model, Wd, n, AdaptiveK(costs), chip=chip, config=config)
        best = min(fixed)
        out.append(_row(f"{kind}: adaptive k, noise {noise:g}", "adaptive_k", kind, "adaptive", r, plain_tokens, ref,
                        noise=noise, ks=r.ks, best_fixed_k=fixed.index(best) + 1, best_fixed_cycles=best,
                        against_best_fixed=round(r.cycles / best, 4), fixed_k3_cycles=fixed[2],
                        within_target=r.cycles <= ADAPTIVE_TOLERANCE * best))
    for row, _ in out:
        if not row.baseline_cycles:
            row.baseline_cycles = plain.cycles
    return out


@dataclass
class BeyondResult:
    tokens: int
    rows: list[BeyondRow]
    bundle: Bundle                 #: the unique programs, for the chip ``config``
    executed: int                  #: programs executed in all runs (with repeats)
    replays: dict
    seconds: dict
    config: Config = field(kw_only=True)  #: the chip every program was compiled for
    unique: int = 0                #: distinct programs
    golden_problems: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        from ..book import BOOK_TABLE
        out = list(self.golden_problems)
        for r in self.rows:
            if r.tokens_ok is False:
                out.append(f"{r.name}: tokens differ from {r.reference}")
            for name, s in r.sims.items():
                if not s["pass"]:
                    out.append(f"{r.name}: {name}: {s['line']}")
        if self.tokens == TOKENS and self.config.same_chip(isa.BOOK):     # another chip has its own cycles
            book = {"structured: plain greedy": "plain greedy decoding",
                    "structured: k=3, noise 0": "k=3, draft noise 0", "structured: k=3, noise 3": "k=3, draft noise 3",
                    "structured: k=3, noise 4": "k=3, draft noise 4", "random: plain greedy": "random model: plain decoding",
                    "random: k=1, noise 0": "random model: k=1", "random: k=3, noise 0": "random model: k=3"}
            for r in self.rows:
                if r.name in book and r.cycles != BOOK_TABLE[book[r.name]].cycles:
                    out.append(f"{r.name}: {r.cycles} cycles at temperature 0, the chapter's "
                               f"{BOOK_TABLE[book[r.name]].cycles}")
        return out

    def as_json(self) -> dict:
        sims = {name: {"pass": rep.passed, "unique_programs": rep.programs, "cycles": rep.cycles,
                       "run_seconds": round(rep.run_seconds, 3), "wall_seconds": round(rep.wall_seconds, 3),
                       "cycles_per_second": round(rep.cycles_per_second, 1)} for name, rep in self.replays.items()}
        return {"tokens": self.tokens, "sampling_seed": SAMPLING_SEED, "temperature": TEMPERATURE,
                "rows": [r.as_json() for r in self.rows], "simulators": sims,
                "programs_executed": self.executed, "unique_programs": self.unique,
                "config": self.config.to_dict(),
                "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
                "problems": self.problems, "ok": not self.problems}


def _program_key(run) -> tuple:
    return (tuple(ins.encode() for ins in run.code), tuple(run.ext))


def run_beyond(n: int = TOKENS, simulators: Sequence[str] = ("icarus", "verilator"), *, workers: int | None = None,
               reporter: Reporter | None = None, config: Config) -> BeyondResult:
    """Every run on the chip ``config`` (see the module note), every program replayed on each simulator
    built for that chip; ``reporter`` gets the text as notes and the replay's steps."""
    from gen.sim.replay import replay

    reporter = or_quiet(reporter)
    say = reporter.note

    if n < 2:
        raise ValueError(f"--tokens must be at least 2, got {n}")
    book_chip = config.same_chip(isa.BOOK)
    workers = workers or os.cpu_count() or 1
    t0 = time.perf_counter()
    kinds = ("structured", "random")
    done = dict(LocalRunner(min(workers, len(kinds))).map_unordered(
        functools.partial(model_job, n=n, config=config), kinds, name="ga2-beyond"))
    runs = [item for i in range(len(kinds)) for item in done[i]]
    t_software = time.perf_counter() - t0

    unique: dict[tuple, int] = {}
    entries = []
    executed = 0
    for row, log in runs:
        for r in log:
            key = _program_key(r)
            if key not in unique:
                unique[key] = len(entries)
                shape = "" if not r.shape else " " + "x".join(map(str, r.shape))
                entries.append((f"{row.name} #{len(row.program_ids)} {r.kind}{shape}", r.code, r.ext, r.measured))
            row.program_ids.append(unique[key])
            executed += 1
    rows = [row for row, _ in runs]
    bundle = Bundle.from_programs((e[:3] for e in entries), config=config)
    golden_problems = [f"{name}: the golden model's counters {list(p.expected.counters)} in the bundle differ from "
                       f"those of the run {list(measured)}"
                       for (name, _, _, measured), p in zip(entries, bundle.programs)
                       if measured is not None and tuple(measured) != tuple(p.expected.counters)]
    say(f"== {len(rows)} runs of {n} tokens" + ("" if book_chip else f" on {config.describe()}")
        + f": {executed} programs executed, {len(entries)} distinct, "
        f"{bundle.total_cycles:,} cycles to replay on {', '.join(simulators) or 'no simulator'} "
        f"({t_software:.0f} s to decode and compile)")
    golden_cycles = [p.expected.counters.total for p in bundle.programs]
    for row in rows:
        if sum(golden_cycles[i] for i in row.program_ids) != row.cycles:
            raise AssertionError(f"{row.name}: the golden model's cycles differ from the ISA's prediction")
    t1 = time.perf_counter()
    replays = replay(bundle, simulators, workers=workers, reporter=reporter) if simulators else {}
    t_replay = time.perf_counter() - t1
    for row in rows:
        for name, rep in replays.items():
            bad = next((m for m in rep.mismatches if m.program in set(row.program_ids)), None)
            missing = sum(rep.outcomes[i] is None for i in row.program_ids)
            cycles = sum(rep.outcomes[i].counters.total for i in row.program_ids if rep.outcomes[i] is not None)
            ok = bad is None and missing == 0 and not rep.errors and cycles == row.cycles
            line = (f"PASS: {len(row.program_ids)} programs, {cycles} cycles" if ok else
                    f"MISMATCH: {bad}" if bad is not None else
                    f"MISMATCH: {missing} programs gave no result" if missing else
                    f"ERROR: {rep.errors[0].splitlines()[0]}" if rep.errors else
                    f"MISMATCH: {cycles} cycles, golden {row.cycles}")
            row.sims[name] = {"pass": ok, "verdict": "PASS" if ok else line.split(":")[0], "cycles": cycles,
                              "line": line}
    return BeyondResult(n, rows, bundle, executed, replays,
                        {"software": t_software, "replay": t_replay, "total": time.perf_counter() - t0},
                        len(entries), golden_problems, config=config)


def format_table(result: BeyondResult) -> str:
    sims = list(result.replays)
    head = (f"{'run':44s} {'method':10s} {'tokens':>6s} {'accepted':>9s} {'blocks':>6s} {'cycles':>9s} "
            f"{'speedup':>7s}" + "".join(f" {name:>9s}" for name in sims))
    lines = [head, "-" * len(head)]
    group = None
    for r in result.rows:
        if r.group != group:
            group = r.group
            lines.append(f"[{group}]")
        acc = "-" if not r.proposed else f"{r.accepted}/{r.proposed}"
        tok = "-" if r.tokens_ok is None else ("yes" if r.tokens_ok else "NO")
        line = (f"{r.name:44s} {r.method:10s} {tok:>6s} {acc:>9s} {r.blocks or '-':>6} {r.cycles:>9,} "
                f"{r.speedup:>6.2f}x" + "".join(f" {r.sims[name]['verdict']:>9s}" for name in sims))
        if r.method == "adaptive_k":
            e = r.extra
            line += (f"   ks {','.join(map(str, e['ks']))}; best fixed k={e['best_fixed_k']} "
                     f"{e['best_fixed_cycles']:,} ({e['against_best_fixed']:.3f}x of it"
                     f"{', within 5%' if e['within_target'] else ', MORE than 5% above'}); fixed k=3 "
                     f"{e['fixed_k3_cycles']:,}")
        if r.method == "sampling" and r.proposed:
            line += f"   acceptance {r.acceptance:.2f}"
        lines.append(line)
    lines.append("  tokens: greedy, tree, n-gram, trigram and adaptive rows against the plain greedy decoder "
                 "on the chip; sampled rows are not compared (their seed is given)")
    lines.append(f"  speedup: against plain greedy decoding of the model ({BOOK_PLAIN_CYCLES:,} cycles for {TOKENS} tokens on the book's "
                 "chip), sampled rows against plain sampling at the same temperature")
    if not result.config.same_chip(isa.BOOK):
        lines.append(f"  chip: {result.config.describe()}: every program compiled for it and run on its golden model; "
                     f"its cycles are its own")
    if sims:
        lines.append("  per simulator: PASS when every program of the run matched the golden model (memory, status, "
                     "all five counters) and the cycles add up to the row's")
    return "\n".join(lines)
