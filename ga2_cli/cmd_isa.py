"""`ga2 asm`, `ga2 disasm`, `ga2 golden`, `ga2 isadoc`, `ga2 configdoc`: the ISA's own tools (each on a configuration)."""
from __future__ import annotations

import json
import sys

from ga2_hdl.formats import asm
from ga2_hdl import golden, isa
from ga2_hdl.formats.bundle import Bundle, ChipMismatch, check_same_chip, is_bundle_file
from ga2_hdl.config import Config
from ga2_hdl.formats.files import read_memory, read_program, write_memory, write_program
from ga2_hdl.isa import ErrorCode
from ga2_hdl.formats.results import first_mismatch
from ga2_hdl.support.safe_io import atomic_write, read_text

from . import options
from .main import CommandError, user_input

_ASM_SUFFIXES = (".s", ".asm")


def _load_program(path: str, config: Config) -> list[isa.Instruction]:
    if path.lower().endswith(_ASM_SUFFIXES):
        program = asm.assemble(read_text(path), path, config=config)
    else:
        program = read_program(path)
    golden.check_program(program, config)  # empty, too long, no HALT: refused here, naming the file
    return program


def load_program(path: str, config: Config) -> list[isa.Instruction]:
    """A program for the chip ``config`` from a hex program file, or from assembly when the name
    ends in .s or .asm.

    Anything wrong with the file is a CommandError naming it.
    """
    return user_input(path, _load_program, config)


def load_memory(path: str, ext_words: int) -> list[int]:
    """A memory file for an external memory of ``ext_words`` words (errors name the file)."""
    return user_input(path, read_memory, ext_words)


def load_bundle(path: str, config: Config | None = None) -> Bundle:
    """A bundle file (errors name the file and line); with ``config``, refused in one line naming
    the differences when it was made for another chip."""
    bundle = user_input(path, Bundle.read)
    if config is not None:
        try:
            check_same_chip(bundle.config, config, what=path)
        except ChipMismatch as e:
            raise CommandError(str(e)) from None
    return bundle


def is_bundle(path: str) -> bool:
    return user_input(path, is_bundle_file)


def ext_words_of(args) -> int:
    """--ext-words as given, else the configuration's (None means: not given on the command line)."""
    return args.config.ext_words if args.ext_words is None else args.ext_words


def counters_line(counters) -> str:
    return "  ".join(f"{name}={value}" for name, value in zip(isa.COUNTER_NAMES, counters))


def add_run_arguments(p) -> None:
    """The options of every command that runs one program (`ga2 golden`, `ga2 run`)."""
    p.add_argument("--ext", type=options.input_file,
                   help="initial external memory (memory file, 8 hex digits a line)")
    p.add_argument("--ext-words", type=options.ext_words, default=None,
                   help=f"external memory size in words (default: the configuration's, "
                        f"{isa.EXT_WORDS_DEFAULT} on the book chip)")
    p.add_argument("--json", action="store_true",
                   help='print {"counters": [...], "ext": [every final external-memory word]}')
    p.add_argument("--dump-ext", metavar="FILE", type=options.output_file,
                   help="write the final external memory as a memory file (atomically)")
    options.add_config(p)


def report_run(result, args) -> int:
    """Print one program's result the same way whichever simulator ran it."""
    if args.dump_ext:
        write_memory(args.dump_ext, result.ext)
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        print(counters_line(result.counters))
    if result.error != ErrorCode.OK:
        why = f": {result.message}" if result.message else ""
        raise CommandError(f"halted with {result.error.name} ({int(result.error)}) at pc {result.error_pc}{why}")
    return 0


def cmd_asm(args) -> int:
    program = user_input(args.source, lambda path: asm.assemble(read_text(path), path, config=args.config))
    if args.output:
        write_program(args.output, program)
        print(f"{args.output}: {len(program)} instructions")
    else:
        sys.stdout.write("".join(f"{ins.encode():032x}\n" for ins in program))
    return 0


def cmd_disasm(args) -> int:
    if is_bundle(args.file):
        bundle = load_bundle(args.file)
        for i, p in enumerate(bundle.programs):
            print(f"# program {i}: {p.name}")
            sys.stdout.write(asm.disassemble(p.code, bundle.config))     # the chip the bundle is for
        return 0
    sys.stdout.write(asm.disassemble(user_input(args.file, read_program), args.config))
    return 0


