"""RTL mutation testing (`ga2 mutate rtl`): systematic mutants of every Amaranth unit, and their verdict.

Mutants are generated from the source text of every RTL file of ``ga2_hdl``
(a file defining an ``elaborate`` method) by walking its syntax tree; nothing
is keyed by a line number written by hand, so the generator follows the
sources as they change.  The code mutated is the code that builds hardware:
every function that adds statements to a module (``m.d.sync``/``m.d.comb``,
``.eq``, ``m.If``, ``m.next``), makes Amaranth expressions (``Mux``, ``Cat``,
``Const``) or declares signals (a helper that lays out the registers, such as
``MatrixUnit._registers``; not a constructor, whose widths are the component's
interface).  Assertions and the checks that raise are left alone.  Operators (:data:`OPERATORS`):

``compare``   a comparison's boundary or sense: ``==`` <-> ``!=``, ``<`` -> ``<=``,
              ``<=`` -> ``<``, ``>`` -> ``>=``, ``>=`` -> ``>``
``constant``  an integer constant +1 and -1
``width``     a width one bit narrower: ``Signal(w)``, ``unsigned(w)``, ``signed(w)``,
              ``range(n)`` -> ``w - 1``, ``n - 1`` (one bit wider is not generated: a
              register that can hold one more bit than its values need behaves the
              same, except when it wraps, which these widths never do by design)
``swap``      swapped operands: ``a - b``, shifts, ``Mux(c, a, b)`` -> ``Mux(c, b, a)``,
              ``Cat(a, b)`` -> ``Cat(b, a)``
``drop``      one ``m.d.sync`` statement dropped (one element of a list, or the whole
              ``+=`` when it adds one)
``enable``    an enable stuck at 0 and at 1: the condition of ``m.If``/``m.Elif``, and
              the value assigned to an enable (``*_en``, ``en``, ``start``, ``valid``,
              ``run``, ``clear``)
``next``      a state's ``m.next`` sent to another state of the same machine

The verdict (:func:`judge`) builds each mutant into a private copy of the
design (``ga2_hdl``, ``gen`` and ``sim_tests`` copied to a temporary directory,
first on ``PYTHONPATH`` of a child process, with its own build cache) and runs,
stopping at the first check that fails:

1. the unit's own tests (``sim_tests/rtl/test_<unit>.py``) in Amaranth's simulator;
2. the tests of the units that contain it (e.g. the matrix unit's for the
   systolic array), also in Amaranth's simulator;
3. the chip on the directed suite and a fixed set of random programs
   (gen/fuzz/programs.py) against the golden model, in Icarus Verilog after export;
4. for a unit with corners no fast check can reach (:data:`CORNER_TESTS`: the
   DMA's counts past 2**15, ~33,000 cycles), its slow corner tests, last, so
   that only a mutant every other check passes pays for them.

Icarus for the chip because it is the fastest simulator that sees a new
design: measured on this machine (2 cores, shared, load 5-7) for the directed
suite, Amaranth's simulator took 53 s, Icarus 23 s (export 5 s, compile 0.5 s,
run 17 s), Verilator 67 s (a 62 s C++ build for a 0.2 s run, every mutant
being a new design).  The units' own tests run in Amaranth's simulator (2-11 s
each, nothing to build).

A mutant is ``caught`` by the first failing check (``caught_by`` names it:
the test's id, or the chip program and its mismatch); ``error`` when the
design cannot even be built (the export fails); ``timeout`` when the checks
overrun; ``equivalent`` when every check passes and the registry
:mod:`gen.mutation.equivalents` holds an argument for this change, keyed by the
file, the enclosing function, the source line and the change itself (never a
bare line number); otherwise ``survived``, reported with file:line, the
change and a one-line reason.
"""
from __future__ import annotations

import ast
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from ga2_hdl.support.mutation import Finding, Mutant, Outcome

from .chip_check import (CHIP_STAGE, RANDOM_PROGRAMS, RANDOM_SEED, bundle_for, chip_bundle,  # noqa: F401
                         chip_config, chip_configs, write_chip_bundle)
from .chip_check import check as _chip_check

