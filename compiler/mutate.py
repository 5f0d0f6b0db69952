"""Mutation testing of slice_rows: does the battery notice a broken compiler?

Each mutant is a one-line change to the source of one compiler module.  It is
applied to a *copy*: the compiler's modules are read as text, the one change
is made (its text must occur exactly once, or the run stops: the source has
moved and the mutant must be updated), and the modules are executed into a
fresh package that exists only in memory, under a private name.  The files on
disk are never touched, and the real ``compiler`` package is never affected.
The battery (:mod:`compiler.battery`) then runs against that copy; the mutant
is *caught* if the battery reports any problem.

The unbroken compiler, loaded the same way, must pass first.  A change listed
as *equivalent* does not alter what the compiler produces; the battery must
NOT flag it, and it is reported as "equivalent", never counted as caught.
"""
from __future__ import annotations

import itertools
import sys
import time
import types
from dataclasses import dataclass
from pathlib import Path

from .battery import run_battery

#: the compiler's modules in dependency order (each imports only earlier ones), then the package
MODULES = ("errors", "graph", "reference", "scales", "planner", "lower", "interpret", "program")
SOURCE_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Mutant:
    name: str
    module: str          # which of MODULES is changed
    old: str             # text that must occur exactly once in that module's source
    new: str
    equivalent: bool = False


SLICE_MUTANTS: tuple[Mutant, ...] = (
    Mutant("slice: the view starts at the beginning of its source", "planner",
           'Placement(src.buffer, src.offset + n.attrs["start"] * n.cols)',
           "Placement(src.buffer, src.offset)"),
    Mutant("slice: the view's offset is counted in rows where words are meant", "planner",
           'Placement(src.buffer, src.offset + n.attrs["start"] * n.cols)',
           'Placement(src.buffer, src.offset + n.attrs["start"])'),
    Mutant("slice: the shape keeps the source's row count", "graph",
           'return self._add("slice", (a,), (count, na.cols)',
           'return self._add("slice", (a,), (na.rows, na.cols)'),
    Mutant("slice: the interpreter takes one row too many", "interpret",
           'value[n.id] = [list(r) for r in ops[0][first:first + n.attrs["count"]]]',
           'value[n.id] = [list(r) for r in ops[0][first:first + n.attrs["count"] + 1]]'),
    Mutant("slice: the float evaluation takes one row too few", "reference",
           'value[n.id] = [list(r) for r in ops[0][first:first + n.attrs["count"]]]',
           'value[n.id] = [list(r) for r in ops[0][first:first + n.attrs["count"] - 1]]'),
    Mutant("slice: its scale is not tied to its source's", "scales",
           'if n.op in ("concat", "relu", "slice", "output"):',
           'if n.op in ("concat", "relu", "output"):'),
    Mutant("slice: a range past the end is accepted", "graph",
           "if start < 0 or start + count > na.rows:",
           "if start < 0 or start + count > na.rows + 1:"),
    Mutant("slice: an empty slice is accepted", "graph",
           "if count < 1:",
           "if count < 0:"),
    Mutant("slice: a slice may feed a concatenation", "graph",
           'if part.op == "slice":',
           "if False:"),
    Mutant("slice: the source is not loaded before its view is used", "lower",
           "self.operand(node.inputs[0])\n            self.place(node.id)",
           "self.place(node.inputs[0])\n            self.place(node.id)"),
)

EQUIVALENT_MUTANTS: tuple[Mutant, ...] = (
    Mutant("slice: a slice is first given a buffer of its own, which the next loop replaces by the view "
           "(an unused buffer entry)", "planner",
           'if n.op in ("output", "argmax", "slice"):',
           'if n.op in ("output", "argmax"):', equivalent=True),
)

MUTANTS = SLICE_MUTANTS + EQUIVALENT_MUTANTS


class MutantAnchorError(RuntimeError):
    """A mutant's text does not occur exactly once in its module: the source changed under it."""


