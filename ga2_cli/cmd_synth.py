"""`ga2 synth`, `ga2 build`, `ga2 board run`: the chip on a real FPGA.

* ``ga2 synth``: Yosys + nextpnr-ecp5 (YoWASP) per unit and for the chip: LUT4, FF,
  EBR, MULT18X18D, Fmax and the critical path (gen/fpga/synth.py); ``--report`` joins the
  chip's Fmax with the cycles per token of plain and k=3 speculative decoding
  (spec/runs.py) into microseconds and tokens per second, with a figure.
* ``ga2 build --board ulx3s-85f``: the board top (gen/fpga/board/bridge.py) through Amaranth's
  platform build with the YoWASP tools, to a bitstream; says whether the board's
  clock is met.
* ``ga2 board run PROG.hex --port /dev/ttyUSB0``: load, run and read back a program
  on a board over the bridge's UART protocol (gen/fpga/board/protocol.py).
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from ga2_hdl.support.safe_io import atomic_write

from . import options
from .progress import Lines
from .main import CommandError

#: board name -> (amaranth_boards module, platform class)
BOARDS = {
    "ulx3s-12f": ("amaranth_boards.ulx3s", "ULX3S_12F_Platform"),
    "ulx3s-25f": ("amaranth_boards.ulx3s", "ULX3S_25F_Platform"),
    "ulx3s-45f": ("amaranth_boards.ulx3s", "ULX3S_45F_Platform"),
    "ulx3s-85f": ("amaranth_boards.ulx3s", "ULX3S_85F_Platform"),
}


def _say(msg: str) -> None:
    print(msg, flush=True)


def _output_path(value: str | None, flag: str) -> Path | None:
    if value is None:
        return None
    path = Path(value)
    if not path.parent.is_dir():
        raise CommandError(f"{flag} {value}: the directory {path.parent} does not exist")
    if path.is_dir():
        raise CommandError(f"{flag} {value}: is a directory")
    return path


def _require_tools():
    from gen.fpga import synth
    try:
        return synth.tool_versions()
    except synth.ToolsMissing as e:
        raise CommandError(str(e)) from None


# ---------------------------------------------------------------- ga2 synth

def _units(unit: str) -> list[str]:
    from gen.verilog import export as verilog
    if unit == "all":
        found, broken = verilog.units()
        if broken:
            for module, error in broken.items():
                print(f"(not importable, skipped: {module}: {error})", file=sys.stderr)
        return sorted(n for n in found if n != verilog.CHIP_UNIT) + [verilog.CHIP_UNIT]
    try:
        return [verilog.resolve(unit).name]
    except verilog.ExportError as e:
        raise CommandError(str(e)) from None


def _earlier_rows(paths: list[str]) -> list[dict]:
    """The report rows of earlier ``ga2 synth --report --json`` files (``--also``)."""
    rows = []
    for path in paths:
        try:
            data = json.loads(Path(path).read_text())
            rows += list(data["report"]["rows"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise CommandError(f"--also {path}: not the JSON of `ga2 synth --report` ({type(e).__name__}: {e})") from None
    return rows


def _runner(args):
    """Where the syntheses run: a Dask cluster (--scheduler), else --jobs local processes (default 1:
    place and route one at a time, so that no run slows another)."""
    from gen.support.runner import RunnerError, runner_for
    try:
        return runner_for(args.scheduler, args.jobs)
    except RunnerError as e:
        raise CommandError(str(e)) from None


def _report(results: dict, tokens: int, png: Path | None, label: str, also: list[dict], config) -> dict:
    from gen.fpga import report
    _say(f"decoding {tokens} tokens on the golden model of {config.name} (plain, and k=3 with a perfect draft) ...")
    from spec.runs import decoding_cycles
    try:
        cycles = decoding_cycles(tokens, config)
        rows = report.rows(results, cycles, tokens, label, config)
    except (ValueError, report.ReportError) as e:
        raise CommandError(str(e)) from None
    shown = also + rows
    _say("")
    for line in report.table(shown):
        _say(line)
    if png is not None:
        report.plot(shown, png)
        _say(f"figure: {png}")
    return {"tokens": tokens, "config": config.to_dict(), "cycles": cycles, "rows": rows}


def _flow_options(args) -> tuple[list[str], str, float | None]:
    """The targets, the placer and nextpnr's time limit of ``ga2 synth``, checked before any work."""
    from gen.fpga import synth
    targets = args.target or [synth.DEFAULT_TARGET]
    for t in targets:
        if t not in synth.TARGETS:
            raise CommandError(f"--target {t}: choose from {', '.join(synth.TARGETS)}")
    try:
        return targets, synth.check_placer(args.placer, "--placer"), synth.check_limit(args.pnr_limit, "--pnr-limit")
    except synth.SynthError as e:
        raise CommandError(str(e)) from None


