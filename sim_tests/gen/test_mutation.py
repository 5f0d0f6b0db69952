"""The mutation engine (ga2_hdl/support/mutation.py) and the RTL mutants (gen/mutation/rtl.py), in a few seconds.

The engine is driven with a toy judge so that every status appears once: a
caught mutant, a planted survivor, an argued equivalent, an argument the
checks refute, a timeout, an error and a crash.  The RTL generator is checked
for what it promises (every operator, anchors that apply, content keys for the
equivalence arguments), and two real mutants of the operand row memory are
judged end to end in a private copy of the design (its own tests only).  The
full run is `ga2 mutate rtl` (and the slow test at the end).
"""
from __future__ import annotations

import ast
import functools
import json
import time
from collections import Counter

import pytest

from ga2_hdl.support import mutation
from ga2_hdl.support.mutation import Finding, Mutant, MutantError, Outcome
from ga2_hdl.support.safe_io import atomic_write

TOY = "def f(x):\n    return x + 1 if x > 0 else -x\n"


def toy_judge(m: Mutant):
    """Runs the broken copy of TOY and checks three values; special files stand for special cases."""
    if m.file == "slow.py":
        time.sleep(30)
    if m.file == "broken.py":
        return Outcome("error", "", "the copy did not build")
    if m.file == "crash.py":
        raise RuntimeError("the judge fell over")
    scope = {}
    exec(mutation.apply(TOY, m), scope)
    f = scope["f"]
    for x, want in ((3, 4), (-2, 2), (0, 0)):
        if f(x) != want:
            return Finding(f"f({x})", f"expected {want}, got {f(x)}")
    return None


def toy(old, new, file="toy.py", **kw):
    return Mutant(file, old, new, offset=TOY.index(old), **kw)


def test_every_status_of_the_engine_and_its_json(tmp_path):
    mutants = [
        toy("x + 1", "x + 2"),                                  # caught
        toy("-x", "abs(x)"),                                    # survives, not argued: the planted survivor
        toy("x + 1", "(x + 1)", equivalent="parentheses around a whole expression change nothing"),
        toy("x + 1", "1 + x", equivalent="addition commutes"),
        toy("x > 0", "x < 0", equivalent="a wrong argument, which the checks refute"),
        Mutant("slow.py", "", "", offset=0),
        Mutant("broken.py", "", "", offset=0),
        Mutant("crash.py", "", "", offset=0),
    ]
    t0 = time.perf_counter()
    results = mutation.run_mutants(mutants, toy_judge, jobs=2, timeout=1.5, crash_status="error")
    assert time.perf_counter() - t0 < 20
    statuses = [r.status for r in results]
    assert statuses == ["caught", "survived", "equivalent", "equivalent", "caught", "timeout", "error", "error"]
    assert results[0].caught_by == "f(3)" and "expected 4, got 5" in results[0].detail
    assert results[4].argument_refuted and not results[0].argument_refuted
    assert "no verdict after" in results[5].detail
    assert "RuntimeError: the judge fell over" in results[7].detail

    # a crash of the broken code itself is a detection where the judge runs it (compiler, spec)
    [crashed] = mutation.run_mutants([mutants[-1]], toy_judge, jobs=1, timeout=10, crash_status="caught")
    assert (crashed.status, crashed.caught_by) == ("caught", "crash")

    out = tmp_path / "m.json"
    atomic_write(out, json.dumps(mutation.report(results, target="toy")))
    data = json.loads(out.read_text())
    assert data["target"] == "toy" and len(data["mutants"]) == len(mutants)
    assert {"file", "line", "change", "status", "caught_by"} <= set(data["mutants"][0])
    assert data["mutants"][0]["change"] == "x + 1 -> x + 2"
    totals = data["totals"]
    assert (totals["caught"], totals["survived"], totals["equivalent"], totals["timeout"], totals["error"]) == \
        (2, 1, 2, 1, 2)
    assert totals["caught_percent"] == round(100 * 2 / 3, 2) and totals["arguments_refuted"] == 1


def test_a_stale_anchor_is_refused():
    with pytest.raises(MutantError, match="not at offset"):
        mutation.apply(TOY, Mutant("toy.py", "x + 1", "x", offset=0))
    with pytest.raises(MutantError, match="occurs 4 times"):
        mutation.apply(TOY, Mutant("toy.py", "x", "y"))
    assert mutation.apply(TOY, Mutant("toy.py", "-x", "x")).endswith("else x\n")


