"""The exported chip in Icarus Verilog: the shared cases of sim_tests/verilog_cases.py."""
from __future__ import annotations

from sim_tests.verilog_cases import VerilogSimulatorCases


class TestIcarus(VerilogSimulatorCases):
    simulator = "icarus"