@dataclass
class Verdict:
    name: str
    status: str          # "caught", "not caught", "equivalent", or "equivalent but flagged"
    problem: str         # the battery's first problem ("" when none)
    seconds: float

    def as_dict(self) -> dict:
        return {"name": self.name, "status": self.status, "problem": self.problem,
                "seconds": round(self.seconds, 2)}


_copies = itertools.count()


def module_source(module: str) -> str:
    return (SOURCE_DIR / f"{module}.py").read_text()


def mutated_source(mutant: Mutant) -> str:
    """The module's source with the one change made; refuses an anchor that is missing or repeated."""
    if mutant.module not in MODULES:
        raise MutantAnchorError(f"mutant {mutant.name!r}: unknown module {mutant.module!r}")
    src = module_source(mutant.module)
    found = src.count(mutant.old)
    if found != 1:
        raise MutantAnchorError(f"mutant {mutant.name!r}: its text occurs {found} times in compiler/"
                                f"{mutant.module}.py (it must occur exactly once; update the mutant):\n"
                                f"    {mutant.old!r}")
    return src.replace(mutant.old, mutant.new)


class CompilerCopy:
    """A private, in-memory copy of the compiler package, with at most one mutated module.

    Use as a context manager: the copy's modules are registered in
    ``sys.modules`` (relative imports between them need that) under a unique
    package name, and removed again on exit.
    """

    def __init__(self, mutant: Mutant | None = None):
        self.mutant = mutant
        self.name = f"_capra_copy_{next(_copies)}"
        self.package: types.ModuleType | None = None

    def __enter__(self) -> types.ModuleType:
        sources = {m: module_source(m) for m in MODULES}
        if self.mutant is not None:
            sources[self.mutant.module] = mutated_source(self.mutant)
        label = "unbroken" if self.mutant is None else "mutant"
        pkg = types.ModuleType(self.name, "a private copy of the compiler package")
        pkg.__path__ = []                  # nothing is found on disk: every submodule is preloaded below
        pkg.__package__ = self.name
        sys.modules[self.name] = pkg
        try:
            for m in MODULES:
                mod = types.ModuleType(f"{self.name}.{m}")
                mod.__package__ = self.name
                mod.__file__ = f"<{label} copy of compiler/{m}.py>"
                sys.modules[mod.__name__] = mod
                exec(compile(sources[m], mod.__file__, "exec"), mod.__dict__)
                setattr(pkg, m, mod)
            init = (SOURCE_DIR / "__init__.py").read_text()
            exec(compile(init, f"<{label} copy of compiler/__init__.py>", "exec"), pkg.__dict__)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        self.package = pkg
        return pkg

    def __exit__(self, *exc) -> None:
        for key in [k for k in sys.modules if k == self.name or k.startswith(self.name + ".")]:
            del sys.modules[key]


def check(mutant: Mutant | None, graphs: int = 40) -> tuple[bool, str]:
    """(whether the battery found a problem, the first problem) for the compiler with ``mutant``."""
    try:
        with CompilerCopy(mutant) as capra:
            report = run_battery(capra, graphs=graphs, stop_after=1)
    except MutantAnchorError:
        raise
    except Exception as e:                 # the copy would not even load: a broken compiler, noticed
        return True, f"the compiler copy failed to load: {type(e).__name__}: {e}"
    return (not report.passed), (report.problems[0] if report.problems else "")


def run_mutation(graphs: int = 40, progress=None) -> tuple[bool, str, list[Verdict]]:
    """Check the unbroken compiler, then every mutant.

    Returns ``(unbroken passes, its first problem, verdicts)``.  All anchors are
    checked before anything runs, so a stale mutant fails at once.
    """
    for m in MUTANTS:
        mutated_source(m)
    bad, problem = check(None, graphs)
    verdicts: list[Verdict] = []
    if bad:
        return False, problem, verdicts
    for m in MUTANTS:
        t0 = time.perf_counter()
        caught, first = check(m, graphs)
        if m.equivalent:
            status = "equivalent but flagged" if caught else "equivalent"
        else:
            status = "caught" if caught else "not caught"
        v = Verdict(m.name, status, first, time.perf_counter() - t0)
        verdicts.append(v)
        if progress:
            progress(v)
    return True, "", verdicts
