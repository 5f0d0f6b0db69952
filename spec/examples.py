"""The chapter's running examples, computed, with the book's figures beside ours.

Example A (``ga2 example a``): three speculative blocks of the random target
(seed 1) with its bigram draft, traced step by step against the target's float
greedy tokens; the anatomy of the verifier program for a cache of 4 and a block
of 4 against four single-token steps over the same positions; and causality in
integer logits (four blocks that differ in one token).

Example B (``ga2 example b``): when does speculation pay?  (1) the measured
sweep over draft noise and k on the structured model, every run checked to give
the plain decoder's tokens; (2) the geometric model of the speedup against the
measurement; (3) the derived serving arithmetic for a 7B target.

The book's figures (``BOOK_A``, ``BOOK_SWEEP``, ...) are data for comparison
only; everything printed as ours is computed here.  Cycles are the ISA's
prediction for each program (``program_counters``), which the RTL reproduces
exactly (``ga2 ch16`` replays the table's runs).
"""
from __future__ import annotations

import multiprocessing
import os
from dataclasses import dataclass, field
from typing import Sequence

from ga2_hdl import isa
from ga2_hdl.config import Config
from gen.support.workers import fork_pool

from .book import (BOOK_A, BOOK_MODEL, BOOK_PLAIN_CYCLES, BOOK_SERVE, BOOK_SWEEP, BOOK_UNIT_COSTS, SERVE_ACCEPTANCE,  # noqa: F401
                   SERVE_C, SERVE_K, TOKENS)
from .runs import DRAFT_SEED, Anatomy, BlockTrace, anatomy, causality_logits, example_a_chip, trace_blocks

#: example B: the model's context for the plain step and cache for the verifier ("around 12")
MODEL_CONTEXT = 13
MODEL_CACHE = 12
MODEL_NOISES = (0.0, 3.0, 4.0)
MODEL_KS = (1, 3, 5)
UNIT_COST_CACHES = (4, 12, 24)


def mark(ours, book) -> str:
    """'' when equal (or no book value), else ' *'."""
    return "" if book is None or ours == book else " *"


# ====================================================================== example A
@dataclass
class ExampleA:
    reference: list[int]                 #: the target's float greedy tokens
    tokens: list[int]
    traces: list[BlockTrace]
    verifier: Anatomy                    #: cache 4, block 4
    singles: list[Anatomy]               #: contexts 5, 6, 7, 8
    draft: Anatomy
    causality: dict[tuple[int, ...], list[list[int]]]
    weight_words: int                    #: external-memory words of the verifier's weights
    config: Config = field(kw_only=True)  #: the chip every program was compiled for

    @property
    def ratio(self) -> float:
        return self.verifier.counters.total / sum(s.counters.total for s in self.singles)


def example_a(config: Config) -> ExampleA:
    """Example A on the chip ``config`` (the book's figures are the book chip's)."""
    from .on_chip import PlainChip
    from .tiny_lm import float_generate

    chip, Wd = example_a_chip(config=config)
    reference = float_generate(chip.model, 0, len(BOOK_A["reference"]) - 1)
    tokens, traces = trace_blocks(chip, Wd, blocks=3)
    plain = PlainChip(chip.model, 8, config=config)
    singles = [anatomy(plain.program(L).code, config=config) for L in range(5, 9)]
    logits = causality_logits(list(BOOK_A["causality"]), config=config)
    verifier = chip.verifier_program(4, 4)
    weight_words = sum(e["words"] for e in verifier.ext.values() if e["kind"] == "weight")
    return ExampleA(reference, tokens, traces, anatomy(verifier.code, config=config), singles,
                    anatomy(chip.draft_program.code, config=config), logits, weight_words, config=config)


def _unit_cycles(a: Anatomy) -> dict[str, int]:
    total, matrix, dma, vector, instructions = a.counters
    return {"total": total, "matrix": matrix, "dma": dma, "vector": vector,
            "fetch and issue": total - matrix - dma - vector}


