"""`ga2 mutate rtl`: mutation testing of the hardware (gen/mutation/rtl.py, the engine ga2_hdl/support/mutation.py).

    ga2 mutate rtl [--unit NAME] [--match TEXT] [--only ID] [--json FILE] [--jobs N] [--sample N | --all]
                   [--timeout S] [--judge tests|prove|tests,prove] [--list]
"""
from __future__ import annotations

import os
import tempfile
import time
from collections import Counter

from . import options
from .progress import Lines
from .cmd_spec import mutate_targets, write_mutation_json
from .main import CommandError

DEFAULT_SAMPLE = 240


def register(subparsers) -> None:
    p = mutate_targets(subparsers).add_parser(
        "rtl", help="systematic mutants of every Amaranth unit, judged by the unit tests and the chip",
        description="Generate mutants from the Amaranth sources of every RTL unit (comparisons, constants "
                    "+1/-1, widths -1, swapped operands, a dropped m.d.sync statement, an enable stuck at "
                    "0/1, a state's m.next changed), one per distinct mutated source, build each into a private "
                    "copy of the design and judge it: its chip elaborated (a copy that does not build is "
                    "counted apart, untested), the unit's own tests, the tests of the units containing it "
                    "(Amaranth's simulator), "
                    "then the chip on the directed suite and fixed random programs (Icarus).  'caught' is "
                    "the expected outcome.")
    p.add_argument("--unit", action="append", metavar="NAME",
                   help="only this unit's file (ga2_hdl/rtl/NAME.py; repeatable; default: every RTL unit)")
    p.add_argument("--match", action="append", metavar="TEXT", default=[],
                   help="only the mutants whose --list line contains TEXT (file:line, [operator], the change and "
                        "its context; repeatable: every TEXT must occur); judges all of them unless --sample is given")
    p.add_argument("--only", action="append", metavar="ID", type=options.non_negative, default=[],
                   help="only the mutant numbered ID in --list (with the same --unit; repeatable; the numbers "
                        "follow the sources, so list them again after an edit)")
    options.add_json(p, "the report")
    options.add_jobs(p, "mutants judged")
    p.add_argument("--sample", type=_sample, default=DEFAULT_SAMPLE,
                   help=f"judge this many of the generated mutants, spread evenly over all of them "
                        f"(default {DEFAULT_SAMPLE})")
    p.add_argument("--all", action="store_true", help="judge every generated mutant")
    options.add_timeout(p, "mutant", 600.0)
    p.add_argument("--judge", type=_judges, default=("tests",), metavar="tests|prove|tests,prove",
                   help="what judges a mutant: the tests (default), the formal properties of its unit on the "
                        "book's chip (gen/formal/prove.py; needs the formal extra), or the tests and then, for "
                        "a mutant they all pass, the properties (a mutant caught only by a proof is reported "
                        "as such); with prove alone only the mutants of units that have properties are judged")
    p.add_argument("--list", action="store_true", help="only list the mutants that would be judged")
    p.set_defaults(func=_mutate_rtl)


