"""`ga2 mutate compiler`: the slice_rows mutation test of Capra.

    ga2 mutate compiler [--json FILE] [--graphs N] [--config FILE|NAME]

Each of the chapter's ten one-line breakages of slice_rows (and one change that
only looks like a bug) is applied to an in-memory copy of compiler/, and the
slice battery is run against it (see compiler/mutate.py).  ``--config`` is the
chip the battery's graphs are compiled for (by the unbroken and the broken
compilers alike) and run on (that chip's golden model): the verdicts say
whether the battery notices each broken compiler when it compiles for that chip.
"""
from __future__ import annotations

from . import options
from .cmd_spec import mutate_targets, write_mutation_json


def register(subparsers) -> None:
    p = mutate_targets(subparsers).add_parser(
        "compiler", help="the ten broken copies of the compiler's slice_rows",
        description="Apply each one-line change of slice_rows to a copy of the compiler (never to the files) "
                    "and run the slice battery against it: random slice graphs compiled and run on the golden "
                    "model against the interpreter, read back from the scratchpad, with and without reuse, "
                    "against float, and the refusals. --config: the chip the battery compiles for and runs on "
                    "(its golden model); the verdicts are those of the battery on that chip.")
    options.add_json(p, "the verdicts")
    p.add_argument("--graphs", type=options.positive, default=40, help="random graphs in the battery (default 40)")
    options.add_config(p)
    p.set_defaults(func=_mutate_compiler)


def _mutate_compiler(args) -> int:
    from compiler.mutate import EQUIVALENT_MUTANTS, SLICE_MUTANTS, run_mutation

    print("NOTE: this script deliberately breaks copies of the compiler. 'caught' is EXPECTED: it shows the "
          "battery notices the mistake.", flush=True)
    print(f"the battery compiles for and runs on the chip {args.config.describe()}", flush=True)
    unbroken, problem, verdicts = run_mutation(graphs=args.graphs, config=args.config)
    print(f"unbroken compiler passes: {unbroken}")
    if not unbroken:
        print(f"  its first problem: {problem}")
        print("no mutant was run: the battery must pass on the unbroken compiler first")
    by_name = {v.mutant.name: v for v in verdicts}
    broken = [by_name[m.name] for m in SLICE_MUTANTS if m.name in by_name]
    for v in broken:
        print(f"{v.mutant.name}: {v.status}")
    caught = sum(v.status == "caught" for v in broken)
    equivalent = [by_name[m.name] for m in EQUIVALENT_MUTANTS if m.name in by_name]
    if unbroken:
        print(f"\nslice_rows: {caught} of {len(SLICE_MUTANTS)} broken compilers caught")
        print("\nA change that looks like a bug and is not:")
        for v in equivalent:
            verdict = "NOT CAUGHT (as it should be)" if v.status == "equivalent" else \
                f"FLAGGED, which it should not be: {v.detail}"
            print(f"EQUIVALENT in effect: {v.mutant.name}: {verdict}")
            print(f"    why: {v.mutant.equivalent}")
    if args.json:
        write_mutation_json(args.json, unbroken, problem, verdicts, config=args.config.to_dict())
    ok = unbroken and caught == len(SLICE_MUTANTS) and all(v.status == "equivalent" for v in equivalent)
    return 0 if ok else 1
