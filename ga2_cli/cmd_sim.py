"""`ga2 run`, `ga2 replay`, `ga2 bench sim`, `ga2 diff-sims`: programs and bundles on any simulator.

Every simulator is reached through gen.sim.simulator.get_simulator(name); this
module only parses arguments and prints.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from ga2_hdl import isa
from ga2_hdl.support.safe_io import atomic_write
from gen.sim.simulator import RTL_SIMULATORS, SIMULATORS
from gen.support.cpu import cpu_seconds

from . import options
from .cmd_isa import add_run_arguments, ext_words_of, is_bundle, load_bundle, load_memory, load_program, report_run
from .main import CommandError
from .progress import Lines, Progress


def _simulator(name: str, *, config, **options):
    from gen.sim.simulator import SimulatorError, get_simulator
    try:
        return get_simulator(name, config=config, **options)
    except (SimulatorError, ImportError) as e:
        raise CommandError(f"simulator {name!r} is not available: {e}") from None


# ------------------------------------------------------------------------------------------ run

def cmd_run(args) -> int:
    from gen.sim.simulator import SimulatorError
    # Verilator marks what came from an x by running the program twice (gen/sim/verilog_sim.py
    # VerilatorSimulator.run_program); a waveform is of one plain run
    sim = _simulator(args.sim, config=args.config,
                     **({"x_check": True} if args.sim == "verilator" and not args.vcd else {}))
    if args.vcd and args.sim == "golden":      # refused before anything runs
        raise CommandError("--vcd: the golden model runs at instruction level and has no waveform; "
                           "use --sim amaranth, icarus or verilator")
    program = load_program(args.program, args.config)
    words = ext_words_of(args)
    ext = load_memory(args.ext, words) if args.ext else None
    try:
        result = sim.run_program(program, ext if ext is not None else [], ext_words=words, vcd=args.vcd)
    except SimulatorError as e:
        raise CommandError(str(e)) from None
    if args.vcd:       # the simulators move the waveform into place only once it is written, or fail
        print(f"waveform written to {args.vcd}", file=sys.stderr)
    status = report_run(result, args)
    # unknown values are a result, not a zero: said after the output (the JSON has them too)
    for line in unknown_lines(result):
        print(f"ga2 run: {args.sim}: {line}", file=sys.stderr)
    return 1 if unknown_lines(result) else status


def unknown_lines(result) -> list[str]:
    """What a run could not give a value for, and its accesses outside a memory, one line each."""
    out = []
    if result.unknown_counters:
        out.append("unknown (x or z) counters: " + ", ".join(f"{n} = {t}" for n, t in result.unknown_counters.items()))
    if result.unknown:
        addrs = sorted(result.unknown)
        shown = ", ".join(f"ext[{a}] = {result.unknown[a]}" for a in addrs[:8])
        out.append(f"{len(addrs)} unknown (x or z) word(s) in the final external memory: {shown}"
                   + (" ..." if len(addrs) > 8 else ""))
    out += [f"access outside a memory: {o}" for o in result.outside]
    return out


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
    from gen.sim.simulator import SimulatorError

    names = args.sims
    if args.vcd and "golden" in names:
        raise CommandError("--vcd: the golden model has no waveform; leave it out of --sims")
    if args.program is not None and not args.vcd:
        raise CommandError("--program chooses the program whose waveform --vcd writes; give --vcd FILE too")
    bundle = load_bundle(args.bundle, args.config)
    if not bundle.programs:          # nothing would be compared: a PASS here would mean nothing
        raise CommandError(f"{args.bundle}: the bundle holds no programs; nothing to replay")
    if args.program is not None and not args.program < len(bundle.programs):
        raise CommandError(f"--program {args.program}: {args.bundle} has programs 0 .. {len(bundle.programs) - 1}")
    simulators = {name: _simulator(name, config=args.config) for name in names}      # fail early if one is missing
    failures = 0
    progress = Progress() if not args.quiet else None
    for name, sim in simulators.items():
        vcd = _vcd_name(args.vcd, name, len(names) > 1) if args.vcd else None
        try:
            report = sim.run_bundle(bundle, vcd=vcd, vcd_program=args.program if vcd else None,
                                    reporter=progress)
        except SimulatorError as e:
            if progress:
                progress.close()
            print(f"{name}: ERROR: {e}")
            failures += 1
            continue
        if progress:
            progress.close()
        print(report_line(name, report), flush=True)
        for note in report.notes:
            print(f"  {note}")
        if report.mismatch is not None and report.mismatch.program is not None:
            print(f"  in program {report.mismatch.program}: {bundle.programs[report.mismatch.program].name} "
                  f"(expected values: those stored in {args.bundle})")
        failures += not report.passed
    return 1 if failures else 0


# ---------------------------------------------------------------------------------------- bench

def bench_bundle(random_programs: int, seed: int, ext_words: int | None, config):
    """The fixed benchmark bundle for the chip ``config``: the directed suite of gen/fuzz/programs.py, or
    seeded random programs."""
    from ga2_hdl.formats.bundle import Bundle
    from gen.fuzz.programs import random_bundle
    from gen.fuzz.directed import directed_suite
    from .cmd_fuzz import generated
    ext_words = config.ext_words if ext_words is None else ext_words
    if random_programs:
        return (f"{random_programs} random programs (seed {seed})",
                generated(random_bundle, random_programs, seed, ext_words, config=config))
    return "the directed suite", Bundle.from_programs(generated(directed_suite, ext_words, config=config),
                                                       ext_words, config=config)




def cmd_bench_sim(args) -> int:
    from gen.bench import book_rtl
    from gen.sim.simulator import SimulatorError

    names = args.sims
    try:
        book = book_rtl.directory(args.book_rtl) if "icarus" in names else None
    except SimulatorError as e:
        raise CommandError(f"--book-rtl: {e}") from None
    if args.bundle:
        what, bundle = args.bundle, load_bundle(args.bundle, args.config)
    else:
        what, bundle = bench_bundle(args.random, args.seed, args.ext_words, args.config)
    if book is not None and args.config == isa.BOOK:
        try:                   # before any work: a reference testbench too small for the bundle
            book_rtl.check_testbench(bundle, book)
        except SimulatorError as e:
            raise CommandError(f"--book-rtl: {e}") from None
    load = os.getloadavg()[0]
    chip = "" if args.config == isa.BOOK else f" on {args.config.describe()}"
    print(f"bench: {what}{chip}, {len(bundle.programs)} programs, {bundle.total_cycles} cycles (golden model); "
          f"load average {load:.1f} on {os.cpu_count()} cores", flush=True)
    results = {}
    failures = 0
    for name in names:
        sim = _simulator(name, config=args.config)
        t0 = time.perf_counter()
        try:
            build_note = ""
            if hasattr(sim, "build"):          # compiled simulators: build (or find in the cache) first
                words = len(bundle.to_text().splitlines())
                built = sim.build(bundle.ext_words, words=words)
                build_note = (f"build {built.seconds:.2f} s now"
                              + (f" (cached; compiling took {built.compile_seconds:.1f} s)" if built.cached else ""))
            c0 = cpu_seconds()
            report = sim.run_bundle(bundle)
            cpu = cpu_seconds() - c0
        except SimulatorError as e:
            print(f"{name}: ERROR: {e}")
            failures += 1
            continue
        wall = time.perf_counter() - t0
        run = report.wall_seconds - report.build_seconds
        speed = report.cycles / run if run > 0 else float("inf")
        per_cpu = report.cycles / cpu if cpu > 0 else float("inf")
        compile_seconds = report.compile_seconds
        build = compile_seconds if compile_seconds is not None else report.build_seconds
        print(f"{name}: {speed:,.0f} simulated cycles/s, {per_cpu:,.0f} per CPU-second; build {build:.1f} s"
              f"{' (when compiled)' if compile_seconds is not None else ''}, run {run:.2f} s, {report.cycles} cycles; "
              f"{'PASS' if report.passed else report.line()}", flush=True)
        for note in ([build_note] if build_note else []) + report.notes:
            print(f"  {note}")
        results[name] = {"cycles_per_second": round(speed, 1), "cycles_per_cpu_second": round(per_cpu, 1),
                         "build_seconds": round(build, 3), "run_seconds": round(run, 3),
                         "cpu_seconds": round(cpu, 3), "wall_seconds": round(wall, 3),
                         "cycles": report.cycles, "passed": report.passed, "notes": list(report.notes)}
        failures += not report.passed
    if "icarus" in results and args.config == isa.BOOK:     # the book's RTL is the book chip's
        if book is None:
            print(f"icarus against the book's hand-written RTL: not measured: the book's RTL is not available "
                  f"locally (give its directory with --book-rtl DIR or ${book_rtl.ENV})")
        else:
            same = book_rtl.fitting(bundle)
            try:
                ours = results["icarus"]["cycles_per_cpu_second"]
                if len(same.programs) != len(bundle.programs):
                    # the book's testbench holds 256 instructions: both measured on the programs it can run
                    print(f"  the book's RTL runs programs of up to {book_rtl.IMEM_WORDS} instructions that do not "
                          f"fault: icarus again on those {len(same.programs)} of the {len(bundle.programs)} programs")
                    c0 = cpu_seconds()
                    again = _simulator("icarus", config=isa.BOOK).run_bundle(same)   # the book's RTL is the book chip
                    ours = again.cycles / (cpu_seconds() - c0)
                ref = book_rtl.run(same, book)
            except SimulatorError as e:
                print(f"book's RTL: ERROR: {e}")
                failures += 1
            else:
                ratio = ours / ref.cycles_per_cpu_second
                print(f"book's RTL in Icarus ({book}): {ref.cycles_per_cpu_second:,.0f} simulated cycles per "
                      f"CPU-second ({ref.cycles} cycles, {ref.cpu_seconds:.2f} CPU-s); icarus on the chip "
                      f"{ours:,.0f}; icarus on the chip / book's RTL = {ratio:.2f}", flush=True)
                results["book_rtl_icarus"] = {"cycles_per_cpu_second": round(ref.cycles_per_cpu_second, 1),
                                              "cpu_seconds": round(ref.cpu_seconds, 3), "cycles": ref.cycles,
                                              "icarus_ratio": round(ratio, 3)}
    if args.json:
        atomic_write(args.json, json.dumps({"bundle": what, "programs": len(bundle.programs), "load_average": load,
                                            "results": results}, indent=2) + "\n")
    return 1 if failures else 0


# ------------------------------------------------------------------------------------ bench ch16

def cmd_bench_ch16(args) -> int:
    from gen.bench import ch16 as bench_ch16

    script = Path(args.book_script)
    if not script.is_file():
        raise CommandError(f"--book-script {script}: no such file (the book's tools/ch16_run.py)")
    python = shutil.which(args.python) or args.python
    if not shutil.which(python) and not Path(python).is_file():
        raise CommandError(f"--python {args.python}: no such program")
    for tool in ("iverilog", "vvp", "verilator"):
        if shutil.which(tool) is None:
            raise CommandError(f"{tool} is not installed (both scripts run Icarus and Verilator)")
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="ga2_bench_ch16_"))
    work.mkdir(parents=True, exist_ok=True)
    load = list(os.getloadavg())
    print(f"bench ch16: the book's script {script} against `ga2 ch16 --sims icarus,verilator`, {args.rounds} "
          f"round(s) in turns (book, ours from an empty cache, ours warm); logs in {work}; load average "
          f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} cores", flush=True)
    runs = bench_ch16.measure(script.resolve(), rounds=args.rounds, python=python, work=work,
                              reporter=Lines())
    end = list(os.getloadavg())
    summ = bench_ch16.summary(runs)
    print(f"medians (load average at the end {end[0]:.1f} {end[1]:.1f} {end[2]:.1f}):")
    for label, s in summ.items():
        ratios = (f"; ours / book: wall {s['wall_ratio']:.2f}, CPU {s['cpu_ratio']:.2f}"
                  if "wall_ratio" in s else "")
        print(f"  {label:10s} {s['wall_seconds']:7.1f} s wall {s['cpu_seconds']:7.1f} CPU-s "
              f"({s['runs']} run(s)){ratios}")
    if args.json:
        atomic_write(args.json, json.dumps(bench_ch16.as_json(runs, load, end), indent=2) + "\n")
    return 0 if runs and all(r.ok for r in runs) and len(runs) == 3 * args.rounds else 1


# ------------------------------------------------------------------------------------ diff-sims

def cmd_diff_sims(args) -> int:
    from gen.sim.diffsims import diff_sims
    from gen.sim.simulator import SimulatorError

    names = args.sims
    if len(names) != 2 or names[0] == names[1]:
        raise CommandError(f"--sims {args.sims}: name two different simulators, e.g. amaranth,verilator")
    if "golden" in names:
        raise CommandError(f"--sims {','.join(names)}: the golden model has no signals to compare; name two of "
                           f"{', '.join(RTL_SIMULATORS)}")
    for pattern in args.ignore:
        try:
            re.compile(pattern)
        except re.error as e:
            raise CommandError(f"--ignore {pattern!r}: not a regular expression: {e}") from None
    if is_bundle(args.program):
        if args.ext:
            raise CommandError(f"{args.program} is a bundle: its programs bring their memory; drop --ext")
        bundle = load_bundle(args.program, args.config)
        which = args.index or 0
        if not 0 <= which < len(bundle.programs):
            raise CommandError(f"--program {which}: {args.program} has programs 0 .. {len(bundle.programs) - 1}")
        entry = bundle.programs[which]
        program, ext, words = entry.code, list(entry.ext), bundle.ext_words
        what = f"{args.program} program {which} ({entry.name})"
    else:
        if args.index is not None:
            raise CommandError("--program N chooses a program of a bundle; this is a single program")
        program = load_program(args.program, args.config)
        words = ext_words_of(args)
        ext = load_memory(args.ext, words) if args.ext else []
        what = args.program
    for name in names:
        _simulator(name, config=args.config)         # fail early, naming a missing tool
    print(f"diff-sims: {what} in {names[0]} and {names[1]}", file=sys.stderr, flush=True)
    try:
        report = diff_sims(program, ext, names, ext_words=words, keep=args.keep, ignore=args.ignore,
                           strict_x=args.strict_x, config=args.config)
    except SimulatorError as e:
        raise CommandError(str(e)) from None
    for line in report.lines():
        print(line)
    if args.keep:
        print(f"waveforms kept: {report.vcds[0]}, {report.vcds[1]}")
    return 1 if report.differs else 0


# -------------------------------------------------------------------------------------- parsers

def register(subparsers) -> None:
    p = subparsers.add_parser("run", help="run a program on a simulator (output as `ga2 golden`)")
    p.add_argument("program", type=options.input_file, help="program file (.s/.asm: assembly)")
    add_run_arguments(p)
    p.add_argument("--sim", default="amaranth",
                   help=f"simulator: {', '.join(SIMULATORS)} (default amaranth)")
    p.add_argument("--vcd", metavar="FILE", type=options.output_file, help="write a waveform of the run")
    p.set_defaults(func=cmd_run)

    p = subparsers.add_parser("replay", help="replay a bundle on simulators and compare with its expectations")
    p.add_argument("bundle", type=options.input_file, help="bundle file")
    p.add_argument("--sims", type=options.simulators(), default="amaranth",
                   help=f"comma-separated simulators of {', '.join(SIMULATORS)} (default amaranth)")
    p.add_argument("--vcd", metavar="FILE", type=options.output_file,
                   help="write the waveform of one program (see --program)")
    p.add_argument("--program", type=options.non_negative, metavar="N",
                   help="the program whose waveform --vcd writes (default 0)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    options.add_config(p)
    p.set_defaults(func=cmd_replay)

    p = subparsers.add_parser("bench", help="benchmarks")
    sub = p.add_subparsers(dest="bench_what", metavar="WHAT", required=True)
    q = sub.add_parser("sim", help="simulated cycles per second on a fixed bundle, and the build time")
    q.add_argument("--sims", type=options.simulators(), default="amaranth", help="comma-separated simulators (default amaranth)")
    q.add_argument("--random", type=options.non_negative, default=0, metavar="N",
                   help="use N seeded random programs instead of the directed suite (0: the directed suite)")
    q.add_argument("--seed", type=int, default=1, help="seed for --random (default 1)")
    q.add_argument("--ext-words", type=options.fuzz_ext_words, default=None,
                   help=f"external memory size in words (default: the configuration's, {isa.EXT_WORDS_DEFAULT} "
                        f"on the book chip)")
    options.add_config(q)
    q.add_argument("--bundle", metavar="FILE", type=options.input_file,
                   help="bench on this bundle (e.g. the chapter's programs)")
    q.add_argument("--book-rtl", metavar="DIR",
                   help="the book's hand-written RTL and testbench (default $GA2_BOOK_RTL): Icarus on the chip "
                        "is compared with it, cycles per CPU-second")
    q.add_argument("--json", metavar="FILE", type=options.output_file, help="also write the results as JSON")
    q.set_defaults(func=cmd_bench_sim)
    q = sub.add_parser("ch16", help="the whole chapter-16 job against the book's own script, wall and CPU time",
                       description="Run the book's chapter-16 script (given by path; not part of this "
                                   "repository) and `ga2 ch16 --sims icarus,verilator` from an empty build "
                                   "cache and warm, in turns, and print wall and CPU times, the commands "
                                   "and the ratios.")
    q.add_argument("--book-script", required=True, metavar="FILE", type=options.input_file,
                   help="the book's tools/ch16_run.py (its tree rebuilt outside this repository)")
    q.add_argument("--rounds", type=options.positive, default=2, help="rounds of the three runs (default 2)")
    q.add_argument("--python", default="python3", help="the interpreter for the book's script (default python3)")
    q.add_argument("--work", metavar="DIR", type=options.output_dir,
                   help="keep the logs (and the temporary caches) here (default a new temporary directory)")
    q.add_argument("--json", metavar="FILE", type=options.output_file, help="also write the results as JSON")
    q.set_defaults(func=cmd_bench_ch16)

    p = subparsers.add_parser(
        "diff-sims", help="where two simulators first disagree: the first cycle and signal that differ",
        description="Run one program in two simulators with waveforms and name the first clock cycle "
                    "(counted from the cycle in which start is high) at which a signal of the chip "
                    "differs, with its hierarchical name in the Amaranth design and both values, and "
                    "compare their end states. An x (Icarus) is a difference where the chip reads it (a data port "
                    "whose enable is high); any other x (not written since reset, a port nobody reads) is "
                    "counted, not reported, unless --strict-x. Exit status 1 when the signals or the end states "
                    "differ.")
    p.add_argument("program", type=options.input_file,
                   help="program file (.s/.asm: assembly), or a bundle (then see --program)")
    p.add_argument("--ext", type=options.input_file, help="initial external memory (memory file, 8 hex digits a line)")
    p.add_argument("--ext-words", type=options.ext_words, default=None,
                   help=f"external memory size in words (default: the configuration's, {isa.EXT_WORDS_DEFAULT} "
                        f"on the book chip; a bundle has its own)")
    options.add_config(p)
    p.add_argument("--sims", type=options.simulators(), default="amaranth,verilator",
                   help=f"the two simulators to compare, of {', '.join(RTL_SIMULATORS)} (default amaranth,verilator; "
                        f"the golden model has no signals)")
    p.add_argument("--program", dest="index", type=options.non_negative, metavar="N",
                   help="with a bundle: the program to compare (default 0)")
    p.add_argument("--ignore", action="append", default=[], metavar="REGEX",
                   help="leave out signals whose name matches (may be repeated)")
    p.add_argument("--strict-x", action="store_true",
                   help="also count as a difference an x or z where the chip does not read it (a register not "
                        "written since reset, a port whose enable is low)")
    p.add_argument("--keep", metavar="DIR", type=options.output_dir, help="keep the two waveforms in DIR (SIM.vcd)")
    p.set_defaults(func=cmd_diff_sims)
