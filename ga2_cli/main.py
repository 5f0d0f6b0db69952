"""The `ga2` command: a thin layer that parses arguments and calls the packages.

Each area owns one module here that adds its subcommands; nothing imports
this package.
"""
from __future__ import annotations

import argparse
import importlib
import signal
import sys

# Modules that add subcommands: each defines register(subparsers).
COMMAND_MODULES = (
    "ga2_cli.cmd_isa",        # asm, disasm, golden, isadoc, configdoc
    "ga2_cli.cmd_fuzz",       # fuzz
    "ga2_cli.cmd_sim",        # run, replay, bench
    "ga2_cli.cmd_verilog",    # verilog
    "ga2_cli.cmd_compiler",   # mutate compiler
    "ga2_cli.cmd_spec",       # mutate spec
    "ga2_cli.cmd_mutate",     # mutate rtl
    "ga2_cli.cmd_ch16",       # ch16, example a|b
    "ga2_cli.cmd_synth",      # synth, build, board run
    "ga2_cli.cmd_beyond",     # beyond
    "ga2_cli.cmd_explore",    # explore
    "ga2_cli.cmd_layers",     # layers
    "ga2_cli.cmd_onnx",       # onnx run, onnx info
    "ga2_cli.cmd_prove",      # prove
)


class CommandError(Exception):
    """The one user error: bad input, a bad option, a file that cannot be read or written.

    Printed as one line (``ga2 COMMAND [ACTION]: error: MESSAGE``), exit status 1, no
    traceback.  Anything else that escapes a command is a bug in ga2 and keeps
    its traceback.  The message names the file (and line, field or flag).
    """


def user_input(path: str, load, *args, **kwargs):
    """``load(path, ...)``, with what a bad input file raises turned into a CommandError naming it.

    A malformed file (``IsaError`` and its kinds: FileFormatError, AsmError, a program the loader
    refuses) or a file that cannot be read (``OSError``) is the user's problem, not a bug.
    """
    from ga2_hdl.isa import IsaError
    try:
        return load(path, *args, **kwargs)
    except IsaError as e:
        text = str(e)
        raise CommandError(text if text.startswith(str(path)) else f"{path}: {text}") from None
    except OSError as e:
        raise CommandError(f"{e.filename or path}: {e.strerror or e}") from None


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM reached ga2: the command stops, its child processes are ended."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _on_signal(signum, _frame):
    raise Interrupted(signum)


def _end_children() -> int:
    """End every process group ga2 started (builds, simulations); how many were still running."""
    toolchain = sys.modules.get("gen.support.toolchain")        # never imported just for this
    return toolchain.end_all_children() if toolchain is not None else 0


class _Parser(argparse.ArgumentParser):
    """argparse, with a bad option said in one line (no usage block above it), exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ga2", description="GA2: the int8 accelerator, its compiler and its workload")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    _name_commands(parser)
    return parser


def _name_commands(parser: argparse.ArgumentParser) -> None:
    """Each (sub)command knows its full name ("ga2 bundle directed") for its error lines."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.set_defaults(command_name=sub.prog)
                _name_commands(sub)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)     # every option is checked here, before any work (ga2_cli/options.py)
    except SystemExit as e:                # a bad option: argparse has printed the usage and one line
        return e.code if isinstance(e.code, int) else 2
    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[signum] = signal.signal(signum, _on_signal)
        except ValueError:                 # not the main thread (ga2 called from a worker thread)
            pass
    try:
        return int(args.func(args) or 0)
    except CommandError as e:
        print(f"{args.command_name}: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        if e.filename is None:             # not about a file the user named: a bug, keep the traceback
            raise
        # a file that could not be read or written (full disk, permissions): the environment, not a bug
        print(f"{args.command_name}: error: {e.filename}: {e.strerror}", file=sys.stderr)
        return 1
    except Exception as e:
        simulator = sys.modules.get("gen.sim.simulator")
        if simulator is None or not isinstance(e, simulator.SimulatorError):
            raise                          # a bug in ga2: the traceback is wanted
        # a simulator that could not run (a tool missing, a build that failed): its own message
        print(f"{args.command_name}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as e:
        signum = e.signum if isinstance(e, Interrupted) else signal.SIGINT
        ended = _end_children()
        what = f"; ended {ended} child process group{'s' if ended != 1 else ''}" if ended else ""
        print(f"{args.command_name}: interrupted by {signal.Signals(signum).name}{what}; "
              f"files being written were left as they were", file=sys.stderr)
        return 128 + signum
    finally:
        _end_children()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


if __name__ == "__main__":
    sys.exit(main())
