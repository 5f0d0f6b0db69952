"""A user's extension with a bug on purpose (issue 26): OVERREAD is examples/relu_ext.py's RELU
(its own op code and mnemonic, so that both modules can be loaded in one process) whose engine
reads one word too far (``src[i + 1]`` instead of ``src[i]``), so that on
``OVERREAD dst=D src=S len=N`` with ``S + N`` at the end of the scratchpad its last read is
outside the memory.  The golden model (the declared semantics) reads ``src[i]``."""
import dataclasses

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring

from ga2_hdl.config import Config
from ga2_hdl.isa import Extension
from ga2_hdl.rtl.decoder import operand
from ga2_hdl.rtl.layout import UnitSignature, spad_addr_bits

import relu_ext

OP_CODE = 13          # free: the book uses 0..7, examples/relu_ext.py 8, sim_tests/hdl/test_extension.py 9..11, test_decoder.py 12
MNEMONIC = "OVERREAD"


def ops(config: Config):
    return tuple(dataclasses.replace(spec, code=OP_CODE, mnemonic=MNEMONIC) for spec in relu_ext.ops(config))


class OverreadEngine(wiring.Component):
    def __init__(self, *, config: Config):
        self.config = config
        super().__init__(UnitSignature(config=config))

    def elaborate(self, platform):
        m = Module()
        dst, src, length = (operand(self.ins, MNEMONIC, name) for name in ("dst", "src", "len"))
        addr_bits = spad_addr_bits(self.config)
        rd_index = Signal(range(self.config.spad_words + 1))
        wr_index = Signal(range(self.config.spad_words + 1))
        reading, valid, last = Signal(), Signal(), Signal()
        with m.If(self.start):
            m.d.sync += [self.busy.eq(1), rd_index.eq(0), wr_index.eq(0)]
        m.d.comb += [
            reading.eq(self.busy & (rd_index < length)),
            self.spad.rd_en.eq(reading),
            self.spad.rd_addr.eq((src + rd_index + 1)[:addr_bits]),       # the bug: one word too far
        ]
        with m.If(reading):
            m.d.sync += rd_index.eq(rd_index + 1)
        m.d.sync += [valid.eq(reading), last.eq(reading & (rd_index == length - 1))]
        word = self.spad.rd_data.as_signed()
        with m.If(valid):
            m.d.comb += [self.spad.wr_en.eq(1),
                         self.spad.wr_addr.eq((dst + wr_index)[:addr_bits]),
                         self.spad.wr_data.eq(Mux(word < 0, 0, word))]
            m.d.sync += wr_index.eq(wr_index + 1)
            with m.If(last):
                m.d.comb += self.done.eq(1)
                m.d.sync += self.busy.eq(0)
        return m


EXTENSION = Extension(ops=ops, golden={MNEMONIC: relu_ext.relu}, engines={MNEMONIC: OverreadEngine})
