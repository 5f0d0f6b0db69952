"""The exported chip in Icarus Verilog: the shared cases of sim_tests/verilog_cases.py."""
from __future__ import annotations

import pytest

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


#: a testbench of its own around the exported chip: no reset pulse at power on (the very first cycle
#: writes word 0 and starts), then for each k a one-cycle reset in cycle k of a run followed, in the
#: first cycle after it, by word 0 written and a start.  One line per run: RUN k status status_pc and
#: the five counters (x where Icarus has no value)
_RESET_TB = """`timescale 1ns/1ps
module reset_tb;
  reg clk = 0, rst = 0, start = 0, imem_we = 0;
  reg [{abits}:0] imem_addr = 0;
  reg [127:0] imem_wdata = 0;
  wire running, halted;
  wire [3:0] status;
  wire [15:0] status_pc;
  wire [31:0] cnt_total, cnt_matrix, cnt_dma, cnt_vector, cnt_instructions;
  ga2_chip dut(.clk(clk), .rst(rst), .start(start), .imem_we(imem_we), .imem_addr(imem_addr),
    .imem_wdata(imem_wdata), .ext_rdata({{32{{1'b0}}}}), .ext_rvalid(1'b0), .running(running),
    .halted(halted), .status(status), .status_pc(status_pc), .cnt_total(cnt_total),
    .cnt_matrix(cnt_matrix), .cnt_dma(cnt_dma), .cnt_vector(cnt_vector), .cnt_instructions(cnt_instructions));
  always #5 clk = ~clk;
  integer k, j;
  task report(input integer run);
    begin
      for (j = 0; j < {timeout} && halted !== 1'b1; j = j + 1) begin @(posedge clk); #1; end
      $display("RUN %0d %0d %0d %0d %0d %0d %0d %0d", run, status, status_pc, cnt_total, cnt_matrix,
               cnt_dma, cnt_vector, cnt_instructions);
    end
  endtask
  initial begin
    imem_we = 1; imem_addr = 0; imem_wdata = 128'h{power_on:032x}; start = 1;
    @(posedge clk); #1; imem_we = 0; start = 0;
    report(-1);
    for (k = 0; k < {runs}; k = k + 1) begin
{load}
      imem_we = 0; start = 1; @(posedge clk); #1; start = 0;
      for (j = 0; j < k; j = j + 1) begin @(posedge clk); #1; end
      rst = 1; @(posedge clk); #1; rst = 0;
      imem_we = 1; imem_addr = 0; imem_wdata = 128'h{word0:032x}; start = 1;
      @(posedge clk); #1; imem_we = 0; start = 0;
      report(k);
    end
    $finish;
  end
endmodule
"""


@pytest.mark.parametrize("name", ["book", "overlap"])
def test_a_start_in_the_first_cycle_after_power_on_or_a_reset_in_icarus(name, tmp_path):
    """In the exported Verilog the instruction memory's output register has no initial value (x in
    Icarus) and no reset.  A start in the very first cycle after power on (no reset pulse; word 0
    written in that cycle, word 1 the memory's zero, a HALT), and a start in the first cycle after a
    one-cycle reset in every cycle of a run (word 0 written again: docs/chip.md), give the golden
    model's status and counters.  The overlapped chip of main up to ffb1f49 read word 1 from that
    register: status 1 after power on (x), and other counters after every one of those resets."""
    import shutil
    import subprocess
    from ga2_hdl import golden
    from ga2_hdl.config import PRESETS
    from ga2_hdl.isa import HALT, make
    from gen.verilog.export import export

    if not (shutil.which("iverilog") and shutil.which("vvp")):
        pytest.skip("iverilog and vvp not installed")
    config = PRESETS[name]
    power_on = [make("VADD", dst=16, src1=0, src2=4, len=3), HALT]
    program = [make("VADD", dst=16, src1=0, src2=4, len=3), make("ST", src=0, dst=8, len=2),
               make("ST", src=1, dst=12, len=1), make("ST", src=0, dst=20, len=3),
               make("VADD", dst=40, src1=8, src2=3, len=2), make("ST", src=8, dst=30, len=2), HALT]
    word0 = make("VADD", dst=60, src1=0, src2=4, len=1)
    runs = golden.run(program, [], config=config).counters.total + 3
    load = "\n".join(f"      imem_we = 1; imem_addr = {a}; imem_wdata = 128'h{w.encode():032x}; "
                     "@(posedge clk); #1;" for a, w in enumerate(program))
    (tmp_path / "tb.v").write_text(_RESET_TB.format(
        abits=config.imem_addr_bits - 1, timeout=200, power_on=power_on[0].encode(), runs=runs,
        load=load, word0=word0.encode()))
    (tmp_path / "chip.v").write_text(export("chip", config=config).text)
    subprocess.run(["iverilog", "-g2005", "-s", "reset_tb", "-o", "tb.vvp", "tb.v", "chip.v"],
                   cwd=tmp_path, check=True, capture_output=True)
    out = subprocess.run(["vvp", "-n", "tb.vvp"], cwd=tmp_path, check=True, capture_output=True,
                         text=True).stdout
    got = {int(f[1]): f[2:] for f in (line.split() for line in out.splitlines()) if f[:1] == ["RUN"]}

    def expect(want):
        return [str(int(want.error)), str(want.error_pc), *map(str, want.counters)]

    assert got.pop(-1) == expect(golden.run(power_on, [], config=config)), "start in the first cycle"
    want = expect(golden.run([word0, *program[1:]], [], config=config))
    assert {k: v for k, v in got.items() if v != want} == {}, "start after a reset in cycle k"
    assert sorted(got) == list(range(runs))
