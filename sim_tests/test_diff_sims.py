"""`ga2 diff-sims`: the first cycle and signal at which two simulators' waveforms differ."""
from __future__ import annotations

import pytest

from ga2_hdl import isa
from ga2_hdl.bundle import Bundle
from ga2_hdl.isa import make
from gen import diffsims
from gen.simulator import SimulatorError, get_simulator
from ga2_cli.main import main

PROGRAM = [make("LD", dst=0, src=0, len=4), make("VADD", dst=8, src1=0, src2=0, len=4),
           make("ST", src=8, dst=100, len=4), isa.HALT]
EXT = [11, 22, 33, 44]


class PlantedImage:
    """A simulator that runs every program on an image with one word changed: a simulator-specific
    initial value of the external memory, planted to see it found."""

    def __init__(self, name: str, address: int, value: int):
        self.inner = get_simulator(name)
        self.address, self.value = address, value

    def run_program(self, program, ext, **kwargs):
        ext = list(ext)
        ext[self.address] = self.value
        return self.inner.run_program(program, ext, **kwargs)


def test_names_are_cleaned_as_amaranth_names_them():
    assert diffsims.clean_name("\\ins$62.op [3:0]") == "ins.op"
    assert diffsims.clean_name("ext_addr$59") == "ext_addr"
    assert diffsims.clean_name("acc[3] [31:0]") == "acc[3]"
    assert diffsims.clean_name("cnt_total [31:0]") == "cnt_total"


def test_a_planted_memory_word_is_found_at_the_cycle_it_reaches_the_chip(tmp_path):
    report = diffsims.diff_sims(PROGRAM, EXT, ["amaranth", "icarus"], keep=str(tmp_path),
                                sim_objects={"icarus": PlantedImage("icarus", 2, 99)})
    diff = report.comparison.difference
    assert diff is not None, report.lines()
    # where the word should arrive, read from the waveform of the simulator without the plant:
    # the first cycle in which the DMA's read data is ext[2]
    wave = diffsims.read_vcd(str(tmp_path / "amaranth.vcd"))
    edges = diffsims.program_edges(wave)
    arrival = next(k for k, t in enumerate(edges) if wave.value_before("dma.ext_rdata", t) == f"{EXT[2]:x}")
    assert (diff.cycle, diff.signal, diff.values) == (arrival, "dma.ext_rdata", (f"{EXT[2]:x}", f"{99:x}"))
    lines = report.lines()
    assert f"cycle {arrival}: dma.ext_rdata differs: amaranth 0x21, icarus 0x63" in lines
    assert len(report.comparison.compared) > 100
    # and the end state says so too (the planted word is still in memory), and the sum differs
    assert "end state differs: ext[2]: expected 0x00000021, got 0x00000063 (expected: amaranth, got: icarus)" in lines
    assert report.results[0].ext[102] == 2 * EXT[2] != report.results[1].ext[102]


def test_the_same_program_gives_no_difference_between_icarus_and_cxxrtl():
    report = diffsims.diff_sims(PROGRAM, EXT, ["icarus", "cxxrtl"])
    assert report.comparison.difference is None, report.lines()
    assert len(report.comparison.compared) > 100
    assert any(line.startswith("no difference") for line in report.lines())
    assert report.lines()[-1] == "end state: the same in icarus and cxxrtl (status, counters, memory)"


def test_the_command_takes_a_program_of_a_bundle_and_exits_1_on_a_difference(tmp_path, capsys):
    bundle = Bundle.from_programs([("first", [isa.HALT], []), ("second", PROGRAM, EXT)], ext_words=8192)
    path = tmp_path / "b.hex"
    bundle.write(path)
    assert main(["diff-sims", str(path), "--program", "1", "--sims", "icarus,cxxrtl"]) == 0
    out = capsys.readouterr().out
    assert "no difference" in out
    for args, message in (
            (["--sims", "icarus"], "name two different simulators"),
            (["--sims", "golden,icarus"], "the golden model has no signals"),
            (["--program", "2", "--sims", "icarus,cxxrtl"], "has programs 0 .. 1"),
            (["--sims", "icarus,cxxrtl", "--ignore", "("], "not a regular expression")):
        assert main(["diff-sims", str(path), *args]) != 0
        assert message in capsys.readouterr().err


def test_two_simulators_are_needed():
    with pytest.raises(SimulatorError, match="two different simulators"):
        diffsims.diff_sims(PROGRAM, EXT, ["icarus"])