def example_a_differences(ex: ExampleA) -> list[str]:
    """Every figure of example A that differs from the book's."""
    d = []
    if ex.reference != BOOK_A["reference"]:
        d.append(f"target greedy tokens {ex.reference}")
    for i, (t, (block, choices, acc, new)) in enumerate(zip(ex.traces, BOOK_A["blocks"]), 1):
        if (t.block, t.choices, t.accepted, t.new_tokens) != (block, choices, acc, new):
            d.append(f"block {i}")
    if ex.tokens != BOOK_A["tokens"]:
        d.append(f"tokens after three blocks {ex.tokens}")
    if ex.verifier.ops != BOOK_A["ops"]:
        d.append(f"verifier histogram {ex.verifier.ops}")
    if ex.verifier.words_loaded != BOOK_A["words"]:
        d.append(f"verifier words {ex.verifier.words_loaded}")
    unit = _unit_cycles(ex.verifier)
    for name, v in BOOK_A["verifier"].items():
        if unit[name] != v:
            d.append(f"verifier {name} cycles {unit[name]}")
    if [s.counters.total for s in ex.singles] != BOOK_A["singles"]:
        d.append(f"single steps {[s.counters.total for s in ex.singles]}")
    if [s.words_loaded for s in ex.singles] != BOOK_A["single_words"]:
        d.append(f"single-step words {[s.words_loaded for s in ex.singles]}")
    if round(ex.ratio, 2) != BOOK_A["ratio"]:
        d.append(f"ratio {ex.ratio:.2f}")
    if ex.draft.counters.total != BOOK_A["draft"]:
        d.append(f"draft step {ex.draft.counters.total} cycles")
    for block, rows in BOOK_A["causality"].items():
        if [r[:5] for r in ex.causality[block]] != rows:
            d.append(f"causality logits of block {list(block)}")
    return d


#: example A's figures that do not depend on the chip (tokens, words loaded, integer logits): on
#: another configuration these must still be the book's; the rest (instruction counts, cycles) change
CHIP_INDEPENDENT_A = ("target greedy tokens", "block ", "tokens after three blocks", "verifier words",
                      "single-step words", "causality logits")


def example_a_failures(ex: ExampleA) -> list[str]:
    """The differences from the book that fail example A: all of them on the book's chip, only the
    chip-independent ones (:data:`CHIP_INDEPENDENT_A`) on another configuration."""
    d = example_a_differences(ex)
    if ex.config.same_chip(isa.BOOK):
        return d
    return [x for x in d if x.startswith(CHIP_INDEPENDENT_A)]


def _changed_rows(base: list[list[int]], other: list[list[int]]) -> list[int]:
    return [i for i, (a, b) in enumerate(zip(base, other)) if a != b]


