"""RELU: an element-wise ReLU vector instruction, added to GA2 from outside the package.

    RELU dst=D src=S len=N        dst[i] = max(src[i], 0) on signed 32-bit words, i < N

Use it by naming this module in a configuration (its directory on PYTHONPATH)::

    from ga2_hdl.config import Config
    config = Config(name="relu", extensions=("relu_ext",))

or, in a configuration file, by its path relative to that file (relu.toml beside it)::

    extensions = ["relu_ext.py"]

and every tool working on ``config`` has the instruction: the assembler, the golden
model, the chip's issue check and dispatch, the random programs, docs/isa.md and the
Verilog.  docs/extending.md walks through this file.
"""
import numpy as np
from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring

from ga2_hdl.config import Config
from ga2_hdl.rtl.decoder import operand
from ga2_hdl.isa import Extension, Operand, OpSpec, Region, Unit
from ga2_hdl.rtl.layout import UnitSignature, spad_addr_bits

OP_CODE = 8          # the first op code the book leaves free


# 1. The operation: encoding, unit, busy time, regions and legality, on the chip `config`.
def ops(config: Config) -> tuple[OpSpec, ...]:
    return (
        OpSpec(
            OP_CODE, "RELU", Unit.VECTOR,
            (Operand("dst", "a", doc="scratchpad destination"),
             Operand("src", "b", doc="scratchpad source"),
             Operand("len", "c", doc="words")),
            "dst[i] = max(src[i], 0) for i < len, on signed 32-bit words",
            "len + 1", lambda i: i.len + 1,
            lambda i: (Region("spad", i.dst, i.len, "dst"), Region("spad", i.src, i.len, "src")),
            lengths=("len",),            # len = 0 halts with ZERO_LENGTH
            disjoint_or_same=True,       # in place or disjoint, else OVERLAP
            arithmetic="`max(x, 0)` on the signed 32-bit word; a negative word becomes 0.",
        ),
    )


# 2. The golden semantics: what RELU does to the machine's state (all reads before any write).
def relu(machine, ins) -> None:
    words = machine.spad[ins.src:ins.src + ins.len]            # unsigned 32-bit values
    machine.spad[ins.dst:ins.dst + ins.len] = np.where(words >= 1 << 31, 0, words)


# 3. The RTL engine, on the unit contract: busy for len + 1 cycles, done in the last one.
class ReluEngine(wiring.Component):
    """cycle t+1+i: read src[i];  t+2+i: the word arrives, dst[i] = max(word, 0) is written.
    The last write (t+len+1) is the done cycle: W = len + 1."""

    def __init__(self, *, config: Config):
        self.config = config
        super().__init__(UnitSignature(config=config))      # the contract, sized for this chip

    def elaborate(self, platform):
        m = Module()
        dst, src, length = (operand(self.ins, "RELU", name) for name in ("dst", "src", "len"))
        addr_bits = spad_addr_bits(self.config)
        rd_index = Signal(range(self.config.spad_words + 1))
        wr_index = Signal(range(self.config.spad_words + 1))
        reading, valid, last = Signal(), Signal(), Signal()

        with m.If(self.start):
            m.d.sync += [self.busy.eq(1), rd_index.eq(0), wr_index.eq(0)]
        m.d.comb += [
            reading.eq(self.busy & (rd_index < length)),
            self.spad.rd_en.eq(reading),
            self.spad.rd_addr.eq((src + rd_index)[:addr_bits]),
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


# 4. What the configuration picks up.
EXTENSION = Extension(ops=ops, golden={"RELU": relu}, engines={"RELU": ReluEngine})
