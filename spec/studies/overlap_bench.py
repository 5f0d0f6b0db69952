"""Cycles per token with overlap: example A's plain decoding on the book's chip and on the overlap chip.

``python -m spec.studies.overlap_bench [TOKENS]`` decodes TOKENS tokens (32, the table's
runs, by default) greedily with example A's target (the random model, seed 1) on
the chip, and with the table's k=3 perfect-draft run (structured model), then
takes every program each run executed and prints, per token, the golden model's
counters on

* the book's chip (each instruction fetch + issue + busy, one at a time),
* the overlap preset, programs as Capra emits them,
* the overlap preset, programs reordered by ``compiler.schedule``,

split by unit (matrix, DMA, vector busy cycles) and the cycles the matrix unit
(the busiest) is idle, with the share of the total in which each unit is busy.  It also checks, program by program, that the scheduled program leaves the
same external memory as the original one in the golden model.
"""
from __future__ import annotations

import sys

from compiler.schedule import schedule
from ga2_hdl import golden, isa
from ga2_hdl.config import PRESETS

from ..runs import TABLE_TOKENS, make_model, plain_row, rule_tokens, speculative_row


#: where the matrix unit's idle cycles go, in :func:`matrix_idle` order
IDLE_PARTS = ("before the first MM", "waiting for the vector unit", "waiting for the DMA",
              "after the last MM", "issue cycles of MMs")


def matrix_idle(code, config) -> dict[str, int]:
    """The cycles the matrix unit is idle in a run of ``code`` on ``config``, by cause.

    Each MM occupies its unit from its issue cycle t through t+W; a gap before an MM is put down
    to the unit (vector or DMA) of the instruction whose completion came last before that MM's
    issue; ``issue cycles of MMs`` are the issue cycles themselves (the unit is not yet busy)."""
    iset = isa.instruction_set(config)
    timer = iset.timer()
    parts = dict.fromkeys(IDLE_PARTS, 0)
    first = prev_end = None
    last_other = None                                  # (unit, first free cycle) of the latest completion
    for ins in code[:-1]:
        t = timer.issue(ins)
        spec = iset.spec(ins.op)
        busy = spec.busy(ins)
        if spec.unit == isa.Unit.MATRIX:
            if first is None:
                first = t
            elif t > prev_end:
                waited = "waiting for the vector unit" if last_other and last_other[0] == isa.Unit.VECTOR \
                    else "waiting for the DMA"
                parts[waited] += t - prev_end
            parts["issue cycles of MMs"] += 1
            prev_end = t + busy + 1
        elif last_other is None or t + busy + 1 >= last_other[1]:
            last_other = (spec.unit, t + busy + 1)
    total = timer.halt().total
    parts["before the first MM"] = total if first is None else first
    parts["after the last MM"] = 0 if prev_end is None else total - prev_end
    return parts


def _sums(log, overlap) -> dict[str, list[int]]:
    iset = isa.instruction_set(overlap)
    sums = {"book": [0] * 5, "overlap": [0] * 5, "overlap + schedule": [0] * 5}
    idle = dict.fromkeys(IDLE_PARTS, 0)
    for run in log:
        code = run.code
        order = schedule(code, overlap)
        for part, cycles in matrix_idle(order, overlap).items():
            idle[part] += cycles
        for name, counters in (("book", isa.program_counters(code)), ("overlap", iset.counters(code)),
                               ("overlap + schedule", iset.counters(order))):
            sums[name] = [a + b for a, b in zip(sums[name], counters)]
        a = golden.run(code, run.ext, config=overlap)
        b = golden.run(order, run.ext, config=overlap)
        if (a.ext, a.error) != (b.ext, b.error):
            raise AssertionError(f"{run.kind} {run.shape}: the scheduled program leaves another memory")
    return sums, idle


def measure(n: int = TABLE_TOKENS, speculative: bool = True) -> dict:
    """{run label: {"tokens", "programs", "sums": {chip: five counters summed over the run}}}."""
    overlap = PRESETS["overlap"]
    runs = {"plain greedy decoding, example A's target (random model, seed 1)":
            plain_row("plain", make_model("random", 1), n, config=isa.BOOK)}
    if speculative:
        runs["k=3, perfect draft (structured model, noise 0)"] = speculative_row(
            "k3", make_model("structured"), n, 3, 0.0, rule_tokens(0, n), config=isa.BOOK)
    out = {}
    for label, row in runs.items():
        sums, idle = _sums(row.log, overlap)
        out[label] = {"tokens": n, "programs": len(row.log), "sums": sums, "matrix_idle_scheduled": idle}
    return out


def report(result: dict) -> str:
    lines = []
    for label, entry in result.items():
        n = entry["tokens"]
        lines += [f"{label}: {n} tokens, {entry['programs']} programs; cycles per token",
                  f"  {'chip':20s} {'total':>7s} {'matrix':>7s} {'dma':>7s} {'vector':>7s} {'matrix idle':>12s}"
                  f" {'speedup':>8s}   busy share: matrix   dma vector"]
        book_total = entry["sums"]["book"][0]
        for name, (total, mm, dma, vec, _ins) in entry["sums"].items():
            lines.append(f"  {name:20s} {total / n:7.0f} {mm / n:7.0f} {dma / n:7.0f} {vec / n:7.0f} "
                         f"{(total - mm) / n:12.0f} {book_total / total:7.2f}x"
                         f"               {mm / total:6.0%} {dma / total:5.0%} {vec / total:6.0%}")
        lines.append("  the matrix unit's idle cycles per token, overlap + schedule: " + ", ".join(
            f"{part} {cycles / n:.0f}" for part, cycles in entry["matrix_idle_scheduled"].items()))
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    n = int(argv[0]) if argv else TABLE_TOKENS
    print(report(measure(n)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