def _mutate_rtl(args) -> int:
    from ga2_hdl.support import mutation
    from gen.formal import mutation_judge as proofs
    from gen.mutation import build_check, rtl as mutate_rtl

    known = mutate_rtl.rtl_files()
    for unit in args.unit or ():
        if unit not in known:
            raise CommandError(f"--unit {unit}: not an RTL unit; units: {', '.join(known)}")

    generated = mutate_rtl.generate(args.unit)
    picked = _choose(args, generated)
    chosen = [m for _, m in picked]
    if args.list:
        for i, m in picked:
            print(f"#{i} {_listed(m)}")
        print(f"{len(chosen)} of {len(generated)} generated mutants")
        return 0
    if not chosen:
        raise CommandError("no mutant matches --only/--match (see --list)")
    if "prove" in args.judge:
        from gen.formal import sby
        if sby.tools_problem():
            raise CommandError(f"--judge {','.join(args.judge)}: {sby.tools_problem()}")

    print("NOTE: this deliberately breaks copies of the RTL. 'caught' is EXPECTED: it shows the tests "
          "notice the mistake.", flush=True)
    units = sorted({mutate_rtl.unit_of(m) for m in chosen})
    folded = sum(len(m.duplicates) for m in generated)
    print(f"{len(generated)} mutants generated from {len(set(m.file for m in generated))} files ({folded} more "
          f"edit(s) made the same source as one of them: judged with it); judging "
          f"{len(chosen)}{' (all)' if len(chosen) == len(generated) else ' spread evenly over them'}, "
          f"{args.jobs} at a time", flush=True)
    load_start = os.getloadavg()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ga2_mutate_rtl_") as tmp:
        from pathlib import Path
        base = mutate_rtl.snapshot(Path(tmp) / "sources")   # what the run judges, whatever is edited meanwhile
        bundle = os.path.join(tmp, "chip_check.hex")
        reach = mutate_rtl.build_reach(base)
        chips = mutate_rtl.chip_configs(chosen, reach)
        programs = mutate_rtl.write_chip_bundle(bundle, chips)
        print(f"chip check: {programs} programs (directed suite and {mutate_rtl.RANDOM_PROGRAMS} random, seed "
              f"{mutate_rtl.RANDOM_SEED}) with the golden model's expectations, on the chip of "
              f"{', '.join(chips)} (a mutant's line the book's chip never builds: the cheapest that does)",
              flush=True)
        print("checking the unbroken design first ...", flush=True)
        how = dict(tests="tests" in args.judge, after=proofs.first_failure if "prove" in args.judge else None)
        problem = mutate_rtl.baseline(units, bundle, jobs=args.jobs, timeout=args.timeout, base=base,
                                      chips=chips, **how)
        if problem:
            print(f"unbroken design passes: False\n  {problem}\nno mutant was run: the checks must pass on the "
                  f"unbroken design first")
            if args.json:
                write_mutation_json(args.json, False, problem, [])
            return 1
        base_seconds = time.perf_counter() - t0
        print(f"unbroken design passes: True ({base_seconds:.0f} s); each mutant's chip is elaborated before "
              f"its tests (a copy that does not build is counted apart without running them)", flush=True)

        results = mutation.run_mutants(chosen, mutate_rtl.judge(bundle, base, reach, **how), jobs=args.jobs,
                                       timeout=args.timeout, crash_status="error", reporter=Lines(eta=True))
    for r in results:
        if r.status == "survived":
            r.detail = {("tests",): mutate_rtl.SURVIVOR_REASON, ("prove",): proofs.HOLDS}.get(
                args.judge, f"{mutate_rtl.SURVIVOR_REASON}; and {proofs.HOLDS}")
    seconds = time.perf_counter() - t0
    load_end = os.getloadavg()
    totals = mutation.totals(results)
    per_minute = len(results) / (seconds / 60) if seconds else 0.0

    _print_table(results, units, totals)
    by_proof = [r for r in results if r.status == "caught" and r.caught_by.startswith("proof:")]
    if "prove" in args.judge:
        print(f"caught by a proof: {len(by_proof)}" + (" (every test passed them first: caught only by a proof)"
                                                      if by_proof and "tests" in args.judge else ""))
    refuted = [r for r in results if r.argument_refuted]
    for r in refuted:
        print(f"ARGUED EQUIVALENT BUT CAUGHT: {r.mutant.file}:{r.mutant.line}: {r.mutant.change}: {r.caught_by}")
    pct = totals["caught_percent"]
    edits = len(generated) + sum(len(m.duplicates) for m in generated)
    print(f"\nRTL: {totals['caught']} of {totals['non_equivalent_judged']} non-equivalent mutants caught"
          f" ({pct if pct is not None else '-'}%), {totals['equivalent']} equivalent (argued in "
          f"gen/mutation/equivalents.py), {totals['timeout']} timed out, {totals['error']} did not build "
          f"({totals['error_before_judging']} of them found by elaborating the chip, before any test); "
          f"{totals['duplicate_edits']} more edit(s) judged with a mutant that makes the same source "
          f"({edits} edits generated, {len(generated)} distinct mutants)")
    print(f"time: {seconds:.0f} s ({seconds / 60:.1f} min) for {len(results)} mutants: {per_minute:.1f} mutants per "
          f"minute with --jobs {args.jobs}; load average {load_start[0]:.1f} at the start, {load_end[0]:.1f} at "
          f"the end, on {os.cpu_count()} cores")
    if args.json:
        write_mutation_json(args.json, True, None, results, target="rtl", generated=len(generated),
                            generated_edits=edits, build_check_configs=list(build_check.CONFIGS),
                            seconds=round(seconds, 1), mutants_per_minute=round(per_minute, 2), jobs=args.jobs,
                            load_average_start=round(load_start[0], 2), load_average_end=round(load_end[0], 2),
                            cores=os.cpu_count(), chip_check_programs=programs, judges=list(args.judge),
                            caught_by_proof=len(by_proof),
                            caught_only_by_proof=len(by_proof) if "tests" in args.judge else 0)
        print(f"wrote {args.json}")
    return 0 if not (totals["survived"] or refuted) else 1


