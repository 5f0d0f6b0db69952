"""The design space: the chapter's runs on each configuration, cycles per token by unit (``ga2 explore``).

For every configuration (:class:`~ga2_hdl.config.Config`) the chapter's seven
runs (:func:`spec.runs.chapter_table`: the structured model's plain decoding and
k = 3 with a perfect, a noisy and a poor draft; the random model's plain
decoding, k = 1 and k = 3) are decoded with every program compiled for that
chip by Capra and executed on that chip's golden model.  Every figure here is
the sum of the **golden model's counters** of the programs the run executed
(recorded as each program ran, :attr:`spec.on_chip.ProgramRun.measured`), divided
by the tokens decoded; the instruction set's prediction is checked against them
program by program, and a difference is a problem of the entry, not a figure.

The split by unit is the three busy counters (matrix, DMA, vector) and fetch and
issue (:data:`ga2_hdl.isa.FETCH_ISSUE_CYCLES` per instruction issued, HALT
included, one less after an instruction whose next fetch is the cycle of its done:
:meth:`ga2_hdl.isa.InstructionSet.fetch_issue`).  Without overlap the four add up to the total exactly (checked).
With overlap the units work at the same time, so they add up to more than the
total; the difference is reported as ``hidden_by_overlap``.

The speculative speedup of a run is the model's plain decoding cycles over the
run's, on the same chip (as in the chapter's table).  The tokens of every run
are compared with the same references as ``ga2 ch16`` (the rule for the
structured model, the chip's plain tokens or the float target's for the random
model), none of which depends on the chip: equal tokens there are the book
chip's tokens.

Work is spread one configuration per task: over local worker processes, or over
a Dask distributed scheduler (the same client ``ga2 fuzz --scheduler`` uses,
:class:`gen.fuzz.campaign.DaskRunner`).
"""
from __future__ import annotations

import functools
import os
import time
from typing import Sequence

from ga2_hdl import isa
from ga2_hdl.config import PRESETS, Config
from ga2_hdl.support.reporter import Reporter, or_quiet
from gen.support.runner import DaskRunner, LocalRunner

from .ch16 import DISPLAY
from .runs import TABLE_TOKENS, TableRow, chapter_table

#: the units of the split, in stacking order
UNITS = ("matrix", "dma", "vector", "fetch_issue")
UNIT_TITLES = {"matrix": "matrix", "dma": "DMA", "vector": "vector", "fetch_issue": "fetch/issue"}
#: the plain run the speedups are measured against, and the k = 3 runs, by key
PLAIN = ("plain", "plain greedy decoding")
K3_RUNS = (("k3_perfect", "k=3, draft noise 0"), ("k3_noisy", "k=3, draft noise 3"),
           ("k3_poor", "k=3, draft noise 4"), ("k3_random", "random model: k=3"))
#: what every figure is computed from (said in the JSON and the table)
SOURCE = ("sums of the golden model's counters over every program each run executed, compiled by Capra for the "
          "configuration and run on its golden model; per token = sum / tokens decoded")


def default_configs() -> tuple[list[Config], list[tuple[str, str]]]:
    """The book's chip and every preset the instruction set accepts; and ``(name, why)`` for each
    preset it refuses (said, never skipped silently)."""
    configs, skipped = [isa.BOOK], []
    for name, config in PRESETS.items():
        if config.same_chip(isa.BOOK) and name == isa.BOOK.name:
            continue
        try:
            isa.instruction_set(config)
        except isa.IsaError as e:
            skipped.append((name, str(e)))
            continue
        configs.append(config)
    return configs, skipped


def book_first(configs: Sequence[Config]) -> list[Config]:
    """The configurations with the book's chip (if any) first, the others in their order."""
    return sorted(configs, key=lambda c: not c.same_chip(isa.BOOK))


def _split(row: TableRow, config: Config) -> tuple[dict, list[str]]:
    """The run's golden counters summed, its split by unit, and the problems found."""
    problems = []
    iset = isa.instruction_set(config)
    sums = [0] * len(isa.Counter)
    fetch_issue = 0
    for i, r in enumerate(row.log):
        if r.measured is None:
            raise ValueError(f"{row.label}: program {i} has no golden counters recorded")
        predicted = iset.counters(r.code)
        if tuple(r.measured) != tuple(predicted):
            problems.append(f"{row.label}: program {i}: golden counters {list(r.measured)}, the instruction set "
                            f"predicts {list(predicted)}")
        for k, v in enumerate(r.measured):
            sums[k] += v
        fetch_issue += iset.fetch_issue(r.code)
    total, matrix, dma, vector, instructions = sums
    hidden = matrix + dma + vector + fetch_issue - total
    if not config.overlap and hidden != 0:
        problems.append(f"{row.label}: without overlap the units should add up to the total: "
                        f"{matrix} + {dma} + {vector} + {fetch_issue} != {total}")
    counters = dict(zip(isa.COUNTER_NAMES, sums))
    units = {"matrix": matrix, "dma": dma, "vector": vector, "fetch_issue": fetch_issue}
    return {"counters": counters, "units": units, "hidden_by_overlap": hidden}, problems


