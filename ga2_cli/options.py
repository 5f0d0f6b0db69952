"""The checked option types every `ga2` command uses: validated when the arguments are parsed,
before any work starts.

Each is an argparse ``type=``: a bad value stops the command with argparse's
one-line message naming the flag (``ga2 golden: error: argument --ext-words:
...``, exit status 2) and nothing is run, created or written.

* :func:`count` (``positive``, ``non_negative``): whole numbers with a floor;
* :func:`seconds`: a time limit, more than 0 seconds;
* :data:`ext_words`: an external-memory size, 1 .. isa.EXT_WORDS_MAX words (``fuzz_ext_words``: 16 ..);
* :data:`max_cycles`: a generated program's cycle budget;
* :data:`output_file`: a file the command will write: its directory exists and
  can be written, it is not a directory (probed by creating and removing a file,
  which also catches a read-only mount and works for root);
* :data:`output_dir`: a directory the command will write into (existing or creatable);
* :data:`input_file`: a file that exists and can be read;
* :func:`simulators`: a comma-separated list of known simulator names (``--sims``);
* :func:`chip_config`: a configuration, by preset name or TOML/JSON file, that
  fits the instruction word (``--config``; :func:`add_config` adds the flag).

The flags several commands share are added by one function each, so that a flag
means, checks and says the same everywhere: :func:`add_config`,
:func:`add_replay_sims`, :func:`add_tokens`, :func:`add_json`, :func:`add_out`,
:func:`add_workers`, :func:`add_jobs`, :func:`add_timeout`.
"""
from __future__ import annotations

import argparse
import os

from ga2_hdl import isa
from ga2_hdl.config import PRESETS, Config, ConfigError, load as load_config
from ga2_hdl.support.safe_io import check_output, check_output_dir


def count(minimum: int, what: str = "number"):
    """An integer of at least ``minimum``."""
    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value}: the {what} must be at least {minimum}")
        return value
    parse.__name__ = f"count>={minimum}"
    return parse


positive = count(1)
non_negative = count(0)


def seconds(text: str) -> float:
    """A time limit in seconds: a number greater than 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:       # also refuses nan
        raise argparse.ArgumentTypeError(f"{value}: the time limit must be more than 0 seconds")
    return value


def _ext_words(minimum: int, why: str = ""):
    def parse(text: str) -> int:
        try:
            value = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not minimum <= value <= isa.EXT_WORDS_MAX:
            raise argparse.ArgumentTypeError(f"{value}: the external memory holds {minimum} .. {isa.EXT_WORDS_MAX} words{why} "
                                             f"(default {isa.EXT_WORDS_DEFAULT})")
        return value
    return parse


#: an external-memory size
ext_words = _ext_words(1)
#: an external-memory size for generated programs (gen/fuzz/programs.py's random programs need 16 words)
fuzz_ext_words = _ext_words(16, " for random programs")
#: a cycle budget of a generated program: at least a HALT's fetch and issue
max_cycles = count(isa.FETCH_ISSUE_CYCLES, "cycle budget (a HALT alone takes that many)")


def _writable(check):
    """An option type that runs ``check`` (safe_io's output probe) on the path and keeps it."""
    def parse(text: str) -> str:
        try:
            check(text)
        except OSError as e:
            raise argparse.ArgumentTypeError(f"{text}: {e.strerror}") from None
        return text
    parse.__name__ = check.__name__
    return parse


output_file = _writable(check_output)
output_dir = _writable(check_output_dir)


def input_file(text: str) -> str:
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"{text}: no such file")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text}: is a directory, not a file")
    if not os.access(text, os.R_OK):
        raise argparse.ArgumentTypeError(f"{text}: cannot be read (permission denied)")
    return text


def chip_config(text: str) -> Config:
    """A chip configuration: a preset name or a ``.toml``/``.json`` file, checked against the ISA."""
    try:
        config = load_config(text)
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    try:
        isa.instruction_set(config)
    except isa.IsaError as e:          # the file's fields fit Config but not the instruction word: name the file
        raise argparse.ArgumentTypeError(str(e) if text in PRESETS else f"{text}: {e}") from None
    return config


def add_config(parser: argparse.ArgumentParser) -> None:
    """The ``--config FILE|NAME`` flag every command that builds, runs, compiles or exports takes."""
    parser.add_argument("--config", type=chip_config, default=isa.BOOK, metavar="FILE|NAME",
                        help=f"chip configuration: a preset ({', '.join(PRESETS)}) or a .toml/.json "
                             f"file of Config fields (default: book, the book's GA-2)")


def simulators(allow_none: bool = False):
    """A comma-separated list of simulator names (``--sims``), each one the simulator layer knows.

    ``allow_none``: an empty list is accepted (a command that can run without replaying).
    """
    def parse(text: str) -> list[str]:
        from gen.sim.simulator import SimulatorError, parse_sims
        try:
            names = parse_sims(text)
        except SimulatorError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        if not names and not allow_none:
            raise argparse.ArgumentTypeError("names no simulator")
        return names
    parse.__name__ = "simulators"
    return parse


# ---- flags several commands share, each written once

#: the directory commands write their figures and JSON files to unless told (``--out``)
DEFAULT_OUT = "out"
#: tokens per run unless told (``--tokens``): the chapter's (spec.runs.TABLE_TOKENS, checked by a test)
CHAPTER_TOKENS = 32


def add_replay_sims(parser: argparse.ArgumentParser) -> None:
    """``--sims``: the simulators that replay every program of a run (none: an empty string)."""
    from gen.sim.simulator import SIMULATORS
    parser.add_argument("--sims", type=simulators(allow_none=True), default="icarus,verilator",
                        help=f"comma-separated simulators: {', '.join(SIMULATORS)} "
                             "(default icarus,verilator; an empty string replays nothing)")


def add_tokens(parser: argparse.ArgumentParser, *, minimum: int = 1, what: str = "tokens per run") -> None:
    """``--tokens``: how many tokens each run decodes (default the chapter's)."""
    parser.add_argument("--tokens", type=count(minimum, "number of tokens"), default=CHAPTER_TOKENS,
                        help=f"{what} (default {CHAPTER_TOKENS}, the chapter's)")


def add_json(parser: argparse.ArgumentParser, what: str = "the results") -> None:
    """``--json FILE``: also write ``what`` as JSON to FILE."""
    parser.add_argument("--json", metavar="FILE", type=output_file, help=f"also write {what} as JSON to FILE")


def add_out(parser: argparse.ArgumentParser, files: str = "the files written") -> None:
    """``--out DIR``: the directory for the command's ``files`` (default :data:`DEFAULT_OUT`)."""
    parser.add_argument("--out", metavar="DIR", default=DEFAULT_OUT, type=output_dir,
                        help=f"directory for {files} (default {DEFAULT_OUT}/)")


def add_workers(parser: argparse.ArgumentParser, what: str = "worker processes") -> None:
    """``--workers N``: local worker processes (default: one per core)."""
    parser.add_argument("--workers", type=positive, default=None, help=f"{what} (default: one per core)")


def add_jobs(parser: argparse.ArgumentParser, what: str, default: int | None = 2) -> None:
    """``--jobs N``: how many ``what`` run at once."""
    shown = "one per core" if default is None else default
    parser.add_argument("--jobs", type=positive, default=default, help=f"{what} at once (default {shown})")


def add_timeout(parser: argparse.ArgumentParser, what: str, default: float) -> None:
    """``--timeout SECONDS``: the time allowed per ``what``."""
    parser.add_argument("--timeout", type=seconds, default=default,
                        help=f"seconds allowed per {what} (default {default:g})")
