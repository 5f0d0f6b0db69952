"""Cycles per token with overlap: example A's plain decoding on the book's chip and on the overlap chip.

``python -m spec.overlap_bench [TOKENS]`` decodes TOKENS tokens (32, the table's
run, by default) greedily with example A's target (the random model, seed 1) on
the chip, then takes every program it ran and prints, per token, the golden
model's counters on

* the book's chip (each instruction fetch + issue + busy, one at a time),
* the overlap preset, programs as Capra emits them,
* the overlap preset, programs reordered by ``compiler.schedule``,

split by unit (matrix, DMA, vector busy cycles; fetch and issue, as on the book's
chip, the cycles no unit is busy), with the share of the total in which each unit
is busy.  It also checks, program by program, that the scheduled program leaves the
same external memory as the original one in the golden model.
"""
from __future__ import annotations

import sys

from compiler.schedule import schedule
from ga2_hdl import golden, isa
from ga2_hdl.config import PRESETS

from .runs import TABLE_TOKENS, make_model, plain_row


def measure(n: int = TABLE_TOKENS) -> dict:
    row = plain_row("plain", make_model("random", 1), n)
    overlap = PRESETS["overlap"]
    iset = isa.instruction_set(overlap)
    sums = {"book": [0] * 5, "overlap": [0] * 5, "overlap + schedule": [0] * 5}
    for run in row.log:
        code = run.code
        order = schedule(code, overlap)
        for name, counters in (("book", isa.program_counters(code)), ("overlap", iset.counters(code)),
                               ("overlap + schedule", iset.counters(order))):
            sums[name] = [a + b for a, b in zip(sums[name], counters)]
        a = golden.run(code, run.ext, config=overlap)
        b = golden.run(order, run.ext, config=overlap)
        if (a.ext, a.error) != (b.ext, b.error):
            raise AssertionError(f"context {run.shape}: the scheduled program leaves another memory")
    return {"tokens": len(row.log), "sums": sums}


def report(result: dict) -> str:
    n = result["tokens"]
    lines = [f"example A's target (random model, seed 1), plain greedy decoding, {n} programs (one per token); "
             "cycles per token:",
             f"{'chip':22s} {'total':>8s} {'matrix':>8s} {'dma':>8s} {'vector':>8s} {'fetch/issue':>12s}"
             f" {'instr':>6s}   busy share: matrix  dma  vector"]
    for name, (total, mm, dma, vec, ins) in result["sums"].items():
        per = lambda x: x / n
        fetch = total - mm - dma - vec if name == "book" else None
        lines.append(f"{name:22s} {per(total):8.0f} {per(mm):8.0f} {per(dma):8.0f} {per(vec):8.0f} "
                     f"{per(fetch) if fetch is not None else float('nan'):12.0f} {per(ins):6.0f}"
                     f"               {mm / total:5.0%} {dma / total:4.0%} {vec / total:6.0%}")
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    n = int(argv[0]) if argv else TABLE_TOKENS
    print(report(measure(n)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