def _print_table(results, units, totals) -> None:
    """The verdicts per unit, the checks that caught, and every survivor, timeout and error."""
    from gen.mutation import rtl as mutate_rtl
    print(f"\n{'unit':14} {'mutants':>7} {'caught':>6} {'survived':>8} {'equiv':>5} {'timeout':>7} {'error':>5}")
    for unit in units:
        c = Counter(r.status for r in results if mutate_rtl.unit_of(r.mutant) == unit)
        print(f"{unit:14} {sum(c.values()):7} {c['caught']:6} {c['survived']:8} {c['equivalent']:5} "
              f"{c['timeout']:7} {c['error']:5}")
    print(f"{'all':14} {totals['mutants']:7} {totals['caught']:6} {totals['survived']:8} "
          f"{totals['equivalent']:5} {totals['timeout']:7} {totals['error']:5}")
    by_check = Counter(_check_kind(r.caught_by) for r in results if r.status == "caught")
    print("caught by: " + ", ".join(f"{k} {n}" for k, n in by_check.most_common()))
    for status in ("survived", "timeout", "error"):
        listed = [r for r in results if r.status == status]
        if listed:
            print(f"\n{status.upper()} ({len(listed)}):")
            for r in listed:
                print(f"  {r.mutant.file}:{r.mutant.line}: {r.mutant.change}    ({r.mutant.context.split(': ')[0]})")
                print(f"      {r.detail}")


def _judges(text: str) -> tuple[str, ...]:
    from gen.formal import mutation_judge
    return mutation_judge.parse(text)


def _choose(args, generated) -> list:
    """(number, mutant) of those judged: ``--only``/``--match`` (and ``--judge prove``: the units with
    properties) narrow the numbered list (judged whole unless ``--sample`` is given), then ``--sample``
    spreads over what is left (``--all``: all of it)."""
    from gen.mutation import rtl as mutate_rtl
    numbered = list(enumerate(generated))
    if args.judge == ("prove",):           # the proofs alone judge only the units that have properties
        from gen.formal import mutation_judge
        numbered = [(i, m) for i, m in numbered if mutation_judge.properties(mutate_rtl.unit_of(m))]
    for i in args.only:
        if i >= len(generated):
            raise CommandError(f"--only {i}: there are {len(generated)} mutants (0 .. {len(generated) - 1})")
    if args.only:
        numbered = [(i, m) for i, m in numbered if i in args.only]
    if args.match:
        numbered = [(i, m) for i, m in numbered if all(t in _listed(m) for t in args.match)]
    narrowed = bool(args.only or args.match)
    sample = None if args.all or (narrowed and not isinstance(args.sample, _Sample)) else args.sample
    return mutate_rtl.spread(numbered, sample)


class _Sample(int):
    """--sample's value, marked as given on the command line (its default is a plain int)."""


def _sample(text: str) -> int:
    return _Sample(options.positive(text))


def _listed(m) -> str:
    """A mutant as --list shows it (and --match searches)."""
    also = f"; the same source as {', '.join(m.duplicates)}" if m.duplicates else ""
    return f"{m.file}:{m.line}: [{m.operator}] {m.change}    ({m.context}{also})"


def _check_kind(caught_by: str) -> str:
    if caught_by.startswith("sim_tests/"):
        return caught_by.split("::")[0]
    return caught_by.split(" ")[0]
