"""Chips with wide ports (presets ``wide2``, ``wide4``) against the golden model, end to end.

* the golden model's counters on a wide chip are the configuration's ISA
  formulas (``instruction_set(config).counters``), never the book's, and the
  memory results are the book chip's (the widths change time, not values);
* the chip in Amaranth's simulator runs directed programs exactly as the golden
  model predicts (memory, status and all five counters);
* (slow) the directed suite and random programs (gen/fuzz/programs.py) in every
  simulator: golden = Amaranth = Icarus = Verilator = CXXRTL.
"""
import pytest

from ga2_hdl import golden, isa
from ga2_hdl.config import PRESETS, Config
from ga2_hdl.formats.bundle import Bundle
from gen.fuzz import programs as fuzz
from gen.sim.simulator import get_simulator

WIDE = ("wide2", "wide4")


@pytest.mark.parametrize("name", WIDE)
def test_golden_counters_follow_the_configurations_formulas(name):
    config = PRESETS[name]
    iset = isa.instruction_set(config)
    for title, code, ext in fuzz.directed_suite():
        book = golden.run(code, ext)
        wide = golden.run(code, ext, config=config)
        assert wide.ext == book.ext and wide.error == book.error and wide.error_pc == book.error_pc, title
        if wide.error == isa.ErrorCode.OK:
            assert wide.counters == iset.counters(code), title
            assert wide.counters.total <= book.counters.total, title
            assert wide.counters.instructions == book.counters.instructions, title


#: P = W (the presets), and P != W: a unit narrower than the banked scratchpad on its low lanes
CHIP_CONFIGS = [PRESETS["wide4"], Config(name="p2w4", spad_ports=2, ext_port_words=4),
                pytest.param(Config(name="p4w1", spad_ports=4), marks=pytest.mark.slow)]


@pytest.mark.parametrize("config", CHIP_CONFIGS, ids=lambda c: c.name)
def test_chip_runs_directed_programs(config):
    names = ("ld_st_12", "mm_3x5x2", "mm_3x5x2_tb", "rq_20", "vadd_20", "amax_20", "len1_all", "mm_strides")
    chosen = [p for p in fuzz.directed_suite() if p[0] in names]
    bundle = Bundle.from_programs(chosen, config=config)
    assert len(bundle.programs) == len(names)
    report = get_simulator("amaranth", config=config).run_bundle(bundle)
    assert report.passed, report.line()


@pytest.mark.slow
@pytest.mark.parametrize("name", WIDE)
@pytest.mark.parametrize("sim", ["amaranth", "icarus", "verilator", "cxxrtl"])
def test_directed_suite_and_random_programs_in_every_simulator(name, sim):
    config = PRESETS[name]
    report = fuzz.fuzz(20 if sim == "amaranth" else 200, seed=12, sims=("golden", sim), directed=True,
                       config=config)
    assert report["mismatches"] == 0, report["first_mismatch"]


@pytest.mark.slow
@pytest.mark.parametrize("name", WIDE)
def test_wide_chip_verilog_lints_clean(tmp_path, name):
    from gen.verilog import export as verilog
    exported = verilog.export("chip", params={"config": PRESETS[name]})
    verilog.lint(exported.write(tmp_path), exported.unit)
