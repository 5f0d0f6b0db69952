"""`ga2` subcommands of the speculative-decoding area.

    ga2 mutate spec [--json FILE] [--jobs N] [--timeout S] [--config FILE|NAME]

Several areas add a target to `ga2 mutate` (`compiler`, `spec`): the first
module to register creates the `mutate` command and keeps its sub-parser
collection on the parser as ``targets``; see :func:`mutate_targets`.
"""
from __future__ import annotations

import argparse
import json

from ga2_hdl.support.safe_io import atomic_write

from . import options
from .progress import Lines


def mutate_targets(subparsers) -> argparse._SubParsersAction:
    """The `ga2 mutate TARGET` collection, created by whichever area registers first."""
    parser = subparsers.choices.get("mutate")
    if parser is None:
        parser = subparsers.add_parser(
            "mutate", help="break copies of a component one line at a time and check that its tests notice",
            description="Mutation testing: each target applies one-line changes to copies of its source "
                        "and runs its checks against each; 'caught' is the expected outcome.")
        parser.targets = parser.add_subparsers(dest="target", metavar="TARGET", required=True)
    targets = getattr(parser, "targets", None)
    if targets is None:
        raise RuntimeError("`ga2 mutate` was registered without a `targets` sub-parser collection "
                           "(see ga2_cli.cmd_spec.mutate_targets)")
    return targets


def write_mutation_json(path: str, unbroken: bool, problem, results, **extra) -> None:
    """The JSON every `ga2 mutate` target writes (the engine's report, ga2_hdl.support.mutation.report),
    atomically: the unbroken verdict, the target's own fields, the totals and one entry per mutant."""
    from ga2_hdl.support import mutation
    report = mutation.report(results, unbroken_passes=unbroken, unbroken_problem=problem, **extra)
    atomic_write(path, json.dumps(report, indent=2) + "\n")


def register(subparsers) -> None:
    p = mutate_targets(subparsers).add_parser(
        "spec", help="the broken versions of speculative decoding (the chapter's nineteen, and beyond)",
        description="Apply each one-line change (the chapter's nineteen, then those of the work beyond the "
                    "chapter: sampling, trees, n-gram and trigram drafts, adaptive k) to a copy of spec/ and run "
                    "the five checks (block == step, exactness, causality on the chip, compiled == interpreter "
                    "and close to float, the rule through the chip's loop) and the checks of "
                    "spec/beyond/checks.py against it. --config: the chip the checks' programs are compiled for "
                    "and run on (its golden model); the float checks do not depend on it.")
    options.add_json(p, "the verdicts")
    options.add_jobs(p, "mutants checked")
    options.add_timeout(p, "mutant", 900.0)
    options.add_config(p)
    p.set_defaults(func=_mutate_spec)


def _mutate_spec(args) -> int:
    from spec.mutate import MUTANTS, run_mutants

    print("NOTE: this deliberately breaks copies of spec/. 'caught' is EXPECTED: it shows the checks "
          "notice the mistake.", flush=True)
    print(f"the checks' programs are compiled for and run on the chip {args.config.describe()}", flush=True)
    unbroken, problem, verdicts = run_mutants(jobs=args.jobs, timeout=args.timeout, reporter=Lines(),
                                              config=args.config)
    print(f"unbroken spec passes: {unbroken}")
    if not unbroken:
        print(f"  first problem of the unbroken version: {problem}")
    for v in verdicts:
        print(f"{v.mutant.name}: {v.status}")
        print(f"    {(v.caught_by + ': ') if v.caught_by else ''}{v.detail}")
    caught = sum(v.status == "caught" for v in verdicts)
    timed_out = sum(v.status == "timeout" for v in verdicts)
    if unbroken:
        print(f"\nspeculative decoding: {caught} of {len(MUTANTS)} broken versions caught")
        if timed_out:
            print(f"  {timed_out} gave no verdict within --timeout {args.timeout:.0f} s (counted as not caught)")
    if args.json:
        write_mutation_json(args.json, unbroken, problem, verdicts, config=args.config.to_dict())
    return 0 if unbroken and caught == len(MUTANTS) else 1