REPO = Path(__file__).resolve().parents[2]
HDL_DIR = REPO / "ga2_hdl" / "rtl"
#: what a mutant's private copy of the design holds (copied from the repository)
COPIED = ("ga2_hdl", "gen", "sim_tests", "pyproject.toml")
OPERATORS = ("compare", "constant", "width", "swap", "drop", "enable", "next")

#: the tests of the units that contain a unit (the stage after its own tests)
CONTAINERS = {
    "systolic": ("matrix_unit",), "rowmem": ("matrix_unit",),
    "requant": ("vector_unit",), "softmax": ("vector_unit",),
    "divider": ("softmax",), "exp_table": ("softmax",),
}
#: the chip's own tests minus its bundle runs, which stage 3 does in Icarus
CHIP_TEST_SELECT = "not directed_suite and not random_programs"
#: the chip on other configurations, in Amaranth's simulator (the default suite's cases of them)
#: (the wide-port chips' tests are in test_chip.py, which the chip's own stage runs)
CHIP_CONFIG_TESTS = ("sim_tests/rtl/test_overlap.py", "sim_tests/hdl/test_configs.py")
CHIP_CONFIG_SELECT = "amaranth or runs_directed_programs or partitions_serve_one_master"
#: a unit's slow tests of corners no fast check reaches (pytest arguments; run with ``-m slow``), the
#: verdict's last stage
CORNER_TESTS = {"dma": ("sim_tests/rtl/test_dma.py", "-k", "corner")}
ENABLE_NAME = re.compile(r"(^|_)(en|start|valid|run|clear)$")
_CMP_SWAP = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.LtE, ast.LtE: ast.Lt,
             ast.Gt: ast.GtE, ast.GtE: ast.Gt}


# ====================================================================== generation
def rtl_files() -> list[str]:
    """The RTL sources: every ga2_hdl module that defines an ``elaborate`` method."""
    found = []
    for path in sorted(HDL_DIR.glob("*.py")):
        tree = ast.parse(path.read_text())
        if any(isinstance(n, ast.FunctionDef) and n.name == "elaborate" for n in ast.walk(tree)):
            found.append(path.stem)
    return found


def _builds_hardware(fn: ast.AST) -> bool:
    """Whether a function builds hardware: adds statements to a module, makes Amaranth expressions, or
    declares signals (``Signal(...)``: a helper that lays out the registers, such as
    ``MatrixUnit._registers``).  Constructors are left out when they only declare signals: their
    widths are the component's interface (its signature), not its logic."""
    declares = False
    for n in ast.walk(fn):
        if isinstance(n, ast.Attribute) and n.attr in ("sync", "comb", "next") or \
                isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("eq", "If") or \
                isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("Mux", "Cat", "Const"):
            return True
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "Signal":
            declares = True
    return declares and getattr(fn, "name", "") != "__init__"


_WIDTH_CALLS = ("Signal", "unsigned", "signed", "range", "StructLayout", "ArrayLayout", "Memory", "write_port")