def format_example_a(ex: ExampleA) -> str:
    B = BOOK_A
    out = ["== 1. three blocks of speculative decoding (random target seed 1, bigram draft with noise 0, k = 3; "
           "the verifier runs on the chip)",
           f"   target's greedy tokens (float): {ex.reference} ...{mark(ex.reference, B['reference'])}"]
    for i, t in enumerate(ex.traces):
        book = B["blocks"][i] if i < len(B["blocks"]) else None
        guesses = t.block[1:]
        verdicts = []
        for j, g in enumerate(guesses):
            verdicts.append(f"guess {j + 1} ({g}) {'agrees' if g == t.choices[j] else 'DISAGREES'}")
            if g != t.choices[j]:
                break
        out.append(f"   block {i + 1}: last token {t.block[0]}, draft guesses {guesses}; the target's choice after "
                   f"each of the {len(t.block)} rows {t.choices}"
                   + ("" if book is None else mark((t.block, t.choices), (book[0], book[1]))))
        out.append(f"            {', '.join(verdicts)}  ->  {t.accepted} accepted, and the target's own token "
                   f"{t.choices[t.accepted]} comes free: tokens {t.new_tokens}; the cache grows by "
                   f"{t.accepted + 1} row{'s' if t.accepted else ''}"
                   + ("" if book is None else mark((t.accepted, t.new_tokens), (book[2], book[3]))))
    agree = ex.tokens == ex.reference[:len(ex.tokens)]
    out.append(f"   tokens so far {ex.tokens} == the target's greedy {ex.reference[:len(ex.tokens)]}: {agree}"
               f"{mark(ex.tokens, B['tokens'])}")

    v = ex.verifier
    out += ["", "== 2. the anatomy of one verifier program (cache of 4 rows, block of 4 rows) against four "
                "single-token steps over the same positions (contexts 5, 6, 7, 8)",
            f"   {'':26s}{'verifier':>9s}{'book':>8s}   " + "".join(f"{'ctx ' + str(L):>8s}" for L in range(5, 9))
            + f"{'4 steps':>9s}"]
    ops = list(B["ops"])
    ops += [o for o in sorted(set(v.ops) | {o for s in ex.singles for o in s.ops}) if o not in ops]
    for op in ops:
        ours = v.ops.get(op, 0)
        each = [s.ops.get(op, 0) for s in ex.singles]
        out.append(f"   {op + ' instructions':26s}{ours:>9d}{B['ops'].get(op, 0):>8d}{mark(ours, B['ops'].get(op, 0)):2s} "
                   + "".join(f"{x:>8d}" for x in each) + f"{sum(each):>9d}")
    each = [s.words_loaded for s in ex.singles]
    out.append(f"   {'words loaded':26s}{v.words_loaded:>9,}{B['words']:>8,}{mark(v.words_loaded, B['words']):2s} "
               + "".join(f"{x:>8,}" for x in each) + f"{sum(each):>9,}"
               + mark(each, B["single_words"]))
    vu = _unit_cycles(v)
    su = [_unit_cycles(s) for s in ex.singles]
    for name in ("total", "matrix", "dma", "vector", "fetch and issue"):
        book = B["verifier"].get(name) if name != "total" else B["verifier"]["total"]
        book_text = f"{book:>8,}" if book is not None else f"{'-':>8s}"
        row_mark = mark(vu[name], book)
        if name == "total":
            row_mark += mark([s["total"] for s in su], B["singles"])
        out.append(f"   {'cycles, ' + name:26s}{vu[name]:>9,}{book_text}{row_mark:2s} "
                   + "".join(f"{s[name]:>8,}" for s in su) + f"{sum(s[name] for s in su):>9,}")
    total_singles = sum(s["total"] for s in su)
    out.append(f"   the block costs {vu['total']:,} / {total_singles:,} = {ex.ratio:.2f} of the four steps "
               f"(book {B['ratio']:.2f}{mark(round(ex.ratio, 2), B['ratio']).strip()}): the weights "
               f"({ex.weight_words:,} words) are loaded once, not four times; a draft step costs {ex.draft.counters.total} cycles "
               f"(book {B['draft']}{mark(ex.draft.counters.total, B['draft']).strip()})")

    out += ["", "== 3. causality in integers (random model seed 2 with Wq and Wk times 4, cache [3, 8, 1, 12]): "
                "the first five integer logits of each row"]
    blocks = list(B["causality"])
    base = ex.causality[blocks[0]]
    for block in blocks:
        rows = ex.causality[block]
        changed = _changed_rows(base, rows)
        note = "" if block == blocks[0] else (f"   rows changed against {list(blocks[0])}: {changed}")
        out.append(f"   block {list(block)}:{note}")
        for i, r in enumerate(rows):
            book = B["causality"][block][i]
            out.append(f"       row {i}: {str(r[:5]):28s}" + ("= book" if r[:5] == book else f"book {book} *"))
    out.append("   changing the last token changes only row 3; changing token 2 changes rows 2 and 3; changing "
               "token 0 changes every row: each row sees exactly the cache and the block up to itself"
               if (_changed_rows(base, ex.causality[(1, 2, 3, 12)]) == [3]
                   and _changed_rows(base, ex.causality[(1, 2, 9, 4)]) == [2, 3]
                   and _changed_rows(base, ex.causality[(5, 2, 3, 4)]) == [0, 1, 2, 3])
               else "   THE ROWS DO NOT CHANGE AS A CAUSAL MASK REQUIRES")
    diffs = example_a_differences(ex)
    out += ["", "   '*' marks a figure that differs from the book's; "
            + ("none does." if not diffs else f"{len(diffs)} do: {'; '.join(diffs)}")]
    if not ex.config.same_chip(isa.BOOK):
        out = [f"== chip: {ex.config.describe()}; the book's figures are the book chip's: instruction counts "
               f"and cycles differ by design, tokens, words loaded and integer logits must not"] + out
    return "\n".join(out)


