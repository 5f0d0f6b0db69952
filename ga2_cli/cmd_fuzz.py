"""`ga2 fuzz` (random differential testing) and `ga2 bundle` (make and inspect bundles)."""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time

from ga2_hdl import isa
from ga2_hdl.formats.bundle import Bundle
from ga2_hdl.support.safe_io import atomic_write
from gen.sim.simulator import SIMULATORS

from . import options
from .progress import Lines
from .main import CommandError


def _spec(args):
    """The campaign the options ask for; with --resume DIR holding a campaign, options not
    given come from it, and options given must agree with it."""
    from gen.fuzz.campaign import CampaignDir, CampaignSpec
    given = {}
    if args.sims is not None:
        given["sims"] = tuple(args.sims)
    for name in ("programs", "seed", "ext_words", "max_cycles", "piece_size", "illegal"):
        if getattr(args, name) is not None:
            given[name] = getattr(args, name)
    if args.directed:
        given["directed"] = True
    if args.config is not None:
        given["config"] = args.config
    base = None
    if args.resume and CampaignDir(args.resume).exists():
        base = CampaignDir(args.resume).read_spec()
        for name, value in given.items():
            if getattr(base, name) != value:
                shown = (lambda v: v.describe() if name == "config" else repr(v))
                raise CommandError(f"--{name.replace('_', '-')} {shown(value)}: the campaign in {args.resume} was "
                                   f"started with {shown(getattr(base, name))} (leave the option out to resume it)")
        return base
    defaults = {"programs": 100, "sims": ("golden",), "config": isa.BOOK}     # --config not given: the book's
    return CampaignSpec(**{**defaults, **given})


def cmd_fuzz(args) -> int:
    from gen.fuzz.campaign import CampaignError, DaskRunner, LocalRunner, run_campaign

    if args.status:
        return _status(args)
    spec = _spec(args)
    try:
        spec.validate()
    except CampaignError as e:
        raise CommandError(str(e)) from None
    if args.shrink_seconds < 0:
        raise CommandError(f"--shrink-seconds {args.shrink_seconds}: a time cannot be negative")
    if args.resume:
        parent = os.path.dirname(os.path.abspath(args.resume))
        if not os.path.isdir(parent):
            raise CommandError(f"--resume {args.resume}: the directory {parent} does not exist")
        if os.path.exists(args.resume) and not os.path.isdir(args.resume):
            raise CommandError(f"--resume {args.resume}: exists and is not a directory")
        if os.path.isdir(args.resume) and os.listdir(args.resume) and \
                not os.path.exists(os.path.join(args.resume, "campaign.json")):
            raise CommandError(f"--resume {args.resume}: holds other files and no campaign; give a new or "
                               f"empty directory")
    try:
        runner = DaskRunner(args.scheduler, args.shrink_seconds) if args.scheduler else \
            LocalRunner(args.jobs, args.shrink_seconds)
    except CampaignError as e:
        raise CommandError(str(e)) from None

    chip = "" if spec.config == isa.BOOK else f" on {spec.config.describe()}"
    print(f"fuzz: {spec.programs:,} random programs{' after the directed suite' if spec.directed else ''}{chip}, "
          f"seed {spec.seed}, ext_words {spec.ext_words}, max {spec.max_cycles} cycles each, "
          f"{spec.illegal:g} of them illegal, simulators {', '.join(spec.sims)}", flush=True)
    print(f"  {spec.random_pieces + spec.directed} piece{'s' if spec.random_pieces + spec.directed != 1 else ''} "
          f"of up to {spec.piece_size} programs on {runner.describe()}"
          + (f"; campaign directory {args.resume}" if args.resume else ""), flush=True)
    tmp = None
    directory = args.resume
    if directory is None:
        tmp = tempfile.TemporaryDirectory(prefix="ga2_fuzz_")
        directory = tmp.name
    try:
        try:
            report = run_campaign(spec, directory, runner, reporter=Lines(stream=sys.stdout, every=10.0, unit="pieces"))
        except CampaignError as e:
            raise CommandError(str(e)) from None
        except KeyboardInterrupt:
            if args.resume:
                print(f"fuzz: interrupted; the finished pieces are kept in {args.resume}: run the same command "
                      f"(or ga2 fuzz --resume {args.resume}) to go on", file=sys.stderr)
            else:
                print("fuzz: interrupted (no --resume DIR: nothing kept)", file=sys.stderr)
            return 130
        finally:
            if args.scheduler:
                runner.close()
        kept_dir = None
        if report["kept"] and tmp is not None:      # keep the mismatching programs out of the temporary directory
            kept_dir = args.mismatches or os.path.join("out", "fuzz_mismatches")
            os.makedirs(kept_dir, exist_ok=True)
            for item in report["kept"]:
                for key in ("file", "original_file"):
                    if key in item:
                        dest = os.path.join(kept_dir, os.path.basename(item[key]))
                        shutil.copyfile(item[key], dest)
                        item[key] = dest
    finally:
        if tmp is not None:
            tmp.cleanup()
    if tmp is not None:
        report["campaign"]["directory"] = None

    _print_report(spec, report)
    c = report["campaign"]
    print(f"time: {c['wall_seconds']:.1f} s wall for {c['pieces_run']} pieces run now"
          + (f" ({c['resumed_pieces']} finished before)" if c["resumed_pieces"] else "")
          + f", {report['programs']:,} programs, {report['cycles']:,} golden cycles")
    if args.keep_bundle:
        _keep_bundle(spec, args.keep_bundle)
        print(f"bundle written to {args.keep_bundle}")
    _outputs(args, report)
    if report["mismatches"] or not report["complete"]:
        what = (f"{report['mismatches']} mismatching program(s)" if report["mismatches"]
                else f"{c['piece_errors']} piece(s) could not run")
        print(f"fuzz: {what}; first: {report['first_mismatch']}", file=sys.stderr)
        if args.resume and not report["complete"]:
            print("fuzz: run the same command again to retry the unfinished pieces", file=sys.stderr)
        return 1
    empty = report["coverage"]["empty"]
    if empty:
        print(f"fuzz: {len(empty)} reachable coverage bin(s) never hit (listed above as EMPTY)")
    random_programs, halt_only = report.get("random_programs", 0), report.get("halt_only_programs", 0)
    if random_programs and halt_only == random_programs and not spec.directed:
        print(f"fuzz: DEGENERATE: all {random_programs} random programs are a HALT alone (--max-cycles "
              f"{spec.max_cycles} leaves no room for more): nothing but the HALT was compared")
        return 1
    if halt_only:
        print(f"fuzz: {halt_only} of {random_programs} random programs are a HALT alone")
    if set(spec.sims) == {"golden"}:
        print(f"fuzz: the golden model ran alone ({report['cycles']} cycles): name an RTL simulator "
              f"({', '.join(n for n in SIMULATORS if n != 'golden')}) to compare anything with it")
    else:
        print(f"fuzz: all simulators agree, {report['cycles']} cycles in total")
    return 0


