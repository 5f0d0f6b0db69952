"""`ga2 explore`: the design space, cycles per token of the chapter's runs on each configuration.

    ga2 explore [--configs NAME,NAME|FILE ...] [--tokens 32] [--json FILE] [--plot FILE.png]
                [--workers N | --scheduler ADDRESS] [--synth [--synth-target NAME] [--synth-plot FILE.png]]

Every configuration is checked (a preset name or a TOML/JSON file that fits the
instruction word) before any work starts; see spec/explore.py for what is measured.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from ga2_hdl.config import PRESETS
from ga2_hdl.support.safe_io import atomic_write

from . import options
from .progress import Lines
from .main import CommandError


def config_list(text: str) -> list:
    """``NAME,NAME|FILE``: each a checked configuration (:func:`options.chip_config`)."""
    parts = [p.strip() for p in text.split(",")]
    if not all(parts):
        raise argparse.ArgumentTypeError(f"{text!r}: an empty configuration name in the list")
    return [options.chip_config(p) for p in parts]


def png_file(text: str) -> str:
    """A PNG file the command will write (checked like every output file)."""
    if not text.lower().endswith(".png"):
        raise argparse.ArgumentTypeError(f"{text}: the figure is written as PNG: give a name ending in .png")
    return options.output_file(text)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "explore", help="the design space: cycles per token of the chapter's runs on each configuration, by unit",
        description="Decode the chapter's seven runs on each configuration (every program compiled by Capra for "
                    "that chip and run on its golden model) and report cycles per token for plain decoding and "
                    "for the k=3 speculative runs, split by unit (matrix, DMA, vector, fetch/issue), with the "
                    "speculative speedups. Every figure is a sum of the golden model's counters.")
    p.add_argument("--configs", nargs="+", action="extend", type=config_list, metavar="NAME,NAME|FILE",
                   help=f"configurations: presets ({', '.join(PRESETS)}) or .toml/.json files, comma-separated "
                        f"or several arguments (default: the book's chip and every preset the instruction set "
                        f"accepts)")
    options.add_tokens(p)
    options.add_json(p)
    p.add_argument("--plot", metavar="FILE.png", type=png_file,
                   help="draw cycles per token by configuration, stacked by unit, to FILE.png")
    options.add_workers(p, "local worker processes, one configuration each")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the configurations (and, with --synth, each chip's synthesis) on a Dask distributed scheduler (tcp://host:8786); needs "
                        "pip install -e '.[cluster]'")
    p.add_argument("--synth", action="store_true",
                   help="also synthesise each configuration's chip (Yosys + nextpnr-ecp5, gen/fpga/synth.py, cached): "
                        "LUT4, FF, EBR, MULT18X18D, Fmax and tokens per second at Fmax; a chip that does not fit "
                        "the part is a row saying why. Needs pip install -e '.[fpga]'; about 4 minutes per chip "
                        "not yet in the cache on an idle machine")
    p.add_argument("--synth-target", default=None, metavar="NAME",
                   help="the ECP5 part for --synth: ecp5-85k (default, the largest) or ecp5-25k")
    p.add_argument("--synth-placer", default=None, metavar="NAME[,NAME]",
                   help="nextpnr's placer for --synth: heap (default, the flow's) or static (`ga2 synth --placer`); "
                        "a list (heap,static) tries each chip with the next placer when the one before gave no "
                        "result (not cached with --synth-cached-only, or stopped by --synth-pnr-limit)")
    p.add_argument("--synth-pnr-limit", type=float, default=None, metavar="SECONDS",
                   help="with --synth: stop a chip's nextpnr after SECONDS (the next placer of --synth-placer is "
                        "tried, if any; nothing is cached for a stopped run)")
    p.add_argument("--synth-plot", metavar="FILE.png", type=png_file,
                   help="with --synth: draw area against tokens per second of every synthesised chip (plain and "
                        "k=3 with the perfect draft), the Pareto front and the book's chip marked, to FILE.png")
    p.add_argument("--no-synth-cache", action="store_true", help="with --synth: run the tools even if cached")
    p.add_argument("--synth-cached-only", action="store_true",
                   help="with --synth: never run the tools; take the cached results (a chip without one is a row "
                        "saying so)")
    p.add_argument("--from-json", metavar="FILE", type=options.input_file,
                   help="do not decode: report the configurations of an earlier `ga2 explore --json FILE` (with "
                        "--synth, add area and clock to them)")
    p.set_defaults(func=_explore)


def _synth_target(args):
    """The part for --synth (the tools checked before any work), or None without --synth."""
    if args.synth:
        from gen.fpga import explore as explore_synth, synth
        target = args.synth_target or explore_synth.DEFAULT_TARGET
        try:
            synth.check_placers(args.synth_placer, "--synth-placer")
            synth.check_limit(args.synth_pnr_limit, "--synth-pnr-limit")
            explore_synth.check_tools(target)
        except synth.SynthError as e:
            raise CommandError(str(e)) from None
        return target
    if (args.synth_target or args.no_synth_cache or args.synth_cached_only or args.synth_plot
            or args.synth_placer is not None or args.synth_pnr_limit is not None):
        raise CommandError("--synth-target, --synth-placer, --synth-pnr-limit, --synth-plot, --no-synth-cache and "
                           "--synth-cached-only belong to --synth: add --synth")
    return None


def load_report(path: str) -> dict:
    """The report of an earlier `ga2 explore --json` (checked: its configurations' cycles are there)."""
    from ga2_hdl.config import Config, ConfigError
    try:
        with open(path) as f:
            report = json.load(f)
        entries = report["configs"]
        for e in entries:
            Config.from_dict(e["config"], source=f"{path}: {e['name']}")
            float(e["plain_cycles_per_token"]), float(e["k3_perfect_cycles_per_token"])
            e["per_unit"]["plain"], e["per_unit"]["k3_perfect"]
        report["tokens"], report["source"]
    except (OSError, ValueError, KeyError, TypeError, ConfigError) as e:
        raise CommandError(f"--from-json {path}: not the JSON of `ga2 explore --json` "
                           f"({type(e).__name__}: {e})") from None
    for key in ("synth", "figures"):
        report.pop(key, None)
    for e in report["configs"]:
        e.pop("synth", None)
    report.setdefault("problems", [])
    report.setdefault("skipped", [])
    report.setdefault("failed", [])
    report["from_json"] = path
    report["cycles_seconds"] = report.get("cycles_seconds", report.get("seconds"))
    return report


def _explore(args) -> int:
    from spec import explore

    if args.from_json:
        if args.configs or args.scheduler or args.workers:
            raise CommandError("--from-json reports an earlier run: --configs, --workers and --scheduler do not "
                               "apply")
        report = load_report(args.from_json)
        synth_target = _synth_target(args)
        print(f"explore: {len(report['configs'])} configuration(s) from {args.from_json} (cycles not decoded again)",
              flush=True)
        return _finish(args, report, synth_target, time.perf_counter())
    if args.configs:
        configs = [c for group in args.configs for c in (group if isinstance(group, list) else [group])]
        skipped = []
    else:
        configs, skipped = explore.default_configs()
    names = [c.name for c in configs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise CommandError(f"--configs: {', '.join(twice)} named more than once (each configuration once, each "
                           f"name once)")
    from ga2_hdl.config import PRESETS as presets
    from .cmd_ch16 import _check_chip
    for c in configs:           # before any work: a chip of the user's the chapter's programs do not fit
        if not any(c.same_chip(p) for p in presets.values()):
            _check_chip(c, args.tokens, option="--configs")
    synth_target = _synth_target(args)                    # before any work: the tools and the part
    client = runner = None
    if args.scheduler:
        from gen.support.runner import DaskRunner, RunnerError
        try:
            runner = DaskRunner(args.scheduler)
        except RunnerError as e:
            raise CommandError(str(e)) from None
        client = runner.client
    where = runner.describe() if runner else \
        f"{min(args.workers or os.cpu_count() or 1, len(configs))} local process(es)"
    print(f"explore: {len(configs)} configuration{'s' if len(configs) != 1 else ''} "
          f"({', '.join(c.name for c in explore.book_first(configs))}), the chapter's seven runs of {args.tokens} tokens "
          f"each, on {where}", flush=True)
    for name, why in skipped:
        print(f"  skipped preset {name}: {why}", flush=True)
    t0 = time.perf_counter()

    try:
        report = explore.run_explore(configs, args.tokens, workers=args.workers, dask_client=client,
                                     reporter=Lines(), skipped=skipped)
    finally:
        if runner is not None:
            runner.close()
    return _finish(args, report, synth_target, t0)


def _finish(args, report: dict, synth_target: str | None, t0: float) -> int:
    """Synthesis (with --synth), the table, the figure, the JSON and the verdict."""
    from spec import explore
    if synth_target is not None and report["configs"]:
        from gen.fpga import explore as explore_synth, synth
        from gen.support.runner import RunnerError, runner_for
        try:
            runner = runner_for(args.scheduler, 1)            # each chip a task of the cluster, or one at a time
        except RunnerError as e:
            raise CommandError(str(e)) from None
        try:
            report["problems"] += explore_synth.synthesize_configs(
                report, synth_target, use_cache=not args.no_synth_cache, cached_only=args.synth_cached_only,
                reporter=Lines(notes=sys.stderr), runner=runner, placer=args.synth_placer,
                pnr_limit=args.synth_pnr_limit)
        except synth.SynthError as e:
            raise CommandError(str(e)) from None
        finally:
            runner.close()
    report["seconds"] = round(time.perf_counter() - t0, 3)
    print()
    print(explore.format_table(report))
    written = []
    if args.plot and report["configs"]:
        from spec import figures
        written.append(figures.explore_figure(report, args.plot))
        report["figures"] = [args.plot]
    elif args.plot:
        print(f"  no figure written to {args.plot}: no configuration ran")
    if args.synth_plot and synth_target is not None:
        from gen.fpga import report as synth_report
        try:
            report["pareto_plain"] = synth_report.plot_explore(report, args.synth_plot)
        except synth_report.ReportError as e:
            print(f"  no figure written to {args.synth_plot}: {e}")
        else:
            report.setdefault("figures", []).append(args.synth_plot)
            written.append(args.synth_plot)
            print(f"  Pareto front (area against plain tokens per second): {', '.join(report['pareto_plain'])}")
    if args.json:
        atomic_write(args.json, json.dumps(report, indent=2) + "\n")
        written.append(args.json)
    print(f"\n== time: {report['seconds']:.1f} s wall" + (f"; wrote {', '.join(written)}" if written else ""))
    if report["problems"]:
        print("FAILED:")
        for p in report["problems"]:
            print(f"  {p}")
        return 1
    print("OK: every run gave the book chip's tokens on every configuration, and the golden model's counters "
          "equal the instruction set's prediction for every program")
    return 0
