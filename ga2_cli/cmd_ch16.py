"""`ga2` subcommands for the chapter's results.

    ga2 ch16 [--sims icarus,verilator[,amaranth]] [--tokens 32] [--json FILE] [--out DIR] [--workers N]
             [--config FILE|NAME]
    ga2 example a [--out DIR] [--config FILE|NAME]
    ga2 example b [--out DIR] [--noises 0,3,4,5,6] [--ks 1,2,3,4,5] [--tokens 32] [--workers N]
                  [--config FILE|NAME]

``--config``: every program is compiled for that chip, its bundle made for it
(expectations from that chip's golden model) and every simulator built for it.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import time

from ga2_hdl import isa
from ga2_hdl.support.safe_io import atomic_write

from . import options
from .progress import Progress


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "ch16", help="the chapter's table on the chip: seven runs, every program replayed on the RTL",
        description="Run the software checks of speculative decoding, decode the chapter's seven runs "
                    "(plain and k=3 with perfect/noisy/poor drafts on the structured model; plain, k=1 "
                    "and k=3 on the random model seed 1), replay every program of every run in each named "
                    "simulator and compare the cycles with the golden model's and the book's.")
    options.add_replay_sims(p)
    options.add_tokens(p)
    options.add_json(p)
    options.add_out(p, "the figure ch16_table.png and ch16.json")
    options.add_workers(p, "worker processes for the replays")
    p.add_argument("--no-checks", action="store_true", help="skip the software checks")
    options.add_config(p)
    p.set_defaults(func=_ch16)

    ex = subparsers.add_parser("example", help="the chapter's running examples A and B",
                               description="Running example A (three blocks, the verifier's anatomy, "
                                           "causality in integers) or B (when does speculation pay).")
    which = ex.add_subparsers(dest="example", metavar="EXAMPLE", required=True)
    a = which.add_parser("a", help="three blocks traced, the verifier's anatomy, causality in integers")
    options.add_out(a, "ch16_example_a.json and its figures")
    options.add_config(a)
    a.set_defaults(func=_example_a)
    b = which.add_parser("b", help="the measured sweep, the geometric model, the serving arithmetic")
    options.add_out(b, "ch16_example_b.json and its figures")
    b.add_argument("--noises", type=_numbers(float, 0, "a noise is a standard deviation, at least 0"),
                   default="0,3,4,5,6", help="draft noises of the sweep (default 0,3,4,5,6)")
    b.add_argument("--ks", type=_numbers(int, 1, "k must be at least 1"), default="1,2,3,4,5",
                   help="guesses per block of the sweep (default 1,2,3,4,5)")
    options.add_tokens(b)
    options.add_workers(b)
    options.add_config(b)
    b.set_defaults(func=_example_b)


def _numbers(kind, minimum, rule: str):
    """An option type: comma-separated numbers of type ``kind``, each at least ``minimum``."""
    def parse(text: str) -> list:
        try:
            values = [kind(x) for x in text.split(",") if x.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
        if not values:
            raise argparse.ArgumentTypeError("no values given")
        if any(x < minimum for x in values):
            raise argparse.ArgumentTypeError(rule)
        return values
    parse.__name__ = "numbers"
    return parse


def _ch16(args) -> int:
    from spec import ch16

    t0 = time.perf_counter()
    sims = args.sims
    _check_chip(args.config, args.tokens)
    progress = Progress()
    try:
        # matplotlib is imported while the workers decode and replay, not after them
        result = ch16.run_ch16(args.tokens, sims, workers=args.workers, checks=not args.no_checks,
                               reporter=progress, config=args.config,
                               meanwhile=lambda: importlib.import_module("spec.figures"))
    finally:
        progress.close()
    print()
    print(ch16.format_table(result))
    print()
    print("== 3. differences from the book" if args.config.same_chip(isa.BOOK) else
          "== 3. what was compared with what (another chip than the book's)")
    print(ch16.format_differences(result))
    if result.golden_problems:
        print("== golden model against the ISA's cycle prediction")
        for p in result.golden_problems:
            print(f"  {p}")
    print()
    wall = time.perf_counter() - t0
    print(f"== 4. time: {wall:.1f} s wall in all (the checks and runs done after {result.seconds['software']:.1f} s; "
          f"replaying {result.programs} programs in {', '.join(sims) or 'no simulator'}: "
          f"{result.seconds['replay']:.1f} s from the first piece's start to the last one's end, "
          f"beside the decoding)")
    if sims:
        print(ch16.format_speeds(result))
    os.makedirs(args.out, exist_ok=True)
    data = result.as_json()
    data["seconds"]["command"] = round(wall, 3)
    data["software_checks_run"] = not args.no_checks      # "problems": [] means nothing when they were not run
    from spec import figures
    png = figures.table_figure(result, os.path.join(args.out, "ch16_table.png"))
    data["figures"] = [png]
    for path in filter(None, (args.json, os.path.join(args.out, "ch16.json"))):
        atomic_write(path, json.dumps(data, indent=2) + "\n")
    print(f"  wrote {os.path.join(args.out, 'ch16.json')}" + (f" and {args.json}" if args.json else "")
          + f", {png}")
    if not result.ok:
        why = []
        if result.problems:
            why.append(f"{len(result.problems)} software check problem(s)")
        if result.mismatches:
            why.append(f"{len(result.mismatches)} simulator mismatch(es)")
        if result.unexplained:
            why.append(f"{len(result.unexplained)} unexplained difference(s) from the book")
        if result.golden_problems:
            why.append("golden model and ISA disagree")
        if not all(r.tokens_equal for r in result.rows):
            why.append("tokens differ from the reference")
        print("FAILED: " + "; ".join(why))
        for m in result.mismatches:
            print(f"  {m}")
        return 1
    if sims:
        done = "every run replayed in " + ", ".join(sims) + " with the golden model's cycles"
    else:
        done = "no simulator named: nothing was replayed on the RTL"
    book_chip = args.config.same_chip(isa.BOOK)
    print("OK: " + done + ("" if args.tokens != 32 else "; every figure equals the book's" if book_chip else
                           f"; on {args.config.name} every chip-independent figure equals the book's, and the "
                           f"cycles are that chip's own golden model's (not the book's)")
          + ("; the software checks were NOT run (--no-checks)" if args.no_checks else ""))
    return 0


def _check_chip(config, tokens: int, job: str = "the chapter's runs", runs=None, option: str = "--config") -> None:
    """One line, before any work, for a chip the job's programs do not fit (spec.ch16.check_chip)."""
    from spec import ch16
    from .main import CommandError
    if config.same_chip(isa.BOOK):
        return
    try:
        ch16.check_chip(config, tokens, job, runs)
    except ch16.ChipTooSmall as e:
        raise CommandError(f"{option} {e}") from None


