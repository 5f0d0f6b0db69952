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
from ga2_hdl.files import read_memory

from .cmd_isa import add_run_arguments, load_program, report_run
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
    program = load_program(args.program)
    problem = isa.ext_words_problem(args.ext_words)   # 0 would otherwise fall back silently to the default size
    if problem:
        raise CommandError(f"--ext-words {args.ext_words}: {problem}")
    ext = read_memory(args.ext, args.ext_words) if args.ext else None
    sim = _simulator(args.sim)
    try:
        result = sim.run_program(program, ext if ext is not None else [], ext_words=args.ext_words, vcd=args.vcd)
    except SimulatorError as e:
        raise CommandError(str(e)) from None
    if args.vcd:
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
    from ga2_hdl.bundle import Bundle
    from gen.simulator import SimulatorError

    names = _sim_names(args.sims)
    if args.program is not None and not args.vcd:
        raise CommandError("--program chooses the program whose waveform --vcd writes; give --vcd FILE too")
    bundle = Bundle.read(args.bundle)
    if not bundle.programs:          # nothing would be compared: a PASS here would mean nothing
        raise CommandError(f"{args.bundle}: the bundle holds no programs; nothing to replay")
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
            print(f"  in program {report.mismatch.program}: {bundle.programs[report.mismatch.program].name}")
        failures += not report.passed
    return 1 if failures else 0


# ---------------------------------------------------------------------------------------- bench

def bench_bundle(random_programs: int, seed: int, ext_words: int):
    """The fixed benchmark bundle: the directed suite of gen/fuzz.py, or seeded random programs."""
    from ga2_hdl.bundle import Bundle
    from gen.fuzz import directed_suite, random_bundle
    if random_programs:
        return f"{random_programs} random programs (seed {seed})", random_bundle(random_programs, seed, ext_words)
    return "the directed suite", Bundle.from_programs(directed_suite(ext_words), ext_words)


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
        with open(args.json, "w") as f:
            json.dump({"bundle": what, "programs": len(bundle.programs), "results": results}, f, indent=2)
    return 1 if failures else 0


# -------------------------------------------------------------------------------------- parsers

def register(subparsers) -> None:
    p = subparsers.add_parser("run", help="run a program on a simulator (output as `ga2 golden`)")
    p.add_argument("program", help="program file (.s/.asm: assembly)")
    add_run_arguments(p)
    p.add_argument("--sim", default="amaranth",
                   help="simulator: golden, amaranth, icarus or verilator (default amaranth)")
    p.add_argument("--vcd", metavar="FILE", help="write a waveform of the run")
    p.set_defaults(func=cmd_run)

    p = subparsers.add_parser("replay", help="replay a bundle on simulators and compare with its expectations")
    p.add_argument("bundle", help="bundle file")
    p.add_argument("--sims", default="amaranth",
                   help="comma-separated simulators (default amaranth), e.g. amaranth,icarus,verilator")
    p.add_argument("--vcd", metavar="FILE", help="write the waveform of one program (see --program)")
    p.add_argument("--program", type=int, metavar="N", help="the program whose waveform --vcd writes (default 0)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=cmd_replay)

    p = subparsers.add_parser("bench", help="benchmarks")
    sub = p.add_subparsers(dest="bench_what", metavar="WHAT", required=True)
    q = sub.add_parser("sim", help="simulated cycles per second on a fixed bundle, and the build time")
    q.add_argument("--sims", default="amaranth", help="comma-separated simulators (default amaranth)")
    q.add_argument("--random", type=int, default=0, metavar="N",
                   help="use N seeded random programs instead of the directed suite")
    q.add_argument("--seed", type=int, default=1, help="seed for --random (default 1)")
    q.add_argument("--ext-words", type=int, default=isa.EXT_WORDS_DEFAULT,
                   help=f"external memory size in words (default {isa.EXT_WORDS_DEFAULT})")
    q.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    q.set_defaults(func=cmd_bench_sim)