# ---------------------------------------------------------------------- the RTL mutants
def _statement_spans(source: str) -> list[tuple[int, int, int]]:
    """(first line, last line, indentation) of every function and class of ``source`` and of each
    top-level statement (decorators included), innermost last among those holding a line."""
    spans = []
    tree = ast.parse(source)
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or n in tree.body:
            first = min([n.lineno] + [d.lineno for d in getattr(n, "decorator_list", [])])
            spans.append((first, n.end_lineno, n.col_offset))
    return sorted(spans, key=lambda s: s[1] - s[0], reverse=True)


def _parses_at(source: str, text: str, line: int) -> bool:
    """Whether ``text`` (``source`` edited at ``line``) is Python.  Only the innermost function (or
    top-level statement) holding the edit is parsed, dedented: statements of one block are
    independent, so the file parses iff that function does with the rest unchanged (parsing the
    whole file for each of some 1,400 mutants took 7 s of the default suite)."""
    if source not in _SPANS:
        _SPANS[source] = _statement_spans(source)
    grown = text.count("\n") - source.count("\n")
    lines = text.splitlines()
    for lo, hi, indent in reversed(_SPANS[source]):        # innermost first
        if not lo <= line <= hi:
            continue
        chunk = lines[lo - 1:hi + grown]
        if any(x.strip() and not x.startswith(" " * indent) for x in chunk):
            continue                                       # a string at column 0: a wider span
        try:
            ast.parse("\n".join(x[indent:] for x in chunk))
        except SyntaxError:
            return False
        return True
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


_SPANS: dict[str, list[tuple[int, int, int]]] = {}


def test_a_copy_that_is_not_python_is_found_at_its_line():
    """The check above, shown able to fail: an unbalanced bracket inside one method."""
    source = "import x\n\n\nclass A:\n    def f(self):\n        return (1 + 2)\n\n\ndef g():\n    pass\n"
    assert _parses_at(source, source, 6)
    assert not _parses_at(source, source.replace("(1 + 2)", "(1 + 2"), 6)
    assert not _parses_at(source, source.replace("return (1 + 2)", "return (1 +\n 2"), 6)


def test_rtl_mutants_are_generated_from_every_unit_and_apply():
    from gen.mutation import rtl as mutate_rtl
    files = mutate_rtl.rtl_files()
    assert {"chip", "dma", "matrix_unit", "vector_unit", "softmax", "decoder", "sram"} <= set(files)
    mutants = mutate_rtl.generate()
    assert len(mutants) >= 150
    assert set(Counter(m.operator for m in mutants)) == set(mutate_rtl.OPERATORS)
    sources = {f: (mutate_rtl.REPO / f"ga2_hdl/rtl/{f}.py").read_text() for f in files}
    for m in mutants:
        source = sources[mutate_rtl.unit_of(m)]
        text = mutation.apply(source, m)                                 # the anchor is where it says
        assert mutation.line_of(source, m) == m.line
        assert _parses_at(source, text, m.line), m                       # and the copy is Python
    keys = [(m.file, m.offset, m.new) for m in mutants]
    assert len(keys) == len(set(keys))
    copies = [(m.file, mutation.apply(sources[mutate_rtl.unit_of(m)], m)) for m in mutants]
    assert len(copies) == len(set(copies))                               # each copy of a source judged once
    # one of each kind, in the DMA: its FSM-less control still has every other operator
    dma = {m.operator for m in mutate_rtl.generate(["dma"])}
    assert dma >= {"compare", "constant", "width", "swap", "drop", "enable"}
    assert any(m.operator == "next" for m in mutate_rtl.generate(["matrix_unit"]))


def test_edits_that_make_the_same_source_are_one_mutant_and_reported_as_such():
    """The constant and the enable operator both turn an enable's `x.eq(0)` into `x.eq(1)`: one mutant,
    judged once, naming the other edit (``duplicates``, in the JSON ``same_source_as``), and the
    totals count the edits folded."""
    from gen.mutation import rtl as mutate_rtl
    chip = mutate_rtl.generate(["chip"])
    source = (mutate_rtl.REPO / "ga2_hdl/rtl/chip.py").read_text()
    folded = [m for m in chip if m.duplicates]
    assert folded and all(d.startswith("[enable] ") for m in folded for d in m.duplicates)
    m = folded[0]
    other = next(x for x in mutate_rtl._Generator("chip").run()        # the raw edits, before folding
                 if x.line == m.line and x.operator != m.operator and f"[{x.operator}] {x.change}" in m.duplicates)
    assert mutation.apply(source, other) == mutation.apply(source, m)
    result = mutation.Result(m, "caught", "a test")
    assert result.as_dict()["same_source_as"] == list(m.duplicates)
    assert mutation.totals([result])["duplicate_edits"] == len(m.duplicates)


