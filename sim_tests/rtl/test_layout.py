"""The unit contract's signatures compare by value and say what they are (as Amaranth's own do)."""
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from ga2_hdl import isa
from ga2_hdl.config import PRESETS
from ga2_hdl.rtl.layout import ExtPort, SpadPort, UnitSignature


def test_ports_compare_by_their_parameters():
    assert SpadPort(words=4, config=isa.BOOK) == SpadPort(words=4, config=isa.BOOK) and hash(SpadPort(words=4, config=isa.BOOK)) == hash(SpadPort(words=4, config=isa.BOOK))
    assert SpadPort(words=4, config=isa.BOOK) != SpadPort(words=2, config=isa.BOOK) and SpadPort(12, config=isa.BOOK) != SpadPort(13, config=isa.BOOK)
    assert SpadPort(config=PRESETS["spad8k_lat4"]) != SpadPort(config=isa.BOOK)          # 13 address bits, not 12
    assert ExtPort(words=8) == ExtPort(words=8) != ExtPort()
    assert SpadPort(config=isa.BOOK) != ExtPort()
    assert SpadPort(words=2, config=isa.BOOK).flip() == SpadPort(words=2, config=isa.BOOK).flip()
    assert SpadPort(words=2, config=isa.BOOK).wide and not SpadPort(config=isa.BOOK).wide and ExtPort(words=2).wide and not ExtPort().wide


def test_the_contract_compares_by_its_port_and_members():
    assert UnitSignature(config=isa.BOOK) == UnitSignature(config=isa.BOOK) and UnitSignature(config=isa.BOOK) != UnitSignature(SpadPort(words=2, config=isa.BOOK), config=isa.BOOK)
    dma = UnitSignature(ext=Out(ExtPort()), config=isa.BOOK)
    assert dma == UnitSignature(ext=Out(ExtPort()), config=isa.BOOK) != UnitSignature(ext=Out(ExtPort(words=2)), config=isa.BOOK)
    assert dma != UnitSignature(config=isa.BOOK)


def test_repr_names_the_parameters():
    assert repr(SpadPort(words=4, config=isa.BOOK)) == "SpadPort(addr_bits=12, data_bits=32, words=4)"
    assert repr(ExtPort()) == "ExtPort(addr_bits=16, data_bits=32, words=1)"
    assert repr(UnitSignature(config=isa.BOOK)) == "UnitSignature(SpadPort(addr_bits=12, data_bits=32, words=1, forward))"


def test_the_book_chips_port_carries_the_forward_and_the_others_do_not():
    """The forward (rd_hit, rd_forward) exactly on the chips whose scratchpad is one owned memory
    (no overlap, one bank); a port with it differs from one without; spad_read_word gives the word
    written on a hit and the block RAM's word otherwise (a wide port: its rd_data)."""
    from amaranth.hdl import Module, Signal
    from amaranth.sim import Simulator
    from ga2_hdl.config import PRESETS
    from ga2_hdl.rtl.layout import spad_forwards, spad_read_word
    assert spad_forwards(isa.BOOK) and "rd_hit" in SpadPort(config=isa.BOOK).members
    for name, config in PRESETS.items():
        assert spad_forwards(config) == (not config.overlap and config.spad_banks == 1), name
        assert ("rd_hit" in SpadPort(config=config).members) == spad_forwards(config), name
    assert SpadPort(config=isa.BOOK) != SpadPort(config=PRESETS["overlap"])
    wide = SpadPort(words=2, config=isa.BOOK).create(path=("w",))
    assert spad_read_word(wide) is wide.rd_data
    port = SpadPort(config=isa.BOOK).create(path=("p",))
    m = Module()
    word = Signal(32)
    m.d.comb += word.eq(spad_read_word(port))

    async def bench(ctx):
        ctx.set(port.rd_data, 0x1111)
        ctx.set(port.rd_forward, 0x2222)
        assert ctx.get(word) == 0x1111
        ctx.set(port.rd_hit, 1)
        assert ctx.get(word) == 0x2222
    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()


def test_equal_ports_still_connect():
    from amaranth.hdl import Module
    master = SpadPort(words=2, config=isa.BOOK).create(path=("master",))
    memory = SpadPort(words=2, config=isa.BOOK).flip().create(path=("memory",))
    wiring.connect(Module(), master, memory)            # raises if the two sides do not match
