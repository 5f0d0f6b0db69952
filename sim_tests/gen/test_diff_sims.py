"""`ga2 diff-sims`: the first cycle and signal at which two simulators' waveforms differ."""
from __future__ import annotations

import pytest

from ga2_hdl import isa
from ga2_hdl.formats.bundle import Bundle
from ga2_hdl.isa import make
from gen.sim import diffsims
from gen.sim.simulator import SimulatorError, get_simulator
from ga2_cli.main import main

PROGRAM = [make("LD", dst=0, src=0, len=4), make("VADD", dst=8, src1=0, src2=0, len=4),
           make("ST", src=8, dst=100, len=4), isa.HALT]
EXT = [11, 22, 33, 44]


class PlantedImage:
    """A simulator that runs every program on an image with one word changed: a simulator-specific
    initial value of the external memory, planted to see it found."""

    def __init__(self, name: str, address: int, value: int):
        self.inner = get_simulator(name, config=isa.BOOK)
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
                                sim_objects={"icarus": PlantedImage("icarus", 2, 99)}, config=isa.BOOK)
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
    report = diffsims.diff_sims(PROGRAM, EXT, ["icarus", "cxxrtl"], config=isa.BOOK)
    assert report.comparison.difference is None, report.lines()
    assert len(report.comparison.compared) > 100
    assert any(line.startswith("no difference") for line in report.lines())
    assert report.lines()[-1] == "end state: the same in icarus and cxxrtl (status, counters, memory)"


def test_the_command_takes_a_program_of_a_bundle_and_exits_1_on_a_difference(tmp_path, capsys):
    bundle = Bundle.from_programs([("first", [isa.HALT], []), ("second", PROGRAM, EXT)], ext_words=8192, config=isa.BOOK)
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
        diffsims.diff_sims(PROGRAM, EXT, ["icarus"], config=isa.BOOK)


def _vcd(path, busy_at: dict[int, int], lead: int) -> None:
    """A two-level waveform as Verilator writes it (the testbench's nets carry the chip's port names):
    ``lead`` cycles before start, start high in cycle 0, running from cycle 1, dma.busy as given."""
    ports = ["clk", "start", "running", "halted", "cnt_total", "imem_we"]
    lines = ["$timescale 1ns $end", "$scope module TOP $end", "$scope module ga2_tb $end"]
    lines += [f"$var wire 1 t{i} {p} $end" for i, p in enumerate(ports)]
    lines += ["$scope module dut $end"]
    lines += [f"$var wire 1 d{i} {p} $end" for i, p in enumerate(ports)]
    lines += ["$scope module dma $end", "$var wire 8 b busy [7:0] $end", "$upscope $end",
              "$upscope $end", "$upscope $end", "$upscope $end", "$enddefinitions $end"]
    values = {"clk": 0, "start": 0, "running": 0, "busy": 0}
    for cycle in range(-lead, 12):
        t = 10 * (cycle + lead)
        values["start"] = int(cycle == 0)
        values["running"] = int(cycle >= 1)
        values["busy"] = busy_at.get(cycle, values["busy"])
        lines.append(f"#{t}")
        lines += ["0d0", f"{values['start']}d1", f"{values['running']}d2", "0d3", "0d4", "0d5"]
        lines += [f"0t{i}" for i in range(6)]
        lines.append(f"b{values['busy']:b} b")
        lines += [f"#{t + 5}", "1d0"]
    path.write_text("\n".join(lines) + "\n")


def test_cycles_are_counted_from_start_whatever_the_waveform_begins_with(tmp_path):
    a, b = tmp_path / "a.vcd", tmp_path / "b.vcd"
    _vcd(a, {2: 1, 5: 3}, lead=0)
    _vcd(b, {2: 1, 5: 3, 7: 9}, lead=4)              # differs from cycle 7 on, and starts 4 cycles later
    wa, wb = diffsims.read_vcd(str(a)), diffsims.read_vcd(str(b))
    assert wa.chip_scope == "TOP.ga2_tb.dut"          # the deepest scope with the ports, not the testbench
    c = diffsims.compare(wa, wb)
    assert "dma.busy" in c.compared
    # a cycle's values are those just before the rising edge that ends it: busy is 9 in cycle 7
    assert (c.difference.cycle, c.difference.signal, c.difference.values) == (7, "dma.busy", ("3", "9"))
    assert c.cycles == (12, 12)
    assert diffsims.compare(wa, diffsims.read_vcd(str(a))).difference is None