def cmd_synth(args) -> int:
    from ga2_hdl import isa
    from gen.fpga import batch, report, synth
    config = args.config
    targets, placer, pnr_limit = _flow_options(args)
    json_path = _output_path(args.json, "--json")
    png = _output_path(args.png, "--png")
    if png is not None and not args.report:
        raise CommandError("--png draws the --report figure: add --report")
    if (args.also or args.label is not None) and not args.report:
        raise CommandError("--also and --label belong to --report: add --report")
    label = args.label if args.label is not None else (
        "current sources" if config.same_chip(isa.BOOK) else f"{config.name}, current sources")
    also_rows = _earlier_rows(args.also or [])
    if args.tokens < 1:
        raise CommandError(f"--tokens {args.tokens}: at least 1")
    units = _units("chip" if args.report and args.unit is None else (args.unit or "chip"))
    tools = _require_tools()
    _say("tools: " + ", ".join(f"{name} ({dist})" for name, dist in tools.items()))
    # every unit is exported now, so the figures are of the sources as they are at this moment
    from gen.verilog import export as verilog
    _say(f"exporting {len(units)} unit(s) to Verilog for the configuration {config.describe()} ...")
    try:
        exports = {unit: verilog.export(unit, config=config) for unit in units}
    except verilog.ExportError as e:
        raise CommandError(str(e)) from None
    out: dict = {"config": config.to_dict(), "tools": tools, "targets": {}}
    chip_results = {}
    misfits: list[str] = []
    seeds = args.seed or [synth.SEED]
    jobs = []
    for target in targets:
        for unit in units:
            for seed in seeds:
                keep = None
                if args.keep:
                    keep = Path(args.keep) / target / unit if config.same_chip(isa.BOOK) else \
                        Path(args.keep) / config.name / target / unit
                    if len(seeds) > 1:
                        keep = keep / f"seed{seed}"
                jobs.append(batch.Job(unit, target, seed, exports[unit], use_cache=not args.no_cache,
                                      keep_dir=str(keep) if keep else None, placer=placer,
                                      pnr_limit=pnr_limit))
    runner = _runner(args)
    _say(f"{len(jobs)} run(s) of Yosys and nextpnr ({len(units)} unit(s) x {len(targets)} target(s) x "
         f"{len(seeds)} seed(s)) on {runner.describe()}")
    t0 = time.perf_counter()
    outcomes: dict[tuple[str, str], list] = {}
    try:
        for n, o in enumerate(batch.run_jobs(jobs, runner, reporter=Lines(stream=sys.stdout)), 1):
            j = o.job
            what = (f"Fmax {o.result.fmax_mhz:.1f} MHz" if o.kind == "result" and o.result.fmax_mhz else
                    "no Fmax" if o.kind == "result" else o.message)
            how = "" if o.kind != "result" else (" (cached)" if o.result.cached else
                                                  f" (yosys {o.result.synth_seconds:.0f} s, nextpnr {o.result.pnr_seconds:.0f} s)")
            by = "" if j.placer == synth.PLACER else f", {j.placer} placer"
            _say(f"[{n}/{len(jobs)}] {j.unit} of {config.name} on {j.target}, seed {j.seed}{by}: {what}{how}")
            outcomes.setdefault((j.target, j.unit), []).append(o)
    except synth.ToolsMissing as e:
        raise CommandError(str(e)) from None
    finally:
        runner.close()
    for target in targets:
        per: dict = {"units": {}}
        for unit in units:
            got = outcomes[(target, unit)]
            failed = [o for o in got if o.kind in ("error", "over_time")]
            if failed:
                raise CommandError(f"{unit} on {target}, seed {failed[0].job.seed}: {failed[0].message}")
            misfit = next((o for o in got if o.kind == "misfit"), None)
            if misfit is not None:
                entry = dict(misfit.misfit)
                entry.pop("cached", None)
                misfits.append(misfit.message)
            else:
                runs = sorted((o.result for o in got), key=lambda r: seeds.index(r.seed))
                r, spread = report.median_run(runs)
                _say(f"  {r.summary()}" + ("" if len(runs) == 1 else f"  (seed {r.seed}, the median of {len(runs)})"))
                if spread:
                    _say(f"  Fmax over seeds {', '.join(str(s) for s in seeds)}: median {spread['median_mhz']:.1f} "
                         f"MHz, {spread['min_mhz']:.1f} .. {spread['max_mhz']:.1f}")
                _say(f"  {r.memory_line()}")
                _say(f"  {r.read_write_line()}")
                if r.dsp_line():
                    _say(f"  {r.dsp_line()}")
                line = r.path_line()
                if line:
                    _say(f"  {line}")
                    _say(f"  through: {', '.join(r.critical_path.get('through', []))}")
                entry = r.to_json()
                if spread:
                    entry["seeds"] = spread
                if unit == "ga2_chip":
                    chip_results[target] = r
            if unit == "ga2_chip":
                per["chip"] = entry
            else:
                per["units"][unit] = entry
        out["targets"][target] = per
    _say(f"done in {time.perf_counter() - t0:.0f} s")
    if args.report:
        if not chip_results and misfits:
            _say("no report: the chip fits no target given")
        elif not chip_results:
            raise CommandError("--report needs the chip: use --unit chip or --unit all")
        else:
            out["report"] = _report(chip_results, args.tokens, png, label, also_rows, config)
    if json_path is not None:
        # one target: its units and chip at the top level as well, for simple consumers
        if len(targets) == 1:
            out.update(out["targets"][targets[0]])
        atomic_write(json_path, json.dumps(out, indent=1) + "\n")
        _say(f"JSON: {json_path}")
    if misfits:
        _say(f"{len(misfits)} design(s) do not fit their target (said above; exit status 3)")
        return 3
    return 0


