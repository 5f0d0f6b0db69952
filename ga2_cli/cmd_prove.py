"""`ga2 prove`: the units' formal contracts (gen/formal/prove.py, ga2_hdl/contracts) through SymbiYosys,
and the simulators' forms of the chip's Verilog proven equivalent to the export (unit ``forms``,
gen/formal/equiv.py).

    ga2 prove [--unit NAME|all] [--config NAME|FILE] [--depth CYCLES] [--json FILE] [--keep DIR] [--timeout S] [--no-covers]
"""
from __future__ import annotations

import json
import sys

from . import options
from .progress import Lines
from .main import CommandError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "prove", help="prove (or check to a bounded depth) every unit's formal contract",
        description="Check each unit's contract (ga2_hdl/contracts: the unit contract of layout.py, the DMA's "
                    "transfer, the divider's and the requantizer's arithmetic, the values VADD, AMAX, RQ and MM "
                    "write, the systolic array's products) with SymbiYosys and Yices: "
                    "'proven' by k-induction, 'bounded' to a depth in clock cycles, 'failed' with the "
                    "counterexample's VCD, or 'skipped' where a property does not apply to the chip; each property's covers are checked too (no vacuous proof).  Unit 'forms': "
                    "the chip's Verilog as Icarus and Verilator compile it, proven equivalent to the export "
                    "(Yosys's equiv_*).  "
                    "Needs the optional extra: pip install -e '.[formal]'.")
    p.add_argument("--unit", default="all", metavar="NAME|all", help="only this unit's properties (default all)")
    options.add_config(p)
    p.add_argument("--depth", type=options.count(1, "depth"), metavar="CYCLES",
                   help="clock cycles checked (default: each property's own, whole instructions of the bounded sizes)")
    options.add_json(p, "every property's status")
    p.add_argument("--keep", default="out/prove", metavar="DIR",
                   help="where a counterexample's VCD is kept (default out/prove)")
    options.add_timeout(p, "solver run", 900.0)
    p.add_argument("--no-covers", action="store_true", help="skip the cover runs (faster; a vacuous proof goes unseen)")
    p.set_defaults(func=_prove)


def _prove(args) -> int:
    from gen.formal import prove, sby
    from ga2_hdl.support.safe_io import atomic_write
    problem = sby.tools_problem()
    if problem:
        raise CommandError(problem)
    try:
        prove.chosen(args.unit)
    except ValueError as e:
        raise CommandError(str(e)) from None

    records = prove.run(args.config, args.unit, depth=args.depth, keep=args.keep,
                        covers=not args.no_covers, timeout=args.timeout, reporter=Lines(stream=sys.stdout))
    rep = prove.report(records, config=args.config.name)
    print("totals: " + ", ".join(f"{k} {v}" for k, v in rep["totals"].items()))
    if args.json:
        atomic_write(args.json, json.dumps(rep, indent=2) + "\n")
    return 1 if any(r["status"] in ("failed", "error") for r in records) else 0