def _write_example(out: str, name: str, data: dict, figure_paths: list[str], t0: float) -> None:
    """An example's JSON (with the paths of its figures) into OUT, and the line that says so."""
    data["figures"] = figure_paths
    path = os.path.join(out, name)
    atomic_write(path, json.dumps(data, indent=2) + "\n")
    print(f"\nwrote {path}, {', '.join(figure_paths)} ({time.perf_counter() - t0:.1f} s)")


def _example_a(args) -> int:
    from spec import examples, figures

    t0 = time.perf_counter()
    from spec.runs import RunSpec
    _check_chip(args.config, 24, "example A's runs", [RunSpec("example A", "structured", 3, 0.0)])
    ex = examples.example_a(args.config)
    print(examples.format_example_a(ex))
    os.makedirs(args.out, exist_ok=True)
    paths = [figures.mask_figure(4, 4, os.path.join(args.out, "ch16_mask.png")),
             figures.cycles_by_unit_figure(ex.verifier, ex.singles, os.path.join(args.out, "ch16_cycles_by_unit.png"))]
    _write_example(args.out, "ch16_example_a.json", examples.example_a_json(ex), paths, t0)
    differences = examples.example_a_failures(ex)
    if differences:
        print("FAILED: differences from the book: " + "; ".join(differences))
        return 1
    return 0


def _example_b(args) -> int:
    from spec import examples, figures

    t0 = time.perf_counter()
    from spec.ch16 import example_runs
    _check_chip(args.config, args.tokens, "example B's sweep", example_runs(args.noises, args.ks))
    ex = examples.example_b(noises=args.noises, ks=args.ks, n=args.tokens, workers=args.workers, config=args.config)
    print(examples.format_example_b(ex))
    os.makedirs(args.out, exist_ok=True)
    paths = [figures.speedup_figure(ex, os.path.join(args.out, "ch16_speedup_vs_k.png")),
             figures.serving_figure(os.path.join(args.out, "ch16_serving.png"))]
    _write_example(args.out, "ch16_example_b.json", examples.example_b_json(ex), paths, t0)
    if not ex.all_tokens_equal:
        print("FAILED: a run did not produce the plain decoder's tokens")
        return 1
    unexplained = examples.example_b_unexplained(ex)
    if unexplained:
        print("FAILED: differences from the book: " + "; ".join(unexplained))
        return 1
    return 0
