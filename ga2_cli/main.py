"""The `ga2` command: a thin layer that parses arguments and calls the packages.

Each area owns one module here that adds its subcommands; nothing imports
this package.
"""
from __future__ import annotations

import argparse
import importlib
import sys

# Modules that add subcommands: each defines register(subparsers).
COMMAND_MODULES = (
    "ga2_cli.cmd_isa",        # asm, disasm, golden
    "ga2_cli.cmd_fuzz",       # fuzz
    "ga2_cli.cmd_sim",        # run, replay, bench
    "ga2_cli.cmd_verilog",    # verilog
    "ga2_cli.cmd_compiler",   # mutate compiler
    "ga2_cli.cmd_spec",       # mutate spec
    "ga2_cli.cmd_mutate",     # mutate rtl
    "ga2_cli.cmd_ch16",       # ch16, example a|b
)


class CommandError(Exception):
    """A user-facing error: printed without a traceback, exit status 1."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ga2", description="GA2: the int8 accelerator, its compiler and its workload")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (CommandError, ValueError, OSError) as e:
        print(f"ga2 {args.command}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