def generated(make, *args, **kwargs):
    """A generator's refusal of its parameters (gen/fuzz/programs.py raises ValueError for a memory too small
    for its programs, or a configuration its suite cannot fill) is the user's --ext-words or --config,
    said as such; it comes before any file is written."""
    try:
        return make(*args, **kwargs)
    except ValueError as e:
        flag = "--config" if str(e).startswith("configuration ") else "--ext-words"
        raise CommandError(f"{flag}: {e}") from None


def _print_report(spec, report) -> None:
    from gen.fuzz.campaign import coverage_table, results_table
    print("results per simulator")
    print(results_table(report))
    for name, entry in report["results"].items():
        print(f"{name}: {entry['line']}")
        if entry.get("mismatch_program"):
            print(f"  in program {entry['mismatch_program']!r}")
    for item in report["kept"]:
        where = item.get("file") or item.get("original_file")
        size = (f"shrunk from {item['instructions']} to {item['shrunk_instructions']} instructions"
                if "shrunk_instructions" in item else f"not shrunk ({item.get('shrink_error')})")
        print(f"  kept: {item['simulator']} program {item['program']} ({size}): {where}")
    print("functional coverage of the random programs" + ("" if report["complete"] else " of the finished pieces"))
    print(coverage_table(spec, report))


def _status(args) -> int:
    """--status: the finished pieces' report, running nothing."""
    from gen.fuzz.campaign import CampaignError, campaign_status
    if not args.resume:
        raise CommandError("--status needs --resume DIR (the campaign to look at)")
    try:
        spec, report = campaign_status(args.resume)
    except CampaignError as e:
        raise CommandError(str(e)) from None
    c = report["campaign"]
    print(f"campaign {args.resume}: {spec.programs:,} random programs{' after the directed suite' if spec.directed else ''}, "
          f"seed {spec.seed}, simulators {', '.join(spec.sims)}: {c['pieces_finished']} of {c['pieces']} pieces "
          f"finished ({report['programs']:,} programs, {report['cycles']:,} golden cycles)")
    _print_report(spec, report)
    _outputs(args, report)
    return 1 if report["mismatches"] else 0