def test_a_mutant_whose_chip_does_not_elaborate_is_an_error_before_any_test(tmp_path):
    """The DMA's `wide = w > 1` turned into `w >= 1` takes the wide branch on the book's one-word port,
    which names ports the DMA does not have: elaborating the book chip (no simulation, no test) finds
    it.  The line is one every build-check configuration elaborates; a line only wide ports build
    is elaborated wide, and the narrow-unit link (on no preset) is left to the tests."""
    from gen.mutation import build_check, rtl as mutate_rtl
    reach = mutate_rtl.build_reach(mutate_rtl.REPO)
    turned = next(m for m in mutate_rtl.generate(["dma"]) if m.change == "w > 1 -> w >= 1")
    assert reach[(turned.file, turned.line)] == build_check.CONFIGS
    assert build_check.chosen(build_check.CONFIGS) == ["book", "wide2"]
    vector = mutate_rtl.generate(["vector_unit"])
    wide_only = next(m for m in vector if m.context.startswith("ArgmaxEngine._chunks:"))
    assert "book" not in reach[(wide_only.file, wide_only.line)]
    narrow_link = next(m for m in mutate_rtl.generate(["chip"]) if m.context.startswith("_connect_narrow:"))
    assert (narrow_link.file, narrow_link.line) not in reach

    def judge(m):
        return mutate_rtl.run_stages(m, "dma", str(tmp_path / "unused.hex"), chip=False,
                                     build=reach[(m.file, m.line)])

    [r] = mutation.run_mutants([turned], judge, jobs=1, timeout=120, crash_status="error")
    assert (r.status, r.before_judging) == ("error", True), r.as_dict()
    assert "the book chip does not elaborate (dma.py:" in r.detail and r.as_dict()["before_judging"]
    totals = mutation.totals([r, mutation.Result(turned, "error", "", "a test saw it")])
    assert (totals["error"], totals["error_before_judging"]) == (2, 1)


def test_mutate_rtl_lists_and_narrows_by_number_and_text(capsys):
    """`--list` numbers the mutants; `--only ID` and `--match TEXT` (each TEXT in the listed line)
    choose among them, for judging one at a time; a help text names today's paths."""
    from ga2_cli.main import main
    main(["mutate", "rtl", "--unit", "dma", "--list"])
    listed = capsys.readouterr().out.splitlines()
    assert listed[0].startswith("#0 ga2_hdl/rtl/dma.py:") and listed[-1].endswith("generated mutants")
    main(["mutate", "rtl", "--unit", "dma", "--list", "--only", "3"])
    assert capsys.readouterr().out.splitlines()[0] == listed[3]
    main(["mutate", "rtl", "--list", "--match", "dma.py:", "--match", "w > 1 -> w >= 1"])
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and "[compare] w > 1 -> w >= 1" in out[0] and out[1].startswith("1 of ")
    import subprocess
    import sys
    help_text = subprocess.run([sys.executable, "-m", "ga2_cli", "mutate", "rtl", "--help"],
                               capture_output=True, text=True, check=True).stdout
    assert "ga2_hdl/rtl/NAME.py" in " ".join(help_text.split())


