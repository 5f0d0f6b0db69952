"""The unit contract's signatures compare by value and say what they are (as Amaranth's own do)."""
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from ga2_hdl.config import PRESETS
from ga2_hdl.rtl.layout import ExtPort, SpadPort, UnitSignature


def test_ports_compare_by_their_parameters():
    assert SpadPort(words=4) == SpadPort(words=4) and hash(SpadPort(words=4)) == hash(SpadPort(words=4))
    assert SpadPort(words=4) != SpadPort(words=2) and SpadPort(12) != SpadPort(13)
    assert SpadPort(config=PRESETS["spad8k_lat4"]) != SpadPort()          # 13 address bits, not 12
    assert ExtPort(words=8) == ExtPort(words=8) != ExtPort()
    assert SpadPort() != ExtPort()
    assert SpadPort(words=2).flip() == SpadPort(words=2).flip()
    assert SpadPort(words=2).wide and not SpadPort().wide and ExtPort(words=2).wide and not ExtPort().wide


def test_the_contract_compares_by_its_port_and_members():
    assert UnitSignature() == UnitSignature() and UnitSignature() != UnitSignature(SpadPort(words=2))
    dma = UnitSignature(ext=Out(ExtPort()))
    assert dma == UnitSignature(ext=Out(ExtPort())) != UnitSignature(ext=Out(ExtPort(words=2)))
    assert dma != UnitSignature()


def test_repr_names_the_parameters():
    assert repr(SpadPort(words=4)) == "SpadPort(addr_bits=12, data_bits=32, words=4)"
    assert repr(ExtPort()) == "ExtPort(addr_bits=16, data_bits=32, words=1)"
    assert repr(UnitSignature()) == "UnitSignature(SpadPort(addr_bits=12, data_bits=32, words=1))"


def test_equal_ports_still_connect():
    from amaranth.hdl import Module
    master = SpadPort(words=2).create(path=("master",))
    memory = SpadPort(words=2).flip().create(path=("memory",))
    wiring.connect(Module(), master, memory)            # raises if the two sides do not match
