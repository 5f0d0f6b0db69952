"""`ga2 asm`, `ga2 disasm`, `ga2 golden`: the ISA's own tools."""
from __future__ import annotations

import json
import sys

from ga2_hdl import asm, golden, isa
from ga2_hdl.bundle import Bundle, is_bundle_file
from ga2_hdl.files import read_memory, read_program, write_memory, write_program
from ga2_hdl.isa import ErrorCode
from ga2_hdl.results import first_mismatch

from .main import CommandError

_ASM_SUFFIXES = (".s", ".asm")


def load_program(path: str) -> list[isa.Instruction]:
    """A program from a hex program file, or from assembly when the name ends in .s or .asm."""
    if path.lower().endswith(_ASM_SUFFIXES):
        with open(path) as f:
            return asm.assemble(f.read(), path)
    return read_program(path)


def counters_line(counters) -> str:
    return "  ".join(f"{name}={value}" for name, value in zip(isa.COUNTER_NAMES, counters))


def add_run_arguments(p) -> None:
    """The options of every command that runs one program (`ga2 golden`, `ga2 run`)."""
    p.add_argument("--ext", help="initial external memory (memory file, 8 hex digits a line)")
    p.add_argument("--ext-words", type=int, default=isa.EXT_WORDS_DEFAULT,
                   help=f"external memory size in words (default {isa.EXT_WORDS_DEFAULT})")
    p.add_argument("--json", action="store_true",
                   help='print {"counters": [...], "ext": [every final external-memory word]}')
    p.add_argument("--dump-ext", metavar="FILE", help="write the final external memory as a memory file")


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
    with open(args.source) as f:
        program = asm.assemble(f.read(), args.source)
    if args.output:
        write_program(args.output, program)
        print(f"{args.output}: {len(program)} instructions")
    else:
        sys.stdout.write("".join(f"{ins.encode():032x}\n" for ins in program))
    return 0


def cmd_disasm(args) -> int:
    if is_bundle_file(args.file):
        bundle = Bundle.read(args.file)
        for i, p in enumerate(bundle.programs):
            print(f"# program {i}: {p.name}")
            sys.stdout.write(asm.disassemble(p.code))
        return 0
    sys.stdout.write(asm.disassemble(read_program(args.file)))
    return 0


def _golden_bundle(args) -> int:
    bundle = Bundle.read(args.file)
    width = max((len(p.name) for p in bundle.programs), default=0)
    failures = 0
    for i, p in enumerate(bundle.programs):
        got = golden.run(p.code, p.ext, ext_words=bundle.ext_words, sparse=True)
        mm = first_mismatch(p.expected, got, program=i)
        status = "" if got.error == ErrorCode.OK else f"  status={got.error.name}@{got.error_pc}"
        note = f"  DIFFERS FROM BUNDLE: {mm}" if mm else ""
        failures += bool(mm)
        print(f"{i:4d} {p.name:<{width}}  {counters_line(got.counters)}{status}{note}")
    print(f"total cycles {bundle.total_cycles} over {len(bundle.programs)} programs "
          f"(ext_words {bundle.ext_words})")
    if failures:
        raise CommandError(f"{failures} programs differ from the bundle's expected results")
    return 0


def cmd_golden(args) -> int:
    if is_bundle_file(args.file):
        if args.ext:
            raise CommandError("--ext does not apply to a bundle (each program carries its own image)")
        return _golden_bundle(args)
    program = load_program(args.file)
    ext = read_memory(args.ext, args.ext_words) if args.ext else None
    result = golden.run(program, ext, ext_words=args.ext_words)
    return report_run(result, args)


def register(subparsers) -> None:
    p = subparsers.add_parser("asm", help="assemble GA-2 assembly into a program file (32 hex digits a line)")
    p.add_argument("source", help="assembly file")
    p.add_argument("-o", "--output", help="program file to write (default: print the words)")
    p.set_defaults(func=cmd_asm)

    p = subparsers.add_parser("disasm", help="disassemble a program file (or every program of a bundle)")
    p.add_argument("file", help="program file, or a bundle")
    p.set_defaults(func=cmd_disasm)

    p = subparsers.add_parser("golden", help="run a program (or every program of a bundle) in the golden model")
    p.add_argument("file", help="program file (.s/.asm: assembly), or a bundle")
    add_run_arguments(p)
    p.set_defaults(func=cmd_golden)