class _Generator:
    def __init__(self, unit: str):
        self.unit = unit
        self.file = f"ga2_hdl/rtl/{unit}.py"
        self.src = (HDL_DIR / f"{unit}.py").read_text()
        self.lines = self.src.splitlines()
        starts = [0]
        for line in self.src.splitlines(keepends=True):
            starts.append(starts[-1] + len(line.encode()))
        self._line_starts = starts
        self._raw = self.src.encode()
        self.mutants: list[Mutant] = []
        self._seen: set[tuple] = set()

    # character offset of a node (ast columns are UTF-8 byte offsets)
    def _offset(self, lineno: int, col: int) -> int:
        return len(self._raw[:self._line_starts[lineno - 1] + col].decode())

    def segment(self, node) -> tuple[int, str]:
        start = self._offset(node.lineno, node.col_offset)
        end = self._offset(node.end_lineno, node.end_col_offset)
        return start, self.src[start:end]

    def add(self, node, operator: str, new: str, where: str, *, span=None) -> None:
        start, old = span if span is not None else self.segment(node)
        if new == old:
            return
        key = (start, old, new)
        if key in self._seen:
            return
        self._seen.add(key)
        line = node.lineno
        context = f"{where}: {source_line(self.lines[line - 1])}"
        self.mutants.append(Mutant(self.file, old, new, line=line, offset=start, operator=operator,
                                   context=context))

    def run(self) -> list[Mutant]:
        tree = ast.parse(self.src)
        # module-level names bound to a range (a shape, not a number: `width - 1` would not be Python)
        self.ranges = {t.id for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
                       and _call_name(n.value) == "range" for t in n.targets if isinstance(t, ast.Name)}
        for scope, fn in _functions(tree):
            if _builds_hardware(fn):
                self.function(fn, scope)
        self.mutants.sort(key=lambda m: (m.offset, OPERATORS.index(m.operator), m.new))
        # the same change twice on one line (two `x.eq(0)` -> `x.eq(1)` ...): number them in the context,
        # so a key (file, function, line, change) names one mutant
        seen: dict[tuple, int] = {}
        for i, m in enumerate(self.mutants):
            key = (m.context, m.change)
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > 1 or sum(1 for x in self.mutants if (x.context, x.change) == key) > 1:
                self.mutants[i] = replace(m, context=f"{m.context} [{seen[key]}]")
        return self.mutants

    def function(self, fn, where: str) -> None:
        skip = set()
        for n in ast.walk(fn):
            if isinstance(n, (ast.Assert, ast.Raise)) or (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)):
                skip.update(id(x) for x in ast.walk(n))
            if isinstance(n, (ast.FunctionDef, ast.Lambda)) and n is not fn:
                skip.update(id(x) for x in ast.walk(n))    # nested functions are visited on their own
            if isinstance(n, ast.If) and any(isinstance(s, ast.Raise) for s in n.body):
                skip.update(id(x) for x in ast.walk(n.test))
            if isinstance(n, ast.keyword) and n.arg in ("name", "granularity", "shape", "depth"):
                skip.update(id(x) for x in ast.walk(n))
            if isinstance(n, ast.Call) and _call_name(n) in _WIDTH_CALLS:
                # widths and layouts: the width operator (one bit narrower) covers them
                skip.update(id(x) for a in n.args for x in ast.walk(a) if isinstance(x, ast.Constant))
        states = _fsm_states(fn)
        parents = {id(c): p for p in ast.walk(fn) for c in ast.iter_child_nodes(p)}
        assigned = {id(n.args[0]) for n in ast.walk(fn) if isinstance(n, ast.Call) and _call_name(n) == "eq"
                    and len(n.args) == 1 and isinstance(n.args[0], ast.Constant)}
        for n in ast.walk(fn):
            if id(n) in skip:
                continue
            if isinstance(n, ast.Compare) and len(n.ops) == 1 and type(n.ops[0]) in _CMP_SWAP:
                mutated = ast.Compare(n.left, [_CMP_SWAP[type(n.ops[0])]()], n.comparators)
                self.add(n, "compare", ast.unparse(mutated), where)
            elif isinstance(n, ast.Constant) and type(n.value) is int:
                # a constant assigned as a whole (x.eq(0)): one mutant, 0 -> 1 or c -> c - 1
                # (for one-bit signals +1 and -1 would be the same change twice)
                # shown (and keyed) with the expression around it: `last2.eq(0) -> last2.eq(1)`
                parent = parents.get(id(n))
                for d in ((1,) if n.value == 0 else (-1,)) if id(n) in assigned else (1, -1):
                    if isinstance(parent, (ast.Call, ast.BinOp, ast.Compare, ast.UnaryOp, ast.Slice)):
                        p_start, p_text = self.segment(parent)
                        at = self.segment(n)[0] - p_start
                        width = len(self.segment(n)[1])
                        self.add(n, "constant", p_text[:at] + str(n.value + d) + p_text[at + width:], where,
                                 span=(p_start, p_text))
                    else:
                        self.add(n, "constant", str(n.value + d), where)
            elif isinstance(n, ast.Call):
                self.call(n, where)
            elif isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Sub, ast.LShift, ast.RShift, ast.FloorDiv, ast.Mod)):
                swapped = ast.BinOp(n.right, n.op, n.left)
                self.add(n, "swap", ast.unparse(swapped), where)
            elif isinstance(n, ast.AugAssign) and _is_domain(n.target, "sync"):
                self.drop(n, where)
            elif isinstance(n, ast.With):
                for item in n.items:
                    c = item.context_expr
                    if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and \
                            c.func.attr in ("If", "Elif") and c.args:
                        for v in ("0", "1"):
                            self.add(c.args[0], "enable", v, where)
            elif isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Attribute) \
                    and n.targets[0].attr == "next" and isinstance(n.value, ast.Constant):
                target = n.value.value
                others = [s for s in states if s != target]
                if others:
                    after = states[(states.index(target) + 1) % len(states)] if target in states else others[0]
                    if after == target:
                        after = others[0]
                    self.add(n.value, "next", repr(after).replace("'", '"'), where)

    def call(self, n: ast.Call, where: str) -> None:
        name = _call_name(n)
        if name in ("Signal", "unsigned", "signed", "range") and n.args and not n.keywords:
            arg = n.args[0]
            if not (isinstance(arg, ast.Call) and getattr(arg.func, "attr", getattr(arg.func, "id", ""))
                    in ("StructLayout", "ArrayLayout", "range", "signed", "unsigned")) and \
                    not isinstance(arg, ast.Constant) and not (name == "range" and len(n.args) > 1) and \
                    not (isinstance(arg, ast.Name) and arg.id in self.ranges):
                _, text = self.segment(arg)
                self.add(arg, "width", f"({text}) - 1" if isinstance(arg, ast.BinOp) else f"{text} - 1", where)
        if name == "Mux" and len(n.args) == 3:
            a, b = n.args[1], n.args[2]
            start, _ = self.segment(a)
            end_start, _ = self.segment(b)
            end = self._offset(b.end_lineno, b.end_col_offset)
            old = self.src[start:end]
            ta, tb = self.segment(a)[1], self.segment(b)[1]
            between = self.src[start + len(ta):end_start]
            self.add(a, "swap", tb + between + ta, where, span=(start, old))
        if name == "Cat" and len(n.args) == 2:
            a, b = n.args
            start, ta = self.segment(a)
            bstart, tb = self.segment(b)
            end = bstart + len(tb)
            self.add(a, "swap", tb + self.src[start + len(ta):bstart] + ta, where, span=(start, self.src[start:end]))
        if name == "eq" and isinstance(n.func, ast.Attribute) and len(n.args) == 1:
            target = n.func.value
            tname = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
            if ENABLE_NAME.search(tname or ""):
                for v in ("0", "1"):
                    self.add(n.args[0], "enable", v, where)

    def drop(self, n: ast.AugAssign, where: str) -> None:
        value = n.value
        if isinstance(value, ast.List) and len(value.elts) > 1:
            elts = value.elts
            for i, e in enumerate(elts):
                start, text = self.segment(e)
                if i + 1 < len(elts):        # the element and the separator after it
                    end = self._offset(elts[i + 1].lineno, elts[i + 1].col_offset)
                else:                        # the last element and the separator before it
                    prev_end = self._offset(elts[i - 1].end_lineno, elts[i - 1].end_col_offset)
                    start, end = prev_end, start + len(text)
                self.add(e, "drop", "", where, span=(start, self.src[start:end]))
        else:
            self.add(n, "drop", "pass", where)