def _write_page(output: str | None, text: str, what: str) -> int:
    """A generated page to ``output`` (said in one line), or to stdout."""
    if output:
        atomic_write(output, text)
        print(f"{output}: {what}")
    else:
        sys.stdout.write(text)
    return 0


def cmd_isadoc(args) -> int:
    from ga2_hdl.isa.doc import render_isa_markdown
    return _write_page(args.output, render_isa_markdown(args.config),
                       f"the instruction set of {args.config.describe()}")


def cmd_configdoc(args) -> int:
    from ga2_hdl.config_doc import render_config_markdown
    return _write_page(args.output, render_config_markdown(), "every configuration field")


def _golden_bundle(args) -> int:
    bundle = load_bundle(args.file, args.config)
    width = max((len(p.name) for p in bundle.programs), default=0)
    failures = 0
    for i, p in enumerate(bundle.programs):
        got = golden.run(p.code, p.ext, ext_words=bundle.ext_words, sparse=True, config=args.config)
        mm = first_mismatch(p.expected, got, program=i)
        failures += bool(mm)
        if args.json:          # one JSON object per program, a line each (JSON Lines)
            d = got.to_json()
            del d["ext"]            # the final memory as its non-zero words (a bundle's memories are sparse)
            runs = got.ext.runs() if hasattr(got.ext, "runs") else [(0, got.ext)]
            nonzero = {str(start + j): int(w) for start, words in runs for j, w in enumerate(words) if w}
            d = {"program": i, "name": p.name, **d, "ext_nonzero": nonzero, "ext_words": bundle.ext_words,
                 "matches_bundle": mm is None, "mismatch": None if mm is None else str(mm)}
            print(json.dumps(d))
            continue
        status = "" if got.error == ErrorCode.OK else f"  status={got.error.name}@{got.error_pc}"
        note = f"  DIFFERS FROM BUNDLE: {mm}" if mm else ""
        print(f"{i:4d} {p.name:<{width}}  {counters_line(got.counters)}{status}{note}")
    if not args.json:
        print(f"total cycles {bundle.total_cycles} over {len(bundle.programs)} programs "
              f"(ext_words {bundle.ext_words})")
    if failures:
        raise CommandError(f"{failures} programs differ from the bundle's expected results")
    return 0


#: options of `ga2 golden` that mean nothing for a bundle, and why
_NOT_FOR_BUNDLES = {
    "ext": "each program carries its own image",
    "ext_words": "the bundle says its own size",
    "dump_ext": "there is one final memory per program",
}


def cmd_golden(args) -> int:
    if is_bundle(args.file):
        for name, why in _NOT_FOR_BUNDLES.items():      # refused, never silently ignored
            if getattr(args, name) not in (None, False):
                raise CommandError(f"--{name.replace('_', '-')} does not apply to a bundle ({args.file}): {why}")
        return _golden_bundle(args)
    program = load_program(args.file, args.config)
    words = ext_words_of(args)
    ext = load_memory(args.ext, words) if args.ext else None
    result = golden.run(program, ext, ext_words=words, config=args.config)
    return report_run(result, args)


def register(subparsers) -> None:
    p = subparsers.add_parser("asm", help="assemble GA-2 assembly into a program file (32 hex digits a line)")
    p.add_argument("source", type=options.input_file, help="assembly file")
    p.add_argument("-o", "--output", type=options.output_file,
                   help="program file to write (default: print the words)")
    options.add_config(p)
    p.set_defaults(func=cmd_asm)

    p = subparsers.add_parser("disasm", help="disassemble a program file (or every program of a bundle)")
    p.add_argument("file", type=options.input_file, help="program file, or a bundle")
    options.add_config(p)
    p.set_defaults(func=cmd_disasm)

    p = subparsers.add_parser("golden", help="run a program (or every program of a bundle) in the golden model")
    p.add_argument("file", type=options.input_file, help="program file (.s/.asm: assembly), or a bundle")
    add_run_arguments(p)
    p.set_defaults(func=cmd_golden)

    p = subparsers.add_parser("isadoc", help="the instruction set of a configuration as markdown (docs/isa.md is "
                                             "the book's)")
    p.add_argument("-o", "--output", type=options.output_file, help="file to write (atomically; default: print)")
    options.add_config(p)
    p.set_defaults(func=cmd_isadoc)

    p = subparsers.add_parser("configdoc", help="every configuration field, its type, book value and limits, as "
                                                "markdown (docs/config.md)")
    p.add_argument("-o", "--output", type=options.output_file, help="file to write (atomically; default: print)")
    p.set_defaults(func=cmd_configdoc)