def test_the_issues_case_exits_1_and_names_the_first_x_after_reset(tmp_path, capsys):
    """Issue 26: an extension whose engine reads spad[6144] of a 6,144-word scratchpad.  Verilator
    reads a number there, Icarus x; the end states differ, so the command exits 1, and the first
    difference named is the x that the read brings in during the program, not the x of a signal
    never written since reset (cycle 0's dma.ext_wdata), which --strict-x alone counts."""
    import sys
    from pathlib import Path
    here = Path(__file__).resolve().parent
    for p in (here.parents[1] / "examples", here):
        if str(p) not in sys.path:
            sys.path.insert(0, str(p))
    from ga2_hdl.formats import asm
    from sim_tests.gen.test_unknowns import CHIP, IMAGE, LAST, SOURCE
    program = asm.assemble(SOURCE, config=CHIP)
    report = diffsims.diff_sims(program, IMAGE, ["verilator", "icarus"], config=CHIP)
    diff = report.comparison.difference
    assert diff is not None and diff.cycle > 0, report.lines()
    assert diff.signal.endswith("rd_data") or diff.signal.endswith("rd__data"), report.lines()
    assert "x" in diff.values[1] and "x" not in diff.values[0]
    assert report.comparison.first_undefined is not None and report.comparison.first_undefined.cycle == 0
    assert report.differs
    assert f"end state differs: ext[{LAST}]: expected 0x00000000, got unknown (xxxxxxxx) " \
           f"(expected: verilator, got: icarus)" in report.lines()
    strict = diffsims.diff_sims(program, IMAGE, ["verilator", "icarus"], config=CHIP, strict_x=True)
    assert strict.comparison.difference.cycle == 0          # what --strict-x asks for: x since reset too


def test_the_command_exits_1_when_only_the_end_states_differ(tmp_path, capsys, monkeypatch):
    # waveforms the same in every compared signal but end states that differ: still a difference
    real = diffsims.compare
    monkeypatch.setattr(diffsims, "compare", lambda *a, **k: diffsims.Comparison(real(*a, **k).compared, (1, 1), None))
    bundle = Bundle.from_programs([("p", PROGRAM, EXT)], ext_words=8192, config=isa.BOOK)
    path = tmp_path / "b.hex"
    bundle.write(path)
    monkeypatch.setattr(diffsims, "get_simulator", lambda name, **k: PlantedImage(name, 2, 99) if name == "icarus"
                        else get_simulator(name, **k))
    assert main(["diff-sims", str(path), "--sims", "amaranth,icarus"]) == 1
    out = capsys.readouterr().out
    assert "end state differs: ext[2]" in out and "no difference in any compared signal" in out


def test_the_help_lists_only_the_simulators_it_accepts(capsys):
    try:
        main(["diff-sims", "--help"])
    except SystemExit:
        pass
    text = " ".join(capsys.readouterr().out.split())
    assert "of amaranth, icarus, verilator, cxxrtl" in text and "golden, " not in text
    assert main(["replay", __file__, "--sims", "icarus,icarus"]) != 0       # refused while parsing
    assert "icarus named more than once" in capsys.readouterr().err


def test_a_comment_line_longer_than_any_buffer_is_skipped_by_every_verilog_testbench():
    """A bundle's comment lines can be long (a chip's ``// config: {JSON}`` line passed 255 characters
    when fields were added, and the CXXRTL driver read lines through a 256-byte buffer, taking the line's
    tail for a word): a program named with 700 characters replays on Icarus and CXXRTL as on the golden
    model."""
    name = "long " + "x" * 700
    bundle = Bundle.from_programs([(name, PROGRAM, EXT)], ext_words=8192, config=isa.BOOK)
    assert max(len(line) for line in bundle.to_text().splitlines()) > 700
    for sim in ("icarus", "cxxrtl"):
        report = get_simulator(sim, config=isa.BOOK).run_bundle(bundle)
        assert report.passed and len(report.results) == 1, (sim, report.mismatch, report.messages)