def _outputs(args, report) -> None:
    if args.json:
        atomic_write(args.json, json.dumps(report, indent=2) + "\n")
        print(f"report written to {args.json}")
    if args.plot:
        from gen.fuzz.coverage import plot
        plot(report["coverage"], report["results"], args.plot,          # written atomically
             f"{report['programs']:,} random programs (seed {report['seed']}): coverage "
             f"{report['coverage']['hit']} of {report['coverage']['total_bins']} bins hit, "
             f"{len(report['coverage']['unreachable'])} unreachable by construction, "
             f"{len(report['coverage']['empty'])} empty")
        print(f"figure written to {args.plot}")


def _keep_bundle(spec, path: str) -> None:
    """Every program of the campaign in one bundle file (made again: pieces are deterministic)."""
    programs = []
    for task in spec.pieces():
        programs += task.bundle().programs
    Bundle(spec.ext_words, programs, config=spec.config).write(path)


def cmd_bundle_directed(args) -> int:
    from gen.fuzz.directed import directed_suite
    ext_words = args.config.ext_words if args.ext_words is None else args.ext_words
    bundle = Bundle.from_programs(generated(directed_suite, ext_words, config=args.config), ext_words,
                                  config=args.config)
    bundle.write(args.output)
    print(f"{args.output}: {len(bundle.programs)} directed programs, {bundle.total_cycles} cycles")
    return 0


def cmd_bundle_fuzz(args) -> int:
    from gen.fuzz.campaign import CampaignError, CampaignSpec
    from gen.fuzz.programs import random_bundle
    try:   # the same rules as ga2 fuzz (beyond the option types), checked before any work
        spec = CampaignSpec(args.programs, args.seed, ("golden",), args.ext_words, args.max_cycles,
                            illegal=args.illegal, config=args.config)
        spec.validate()
    except CampaignError as e:
        raise CommandError(str(e)) from None
    bundle = generated(random_bundle, args.programs, args.seed, spec.ext_words, spec.max_cycles, args.illegal,
                       config=args.config)
    bundle.write(args.output)
    print(f"{args.output}: {len(bundle.programs)} random programs (seed {args.seed}), "
          f"{bundle.total_cycles} cycles")
    return 0


def cmd_bundle_make(args) -> int:
    from .cmd_isa import load_memory, load_program
    ext_words = args.config.ext_words if args.ext_words is None else args.ext_words
    items = []
    for spec in args.programs:
        prog, _, mem = spec.partition(":")
        ext = load_memory(mem, ext_words) if mem else None
        items.append((prog, load_program(prog, args.config), ext))
    bundle = Bundle.from_programs(items, ext_words, config=args.config)
    bundle.write(args.output)
    print(f"{args.output}: {len(bundle.programs)} programs, {bundle.total_cycles} cycles")
    return 0


def cmd_bundle_info(args) -> int:
    from .cmd_isa import load_bundle
    bundle = load_bundle(args.file)
    chip = "" if bundle.config == isa.BOOK else f", made for {bundle.config.describe()}"
    print(f"{args.file}: {len(bundle.programs)} programs, ext_words {bundle.ext_words}{chip}, "
          f"{bundle.total_cycles} cycles expected")
    for i, p in enumerate(bundle.programs):
        e = p.expected
        status = "OK" if e.error == 0 else f"{e.error.name}@{e.error_pc}"
        print(f"{i:4d} {p.name}: {len(p.code)} instructions, counters {list(e.counters)}, {status}")
    problems = bundle.verify() if args.verify else []
    for line in problems:
        print(f"golden model disagrees: {line}")
    if problems:
        raise CommandError(f"{len(problems)} programs' expectations differ from the golden model")
    return 0