def source_line(text: str) -> str:
    """A source line as keys use it: without its comment and surrounding blanks."""
    code = text.split("  #")[0].split("\t#")[0]
    return code.strip()


def _call_name(n: ast.Call) -> str:
    return n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")


def _is_domain(target, domain: str) -> bool:
    return isinstance(target, ast.Attribute) and target.attr == domain and \
        isinstance(target.value, ast.Attribute) and target.value.attr == "d"


def _fsm_states(fn) -> list[str]:
    states = []
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "State" \
                and n.args and isinstance(n.args[0], ast.Constant) and n.args[0].value not in states:
            states.append(n.args[0].value)
    return states


def _functions(tree):
    """(qualified name, function) for every function of the module, methods as Class.method."""
    out = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef):
                out.append((f"{prefix}{child.name}", child))
                visit(child, f"{prefix}{child.name}.")
    visit(tree, "")
    return out


def spread(mutants: list[Mutant], n: int | None) -> list[Mutant]:
    """``n`` of the mutants, spread evenly over the list (so over every file, function and operator
    in proportion); all of them when ``n`` is None or not smaller."""
    if n is None or n >= len(mutants):
        return list(mutants)
    return [mutants[(i * len(mutants)) // n] for i in range(n)]


def generate(units: list[str] | None = None) -> list[Mutant]:
    """Every mutant of the given RTL units (default: all), in file order, with equivalence arguments.

    Two edits that make the same copy of the source (the ``constant`` and ``enable`` operators both
    turning an enable's 1 into 0: the SHA-256 of the mutated text is the same) are one mutant, judged
    once; the others are named in its ``duplicates`` (``[operator] old -> new``), and reported with it."""
    import hashlib

    from ga2_hdl.support.mutation import apply
    from .equivalents import argument_for
    chosen = units or rtl_files()
    mutants = []
    for unit in chosen:
        source = (HDL_DIR / f"{unit}.py").read_text()
        made: dict[bytes, int] = {}        # the mutated source's hash -> its mutant's index: one verdict per copy
        for m in _Generator(unit).run():
            argument = argument_for(m)
            if argument:
                m = replace(m, equivalent=argument)
            digest = hashlib.sha256(apply(source, m).encode()).digest()
            if digest in made:             # two operators made the same edit (a constant that is an enable)
                kept = mutants[made[digest]]
                if m.equivalent and not kept.equivalent:      # keep the argued form, name the other
                    kept, m = m, kept
                mutants[made[digest]] = replace(kept, duplicates=(*kept.duplicates, _edit(m), *m.duplicates))
                continue
            made[digest] = len(mutants)
            mutants.append(m)
    return mutants


def _edit(m: Mutant) -> str:
    return f"[{m.operator}] {m.change}"


def unit_of(mutant: Mutant) -> str:
    return Path(mutant.file).stem


# ====================================================================== the verdict
@dataclass
class Stage:
    name: str                 #: what caught_by names when the stage's check is not a single test
    args: list[str]           #: pytest arguments, or ["chip"] for the chip-level check
    slow: bool = False        #: run the tests marked slow (and only those), not the others


SURVIVOR_REASON = ("every check passed: the unit's own tests (and its other configurations' tests), the "
                   "containing units' tests, the chip on the directed suite and the random programs (Icarus), "
                   "and the unit's slow corner tests if it has any")


def stages(unit: str) -> list[Stage]:
    """The checks a mutant of ``unit`` goes through, in order (the first that fails catches it)."""
    own = [f"sim_tests/rtl/test_{unit}.py"]
    if unit == "chip":
        own += ["-k", CHIP_TEST_SELECT]
    out = [Stage(f"sim_tests/rtl/test_{unit}.py", own)]
    # the unit's hardware for other configurations (wide ports, overlap, other sizes): code the
    # book chip never builds, so only these tests can see a mutant of it
    if unit == "chip":
        out.append(Stage("configuration tests (Amaranth)", [*CHIP_CONFIG_TESTS, "-k", CHIP_CONFIG_SELECT]))
    if unit == "sram":           # the scratchpad's partitioned memories exist only in the overlapped chip
        out.append(Stage("configuration tests (Amaranth)", [*CHIP_CONFIG_TESTS, "-k", CHIP_CONFIG_SELECT]))
    containers: list[str] = []
    todo = list(CONTAINERS.get(unit, ()))
    while todo:
        c = todo.pop(0)
        if c not in containers:
            containers.append(c)
            todo += CONTAINERS.get(c, ())
    if containers:
        tests = [f"sim_tests/rtl/test_{c}.py" for c in containers]
        out.append(Stage("containing units' tests", tests))
    out.append(Stage(CHIP_STAGE, ["chip"]))
    if unit in CORNER_TESTS:
        out.append(Stage("corner tests (slow)", list(CORNER_TESTS[unit]), slow=True))
    return out


def snapshot(into: Path) -> Path:
    """A copy of the sources a run judges (taken once at its start, so that editing the repository
    during a run changes nothing in it); every mutant's copy is made from it."""
    return make_copy(None, into, base=REPO)


def make_copy(mutant: Mutant | None, into: Path, base: Path | None = None) -> Path:
    """A copy of the design (from ``base``, default the repository) with the mutant applied, under ``into``."""
    from ga2_hdl.support.mutation import apply
    base = base or REPO
    into.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        src = base / name
        if src.is_dir():
            shutil.copytree(src, into / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".cache"))
        else:
            shutil.copy2(src, into / name)
    if mutant is not None:
        path = into / mutant.file
        path.write_text(apply((base / mutant.file).read_text(), mutant))
    return into


_OURS = ("ga2_hdl", "gen", "sim_tests")


def _switch_to(root: Path) -> None:
    """Make this (forked, disposable) process import our packages from ``root``: forget the ones
    loaded, put ``root`` first on the path, work there, with a build cache of its own."""
    for name in [n for n in sys.modules if n.split(".")[0] in _OURS and n != "ga2_hdl.support.mutation"]:
        del sys.modules[name]          # (the engine itself stays: its verdicts go back to the parent)
    sys.path.insert(0, str(root))
    os.chdir(root)
    os.environ.update(GA2_CACHE_DIR=str(root / ".cache"), PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1")
    sys.dont_write_bytecode = True


class _FirstFailure:
    """A pytest plugin that keeps the first failing report: (test id, exception name, message), and
    the first place a failing test's exception passed through an ``elaborate`` method of ours (the
    design failed to build there: for the configuration that test builds)."""

    def __init__(self):
        self.failure: tuple[str, str, str] | None = None
        self.building: str = ""          # "file:line in function" of the first failing build, if any

    def pytest_runtest_makereport(self, item, call):
        if self.failure is None and not self.building and call.excinfo is not None:
            for entry in call.excinfo.traceback:
                if entry.name.lstrip("_").startswith("elaborate") and \
                        {"ga2_hdl", "gen"} & set(Path(str(entry.path)).parts):
                    self.building = f"{Path(str(entry.path)).name}:{entry.lineno + 1} in {entry.name}"
                    break

    def _keep(self, report) -> None:
        if self.failure is None and report.failed:
            crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
            text = crash.message if crash is not None else str(getattr(report, "longrepr", ""))
            first = " ".join(text.split())
            exc, _, message = first.partition(": ")
            if not re.fullmatch(r"[\w.]+", exc):
                exc, message = "", first
            self.failure = (report.nodeid, exc.split(".")[-1], message)

    def pytest_runtest_logreport(self, report):
        self._keep(report)

    def pytest_collectreport(self, report):
        self._keep(report)


def _pytest(args: list[str], slow: bool = False) -> tuple[int, tuple[str, str, str] | None, str]:
    import io
    from contextlib import redirect_stderr, redirect_stdout

    import pytest
    plugin = _FirstFailure()
    sink = io.StringIO()
    with redirect_stdout(sink), redirect_stderr(sink):
        rc = pytest.main(["-x", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-W", "ignore",
                          "-m", "slow" if slow else "not slow", *args], plugins=[plugin])
    return int(rc), plugin.failure, plugin.building


def _assertion(exc: str) -> bool:
    return exc in ("AssertionError", "ContractError", "Failed")


def _exports() -> str | None:
    """None if the (mutated) chip converts to Verilog, else why not."""
    from ga2_hdl import isa
    from gen.verilog import export as verilog
    try:
        verilog.export("chip", use_cache=False, config=isa.BOOK)
    except Exception as e:
        return f"{type(e).__name__}: {' '.join(str(e).split())}"[:300]
    return None


def run_stages(mutant: Mutant | None, unit: str, bundle_path: str, *, chip: bool = True,
               base: Path | None = None, build: tuple[str, ...] = (), tests: bool = True, after=None):
    """In this (forked, disposable) process: build ``mutant`` into a private copy (of ``base``, default
    the repository; made next to the bundle file, so that the run's directory holds every copy, even of
    a child killed on a timeout), elaborate its chip for the first configuration of ``build`` (if any;
    gen/mutation/build_check.py), then run the stages of ``unit`` (unless ``tests`` is false) and, if
    every one passes, ``after(unit)`` (a last check run here, on the copy: the unit's proofs,
    gen/formal/mutation_judge.py); the first failing check (Finding), an Outcome (error), or None."""
    tmp = tempfile.mkdtemp(prefix="ga2_mutant_", dir=os.path.dirname(os.path.abspath(bundle_path)))
    try:
        root = make_copy(mutant, Path(tmp), base)
        _switch_to(root)
        from . import build_check
        why = build_check.first_failure(build)
        if why:
            return Outcome("error", "", f"the mutated design does not build: {why}", before_judging=True)
        for stage in stages(unit) if tests else ():
            if stage.args == ["chip"]:
                if chip:
                    verdict = _chip_check(bundle_for(bundle_path, chip_config(build)))
                    if verdict is not None:
                        return verdict
                continue
            rc, failure, building = _pytest(stage.args, slow=stage.slow)
            if rc == 5 or (rc != 0 and failure is None):
                return Outcome("error", "", f"{stage.name}: pytest exit status {rc} without a failing test")
            if failure is None:
                continue
            test, exc, message = failure
            if _assertion(exc):
                return Finding(test, message[:300])
            # not an assertion: the mutant's behaviour, caught, if the design still builds; else an error
            # (a test of another configuration may be the one that builds the mutated code)
            if building:
                return Outcome("error", "", f"the mutated design does not build ({test}: {exc} in {building}): "
                                            f"{message}"[:300])
            why = _exports()
            if why:
                return Outcome("error", "", f"the mutated design does not export: {why}")
            return Finding(test, f"{exc}: {message}"[:300])
        return after(unit) if after is not None else None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def judge(bundle_path: str, base: Path | None = None, reach: dict | None = None, *, tests: bool = True,
          after=None):
    """The RTL verdict for the engine (run in the engine's forked child); ``reach`` (from
    :func:`build_reach`) chooses the configuration each mutant's chip is first elaborated for;
    ``tests`` and ``after`` as :func:`run_stages` takes them."""
    def run(mutant: Mutant):
        build = (reach or {}).get((mutant.file, mutant.line), ())
        return run_stages(mutant, unit_of(mutant), bundle_path, base=base, build=build, tests=tests, after=after)
    return run


def build_reach(base: Path) -> dict[tuple[str, int], tuple[str, ...]]:
    """Which of build_check.CONFIGS elaborates each line of the RTL files of ``base`` (a snapshot),
    traced in a forked child that imports our packages from it."""
    import multiprocessing
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)

    def trace():
        _switch_to(base)
        from . import build_check
        child.send(build_check.reach(base))
        child.close()
    proc = ctx.Process(target=trace, daemon=True)
    proc.start()
    child.close()
    try:
        found = parent.recv()
    except EOFError:
        raise RuntimeError(f"tracing the unbroken chip's elaboration failed (exit status {proc.exitcode})") from None
    finally:
        proc.join()
    return found


def baseline(units: list[str], bundle_path: str, *, jobs: int = 2, timeout: float = 600.0,
             base: Path | None = None, tests: bool = True, after=None,
             chips: tuple[str, ...] = ("book",)) -> str | None:
    """Every stage the given units' mutants use, on an unbroken copy (the chip-level check on each
    preset of ``chips``); the first problem, or None."""
    from ga2_hdl.support import mutation
    probes = [Mutant(f"ga2_hdl/rtl/{u}.py", "", "", name=f"unbroken {u}", offset=0) for u in units]
    chip_probes = {f"unbroken chip check ({name})": name for name in chips}
    probes += [Mutant("ga2_hdl/rtl/chip.py", "", "", name=probe, offset=0) for probe in chip_probes]

    def run(probe: Mutant):
        if probe.name in chip_probes:
            return _unbroken_chip(bundle_for(bundle_path, chip_probes[probe.name]), base) if tests else None
        return run_stages(None, unit_of(probe), bundle_path, chip=False, base=base, tests=tests, after=after)

    for r in mutation.run_mutants(probes, run, jobs=jobs, timeout=timeout, crash_status="error"):
        if r.status != "survived":
            return f"{r.mutant.name}: {r.status} {r.caught_by} {r.detail}".strip()
    return None


def _unbroken_chip(bundle_path: str, base: Path | None = None):
    tmp = tempfile.mkdtemp(prefix="ga2_unbroken_", dir=os.path.dirname(os.path.abspath(bundle_path)))
    try:
        _switch_to(make_copy(None, Path(tmp), base))
        return _chip_check(bundle_path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
