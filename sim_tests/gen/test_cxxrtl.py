"""The chip compiled through CXXRTL: the shared cases of sim_tests/verilog_cases.py, plus its own.

The driver (gen/sim/tb/cxxrtl_driver.cpp) speaks the protocol of the Verilog
testbench, so the same cases run unchanged; the build (about 30 CPU-seconds of
g++) is cached like Verilator's.
"""
from __future__ import annotations

from gen.sim import cxxrtl as sim_cxxrtl
from sim_tests.verilog_cases import VerilogSimulatorCases


class TestCxxrtl(VerilogSimulatorCases):
    simulator = "cxxrtl"


def test_the_driver_constants_come_from_the_isa():
    from ga2_hdl import isa
    from ga2_hdl.isa import ErrorCode
    text = sim_cxxrtl.params_header(2048, config=isa.BOOK)
    assert "GA2_EXT_WORDS = 2048;" in text and f"GA2_LAT = {isa.LAT};" in text
    assert f"GA2_SPAD_WORDS = {isa.SPAD_WORDS};" in text
    for e in ErrorCode:
        assert f'"{e.name}"' in text
    for n in isa.COUNTER_NAMES:
        assert f'"{n}"' in text