def test_a_mutant_judged_by_the_proofs_is_caught_by_its_units_property(tmp_path):
    """`--judge prove`: the requantizer's sign correction off by one (the planted mutant of its
    formal property, sim_tests/gen/test_formal.py) is caught by `requant.formula` in the judging
    child, on the mutant's copy, and the verdict names the proof; the unbroken copy passes it (that
    property only: the unit's other two hold in test_formal.py's own checks)."""
    from gen.formal import mutation_judge as proofs, sby
    from gen.mutation import rtl as mutate_rtl
    if sby.tools_problem():
        pytest.skip(sby.tools_problem())
    assert proofs.parse("tests,prove") == ("tests", "prove") and proofs.parse("prove") == ("prove",)
    with pytest.raises(Exception, match="comma-separated list"):
        proofs.parse("tests,proofs")
    assert [p.key for p in proofs.properties("requant")][:1] == ["requant.formula"]
    assert proofs.properties("chip") == []
    planted = next(m for m in mutate_rtl.generate(["requant"])
                   if m.change == "Mux(negative, mantissa, 0) -> Mux(negative, mantissa, 1)"
                   and "offset.eq" in m.context)
    unbroken = Mutant("ga2_hdl/rtl/requant.py", "", "", offset=0, name="unbroken")

    def prove_only(m):
        return mutate_rtl.run_stages(m, "requant", str(tmp_path / "unused.hex"), chip=False, tests=False,
                                     after=functools.partial(proofs.first_failure, keys=("requant.formula",)))

    caught, passed = mutation.run_mutants([planted, unbroken], prove_only, jobs=1, timeout=300,
                                          crash_status="error")
    assert (caught.status, caught.caught_by) == ("caught", "proof: requant.formula"), caught.as_dict()
    assert passed.status == "survived", passed.as_dict()


def test_helpers_that_declare_registers_are_mutated_and_constructors_are_not():
    """A helper that only lays out registers (MatrixUnit._registers: Signal(StructLayout(...))) builds
    hardware too, so its widths are mutated; a constructor that declares a signal (the chip's pc) is
    left alone, its widths being the component's interface."""
    from gen.mutation import rtl as mutate_rtl
    registers = {m.change for m in mutate_rtl.generate(["matrix_unit"])
                 if m.context.startswith("MatrixUnit._registers:")}
    assert {"dim_bits -> dim_bits - 1", "self.size -> self.size - 1", "self.max_k -> self.max_k - 1",
            "dim_bits + 2 -> (dim_bits + 2) - 1"} <= registers
    assert not any(".__init__:" in m.context for m in mutate_rtl.generate(["chip"]))


def test_every_equivalence_argument_matches_a_mutant():
    """An argument is keyed by file, function, source line and change: one that matches no generated
    mutant has gone stale (the code moved under it) and must be rewritten."""
    from gen.mutation import rtl as mutate_rtl, equivalents as rtl_equivalents
    keys = {rtl_equivalents.key_of(m) for m in mutate_rtl.generate()}
    stale = [e for e in rtl_equivalents.EQUIVALENT if (e.file, e.function, e.line, e.change) not in keys]
    assert not stale, stale
    # every claim is argued in words of its own (the length or wording of an argument is not ours to test)
    assert all(e.argument.strip() and e.argument.strip() != e.change for e in rtl_equivalents.EQUIVALENT)


#: the child that fingerprints designs, each from its own copy of ga2_hdl: [(root, design, file, line, function)] on stdin
_FINGERPRINTS = """
import json, sys
from gen.mutation.equivalents import netlist_fingerprint
out = []
for root, design, file, line, function in json.load(sys.stdin):
    for name in [n for n in sys.modules if n.split(".")[0] == "ga2_hdl"]:
        del sys.modules[name]
    sys.path.insert(0, root)
    out.append(netlist_fingerprint(design, file, line, function))
    sys.path.remove(root)
print(json.dumps(out))
"""