# ---------------------------------------------------------------- ga2 build

def _platform(board: str):
    import importlib
    if board not in BOARDS:
        raise CommandError(f"--board {board}: choose from {', '.join(BOARDS)}")
    module, cls = BOARDS[board]
    try:
        return getattr(importlib.import_module(module), cls)
    except ImportError:
        raise CommandError("--board needs amaranth-boards: pip install -e '.[fpga]' "
                           "(or pip install amaranth-boards==0.0.21)") from None


def board_top(config, ext_words: int | None, baud: int = 115_200, divisor: int | None = None):
    """The board top for ``config``, or CommandError in one line when the bridge cannot carry the
    configuration or the chip cannot be built for it (before any work)."""
    from gen.fpga.board.bridge import BoardTop
    try:
        return BoardTop(baud=baud, divisor=divisor, ext_words=ext_words, config=config)
    except ValueError as e:
        raise CommandError(f"--config {config.name}{'' if ext_words is None else f' --ext-words {ext_words}'}: "
                           f"{e}") from None


def cmd_build(args) -> int:
    config = args.config
    ext_words = config.ext_words if args.ext_words is None else args.ext_words
    top = board_top(config, args.ext_words, args.baud)   # the configuration first: refused before any work
    platform_cls = _platform(args.board)
    out_dir = Path(args.output)
    if out_dir.exists() and not out_dir.is_dir():
        raise CommandError(f"-o {args.output}: not a directory")
    if args.baud < 1200:
        raise CommandError(f"--baud {args.baud}: at least 1200")
    from gen.fpga import synth
    from gen.fpga.board import build
    try:
        env = build.tool_environment()
    except synth.ToolsMissing as e:
        raise CommandError(str(e)) from None
    platform = platform_cls()
    try:
        from gen.fpga.board.uart import divisor_for
        divisor_for(platform.default_clk_frequency, args.baud)
    except ValueError as e:
        raise CommandError(f"--baud: {e}") from None
    _say(f"building the board top of {config.describe()} for {args.board} "
         f"({platform.device}-{platform.speed}{platform.package}), "
         f"{args.baud} baud, external memory {ext_words} words; tools: "
         + ", ".join(f"{k}={v}" for k, v in env.items()))
    _say(f"  yosys, nextpnr-ecp5 and ecppack run in {out_dir} (several minutes; logs top.rpt, top.tim)")
    t0 = time.perf_counter()
    try:
        bit, verdicts = build.build(top, platform, out_dir, env, reporter=Lines(stream=sys.stdout))
    except build.BuildError as e:
        raise CommandError(str(e)) from None
    _say(f"bitstream: {bit} ({bit.stat().st_size:,} bytes) in {time.perf_counter() - t0:.0f} s; "
         f"program it with: openFPGALoader --board ulx3s {bit}")
    ok = True
    for clock, mhz, met, want in verdicts:
        _say(f"timing: clock {clock}: {mhz:.2f} MHz achieved, {want:.2f} MHz required: "
             + ("MET" if met else "NOT MET"))
        ok &= met
    if not verdicts:
        _say("timing: nextpnr's log has no timing verdict")
        ok = False
    return 0 if ok else 2