def example_a_json(ex: ExampleA) -> dict:
    return {
        "reference": ex.reference, "tokens": ex.tokens,
        "trace": [{"block": t.block, "choices": t.choices, "accepted": t.accepted, "new": t.new_tokens}
                  for t in ex.traces],
        "verifier": {"ops": ex.verifier.ops, "words_loaded": ex.verifier.words_loaded,
                     "cycles": _unit_cycles(ex.verifier), "counters": ex.verifier.counters},
        "singles": [{"context": L, "ops": s.ops, "words_loaded": s.words_loaded, "cycles": _unit_cycles(s),
                     "counters": s.counters} for L, s in zip(range(5, 9), ex.singles)],
        "ratio": ex.ratio, "draft_cycles": ex.draft.counters.total,
        "causality": [{"block": list(b), "logits": rows} for b, rows in ex.causality.items()],
        "differences_from_book": example_a_differences(ex),
        "config": ex.config.to_dict(), "failures": example_a_failures(ex),
    }


# ====================================================================== example B
@dataclass
class SweepCell:
    noise: float
    k: int
    accepted: int
    proposed: int
    blocks: int
    programs: int
    cycles: int
    tokens_equal: bool
    speedup: float = 0.0
    verifier_cycles: dict = field(default_factory=dict)   #: (cache, block) -> cycles of each program compiled
    draft_cycles: int = 0

    @property
    def acceptance(self) -> float:
        return self.accepted / self.proposed if self.proposed else 0.0


@dataclass
class ModelRow:
    noise: float
    k: int
    acceptance: float
    expected_tokens: float       #: E[tokens per block]
    verifier_cycles: int         #: t_verify(k + 1) at MODEL_CACHE
    predicted: float
    measured: float


@dataclass
class ExampleB:
    n: int
    noises: list[float]
    ks: list[int]
    plain_cycles: int
    plain_tokens: list[int]
    cells: dict[tuple[float, int], SweepCell]
    draft_cycles: int
    plain_step_cycles: int | None               #: one plain step at MODEL_CONTEXT
    unit_verifier_cycles: dict[int, int]        #: cache -> cycles of a 4-row verifier
    model: list[ModelRow]
    shape_problems: list[str]                   #: programs of one shape whose cycles disagree
    serve: dict[tuple[float, int, float], float]
    seconds: float = 0.0
    config: Config = field(kw_only=True)        #: the chip every program was compiled for

    @property
    def all_tokens_equal(self) -> bool:
        return all(c.tokens_equal for c in self.cells.values())


def _plain_job(n: int, *, config: Config):
    from .on_chip import PlainChip
    from .tiny_lm import make_model

    chip = PlainChip(make_model("structured"), n, config=config)
    run = chip.generate(0, n)
    step = anatomy(chip.program(MODEL_CONTEXT).code, config=config).counters.total if n >= MODEL_CONTEXT else None
    return run.tokens, sum(r.cycles for r in run.log), step


def _cell_job(args):
    from .on_chip import SpeculativeChip
    from .draft import make_draft
    from .tiny_lm import make_model

    noise, k, n, config = args
    model = make_model("structured")
    chip = SpeculativeChip(model, make_draft(model, noise, DRAFT_SEED), n, k, config=config)
    run = chip.generate(0, n)
    shapes = {shape: anatomy(p.code, config=config).counters.total for shape, p in chip.verifier_programs.items()}
    return (noise, k, run.tokens, run.stats.accepted, run.stats.proposed, run.stats.blocks, len(run.log),
            sum(r.cycles for r in run.log), shapes, anatomy(chip.draft_program.code, config=config).counters.total)


