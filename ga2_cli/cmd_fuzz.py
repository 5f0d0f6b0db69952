"""`ga2 fuzz` (random differential testing) and `ga2 bundle` (make and inspect bundles)."""
from __future__ import annotations

import json
import sys

from ga2_hdl import isa
from ga2_hdl.bundle import Bundle
from ga2_hdl.safe_io import atomic_write

from . import options
from .main import CommandError


def _progress(stream):
    last = {}

    def report(sim: str, done: int, total: int) -> None:
        step = max(1, total // 10)
        if done == total or done - last.get(sim, 0) >= step:
            last[sim] = done
            print(f"  {sim}: {done}/{total} programs", file=stream, flush=True)
    return report


def cmd_fuzz(args) -> int:
    from gen.fuzz import fuzz
    from gen.simulator import SimulatorError, parse_sims

    try:
        sims = parse_sims(args.sims)
    except SimulatorError as e:
        raise CommandError(str(e)) from None
    if not sims:
        raise CommandError("--sims names no simulator")
    if args.programs < 1:
        raise CommandError("--programs must be at least 1")
    print(f"fuzz: {args.programs} random programs{' after the directed suite' if args.directed else ''}, seed {args.seed}, ext_words {args.ext_words}, "
          f"simulators {', '.join(sims)}", flush=True)
    try:
        report = fuzz(args.programs, args.seed, sims, ext_words=args.ext_words, max_cycles=args.max_cycles,
                      bundle_path=args.keep_bundle, directed=args.directed, progress=_progress(sys.stdout))
    except SimulatorError as e:
        raise CommandError(str(e)) from None
    for name, entry in report["results"].items():
        print(f"{name}: {entry['line']} ({entry['wall_seconds']} s)")
        if entry.get("mismatch_program"):
            print(f"  in program {entry['mismatch_program']!r}")
    if args.json:
        atomic_write(args.json, json.dumps(report, indent=2) + "\n")
        print(f"report written to {args.json}")
    if args.keep_bundle:
        print(f"bundle written to {args.keep_bundle}")
    if report["mismatches"]:
        print(f"fuzz: {report['mismatches']} simulator(s) disagree with the golden model; first: "
              f"{report['first_mismatch']}", file=sys.stderr)
        return 1
    if set(sims) == {"golden"}:
        print(f"fuzz: the golden model ran alone ({report['cycles']} cycles): name an RTL simulator "
              f"(amaranth, icarus, verilator) to compare anything with it")
    else:
        print(f"fuzz: all simulators agree, {report['cycles']} cycles in total")
    return 0


def generated(make, *args):
    """A generator's refusal of its parameters (gen/fuzz.py raises ValueError for a memory too small
    for its programs) is the user's --ext-words, said as such; it comes before any file is written."""
    try:
        return make(*args)
    except ValueError as e:
        raise CommandError(f"--ext-words: {e}") from None


def cmd_bundle_directed(args) -> int:
    from gen.fuzz import directed_suite
    bundle = Bundle.from_programs(generated(directed_suite, args.ext_words), args.ext_words)
    bundle.write(args.output)
    print(f"{args.output}: {len(bundle.programs)} directed programs, {bundle.total_cycles} cycles")
    return 0


def cmd_bundle_fuzz(args) -> int:
    from gen.fuzz import random_bundle
    bundle = generated(random_bundle, args.programs, args.seed, args.ext_words, args.max_cycles)
    bundle.write(args.output)
    print(f"{args.output}: {len(bundle.programs)} random programs (seed {args.seed}), "
          f"{bundle.total_cycles} cycles")
    return 0


def cmd_bundle_make(args) -> int:
    from .cmd_isa import load_memory, load_program
    items = []
    for spec in args.programs:
        prog, _, mem = spec.partition(":")
        ext = load_memory(mem, args.ext_words) if mem else None
        items.append((prog, load_program(prog), ext))
    bundle = Bundle.from_programs(items, args.ext_words)
    bundle.write(args.output)
    print(f"{args.output}: {len(bundle.programs)} programs, {bundle.total_cycles} cycles")
    return 0


def cmd_bundle_info(args) -> int:
    from .cmd_isa import load_bundle
    bundle = load_bundle(args.file)
    print(f"{args.file}: {len(bundle.programs)} programs, ext_words {bundle.ext_words}, "
          f"{bundle.total_cycles} cycles expected")
    for i, p in enumerate(bundle.programs):
        e = p.expected
        status = "OK" if e.error == 0 else f"{e.error.name}@{e.error_pc}"
        print(f"{i:4d} {p.name}: {len(p.code)} instructions, counters {e.counters}, {status}")
    problems = bundle.verify() if args.verify else []
    for line in problems:
        print(f"golden model disagrees: {line}")
    if problems:
        raise CommandError(f"{len(problems)} programs' expectations differ from the golden model")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("fuzz", help="random valid programs replayed in simulators, compared with the golden model")
    p.add_argument("--programs", type=options.positive, default=100,
                   help="number of random programs (default 100)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--sims", default="golden", help="comma-separated simulators: golden, amaranth, icarus, verilator")
    p.add_argument("--ext-words", type=options.fuzz_ext_words, default=isa.EXT_WORDS_DEFAULT)
    p.add_argument("--max-cycles", type=options.max_cycles, default=3000,
                   help="cycle budget of each program (default 3000)")
    p.add_argument("--directed", action="store_true", help="replay the directed corner-case suite first")
    p.add_argument("--json", metavar="FILE", type=options.output_file, help="write the report as JSON")
    p.add_argument("--keep-bundle", metavar="FILE", type=options.output_file,
                   help="write the generated bundle (to replay a mismatch)")
    p.set_defaults(func=cmd_fuzz)

    p = subparsers.add_parser("bundle", help="make or inspect program bundles")
    sub = p.add_subparsers(dest="bundle_command", metavar="ACTION", required=True)
    q = sub.add_parser("directed", help="the directed corner-case suite as a bundle")
    q.add_argument("-o", "--output", required=True, type=options.output_file)
    q.add_argument("--ext-words", type=options.fuzz_ext_words, default=isa.EXT_WORDS_DEFAULT)
    q.set_defaults(func=cmd_bundle_directed)
    q = sub.add_parser("fuzz", help="random valid programs as a bundle")
    q.add_argument("--programs", type=options.positive, default=100)
    q.add_argument("--seed", type=int, default=1)
    q.add_argument("--ext-words", type=options.fuzz_ext_words, default=isa.EXT_WORDS_DEFAULT)
    q.add_argument("--max-cycles", type=options.max_cycles, default=3000)
    q.add_argument("-o", "--output", required=True, type=options.output_file)
    q.set_defaults(func=cmd_bundle_fuzz)
    q = sub.add_parser("make", help="a bundle from program files: PROG[:MEM] ...")
    q.add_argument("programs", nargs="+", metavar="PROG[:MEM]",
                   help="program file (.s/.asm: assembly) with an optional initial memory file")
    q.add_argument("--ext-words", type=options.ext_words, default=isa.EXT_WORDS_DEFAULT)
    q.add_argument("-o", "--output", required=True, type=options.output_file)
    q.set_defaults(func=cmd_bundle_make)
    q = sub.add_parser("info", help="list a bundle's programs and expected counters")
    q.add_argument("file", type=options.input_file)
    q.add_argument("--verify", action="store_true", help="re-run every program in the golden model")
    q.set_defaults(func=cmd_bundle_info)
