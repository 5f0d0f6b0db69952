"""`ga2 beyond`: speculative decoding beyond the chapter, on the chip.

    ga2 beyond [--sims icarus,verilator] [--tokens 32] [--json FILE] [--out DIR] [--workers N]
"""
from __future__ import annotations

import json
import os
import tempfile
import time

DEFAULT_OUT = "out"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "beyond", help="sampling, trees of guesses, drafts without weights and adaptive k, beside the chapter's rows",
        description="Decode the chapter's rows at temperature 0 through the sampling loop, speculative sampling at "
                    "temperature 1, trees of guesses against linear blocks of as many rows, the n-gram and "
                    "trigram drafts, and adaptive k against every fixed k = 1..5; replay every program in each "
                    "named simulator against the golden model.")
    p.add_argument("--sims", default="icarus,verilator",
                   help="comma-separated simulators: icarus, verilator, amaranth, golden (default icarus,verilator; "
                        "an empty string replays nothing)")
    p.add_argument("--tokens", type=int, default=32, help="tokens per run (default 32, the chapter's)")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON to FILE")
    p.add_argument("--out", metavar="DIR", default=DEFAULT_OUT,
                   help=f"directory for beyond.json and the figure beyond.png (default {DEFAULT_OUT}/)")
    p.add_argument("--workers", type=int, default=None, help="worker processes (default: one per core)")
    p.set_defaults(func=_beyond)


def _write_json(path: str, data: dict) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".beyond-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=2)
            f.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _beyond(args) -> int:
    from gen.simulator import SimulatorError, parse_sims
    from spec import beyond, figures

    from .cmd_ch16 import _Progress

    t0 = time.perf_counter()
    try:
        sims = parse_sims(args.sims)
    except SimulatorError as e:
        raise ValueError(f"--sims: {e}") from None
    if args.workers is not None and args.workers < 1:
        raise ValueError("--workers must be at least 1")
    if args.tokens < 2:
        raise ValueError("--tokens must be at least 2")
    if args.json and not os.path.isdir(os.path.dirname(os.path.abspath(args.json))):
        raise ValueError(f"--json {args.json}: the directory does not exist")
    os.makedirs(args.out, exist_ok=True)
    progress = _Progress()
    try:
        result = beyond.run_beyond(args.tokens, sims, workers=args.workers, say=lambda s: print(s, flush=True),
                                   progress=progress)
    finally:
        progress.close()
    print()
    print(beyond.format_table(result))
    wall = time.perf_counter() - t0
    print(f"\n== time: {wall:.1f} s wall ({result.seconds['software']:.1f} s decoding and compiling, "
          f"{result.seconds['replay']:.1f} s replaying {len(result.bundle.programs)} distinct programs of "
          f"{result.executed} executed)")
    data = result.as_json()
    data["seconds"]["command"] = round(wall, 3)
    png = figures.beyond_figure(result, os.path.join(args.out, "beyond.png"))
    data["figures"] = [png]
    for path in filter(None, (args.json, os.path.join(args.out, "beyond.json"))):
        _write_json(path, data)
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
          + ("; the chapter's rows have the chapter's cycles" if args.tokens == 32 else ""))
    return 0
