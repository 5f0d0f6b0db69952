"""The exported chip in Icarus Verilog: the shared cases of sim_tests/verilog_cases.py."""
from __future__ import annotations

from ga2_hdl import isa
from sim_tests.verilog_cases import VerilogSimulatorCases


class TestIcarus(VerilogSimulatorCases):
    simulator = "icarus"


def test_undefined_memory_words_are_reported_as_the_testbench_prints_them(tmp_path):
    # Icarus can leave x in memory; the runner's verdict must then read like the testbench's
    from ga2_hdl.formats.results import RunResult
    from gen.sim.verilog_sim import _first_mismatch, _read_ext_dump

    dump = tmp_path / "ext.txt"
    dump.write_text("program 0\n3 0000002a\n5 xxxxxxxx\n")
    memories = _read_ext_dump(dump, 8)
    ext, undefined = memories[0]
    assert ext == [0, 0, 0, 42, 0, 0, 0, 0] and undefined == {5: "xxxxxxxx"}
    expected = RunResult([10, 0, 0, 0, 1], [0, 0, 0, 42, 0, 7, 0, 0])
    got = RunResult([10, 0, 0, 0, 1], ext, unknown=undefined)
    assert str(_first_mismatch(expected, got, 0)) == \
        "program 0: ext[5]: expected 0x00000007, got unknown (xxxxxxxx)"
    got.counters = got.counters._replace(total=11)   # a counter comes before memory
    assert str(_first_mismatch(expected, got, 0)) == "program 0: counter total: expected 10, got 11"


def test_a_cached_build_is_found_without_making_the_icarus_form_again(tmp_path, monkeypatch):
    """The build's key holds the export and the form's code and options, not the form's text: a
    cached build is found without running gen/verilog/icarus_form.py (0.4 CPU-s, asked by every piece of
    a replay); a waveform build, whose form keeps every signal, is another build."""
    from gen.sim.verilog_sim import IcarusSimulator

    monkeypatch.setenv("GA2_CACHE_DIR", str(tmp_path))
    sim = IcarusSimulator(config=isa.BOOK)
    exported = sim.export(8192)
    first = sim.build(8192, exported=exported)
    assert not first.cached

    def no_form(*args, **kwargs):
        raise AssertionError("the Icarus form was made again for a cached build")

    monkeypatch.setattr(IcarusSimulator, "chip_text", no_form)
    again = sim.build(8192, exported=exported)
    assert again.cached and again.key == first.key
    assert sim.form_key(True) != sim.form_key(False)
