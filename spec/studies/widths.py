"""What each port width saves on example A's plain decoding (docs/chip.md, "Wide ports").

``python -m spec.studies.widths [N]`` decodes N tokens (default 24) greedily from token 0 with
example A's target (``spec.runs.example_a_chip``) and runs every step's program in the
golden model on each configuration of :data:`CONFIGS`, printing cycles per token by unit
(a markdown table) and the single step at context 5.  The golden model's counters are the
configuration's ISA formulas; the memory results are the same on every configuration (checked).
"""
from __future__ import annotations

import sys

from ga2_hdl import golden, isa
from ga2_hdl.config import PRESETS, Config

#: the book's chip, each width alone, then both (the presets) and beyond
CONFIGS = (isa.BOOK, Config(name="p2", spad_ports=2), Config(name="p4", spad_ports=4),
           Config(name="w2", ext_port_words=2), Config(name="w4", ext_port_words=4),
           PRESETS["wide2"], PRESETS["wide4"], Config(name="wide8", spad_ports=8, ext_port_words=8))
UNITS = ("total", "matrix", "dma", "vector", "fetch and issue")


def _split(counters) -> dict[str, int]:
    total, matrix, dma, vector, _ = counters
    return dict(zip(UNITS, (total, matrix, dma, vector, total - matrix - dma - vector)))


def measure(n: int = 24, configs=CONFIGS) -> dict[str, dict]:
    """{config name: {"P", "W", "per_token": {unit: cycles}, "context5": {unit: cycles}}}."""
    from ..on_chip import PlainChip
    from ..runs import example_a_chip
    chip, _ = example_a_chip(config=isa.BOOK)
    log = PlainChip(chip.model, n, config=isa.BOOK).generate(0, n).log
    book = [golden.run(r.code, r.ext, config=isa.BOOK) for r in log]
    out = {}
    for config in configs:
        sums = dict.fromkeys(UNITS, 0)
        for r, ref in zip(log, book):
            res = golden.run(r.code, r.ext, config=config)
            if (res.error, res.ext) != (ref.error, ref.ext):
                raise AssertionError(f"{config.name}: step {r.shape} computes something else than the book's chip")
            for k, v in _split(res.counters).items():
                sums[k] += v
        out[config.name] = {"P": config.spad_ports, "W": config.ext_port_words,
                            "per_token": {k: v / n for k, v in sums.items()},
                            "context5": _split(isa.instruction_set(config).counters(log[4].code))}
    return out


def table(results: dict[str, dict]) -> str:
    rows = ["| configuration | " + " | ".join(UNITS) + " |", "|---" * (len(UNITS) + 1) + "|"]
    for name, r in results.items():
        rows.append(f"| {name} (P={r['P']}, W={r['W']}) | "
                    + " | ".join(f"{r['per_token'][u]:,.1f}" for u in UNITS) + " |")
    return "\n".join(rows)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    n = int(argv[0]) if argv else 24
    results = measure(n)
    print(f"cycles per token, plain decoding of {n} tokens (example A's target, from token 0):")
    print(table(results))
    print("context 5 step: " + "; ".join(f"{name} {r['context5']['total']:,}" for name, r in results.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