# ---------------------------------------------------------------- ga2 board run

def cmd_board_run(args) -> int:
    from ga2_hdl import golden
    from ga2_hdl.formats.files import FileFormatError
    from gen.fpga.board.protocol import Host, ProtocolError, SerialLink, run_sync
    from ga2_hdl.isa import IsaError
    config = args.config
    ext_words = config.ext_words if args.ext_words is None else args.ext_words
    from gen.fpga.board.bridge import bridge_problems
    problems = bridge_problems(config, ext_words)
    if problems:
        raise CommandError(f"--config {config.name}: the UART bridge cannot carry it: {'; '.join(problems)}")
    try:
        program = _read_program(args.program)
        ext = _read_ext(args.ext, ext_words) if args.ext else []
        code = golden.as_instructions(program)
        golden.check_program(code, config=config)
    except (FileFormatError, IsaError) as e:
        raise CommandError(str(e)) from None
    try:
        link = SerialLink(args.port, args.baud)
    except ProtocolError as e:
        raise CommandError(str(e)) from None
    except Exception as e:
        raise CommandError(f"--port {args.port}: {e}") from None

    async def pause():
        import asyncio
        await asyncio.sleep(0.01)

    try:
        result = run_sync(Host(link).run([i.encode() for i in code], ext, ext_words, wait=pause))
    except ProtocolError as e:
        raise CommandError(f"{args.port}: {e}") from None
    finally:
        link.close()
    from ga2_hdl.isa import COUNTER_NAMES
    print(f"status: {result.error.name} at pc {result.error_pc}")
    for name, value in zip(COUNTER_NAMES, result.counters):
        print(f"{name}: {value}")
    if args.json:
        path = _output_path(args.json, "--json")
        atomic_write(path, json.dumps(result.to_json()) + "\n")
    if args.check:
        from ga2_hdl.formats.results import first_mismatch
        want = golden.run(code, ext, ext_words=ext_words, config=config)
        mismatch = first_mismatch(want, result)
        print("golden model: " + ("equal (memory and all five counters)" if mismatch is None else f"MISMATCH: {mismatch}"))
        return 0 if mismatch is None else 1
    return 0


def _read_program(path: str):
    from ga2_hdl.formats import files
    return files.read_program(path)


def _read_ext(path: str, ext_words: int):
    from ga2_hdl.formats import files
    return files.read_memory(path, ext_words)


# ---------------------------------------------------------------- registration

