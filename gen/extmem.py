"""The external-memory model of chip_contract.md, as an Amaranth component (simulation only).

At every rising edge: if ``ext_we``, ``mem[ext_addr] <= ext_wdata``; a
pipeline of ``LAT`` stages of (valid, data) advances, with stage 0 taking
(``ext_re``, the word at ``ext_addr`` as it was *before* this edge's write);
the outputs ``ext_rvalid``/``ext_rdata`` are the last stage.  A request
sampled at edge n is therefore seen by the chip at edge n + LAT.

Built from a non-transparent synchronous read port (which *is* stage 0: it
captures the old word at the edge) and LAT-1 registers.  Being hardware, the
model costs the Python testbench nothing per cycle; a testbench loads and
reads the contents through :attr:`ExternalMemoryModel.memory` (``data[i]``).
The Verilog testbenches implement the same behaviour in Verilog.
"""
from amaranth.hdl import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out

from ga2_hdl import isa

__all__ = ["ExternalMemoryModel", "WriteTracker"]


class WriteTracker(wiring.Component):
    """Remembers the lowest and highest address written since ``clear`` (simulation aid).

    A testbench that must read back or wipe a memory after a run only needs
    the words between ``lo`` and ``hi`` (when ``seen``): everything else still
    holds what the testbench itself put there.  One register, updated only on
    writes.

    Ports: ``en``: In(1) and ``addr``: In(addr_bits), the memory's write port;
    ``clear``: In(1), forget (takes effect at the clock edge);
    ``seen``: Out(1), ``lo``, ``hi``: Out(addr_bits).
    """

    def __init__(self, addr_bits: int):
        self.addr_bits = addr_bits
        super().__init__({"en": In(1), "addr": In(addr_bits), "clear": In(1),
                          "seen": Out(1), "lo": Out(addr_bits), "hi": Out(addr_bits)})

    def elaborate(self, platform):
        m = Module()
        state = Signal(data.StructLayout({"seen": 1, "lo": self.addr_bits, "hi": self.addr_bits}))
        with m.If(self.clear):
            m.d.sync += state.seen.eq(0)
        with m.Elif(self.en):
            m.d.sync += [
                state.seen.eq(1),
                state.lo.eq(Mux(~state.seen | (self.addr < state.lo), self.addr, state.lo)),
                state.hi.eq(Mux(~state.seen | (self.addr > state.hi), self.addr, state.hi)),
            ]
        m.d.comb += [self.seen.eq(state.seen), self.lo.eq(state.lo), self.hi.eq(state.hi)]
        return m


class ExternalMemoryModel(wiring.Component):
    """``words`` x 32-bit external memory with read latency ``lat``.

    Ports (named as on the chip; directions from the memory's side):
    ``ext_addr``: In(16), ``ext_re``: In(1), ``ext_we``: In(1),
    ``ext_wdata``: In(32), ``ext_rdata``: Out(32), ``ext_rvalid``: Out(1).

    Attribute ``written``: a :class:`WriteTracker` on the write port (its
    ``clear`` is for the testbench to drive).
    """

    def __init__(self, words: int = isa.EXT_WORDS_DEFAULT, lat: int = isa.LAT, init=()):
        if not 1 <= words <= 1 << 16:
            raise ValueError(f"external memory of {words} words: 1 .. 65536 words are addressable")
        if lat < 1:
            raise ValueError(f"latency {lat}: the model needs at least one stage")
        self.words = words
        self.lat = lat
        self.memory = memory.Memory(shape=unsigned(isa.WORD_BITS), depth=words, init=list(init))
        self.written = WriteTracker(16)
        super().__init__({
            "ext_addr": In(16), "ext_re": In(1), "ext_we": In(1), "ext_wdata": In(isa.WORD_BITS),
            "ext_rdata": Out(isa.WORD_BITS), "ext_rvalid": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.memory = self.memory
        m.submodules.written = self.written
        m.d.comb += [self.written.en.eq(self.ext_we), self.written.addr.eq(self.ext_addr)]
        rd = self.memory.read_port()           # non-transparent: the word before this edge's write
        wr = self.memory.write_port()
        addr_bits = len(rd.addr)
        m.d.comb += [
            rd.addr.eq(self.ext_addr[:addr_bits]),
            rd.en.eq(self.ext_re),             # stage 0 data only matters when it is valid
            wr.addr.eq(self.ext_addr[:addr_bits]),
            wr.data.eq(self.ext_wdata),
            wr.en.eq(self.ext_we),
        ]
        # stage 0 is (a registered ext_re, the read port's data); stages 1 .. LAT-1 are one
        # register (an array of (valid, data)) that shifts by one stage per cycle
        stage = data.StructLayout({"valid": 1, "data": unsigned(isa.WORD_BITS)})
        first_valid = Signal(name="stage0_valid")
        m.d.sync += first_valid.eq(self.ext_re)
        if self.lat == 1:
            m.d.comb += [self.ext_rvalid.eq(first_valid), self.ext_rdata.eq(rd.data)]
            return m
        later = Signal(data.ArrayLayout(stage, self.lat - 1), name="stages")
        entering = Cat(first_valid, rd.data)
        m.d.sync += later.eq(Cat(entering, later.as_value()[:-stage.size]))
        m.d.comb += [self.ext_rvalid.eq(later[-1].valid), self.ext_rdata.eq(later[-1].data)]
        return m
