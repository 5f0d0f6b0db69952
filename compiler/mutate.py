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

The mutants, the copies' sources and the run are the project's one mutation
engine (:mod:`ga2_hdl.support.mutation`); this module supplies the compiler's
mutants and its judge (the slice battery).
"""
from __future__ import annotations

import itertools
import sys
import types
from pathlib import Path

from ga2_hdl.support import mutation
from ga2_hdl.config import Config
from ga2_hdl.support.mutation import Finding, Result
from ga2_hdl.support.reporter import Reporter

from .battery import run_battery

#: the compiler's modules in dependency order (each imports only earlier ones), then the package
MODULES = ("errors", "graph", "reference", "scales", "planner", "lower", "interpret", "program")
SOURCE_DIR = Path(__file__).resolve().parent


def Mutant(name: str, module: str, old: str, new: str, equivalent: str = "") -> mutation.Mutant:
    """A change to compiler/``module``.py: ``old`` (which must occur exactly once) becomes ``new``;
    ``equivalent`` is the argument when the change is claimed not to alter the compiler's output."""
    return mutation.Mutant(f"compiler/{module}.py", old, new, name=name, equivalent=equivalent)


def module_of(mutant: mutation.Mutant) -> str:
    return Path(mutant.file).stem


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
           'if n.op in ("output", "argmax"):',
           equivalent="the planner's next loop gives every slice the placement of its source's view, "
                      "replacing the buffer entry made here; the entry is never read, so the program and "
                      "its memory layout are the same"),
)

MUTANTS = SLICE_MUTANTS + EQUIVALENT_MUTANTS


#: a stale anchor (the text to change is missing or repeated): the run stops, the mutant must be updated
MutantAnchorError = mutation.MutantError


_copies = itertools.count()


def module_source(module: str) -> str:
    return (SOURCE_DIR / f"{module}.py").read_text()


def mutated_source(mutant: mutation.Mutant) -> str:
    """The module's source with the one change made; refuses an anchor that is missing or repeated."""
    if module_of(mutant) not in MODULES or not mutant.file.startswith("compiler/"):
        raise MutantAnchorError(f"mutant {mutant.label!r}: unknown module {mutant.file!r}")
    return mutation.apply(module_source(module_of(mutant)), mutant)


class CompilerCopy:
    """A private, in-memory copy of the compiler package, with at most one mutated module.

    Use as a context manager: the copy's modules are registered in
    ``sys.modules`` (relative imports between them need that) under a unique
    package name, and removed again on exit.
    """

    def __init__(self, mutant: mutation.Mutant | None = None):
        self.mutant = mutant
        self.name = f"_capra_copy_{next(_copies)}"
        self.package: types.ModuleType | None = None

    def __enter__(self) -> types.ModuleType:
        sources = {m: module_source(m) for m in MODULES}
        if self.mutant is not None:
            sources[module_of(self.mutant)] = mutated_source(self.mutant)
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


def check(mutant: mutation.Mutant | None, graphs: int = 40, *, config: Config) -> tuple[bool, str]:
    """(whether the battery found a problem, the first problem) for the compiler with ``mutant``,
    compiling for the chip ``config``."""
    try:
        with CompilerCopy(mutant) as capra:
            report = run_battery(capra, graphs=graphs, stop_after=1, config=config)
    except MutantAnchorError:
        raise
    except Exception as e:                 # the copy would not even load: a broken compiler, noticed
        return True, f"the compiler copy failed to load: {type(e).__name__}: {e}"
    return (not report.passed), (report.problems[0] if report.problems else "")


def judge(graphs: int = 40, *, config: Config):
    """The compiler's verdict for the engine: the slice battery's first problem (on the chip ``config``),
    or None."""
    def run(mutant: mutation.Mutant):
        caught, first = check(mutant, graphs, config=config)
        return Finding("slice battery", first) if caught else None
    return run


def run_mutation(graphs: int = 40, reporter: Reporter | None = None, jobs: int = 1,
                 *, config: Config) -> tuple[bool, str, list[Result]]:
    """Check the unbroken compiler, then every mutant (each in a child process of the engine), the
    battery compiling for and running on the chip ``config``.

    Returns ``(unbroken passes, its first problem, results)``.  All anchors are
    checked before anything runs, so a stale mutant fails at once.
    """
    for m in MUTANTS:
        mutated_source(m)
    bad, problem = check(None, graphs, config=config)
    if bad:
        return False, problem, []
    results = mutation.run_mutants(MUTANTS, judge(graphs, config=config), jobs=jobs, timeout=600,
                                   reporter=reporter)
    return True, "", results