def test_an_argued_unchanged_netlist_is_unchanged(tmp_path):
    """An equivalence argument that says the hardware itself is unchanged is checked, not believed:
    its design, built from a copy of ga2_hdl with the mutant applied, has the unbroken design's
    netlist byte for byte (RTLIL without source locations), and building it runs the mutated line
    (so the design is one the change can reach)."""
    import os
    import shutil
    import subprocess
    import sys

    from gen.mutation import rtl as mutate_rtl, equivalents as rtl_equivalents
    claims = [e for e in rtl_equivalents.EQUIVALENT if e.netlist]
    assert claims and all(e.netlist in rtl_equivalents.DESIGNS for e in claims)
    by_key = {rtl_equivalents.key_of(m): m for m in mutate_rtl.generate()}
    designs = sorted({e.netlist for e in claims})
    jobs = [(str(mutate_rtl.REPO), d, "", 0, "") for d in designs]          # the unbroken designs
    for i, e in enumerate(claims):
        mutant = by_key[(e.file, e.function, e.line, e.change)]
        root = tmp_path / str(i)
        shutil.copytree(mutate_rtl.REPO / "ga2_hdl", root / "ga2_hdl", ignore=shutil.ignore_patterns("__pycache__"))
        (root / e.file).write_text(mutation.apply((mutate_rtl.REPO / e.file).read_text(), mutant))
        jobs.append((str(root), e.netlist, e.file, mutant.line, e.function))
    env = dict(os.environ, PYTHONPATH=str(mutate_rtl.REPO), PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([sys.executable, "-c", _FINGERPRINTS], input=json.dumps(jobs), env=env,
                         capture_output=True, text=True, check=True).stdout
    prints = json.loads(out)
    assert len(prints) == len(jobs)
    unbroken = {d: digest for d, (digest, _) in zip(designs, prints)}
    for e, (digest, reached) in zip(claims, prints[len(designs):]):
        assert reached, f"building the {e.netlist} does not run the line of {e.function}: {e.change}"
        assert digest == unbroken[e.netlist], f"{e.function}: {e.change}: the netlist of the {e.netlist} changes"


def test_only_a_unit_with_corner_tests_ends_its_verdict_with_them():
    """The DMA's slow corner tests (counts past 2**15) are its verdict's last stage, run with -m slow
    after the chip check; a unit without corner tests has no slow stage."""
    from gen.mutation import rtl as mutate_rtl
    dma = mutate_rtl.stages("dma")
    assert dma[-1].slow and dma[-1].args[0] == "sim_tests/rtl/test_dma.py" and dma[-2].args == ["chip"]
    assert not any(s.slow for s in mutate_rtl.stages("rowmem"))


def test_two_rtl_mutants_judged_in_a_private_copy(tmp_path):
    """A mutant the decoder's own tests catch (its shift-and-add product's operands swapped), and the
    unbroken copy, which they pass (the decoder: no containing unit, its tests about a second)."""
    from gen.mutation import rtl as mutate_rtl
    swapped = next(m for m in mutate_rtl.generate(["decoder"])
                   if m.operator == "swap" and m.change.startswith("total - Mux(a[i], b << i, 0) ->"))
    unbroken = Mutant("ga2_hdl/rtl/decoder.py", "", "", offset=0, name="unbroken")

    def own_tests_only(m):
        return mutate_rtl.run_stages(m, "decoder", str(tmp_path / "unused.hex"), chip=False)

    results = mutation.run_mutants([swapped, unbroken], own_tests_only, jobs=2, timeout=120,
                                   crash_status="error")
    assert [r.status for r in results] == ["caught", "survived"], [r.as_dict() for r in results]
    assert results[0].caught_by.startswith("sim_tests/rtl/test_decoder.py::")


@pytest.mark.slow
def test_full_rtl_mutation_run(tmp_path):
    """Every generated mutant (`ga2 mutate rtl --all`, about 45 min with two jobs): at least 99% of the
    non-equivalent caught, no argument refuted, and every copy that does not build counted apart."""
    from ga2_cli.main import main
    out = tmp_path / "rtl.json"
    main(["mutate", "rtl", "--all", "--jobs", "2", "--json", str(out)])
    data = json.loads(out.read_text())
    totals = data["totals"]
    assert totals["mutants"] == data["generated"] >= 1000
    assert totals["caught_percent"] >= 99
    assert totals["arguments_refuted"] == 0
    assert totals["error_before_judging"] <= totals["error"]


def test_the_chip_check_runs_on_a_chip_that_builds_the_mutated_line(tmp_path):
    """A mutant on a line of the book's chip is checked on the book's chip; one on a line only the
    overlapped (or a wide) chip builds, on the cheapest chip that builds it, with that preset's own
    programs and golden expectations beside the book's bundle."""
    from gen.mutation import rtl as mutate_rtl
    assert mutate_rtl.chip_config(("book", "overlap")) == "book"
    assert mutate_rtl.chip_config(("overlap", "wide8_overlap")) == "overlap"
    assert mutate_rtl.chip_config(()) == "book"
    on_book = Mutant("ga2_hdl/rtl/chip.py", "", "", offset=0, line=10)
    on_overlap = Mutant("ga2_hdl/rtl/chip.py", "", "", offset=0, line=20)
    reach = {("ga2_hdl/rtl/chip.py", 10): ("book", "wide2"), ("ga2_hdl/rtl/chip.py", 20): ("overlap",)}
    assert mutate_rtl.chip_configs([on_overlap, on_book, on_overlap], reach) == ("overlap", "book")
    path = str(tmp_path / "chip_check.hex")
    assert mutate_rtl.bundle_for(path, "book") == path
    assert mutate_rtl.bundle_for(path, "overlap") == str(tmp_path / "chip_check_overlap.hex")
