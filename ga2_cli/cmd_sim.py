"""`ga2 run`, `ga2 replay`, `ga2 bench sim`: programs and bundles on any simulator.

Every simulator is reached through gen.simulator.get_simulator(name); this
module only parses arguments and prints.
"""
from __future__ import annotations

import json
import os
import sys
import time

from ga2_hdl import isa
from ga2_hdl.safe_io import atomic_write

from . import options
from .cmd_isa import add_run_arguments, ext_words_of, load_bundle, load_memory, load_program, report_run
from .main import CommandError


def _simulator(name: str):
    from gen.simulator import SimulatorError, get_simulator
    try:
        return get_simulator(name)
    except (SimulatorError, ImportError) as e:
        raise CommandError(f"simulator {name!r} is not available: {e}") from None


def _sim_names(text: str) -> list[str]:
    from gen.simulator import SimulatorError, parse_sims
    try:
        names = parse_sims(text)
    except SimulatorError as e:
        raise CommandError(str(e)) from None
    if not names:
        raise CommandError("--sims names no simulator")
    return names


def _progress(name: str):
    """A progress report on stderr, about every 10% of the programs."""
    last = [0]

    def report(done: int, total: int) -> None:
        if done == total or done - last[0] >= max(1, total // 10):
            last[0] = done
            print(f"  {name}: {done}/{total} programs", file=sys.stderr, flush=True)
    return report


# ------------------------------------------------------------------------------------------ run

def cmd_run(args) -> int:
    from gen.simulator import SimulatorError
    sim = _simulator(args.sim)
    if args.vcd and args.sim == "golden":      # refused before anything runs
        raise CommandError("--vcd: the golden model runs at instruction level and has no waveform; "
                           "use --sim amaranth, icarus or verilator")
    program = load_program(args.program)
    words = ext_words_of(args)
    ext = load_memory(args.ext, words) if args.ext else None
    try:
        result = sim.run_program(program, ext if ext is not None else [], ext_words=words, vcd=args.vcd)
    except SimulatorError as e:
        raise CommandError(str(e)) from None
    if args.vcd:       # the simulators move the waveform into place only once it is written, or fail
        print(f"waveform written to {args.vcd}", file=sys.stderr)
    return report_run(result, args)


# --------------------------------------------------------------------------------------- replay

def _vcd_name(path: str, sim: str, several: bool) -> str:
    """With several simulators, each gets its own waveform file: wave.vcd -> wave.icarus.vcd."""
    if not several:
        return path
    root, ext = os.path.splitext(path)
    return f"{root}.{sim}{ext or '.vcd'}"


def report_line(name: str, report) -> str:
    """One line per simulator: the verdict, total cycles, wall time, simulated cycles per second."""
    run = report.wall_seconds - report.build_seconds
    speed = f"{report.cycles / run:,.0f} cycles/s" if run > 0 else "- cycles/s"
    return (f"{name}: {report.line()} | {report.cycles} cycles, {report.wall_seconds:.1f} s wall "
            f"(build {report.build_seconds:.1f} s), {speed}")


def cmd_replay(args) -> int:
    from gen.simulator import SimulatorError

    names = _sim_names(args.sims)
    if args.vcd and "golden" in names:
        raise CommandError("--vcd: the golden model has no waveform; leave it out of --sims")
    if args.program is not None and not args.vcd:
        raise CommandError("--program chooses the program whose waveform --vcd writes; give --vcd FILE too")
    bundle = load_bundle(args.bundle)
    if not bundle.programs:          # nothing would be compared: a PASS here would mean nothing
        raise CommandError(f"{args.bundle}: the bundle holds no programs; nothing to replay")
    if args.program is not None and not args.program < len(bundle.programs):
        raise CommandError(f"--program {args.program}: {args.bundle} has programs 0 .. {len(bundle.programs) - 1}")
    simulators = {name: _simulator(name) for name in names}      # fail early if one is missing
    failures = 0
    for name, sim in simulators.items():
        vcd = _vcd_name(args.vcd, name, len(names) > 1) if args.vcd else None
        try:
            report = sim.run_bundle(bundle, vcd=vcd, vcd_program=args.program if vcd else None,
                                    progress=_progress(name) if not args.quiet else None)
        except SimulatorError as e:
            print(f"{name}: ERROR: {e}")
            failures += 1
            continue
        print(report_line(name, report), flush=True)
        for note in report.notes:
            print(f"  {note}")
        if report.mismatch is not None and report.mismatch.program is not None:
            print(f"  in program {report.mismatch.program}: {bundle.programs[report.mismatch.program].name} "
                  f"(expected values: those stored in {args.bundle})")
        failures += not report.passed
    return 1 if failures else 0


# ---------------------------------------------------------------------------------------- bench

def bench_bundle(random_programs: int, seed: int, ext_words: int):
    """The fixed benchmark bundle: the directed suite of gen/fuzz.py, or seeded random programs."""
    from ga2_hdl.bundle import Bundle
    from gen.fuzz import directed_suite, random_bundle
    from .cmd_fuzz import generated
    if random_programs:
        return (f"{random_programs} random programs (seed {seed})",
                generated(random_bundle, random_programs, seed, ext_words))
    return "the directed suite", Bundle.from_programs(generated(directed_suite, ext_words), ext_words)


def cmd_bench_sim(args) -> int:
    from gen.simulator import SimulatorError

    names = _sim_names(args.sims)
    what, bundle = bench_bundle(args.random, args.seed, args.ext_words)
    print(f"bench: {what}, {len(bundle.programs)} programs, {bundle.total_cycles} cycles (golden model)",
          flush=True)
    results = {}
    failures = 0
    for name in names:
        sim = _simulator(name)
        t0 = time.perf_counter()
        try:
            report = sim.run_bundle(bundle)
        except SimulatorError as e:
            print(f"{name}: ERROR: {e}")
            failures += 1
            continue
        wall = time.perf_counter() - t0
        run = report.wall_seconds - report.build_seconds
        speed = report.cycles / run if run > 0 else float("inf")
        print(f"{name}: {speed:,.0f} simulated cycles/s; build {report.build_seconds:.2f} s, "
              f"run {run:.2f} s, {report.cycles} cycles; {'PASS' if report.passed else report.line()}",
              flush=True)
        for note in report.notes:       # e.g. the Verilog simulators' export / build / run times
            print(f"  {note}")
        results[name] = {"cycles_per_second": round(speed, 1), "build_seconds": round(report.build_seconds, 3),
                         "run_seconds": round(run, 3), "wall_seconds": round(wall, 3),
                         "cycles": report.cycles, "passed": report.passed, "notes": list(report.notes)}
        failures += not report.passed
    if args.json:
        atomic_write(args.json, json.dumps({"bundle": what, "programs": len(bundle.programs),
                                            "results": results}, indent=2) + "\n")
    return 1 if failures else 0


# -------------------------------------------------------------------------------------- parsers

def register(subparsers) -> None:
    p = subparsers.add_parser("run", help="run a program on a simulator (output as `ga2 golden`)")
    p.add_argument("program", type=options.input_file, help="program file (.s/.asm: assembly)")
    add_run_arguments(p)
    p.add_argument("--sim", default="amaranth",
                   help="simulator: golden, amaranth, icarus or verilator (default amaranth)")
    p.add_argument("--vcd", metavar="FILE", type=options.output_file, help="write a waveform of the run")
    p.set_defaults(func=cmd_run)

    p = subparsers.add_parser("replay", help="replay a bundle on simulators and compare with its expectations")
    p.add_argument("bundle", type=options.input_file, help="bundle file")
    p.add_argument("--sims", default="amaranth",
                   help="comma-separated simulators (default amaranth), e.g. amaranth,icarus,verilator")
    p.add_argument("--vcd", metavar="FILE", type=options.output_file,
                   help="write the waveform of one program (see --program)")
    p.add_argument("--program", type=options.non_negative, metavar="N",
                   help="the program whose waveform --vcd writes (default 0)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=cmd_replay)

    p = subparsers.add_parser("bench", help="benchmarks")
    sub = p.add_subparsers(dest="bench_what", metavar="WHAT", required=True)
    q = sub.add_parser("sim", help="simulated cycles per second on a fixed bundle, and the build time")
    q.add_argument("--sims", default="amaranth", help="comma-separated simulators (default amaranth)")
    q.add_argument("--random", type=options.non_negative, default=0, metavar="N",
                   help="use N seeded random programs instead of the directed suite (0: the directed suite)")
    q.add_argument("--seed", type=int, default=1, help="seed for --random (default 1)")
    q.add_argument("--ext-words", type=options.fuzz_ext_words, default=isa.EXT_WORDS_DEFAULT,
                   help=f"external memory size in words (default {isa.EXT_WORDS_DEFAULT})")
    q.add_argument("--json", metavar="FILE", type=options.output_file, help="also write the results as JSON")
    q.set_defaults(func=cmd_bench_sim)