def register(subparsers) -> None:
    from gen.fuzz.campaign import DEFAULT_ILLEGAL, DEFAULT_PIECE_SIZE, DEFAULT_SHRINK_SECONDS
    p = subparsers.add_parser("fuzz", help="random programs replayed in simulators, compared with the golden "
                                           "model, in resumable pieces, with functional coverage")
    # no defaults here: with --resume DIR the options not given come from the campaign (see _spec)
    p.add_argument("--programs", type=options.positive, default=None, help="number of random programs (default 100)")
    p.add_argument("--seed", type=int, default=None, help="random seed (default 1)")
    p.add_argument("--sims", type=options.simulators(), default=None, help=f"comma-separated simulators: {', '.join(SIMULATORS)} "
                                                f"(default golden)")
    p.add_argument("--ext-words", type=options.fuzz_ext_words, default=None,
                   help=f"external memory words (default: the configuration's, {isa.EXT_WORDS_DEFAULT} on the "
                        f"book chip)")
    p.add_argument("--max-cycles", type=options.max_cycles, default=None,
                   help="cycle budget of each program (default 3000 on the book chip, a multiple of it when "
                        "the configuration's largest MM is longer)")
    p.add_argument("--illegal", type=float, default=None,
                   help=f"fraction of programs that end in a fault, one per error code at random "
                        f"(default {DEFAULT_ILLEGAL})")
    p.add_argument("--directed", action="store_true", help="replay the directed corner-case suite first")
    p.add_argument("--piece-size", type=options.positive, default=None,
                   help=f"programs per piece, the unit of work, of resuming and of distribution "
                        f"(default {DEFAULT_PIECE_SIZE})")
    p.add_argument("--jobs", type=options.positive, default=None,
                   help="local worker processes (default: one per core)")
    p.add_argument("--resume", metavar="DIR", help="campaign directory: started there if new, continued if not "
                                                   "(finished pieces are not run again)")
    p.add_argument("--status", action="store_true",
                   help="with --resume DIR: report the finished pieces and run nothing (safe while it runs)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the pieces on a Dask distributed scheduler (tcp://host:8786); needs "
                        "pip install -e '.[cluster]'")
    p.add_argument("--shrink-seconds", type=float, default=DEFAULT_SHRINK_SECONDS,
                   help=f"time to shrink each mismatching program (default {DEFAULT_SHRINK_SECONDS:g})")
    p.add_argument("--mismatches", metavar="DIR", type=options.output_dir,
                   help="where mismatching programs are kept without --resume (default out/fuzz_mismatches)")
    p.add_argument("--json", metavar="FILE", type=options.output_file,
                   help="write the report (verdicts, timings, coverage) as JSON")
    p.add_argument("--keep-bundle", metavar="FILE", type=options.output_file,
                   help="write every program of the campaign as one bundle")
    p.add_argument("--plot", metavar="FILE.png", type=options.output_file,
                   help="draw the coverage and the speed per simulator")
    options.add_config(p)
    p.set_defaults(config=None)      # not given: the book's, or with --resume the campaign's (see _spec)
    p.set_defaults(func=cmd_fuzz)

    p = subparsers.add_parser("bundle", help="make or inspect program bundles")
    sub = p.add_subparsers(dest="bundle_command", metavar="ACTION", required=True)
    q = sub.add_parser("directed", help="the directed corner-case suite as a bundle")
    q.add_argument("-o", "--output", required=True, type=options.output_file)
    q.add_argument("--ext-words", type=options.fuzz_ext_words, default=None)
    options.add_config(q)
    q.set_defaults(func=cmd_bundle_directed)
    q = sub.add_parser("fuzz", help="random programs as a bundle (the first piece of ga2 fuzz with the same "
                                    "options)")
    q.add_argument("--programs", type=options.positive, default=100)
    q.add_argument("--seed", type=int, default=1)
    q.add_argument("--ext-words", type=options.fuzz_ext_words, default=None)
    q.add_argument("--max-cycles", type=options.max_cycles, default=None)
    options.add_config(q)
    q.add_argument("--illegal", type=float, default=DEFAULT_ILLEGAL,
                   help=f"fraction of programs that end in a fault (default {DEFAULT_ILLEGAL})")
    q.add_argument("-o", "--output", required=True, type=options.output_file)
    q.set_defaults(func=cmd_bundle_fuzz)
    q = sub.add_parser("make", help="a bundle from program files: PROG[:MEM] ...")
    q.add_argument("programs", nargs="+", metavar="PROG[:MEM]",
                   help="program file (.s/.asm: assembly) with an optional initial memory file")
    q.add_argument("--ext-words", type=options.ext_words, default=None)
    q.add_argument("-o", "--output", required=True, type=options.output_file)
    options.add_config(q)
    q.set_defaults(func=cmd_bundle_make)
    q = sub.add_parser("info", help="list a bundle's programs and expected counters")
    q.add_argument("file", type=options.input_file)
    q.add_argument("--verify", action="store_true", help="re-run every program in the golden model")
    q.set_defaults(func=cmd_bundle_info)
