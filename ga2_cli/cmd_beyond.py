"""`ga2 beyond`: speculative decoding beyond the chapter, on the chip.

    ga2 beyond [--sims icarus,verilator] [--tokens 32] [--json FILE] [--out DIR] [--workers N]
"""
from __future__ import annotations

import json
import os
import time

from ga2_hdl import isa
from ga2_hdl.support.safe_io import atomic_write

from . import options
from .progress import Progress


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "beyond", help="sampling, trees of guesses, drafts without weights and adaptive k, beside the chapter's rows",
        description="Decode the chapter's rows at temperature 0 through the sampling loop, speculative sampling at "
                    "temperature 1, trees of guesses against linear blocks of as many rows, the n-gram and "
                    "trigram drafts, and adaptive k against every fixed k = 1..5; replay every program in each "
                    "named simulator against the golden model.")
    options.add_replay_sims(p)
    options.add_tokens(p, minimum=2)
    options.add_json(p)
    options.add_out(p, "beyond.json and the figure beyond.png")
    options.add_workers(p)
    options.add_config(p)
    p.set_defaults(func=_beyond)


def _beyond(args) -> int:
    from spec.beyond import table as beyond
    from spec import figures

    t0 = time.perf_counter()
    sims = args.sims
    from spec.ch16 import example_runs
    from spec.runs import CHAPTER_RUNS
    from .cmd_ch16 import _check_chip
    # before any work: the chapter's rows and the fixed k = 1 .. 5 rows beside them
    _check_chip(args.config, args.tokens, "ga2 beyond's runs",
                list(CHAPTER_RUNS) + example_runs((0.0, 3.0, 4.0), range(1, 6)))
    os.makedirs(args.out, exist_ok=True)
    progress = Progress()
    try:
        result = beyond.run_beyond(args.tokens, sims, workers=args.workers, reporter=progress,
                                   config=args.config)
    finally:
        progress.close()
    print()
    print(beyond.format_table(result))
    wall = time.perf_counter() - t0
    print(f"\n== time: {wall:.1f} s wall ({result.seconds['software']:.1f} s decoding and compiling, "
          f"{result.seconds['replay']:.1f} s replaying {result.unique} distinct programs of "
          f"{result.executed} executed)")
    data = result.as_json()
    data["seconds"]["command"] = round(wall, 3)
    png = figures.beyond_figure(result, os.path.join(args.out, "beyond.png"))
    data["figures"] = [png]
    for path in filter(None, (args.json, os.path.join(args.out, "beyond.json"))):
        atomic_write(path, json.dumps(data, indent=2) + "\n")
    print(f"  wrote {os.path.join(args.out, 'beyond.json')}" + (f" and {args.json}" if args.json else "")
          + f", {png}")
    if result.problems:
        print("FAILED:")
        for p in result.problems:
            print(f"  {p}")
        return 1
    print("OK: " + ("every program replayed in " + ", ".join(sims) + " with the golden model's results"
                    if sims else "no simulator named: nothing was replayed on the RTL")
          + "; greedy rows give the plain decoder's tokens"
          + ("; the chapter's rows have the chapter's cycles" if args.tokens == 32 and args.config.same_chip(isa.BOOK)
             else ""))
    return 0
