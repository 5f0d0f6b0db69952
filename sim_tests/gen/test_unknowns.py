"""Unknown values are a result, not a zero (issue 26, item 1).

The issue's case: an instruction added from a user's module (docs/extending.md) whose engine
reads one word past the end of a 6,144-word scratchpad (sim_tests/gen/overread_ext.py).  Icarus
gives x for that word, Amaranth's simulator a zero: each run must say so (unknown words, an
access outside a memory), and the comparison with the golden model must fail with that reason.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from ga2_hdl import golden, isa
from ga2_hdl.config import Config
from ga2_hdl.formats import asm
from ga2_hdl.formats.bundle import Bundle
from ga2_hdl.formats.results import RunResult, first_mismatch

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
for path in (ROOT / "examples", HERE):         # the user's modules live outside the package
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

CHIP = Config(name="overread", spad_words=6144, extensions=("overread_ext",))
SOURCE = "LD dst=6136 src=0 len=8\nOVERREAD dst=0 src=6136 len=8\nST src=0 dst=32 len=8\nHALT\n"
IMAGE = [8] * 8           # every word the same: only the word read from outside differs
LAST = 39          # ext[39] holds the word the engine read from spad[6144]


def _program():
    return asm.assemble(SOURCE, config=CHIP)


def test_results_carry_unknown_words_and_counters_and_compare_them_as_unknown():
    from ga2_hdl.formats.results import Unknown
    expected = RunResult([10, 0, 0, 0, 1], [0, 7, 0, 0])
    got = RunResult([10, 0, 0, 0, 1], [0, 0, 0, 0], unknown={1: "xxxxxxxx"})
    m = first_mismatch(expected, got, program=2)
    assert m is not None and isinstance(m.got, Unknown)
    assert str(m) == "program 2: ext[1]: expected 0x00000007, got unknown (xxxxxxxx)"
    # an unknown word whose placeholder happens to equal the expectation is still a difference
    same = RunResult([10, 0, 0, 0, 1], [0, 0, 0, 0], unknown={2: "0000000x"})
    assert str(first_mismatch(RunResult([10, 0, 0, 0, 1], [0, 0, 0, 0]), same)) == \
        "ext[2]: expected 0x00000000, got unknown (0000000x)"
    counters = RunResult([10, 0, 0, 0, 1], [0, 0, 0, 0], unknown_counters={"total": "x"})
    assert str(first_mismatch(RunResult([0, 0, 0, 0, 1], [0, 0, 0, 0]), counters)) == \
        "counter total: expected 0, got unknown (x)"
    d = got.to_json()
    assert d["ext"] == [0, None, 0, 0] and d["unknown"] == {"ext": {"1": "xxxxxxxx"}, "counters": {}}
    assert json.loads(json.dumps(counters.to_json()))["counters"][0] is None
    outside = RunResult([10, 0, 0, 0, 1], [0, 7, 0, 0], outside=["scratchpad read of word 9"])
    assert str(first_mismatch(expected, outside)) == "access outside a memory: scratchpad read of word 9"
    assert "unknown" not in expected.to_json() and "outside" not in expected.to_json()


def test_amaranth_names_the_read_outside_the_scratchpad():
    from gen.sim.simulator import get_simulator
    program = _program()
    want = golden.run(program, IMAGE, config=CHIP)
    got = get_simulator("amaranth", config=CHIP).run_program(program, IMAGE)
    assert getattr(got, "outside", None) == ["scratchpad read of word 6144, outside the 6144-word scratchpad, at total=28"]
    m = first_mismatch(want, got)
    assert m.what == "access" and "word 6144, outside the 6144-word scratchpad" in str(m)
    # the book's programs read nothing outside: the directed suite's first program stays clean
    from gen.fuzz.directed import directed_suite
    name, code, ext = directed_suite(8192, config=isa.BOOK)[0]
    assert get_simulator("amaranth", config=isa.BOOK).run_program(code, ext).outside == []


@pytest.mark.skipif(not __import__("shutil").which("iverilog"), reason="Icarus Verilog is not installed")
def test_icarus_marks_the_unknown_word_in_runs_replays_and_the_json(tmp_path):
    from gen.sim.simulator import get_simulator
    program = _program()
    sim = get_simulator("icarus", config=CHIP)
    got = sim.run_program(program, IMAGE)
    assert getattr(got, "unknown", None) == {LAST: "xxxxxxxx"}
    want = golden.run(program, IMAGE, config=CHIP)
    assert str(first_mismatch(want, got)) == f"ext[{LAST}]: expected 0x00000008, got unknown (xxxxxxxx)"
    # a replay: the testbench's verdict line says the same (the runner checks them word for word)
    bundle = Bundle.from_programs([("overread", program, IMAGE)], 8192, config=CHIP)
    report = sim.run_bundle(bundle)
    assert not report.passed
    assert report.line() == f"MISMATCH: program 0: ext[{LAST}]: expected 0x00000008, got unknown (xxxxxxxx)"
    # ga2 run --json: the word is null and listed, never a number; exit status 1
    (tmp_path / "p.s").write_text(SOURCE)
    (tmp_path / "m.hex").write_text("".join(f"{w:08x}\n" for w in IMAGE))
    (tmp_path / "chip.toml").write_text('name = "overread"\nspad_words = 6144\nextensions = ["overread_ext"]\n')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "examples"), str(HERE), str(ROOT)]))
    p = subprocess.run([sys.executable, "-m", "ga2_cli", "run", str(tmp_path / "p.s"), "--ext", str(tmp_path / "m.hex"),
                        "--config", str(tmp_path / "chip.toml"), "--sim", "icarus", "--json"],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    d = json.loads(p.stdout)
    assert d["ext"][LAST] is None and d["unknown"]["ext"] == {str(LAST): "xxxxxxxx"}
    assert f"ext[{LAST}] = xxxxxxxx" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.skipif(not __import__("shutil").which("verilator"), reason="Verilator is not installed")
def test_verilator_marks_the_word_that_came_from_x_by_its_own_rule():
    # two-state: the read outside gives a constant; built with --x-assign unique --x-initial unique
    # that constant follows +verilator+seed, so two runs with two seeds tell it apart
    from gen.sim.simulator import get_simulator
    program = _program()
    got = get_simulator("verilator", config=CHIP, x_check=True).run_program(program, IMAGE)
    assert list(getattr(got, "unknown", {})) == [LAST] and got.unknown_counters == {}
    assert str(first_mismatch(golden.run(program, IMAGE, config=CHIP), got)).startswith(
        f"ext[{LAST}]: expected 0x00000008, got unknown (varies with the seed: ")
    # a program that reads nothing outside: nothing varies
    from gen.fuzz.directed import directed_suite
    for name, code, ext in directed_suite(8192, config=isa.BOOK)[3:5]:
        clean = get_simulator("verilator", x_check=True, config=isa.BOOK).run_program(code, ext)
        assert clean.unknown == {} and first_mismatch(golden.run(code, ext, config=isa.BOOK), clean) is None, name


def test_the_unit_bench_names_an_engine_that_reads_outside_its_regions():
    """The contract bench checks an engine against its operation's declared regions: the over-reading
    RELU reads src[len] (inside the scratchpad, outside src), which the bench names by word and cycle;
    the correct RELU engine, on the same program, passes."""
    from gen.sim.unit_bench import ContractError, run_program
    import overread_ext
    import relu_ext
    config = Config(name="overread_bench", extensions=("overread_ext", "relu_ext"))
    iset = isa.instruction_set(config)
    good = iset.make("RELU", dst=100, src=10, len=4)
    final, busy = run_program(lambda: relu_ext.ReluEngine(config=config), [0] * 10 + [5, -3, 0, 7], [good])
    assert busy == [iset.busy(good)]
    bad = iset.make(overread_ext.MNEMONIC, dst=100, src=10, len=4)
    with pytest.raises(ContractError, match=r"read of word 14 .*outside"):
        run_program(lambda: overread_ext.OverreadEngine(config=config), [0] * 10 + [5, -3, 0, 7], [bad])