def _fixed_verifier_job(args):
    from .on_chip import compile_fixed_verifier
    from .tiny_lm import make_model

    cache, block, config = args
    program, _ = compile_fixed_verifier(make_model("structured"), cache, block, samples=8, config=config)
    return (cache, block), anatomy(program.code, config=config).counters.total


def expected_tokens(a: float, k: int) -> float:
    """E[tokens per block] with independent acceptance a per guess: 1 + a + ... + a^k."""
    return float(k + 1) if a >= 0.999 else (1 - a ** (k + 1)) / (1 - a)


def serving_speedup(a: float, k: int, c: float) -> float:
    """Derived speedup at batch 1 when every pass is bandwidth-bound: E / (1 + k c)."""
    return expected_tokens(a, k) / (1 + k * c)


def best_k(a: float, c: float, largest: int = 64) -> int:
    """The k in 1 .. largest with the highest derived serving speedup."""
    return max(range(1, largest + 1), key=lambda k: serving_speedup(a, k, c))


def _pool(workers: int):
    # gen.support.workers' pool, not multiprocessing.Pool: its workers end quietly on SIGTERM (a Pool's
    # workers inherit ga2's SIGTERM handler, and the Pool's own terminate() could then leave one
    # blocked on a lock its dead sibling held: a hang), and a worker that dies fails the sweep
    # (BrokenProcessPool) instead of leaving map() waiting for ever
    return fork_pool(workers)


def example_b(noises: Sequence[float] = (0, 3, 4, 5, 6), ks: Sequence[int] = (1, 2, 3, 4, 5), n: int = TOKENS,
              workers: int | None = None, *, config: Config) -> ExampleB:
    """The sweep (cells in parallel over ``workers`` processes), the model and the serving table,
    every program compiled for and run on the chip ``config``."""
    import time

    t0 = time.perf_counter()
    noises = [float(x) for x in noises]
    ks = [int(k) for k in ks]
    workers = workers or os.cpu_count() or 1
    cells_args = [(noise, k, n, config) for noise in noises for k in ks]
    # the slowest cells first (more blocks: larger noise and larger k), so the pool ends evenly
    cells_args.sort(key=lambda a: -(a[0] + 1) * (a[1] + 1))
    with _pool(workers) as pool:
        plain_future = pool.submit(_plain_job, n, config=config)
        raw = list(pool.map(_cell_job, cells_args))
        plain_tokens, plain_cycles, plain_step = plain_future.result()
        cells: dict[tuple[float, int], SweepCell] = {}
        shapes: dict[tuple[int, int], set[int]] = {}
        draft_cycles = set()
        for noise, k, tokens, acc, prop, blocks, programs, cycles, vshapes, dcyc in raw:
            cells[(noise, k)] = SweepCell(noise, k, acc, prop, blocks, programs, cycles,
                                          tokens[:n + 1] == plain_tokens[:n + 1], plain_cycles / cycles,
                                          vshapes, dcyc)
            for shape, cyc in vshapes.items():
                shapes.setdefault(shape, set()).add(cyc)
            draft_cycles.add(dcyc)
        # verifier costs the model needs that no run of the sweep compiled: a verifier of that
        # shape compiled on its own (cycles depend on the shape only; checked on the shapes seen twice)
        wanted = {(c, 4) for c in UNIT_COST_CACHES if c < n}
        if plain_step is not None:
            wanted |= {(MODEL_CACHE, k + 1) for k in MODEL_KS if k in ks}
        missing = sorted(s for s in wanted if s not in shapes)
        for shape, cyc in list(pool.map(_fixed_verifier_job, [(c, m, config) for c, m in missing])):
            shapes.setdefault(shape, set()).add(cyc)
    shape_problems = [f"verifier {c}x{m}: programs of one shape took different cycles {sorted(v)}"
                      for (c, m), v in sorted(shapes.items()) if len(v) > 1]
    if len(draft_cycles) > 1:
        shape_problems.append(f"draft programs took different cycles {sorted(draft_cycles)}")
    one = {shape: min(v) for shape, v in shapes.items()}
    unit = {c: one[(c, 4)] for c in UNIT_COST_CACHES if (c, 4) in one}
    td = min(draft_cycles) if draft_cycles else 0
    model_rows = []
    if plain_step is not None:
        for noise in MODEL_NOISES:
            for k in MODEL_KS:
                cell = cells.get((noise, k))
                if cell is None:
                    continue
                e = expected_tokens(cell.acceptance, k)
                tv = one[(MODEL_CACHE, k + 1)]
                model_rows.append(ModelRow(noise, k, cell.acceptance, e, tv, e * plain_step / (k * td + tv),
                                           cell.speedup))
    serve = {(a, k, c): serving_speedup(a, k, c) for a in SERVE_ACCEPTANCE for k in SERVE_K for c in SERVE_C}
    return ExampleB(n, noises, ks, plain_cycles, plain_tokens, cells, td, plain_step, unit, model_rows,
                    shape_problems, serve, time.perf_counter() - t0, config=config)


