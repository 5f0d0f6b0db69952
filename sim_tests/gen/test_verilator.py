"""The exported chip in Verilator: the shared cases of sim_tests/verilog_cases.py, plus its own.

A Verilator build takes about 11 CPU-s (7-10 s on two cores) and is cached
(one per test session at most); the waveform test needs a second, traced
build, so it is marked slow.
"""
from __future__ import annotations

import os
import re
import shutil

import pytest

from ga2_hdl import isa
from gen.verilog.verilator_form import zero_init_loops
from gen.sim.simulator import SimulatorError, get_simulator
from sim_tests.verilog_cases import VerilogSimulatorCases, small_bundle


class TestVerilator(VerilogSimulatorCases):
    simulator = "verilator"

    @pytest.mark.slow
    def test_vcd_of_the_chosen_program(self, sim, tmp_path):
        self.check_vcd(sim, tmp_path)

    def test_a_missing_compiler_is_named_too(self, monkeypatch, tmp_path):
        # verilator present, but no g++ / make: the error names what is missing
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        os.symlink(shutil.which("verilator"), bin_dir / "verilator")
        monkeypatch.setenv("PATH", str(bin_dir))
        with pytest.raises(SimulatorError, match=r"'g\+\+' was not found on PATH: install the Debian package 'g\+\+'"):
            get_simulator("verilator", config=isa.BOOK).run_bundle(small_bundle())


# ---------------------------------------------------------------------- the chip as Verilator compiles it
ZERO_INIT_MODULE = """module m;
  reg [127:0] imem [2:0];
  initial begin
    imem[0] = 128'h00000000000000000000000000000000;
    imem[1] = 128'h00000000000000000000000000000000;
    imem[2] = 128'h00000000000000000000000000000000;
  end
  reg [31:0] \\spad.memory  [1:0];
  initial begin
    \\spad.memory [0] = 32'd0;
    \\spad.memory [1] = 32'd0;
  end
  reg [15:0] rom [1:0];
  initial begin
    rom[0] = 16'hffff;
    rom[1] = 16'h0000;
  end
  reg [7:0] gap [2:0];
  initial begin
    gap[0] = 8'h00;
    gap[2] = 8'h00;
  end
endmodule
"""


def test_all_zero_memory_initialisers_become_loops():
    text = zero_init_loops(ZERO_INIT_MODULE)
    # every word of an all-zero array, in order: one loop over the same words
    assert ("  integer \\verilator$zero1 ;\n"
            "  initial for (\\verilator$zero1 = 0; \\verilator$zero1 < 3; \\verilator$zero1 = \\verilator$zero1 + 1)\n"
            "    imem[\\verilator$zero1 ] = 0;\n") in text
    assert "\\verilator$zero2 < 2;" in text and "    \\spad.memory [\\verilator$zero2 ] = 0;\n" in text
    assert "imem[0] =" not in text and "\\spad.memory [1] =" not in text
    # a table with a non-zero word, and one that skips a word, are left as they are
    assert "    rom[0] = 16'hffff;\n    rom[1] = 16'h0000;\n" in text
    assert "    gap[0] = 8'h00;\n    gap[2] = 8'h00;\n" in text
    assert "\\verilator$zero3" not in text


def test_the_chip_keeps_only_its_non_zero_initialisers():
    sim = get_simulator("verilator", config=isa.BOOK)
    exported = sim.export(8192)
    text = sim.chip_text(exported)
    # the book chip's instruction memory, scratchpad and register files start at zero: loops now
    assert text.count("initial for (\\verilator$zero") >= 2
    # what is still written word by word has a non-zero word (the exp table)
    blocks = re.findall(r"^  initial begin\n(.*?)^  end\n", text, re.M | re.S)
    assert blocks and all(re.search(r"= \d+'[dh]0*[1-9a-f]", b) for b in blocks)
    zero = [b for b in re.findall(r"^  initial begin\n(.*?)^  end\n", exported.text, re.M | re.S)
            if not re.search(r"= \d+'[dh]0*[1-9a-f]", b)]
    assert len(exported.text) - len(text) > 0.9 * sum(map(len, zero)) > len(exported.text) / 3


def test_ccache_keeps_its_store_inside_the_build_cache(monkeypatch, tmp_path):
    # with ccache on PATH the compiler runs through it, its objects under the GA2 cache: an empty
    # GA2 cache is then a cold build (no compiler cache shared with other cache directories)
    from gen.sim import verilog_sim as sim_verilog
    monkeypatch.setenv("GA2_CACHE_DIR", str(tmp_path / "cache"))
    found = {"ccache": str(tmp_path / "ccache"), "make": "/usr/bin/make"}
    monkeypatch.setattr(sim_verilog.shutil, "which", lambda name: found.get(name))
    cmd = get_simulator("verilator", config=isa.BOOK)._make_command(tmp_path / "obj")
    assert "OBJCACHE=ccache" in cmd and f"CCACHE_DIR={tmp_path / 'cache' / 'ccache'}" in cmd
    found.pop("ccache")
    assert not any(c.startswith(("OBJCACHE", "CCACHE")) for c in get_simulator("verilator", config=isa.BOOK)._make_command(tmp_path))