def explore_config(config: Config, n: int = TABLE_TOKENS) -> dict:
    """One configuration's entry (JSON-ready): the seven runs on it, per token and by unit."""
    from compiler import CompileError

    t0 = time.perf_counter()
    try:
        rows = chapter_table(n, config=config)
    except (CompileError, isa.IsaError) as e:          # the runs do not fit this chip: said, not skipped
        return {"name": config.name, "description": config.describe(), "parameters": config.parameters,
                "config": config.to_dict(), "tokens": n, "error": str(e),
                "problems": [f"the chapter's runs cannot be compiled or run on it: {e}"],
                "seconds": round(time.perf_counter() - t0, 3)}
    problems: list[str] = []
    runs, by_label = [], {}
    plain_cycles = {}
    for row in rows:
        split, found = _split(row, config)
        problems += found
        if not row.tokens_equal:
            problems.append(f"{row.label}: the tokens differ from the reference (the book chip's tokens)")
        model = "random" if row.label.startswith("random") else "structured"
        if row.accepted is None:
            plain_cycles[model] = split["counters"]["total"]
        total = split["counters"]["total"]
        entry = {"label": row.label, "run": DISPLAY.get(row.label, row.label), "tokens_equal": row.tokens_equal,
                 "tokens": row.tokens, "programs": row.programs, "cycles": total,
                 "cycles_per_token": total / n, "accepted": row.accepted, "proposed": row.proposed,
                 "blocks": row.blocks, "speedup": plain_cycles[model] / total,
                 "counters": split["counters"],
                 "per_token": {u: v / n for u, v in split["units"].items()},
                 "hidden_by_overlap_per_token": split["hidden_by_overlap"] / n}
        runs.append(entry)
        by_label[row.label] = entry
    out = {"name": config.name, "description": config.describe(), "parameters": config.parameters,
           "config": config.to_dict(), "tokens": n}
    plain = by_label[PLAIN[1]]
    out["plain_cycles_per_token"] = plain["cycles_per_token"]
    for key, label in K3_RUNS:
        out[f"{key}_cycles_per_token"] = by_label[label]["cycles_per_token"]
    out["per_unit"] = {PLAIN[0]: plain["per_token"], **{key: by_label[label]["per_token"] for key, label in K3_RUNS}}
    out["hidden_by_overlap"] = {PLAIN[0]: plain["hidden_by_overlap_per_token"],
                                **{key: by_label[label]["hidden_by_overlap_per_token"] for key, label in K3_RUNS}}
    out["speedup"] = {key: by_label[label]["speedup"] for key, label in K3_RUNS}
    out["tokens_equal"] = all(r["tokens_equal"] for r in runs)
    out["runs"] = runs
    out["problems"] = problems
    out["source"] = SOURCE
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


# ----------------------------------------------------------------------------- running many
def entry_line(entry: dict) -> str:
    """One configuration's entry in one line: its name, its cycles per token (or its failure), its time."""
    what = (f"FAILED: {entry['error']}" if "error" in entry else
            f"plain {entry['plain_cycles_per_token']:,.1f} cycles/token, "
            f"k=3 perfect {entry['k3_perfect_cycles_per_token']:,.1f}")
    return f"{entry['name']}: {what} ({entry['seconds']:.1f} s)"


def run_explore(configs: Sequence[Config], n: int = TABLE_TOKENS, *, workers: int | None = None,
                dask_client=None, reporter: Reporter | None = None, skipped: Sequence[tuple[str, str]] = ()) -> dict:
    """Every configuration's entry, the book's chip first: ``{"configs": [...], "skipped": [...], ...}``.

    ``dask_client``: a ``dask.distributed.Client`` (e.g. :attr:`gen.fuzz.campaign.DaskRunner.client`); else
    ``workers`` local processes (default one per core).  ``reporter`` gets ``step(configurations done,
    configurations, the entry's line)`` (:func:`entry_line`) as each finishes."""
    reporter = or_quiet(reporter)
    if n < 1:
        raise ValueError(f"tokens must be at least 1, got {n}")
    configs = book_first(configs)
    t0 = time.perf_counter()
    pool = DaskRunner(dask_client) if dask_client is not None else LocalRunner(min(workers or os.cpu_count() or 1,
                                                                                   len(configs) or 1))
    results: dict[int, dict] = {}
    for i, entry in pool.map_unordered(functools.partial(explore_config, n=n), configs, name="ga2-explore"):
        results[i] = entry
        reporter.step(len(results), len(configs), entry_line(entry))
    everything = [results[i] for i in range(len(configs))]
    entries = [e for e in everything if "error" not in e]
    return {"tokens": n, "source": SOURCE, "configs": entries,
            "failed": [e for e in everything if "error" in e],
            "skipped": [{"name": name, "why": why} for name, why in skipped],
            "problems": [f"{e['name']}: {p}" for e in everything for p in e["problems"]],
            "seconds": round(time.perf_counter() - t0, 3)}