def _book_cell(ex: ExampleB, noise: float, k: int):
    return BOOK_SWEEP.get((noise, k)) if ex.n == TOKENS else None


def example_b_differences(ex: ExampleB) -> list[str]:
    """Every figure of example B that differs from the book's (where the book gives one)."""
    d = []
    if ex.n == TOKENS and ex.plain_cycles != BOOK_PLAIN_CYCLES:
        d.append(f"plain decoding {ex.plain_cycles} cycles")
    for (noise, k), cell in ex.cells.items():
        book = _book_cell(ex, noise, k)
        if book and (round(100 * cell.acceptance), round(cell.speedup, 2)) != book:
            d.append(f"sweep noise {noise:g} k={k}: {100 * cell.acceptance:.0f}% {cell.speedup:.2f}x "
                     f"(book {book[0]}% {book[1]:.2f}x)")
    if ex.draft_cycles != BOOK_UNIT_COSTS["draft"]:
        d.append(f"draft step {ex.draft_cycles} cycles")
    if ex.n == TOKENS and ex.plain_cycles // ex.n != BOOK_UNIT_COSTS["plain_average"]:
        d.append(f"plain step average {ex.plain_cycles // ex.n}")
    for c, v in ex.unit_verifier_cycles.items():
        if v != BOOK_UNIT_COSTS["verifier"][c]:
            d.append(f"verifier cache {c}: {v} cycles")
    for r in ex.model:
        book = BOOK_MODEL.get((r.noise, r.k)) if ex.n == TOKENS else None
        if book and (round(r.acceptance, 2), round(r.predicted, 2), round(r.measured, 2)) != book:
            d.append(f"model noise {r.noise:g} k={r.k}: {r.acceptance:.2f} {r.predicted:.2f}x {r.measured:.2f}x")
    for key, v in ex.serve.items():
        if round(v, 2) != BOOK_SERVE[key]:
            d.append(f"serving a={key[0]} k={key[1]} c={key[2]}: {v:.2f}x (book {BOOK_SERVE[key]:.2f}x)")
    return d


#: figure of example B -> the exact explanation of a difference from the book (empty: none expected)
EXPLAINED_B: dict[str, str] = {}


def example_b_unexplained(ex: ExampleB) -> list[str]:
    """The differences that fail example B.  On a configuration other than the book's the cycles and
    speedups are the other chip's: only the acceptance of every cell (which no chip changes), the
    serving arithmetic and the shape consistency are held to the book."""
    if not ex.config.same_chip(isa.BOOK):
        d = [f"sweep noise {c.noise:g} k={c.k}: acceptance {100 * c.acceptance:.0f}% (book "
             f"{_book_cell(ex, c.noise, c.k)[0]}%)" for c in ex.cells.values()
             if _book_cell(ex, c.noise, c.k) and round(100 * c.acceptance) != _book_cell(ex, c.noise, c.k)[0]]
        d += [x for x in example_b_differences(ex) if x.startswith("serving")]
        return d + ex.shape_problems
    return [d for d in example_b_differences(ex) if not any(d.startswith(k) for k in EXPLAINED_B)] \
        + ex.shape_problems


