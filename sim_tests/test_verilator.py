"""The exported chip in Verilator: the shared cases of sim_tests/verilog_cases.py, plus its own.

A Verilator build takes 15-25 s and is cached (one per test session at most);
the waveform test needs a second, traced build (20-36 s), so it is marked
slow.
"""
from __future__ import annotations

import os
import shutil

import pytest

from gen.simulator import SimulatorError, get_simulator
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
            get_simulator("verilator").run_bundle(small_bundle())