# ----------------------------------------------------------------------------- text
def format_area_table(report: dict) -> list[str]:
    """The lines of the area-and-clock table (``ga2 explore --synth``): per configuration the chip's
    LUT4, FF, EBR, MULT18X18D and Fmax on the part, and tokens per second at Fmax; a chip that does
    not fit the part is a row saying which resources it needs more of."""
    synth = report.get("synth", {})
    head = (f"{'configuration':24s} {'LUT4':>7s} {'FF':>6s} {'EBR':>4s} {'MULT':>4s} {'Fmax MHz':>8s}  "
            f"{'plain c/t':>9s} {'tok/s':>7s}  {'k3 c/t':>8s} {'tok/s':>7s}")
    lines = [f"area and clock on the {synth.get('target', '?')} ({synth.get('part', '?')}), out of context; "
             f"tokens per second = Fmax / cycles per token", head, "-" * len(head)]
    for e in report["configs"]:
        r = e.get("synth")
        name = f"{e['name'][:24]:24s}"
        if r is None:
            lines.append(f"{name} (not synthesised)")
        elif r.get("fits") is False:
            lines.append(f"{name} does not fit: {r['reason']}")
        elif r.get("fits") is None and "not_synthesised" in r:
            lines.append(f"{name} not synthesised: {r['not_synthesised']}")
        elif r.get("fits") is None:
            lines.append(f"{name} synthesis failed: {r.get('error', '?')}")
        else:
            fmax = f"{r['fmax_mhz']:8.1f}" if r.get("fmax_mhz") else f"{'-':>8s}"
            rates = (f"{r['plain']['tokens_per_s']:>7,.0f}", f"{r['k3_perfect']['tokens_per_s']:>7,.0f}") \
                if "plain" in r else (f"{'-':>7s}", f"{'-':>7s}")
            # with several placers (--synth-placer heap,static) a chip placed by another than the first
            # says so on its row
            other = isinstance(synth.get("placer"), list) and r.get("placer") != synth["placer"][0]
            lines.append(f"{name} {r['lut']:>7,} {r['ff']:>6,} {r['ebr']:>4} {r['mult']:>4} {fmax}  "
                         f"{e['plain_cycles_per_token']:>9,.1f} {rates[0]}  {e['k3_perfect_cycles_per_token']:>8,.1f} "
                         f"{rates[1]}" + (f"  ({r.get('placer')} placer)" if other else ""))
    if synth.get("flow"):
        lines.append(f"  flow: {synth['flow']}")
    return lines


def format_table(report: dict) -> str:
    """The design-space table: per configuration, cycles per token of plain decoding and of the k = 3
    runs, plain and perfect-draft split by unit, and the speculative speedups."""
    n = report["tokens"]
    unit_head = " ".join(f"{UNIT_TITLES[u]:>11s}" for u in UNITS)
    head = (f"{'configuration':24s} {'plain':>9s} {unit_head}  {'k3 perfect':>10s} {unit_head}  "
            f"{'speedup perfect':>15s} {'noisy':>6s} {'poor':>6s} {'random':>6s}")
    lines = [f"cycles per token over {n} token{'s' if n != 1 else ''} (the chapter's runs), by unit; speedup = "
             f"plain decoding's cycles / the k=3 run's on the same chip", head, "-" * len(head)]
    for e in report["configs"]:
        plain = " ".join(f"{e['per_unit']['plain'][u]:>11,.1f}" for u in UNITS)
        perfect = " ".join(f"{e['per_unit']['k3_perfect'][u]:>11,.1f}" for u in UNITS)
        s = e["speedup"]
        lines.append(f"{e['name'][:24]:24s} {e['plain_cycles_per_token']:>9,.1f} {plain}  "
                     f"{e['k3_perfect_cycles_per_token']:>10,.1f} {perfect}  {s['k3_perfect']:>14.2f}x "
                     f"{s['k3_noisy']:>5.2f}x {s['k3_poor']:>5.2f}x {s['k3_random']:>5.2f}x"
                     + ("" if e["tokens_equal"] else "  TOKENS DIFFER"))
    for e in report["configs"]:
        if any(e["hidden_by_overlap"].values()):
            lines.append(f"  {e['name']}: the units overlap; hidden by overlap per token: plain "
                         f"{e['hidden_by_overlap']['plain']:,.1f}, k3 perfect {e['hidden_by_overlap']['k3_perfect']:,.1f}")
    for e in report["configs"]:
        lines.append(f"  {e['name']}: {e['description']}")
    lines.append(f"  source: {report['source']}")
    if any("synth" in e for e in report["configs"]):
        lines += ["", *format_area_table(report)]
    for s in report["skipped"]:
        lines.append(f"  skipped preset {s['name']}: {s['why']}")
    for e in report.get("failed", []):
        lines.append(f"  FAILED {e['name']}: {e['error']}")
    return "\n".join(lines)