def register(subparsers) -> None:
    from ga2_hdl import isa
    from spec.book import TOKENS
    p = subparsers.add_parser(
        "synth", help="area and Fmax of every unit and of the chip on an ECP5 (Yosys + nextpnr, YoWASP)")
    p.add_argument("--unit", default=None,
                   help="chip (default), a unit name (see `ga2 verilog --list`), or all (every unit and the chip)")
    p.add_argument("--target", action="append", metavar="NAME",
                   help="ecp5-25k (default, LFE5U-25F-6) or ecp5-85k (LFE5U-85F-6); may be repeated")
    p.add_argument("--json", metavar="FILE", type=options.output_file, help="write the figures as JSON")
    p.add_argument("--report", action="store_true",
                   help="join the chip's Fmax with cycles per token (plain and k=3 speculative decoding)")
    p.add_argument("--tokens", type=options.count(2, "number of tokens"), default=TOKENS, help=f"tokens decoded for --report (default {TOKENS}, the chapter's)")
    p.add_argument("--png", metavar="FILE", type=options.output_file, help="with --report: draw area against tokens per second")
    p.add_argument("--label", default=None,
                   help="with --report: the design's name in the table (default: current sources, and the "
                        "configuration's name when it is not the book's)")
    p.add_argument("--also", action="append", metavar="JSON",
                   help="with --report: add the rows of an earlier `ga2 synth --report --json` file (other sources)")
    p.add_argument("--keep", metavar="DIR", type=options.output_dir, help="copy each run's Verilog, scripts, logs and reports to DIR")
    p.add_argument("--no-cache", action="store_true", help="run the tools even if a cached result exists")
    p.add_argument("--seed", action="append", type=options.count(0, "seed"), metavar="N",
                   help="nextpnr's placement seed (default 1; part of the cache key); repeat it to run several "
                        "seeds and report the median run and the spread")
    p.add_argument("--placer", default=None, metavar="NAME",
                   help="nextpnr's placer: heap (default, the flow's) or static, the electrostatic placer "
                        "(part of the cache key; docs/fpga.md, sixteenth session)")
    p.add_argument("--pnr-limit", type=float, default=None, metavar="SECONDS",
                   help="stop nextpnr after SECONDS and fail the run (nothing cached); a cached result is taken "
                        "whatever its run took")
    p.add_argument("--jobs", type=options.positive, default=1, metavar="N",
                   help="runs at once on this machine (default 1: place and route one at a time, so that no run "
                        "slows another)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run every synthesis (each unit, target and seed) as a task on the Dask cluster at ADDRESS "
                        "(tcp://HOST:8786; each worker keeps its own tool cache); needs pip install -e '.[cluster]'")
    options.add_config(p)
    p.set_defaults(func=cmd_synth)

    b = subparsers.add_parser("build", help="a bitstream of the board top (chip + UART bridge) for an FPGA board")
    b.add_argument("--board", required=True, help=f"one of: {', '.join(BOARDS)}")
    b.add_argument("-o", "--output", default="build/board", metavar="DIR", type=options.output_dir, help="build directory (default build/board)")
    b.add_argument("--baud", type=options.positive, default=115_200, help="UART rate (default 115200)")
    b.add_argument("--ext-words", type=options.ext_words, default=None,
                   help=f"external memory in block RAM, words (default: the configuration's, "
                        f"{isa.EXT_WORDS_DEFAULT} for the book's)")
    options.add_config(b)
    b.set_defaults(func=cmd_build)

    r = subparsers.add_parser("board", help="talk to a board running the bridge (ga2 board run PROG.hex --port ...)")
    rs = r.add_subparsers(dest="board_command", metavar="ACTION", required=True)
    run = rs.add_parser("run", help="load a program and its memory, run it, read back the counters and memory")
    run.add_argument("program", metavar="PROG.hex", type=options.input_file)
    run.add_argument("--ext", metavar="MEM.hex", type=options.input_file, help="external memory image")
    run.add_argument("--port", required=True, help="serial port, e.g. /dev/ttyUSB0")
    run.add_argument("--baud", type=options.positive, default=115_200)
    run.add_argument("--ext-words", type=options.ext_words, default=None,
                     help="the board's external memory size, as built (default: the configuration's)")
    options.add_config(run)
    run.add_argument("--json", metavar="FILE", type=options.output_file, help="write the result (counters, memory) as JSON")
    run.add_argument("--check", action="store_true", help="compare with the golden model")
    run.set_defaults(func=cmd_board_run)