def format_example_b(ex: ExampleB) -> str:
    out = [f"== 1. measured: {ex.n} tokens of the structured model; plain decoding = {ex.plain_cycles:,} cycles"
           + ("" if ex.n != TOKENS else f" (book {BOOK_PLAIN_CYCLES:,}{mark(ex.plain_cycles, BOOK_PLAIN_CYCLES).strip()})")
           + ". Cells: acceptance (accepted guesses / guesses) and speedup over plain decoding; the book's cell "
             "below ours. Draft quality is the noise added to the draft's logits (0 = perfect).",
           f"{'noise':>6s} " + "".join(f"{'k=' + str(k):>16s}" for k in ex.ks)]
    for noise in ex.noises:
        ours = " ".join(f"{100 * ex.cells[(noise, k)].acceptance:5.0f}% {ex.cells[(noise, k)].speedup:5.2f}x"
                        f"{'*' if _differs(ex, noise, k) else ' '}" for k in ex.ks)
        out.append(f"{noise:6g}  {ours}")
        books = [_book_cell(ex, noise, k) for k in ex.ks]
        if any(books):
            out.append(f"{'book':>6s}  " + " ".join(f"{b[0]:5d}% {b[1]:5.2f}x " if b else f"{'-':>15s}"
                                                   for b in books))
    out.append("   every run produced exactly the plain decoder's tokens: "
               + ("yes" if ex.all_tokens_equal else
                  "NO: " + ", ".join(f"noise {c.noise:g} k={c.k}" for c in ex.cells.values() if not c.tokens_equal)))
    out.append("   (blocks, programs, cycles per cell are in the JSON; '*' marks a cell that differs from the book)")

    out += ["", "== 2. a model of the speedup: cost per block = k t_draft + t_verify(k+1); tokens per block = "
                "1 + accepted. Unit costs measured from the programs (cycles):",
            f"   one draft step: {ex.draft_cycles} (book {BOOK_UNIT_COSTS['draft']}"
            f"{mark(ex.draft_cycles, BOOK_UNIT_COSTS['draft']).strip()}); one plain target step: "
            f"{ex.plain_cycles // ex.n} on average over {ex.n} tokens"
            + (f" (book {BOOK_UNIT_COSTS['plain_average']}"
               f"{mark(ex.plain_cycles // ex.n, BOOK_UNIT_COSTS['plain_average']).strip()})" if ex.n == TOKENS else "")
            + (f", {ex.plain_step_cycles} at context {MODEL_CONTEXT}" if ex.plain_step_cycles else "")]
    for c, v in ex.unit_verifier_cycles.items():
        book = BOOK_UNIT_COSTS["verifier"].get(c)
        out.append(f"   verifier, cache {c:2d}, m = 4: {v:,} cycles (book {book:,}{mark(v, book).strip()})")
    if ex.model:
        out.append(f"   the geometric model: E = (1 - a^(k+1)) / (1 - a) tokens per block (k+1 when a = 1); "
                   f"speedup = E t_plain / (k t_draft + t_verify), with t_plain the step at context "
                   f"{MODEL_CONTEXT} and t_verify the verifier of k+1 rows against a cache of {MODEL_CACHE}")
        out.append(f"{'noise':>7s} {'k':>3s} {'alpha':>6s} {'E':>5s} {'t_verify':>9s} {'predicted':>10s} "
                   f"{'measured':>9s}   book (alpha, predicted, measured)")
        for r in ex.model:
            book = BOOK_MODEL.get((r.noise, r.k)) if ex.n == TOKENS else None
            ours = (round(r.acceptance, 2), round(r.predicted, 2), round(r.measured, 2))
            out.append(f"{r.noise:7g} {r.k:3d} {r.acceptance:6.2f} {r.expected_tokens:5.2f} {r.verifier_cycles:9,} "
                       f"{r.predicted:9.2f}x {r.measured:8.2f}x   "
                       + ("" if book is None else f"{book[0]:.2f} {book[1]:.2f}x {book[2]:.2f}x{mark(ours, book)}"))
        out.append("   the model is close when acceptance is high and independent from guess to guess; it is rough "
                   "when acceptance is low, because some positions are easy for the draft and some hard, and it "
                   "ignores the shorter first blocks and the overshoot at the end of a run")
    else:
        out.append(f"   (the model needs at least {MODEL_CONTEXT} tokens)")
    if ex.shape_problems:
        out += [f"   PROBLEM: {p}" for p in ex.shape_problems]

    out += ["", "== 3. serving arithmetic (DERIVED, ASSUMED): a 7B target (7 GB of int8 weights) and a draft "
                "costing c of the target per token; at batch 1 both are bandwidth-bound and the verifier reads the "
                "target's weights once for k+1 rows: speedup = E / (1 + k c)",
            f"{'accept a':>9s} {'k':>3s} " + " ".join(f"{'c=' + str(c):>16s}" for c in SERVE_C)]
    for a in SERVE_ACCEPTANCE:
        for k in SERVE_K:
            cells = []
            for c in SERVE_C:
                v, b = ex.serve[(a, k, c)], BOOK_SERVE[(a, k, c)]
                cells.append(f"{v:6.2f}x ({b:.2f}x){mark(round(v, 2), b) or '  '}")
            out.append(f"{a:9.1f} {k:3d} " + " ".join(f"{x:>16s}" for x in cells))
    best = {a: best_k(a, 0.05) for a in SERVE_ACCEPTANCE}
    out.append("   (ours, and the book's in brackets.) Each acceptance rate has a best k: at c = 0.05 it is "
               + ", ".join(f"k = {k} for a = {a}" for a, k in best.items())
               + "; more guesses give more tokens per block but cost k draft steps, and a rejected guess wastes "
                 "everything after it")
    diffs = example_b_differences(ex)
    out += ["", "   differences from the book: " + ("none" if not diffs else "; ".join(diffs))]
    if not ex.config.same_chip(isa.BOOK):
        out = [f"== chip: {ex.config.describe()}; the book's cycles and speedups are the book chip's and differ "
               f"by design; acceptance and tokens must not"] + out
    return "\n".join(out)


def _differs(ex: ExampleB, noise: float, k: int) -> bool:
    book = _book_cell(ex, noise, k)
    cell = ex.cells[(noise, k)]
    return bool(book) and (round(100 * cell.acceptance), round(cell.speedup, 2)) != book


def example_b_json(ex: ExampleB) -> dict:
    return {
        "tokens": ex.n, "plain_cycles": ex.plain_cycles, "noises": ex.noises, "ks": ex.ks,
        "grid": [{"noise": c.noise, "k": c.k, "accepted": c.accepted, "proposed": c.proposed,
                  "acceptance": c.acceptance, "blocks": c.blocks, "programs": c.programs, "cycles": c.cycles,
                  "speedup": c.speedup, "tokens_equal": c.tokens_equal,
                  "book": None if not _book_cell(ex, c.noise, c.k) else
                  {"acceptance_percent": _book_cell(ex, c.noise, c.k)[0], "speedup": _book_cell(ex, c.noise, c.k)[1]}}
                 for c in ex.cells.values()],
        "unit_costs": {"draft": ex.draft_cycles, "plain_average": ex.plain_cycles // ex.n,
                       "plain_step_at_context": {str(MODEL_CONTEXT): ex.plain_step_cycles},
                       "verifier_m4": {str(c): v for c, v in ex.unit_verifier_cycles.items()}},
        "model": [{"noise": r.noise, "k": r.k, "acceptance": r.acceptance, "expected_tokens": r.expected_tokens,
                   "t_verify": r.verifier_cycles, "predicted": r.predicted, "measured": r.measured} for r in ex.model],
        "serve": [{"a": a, "k": k, "c": c, "speedup": v, "book": BOOK_SERVE[(a, k, c)]}
                  for (a, k, c), v in ex.serve.items()],
        "all_tokens_equal": ex.all_tokens_equal, "shape_problems": ex.shape_problems,
        "differences_from_book": example_b_differences(ex), "seconds": ex.seconds,
        "config": ex.config.to_dict(), "failures": example_b_unexplained(ex),
    }
