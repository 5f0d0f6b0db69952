"""The DMA engine: LD (external memory -> scratchpad) and ST (scratchpad -> external memory).

External-memory port (docs/chip.md): one address, a read request
``ext_re``, a write ``ext_we``/``ext_wdata``, and the answer
``ext_rvalid``/``ext_rdata`` which arrives ``LAT`` cycles after the request
(requests are pipelined: one per cycle, answers in order, one per cycle).

Where the busy times come from (start in cycle t, done in cycle t+W):

LD, W = len + LAT + 1
    Requests go out in cycles t+1 .. t+len, one word per cycle.  The answer to
    the request of cycle c is on ``ext_rvalid`` in cycle c+LAT and is written
    into the scratchpad in that same cycle, so the writes occupy
    t+1+LAT .. t+len+LAT.  ``done`` is a register set by the last write:
    cycle t+len+LAT+1.  The latency is paid once, not per word.

ST, W = len + 2
    Scratchpad reads go out in cycles t+1 .. t+len; the scratchpad answers one
    cycle later, and each word is written to external memory in the cycle it
    arrives: t+2 .. t+len+1.  ``done`` follows the last write: t+len+2.

Both directions share one request counter (words asked for) and one
completion counter (words written); the scratchpad and external addresses
come from the instruction, which the sequencer holds stable while the unit
is busy.
"""
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from . import isa
from .decoder import operand
from .layout import INSTRUCTION, SPAD_ADDR_BITS, SpadPort

__all__ = ["DMA", "EXT_ADDR_BITS", "EXT_PORT_MEMBERS"]

#: Width of the external-memory address port (ext_words <= 65536).
EXT_ADDR_BITS = 16

#: The external-memory master port (flat names: they are the chip's top-level ports too,
#: which the chip passes through from the DMA unchanged).
EXT_PORT_MEMBERS = {
    "ext_addr": Out(EXT_ADDR_BITS),
    "ext_re": Out(1),
    "ext_we": Out(1),
    "ext_wdata": Out(isa.WORD_BITS),
    "ext_rdata": In(isa.WORD_BITS),
    "ext_rvalid": In(1),
}

# LD and ST keep the scratchpad address in field a, the external one in b, the length in c;
# the decoder reads them through the ISA's operand names, and these asserts keep the sharing honest.
assert isa.OP_BY_NAME["LD"].operand("dst").field == isa.OP_BY_NAME["ST"].operand("src").field
assert isa.OP_BY_NAME["LD"].operand("src").field == isa.OP_BY_NAME["ST"].operand("dst").field
assert isa.OP_BY_NAME["LD"].operand("len").field == isa.OP_BY_NAME["ST"].operand("len").field


class DMA(wiring.Component):
    """Executes LD and ST (unit control contract: start/done/ins/spad).

    Ports
    -----
    ``start``: In(1), one-cycle pulse in the issue cycle of an LD or ST.
    ``ins``: In(INSTRUCTION), held stable from ``start`` until ``done``.
    ``done``: Out(1), one-cycle pulse ``ins.busy()`` cycles after ``start``.
    ``spad``: Out(SpadPort()), the scratchpad master port (LD writes, ST reads).
    ``ext_addr``: Out(16), ``ext_re``: Out(1), ``ext_we``: Out(1),
    ``ext_wdata``: Out(32), ``ext_rdata``: In(32), ``ext_rvalid``: In(1): the
    external-memory master port of the chip (see module docstring).
    ``busy``: Out(1), high from the cycle after ``start`` until the cycle
    before ``done`` (the unit drives its ports only while busy).
    """

    def __init__(self):
        super().__init__({
            "start": In(1),
            "ins": In(INSTRUCTION),
            "done": Out(1),
            "busy": Out(1),
            "spad": Out(SpadPort()),
            **EXT_PORT_MEMBERS,
        })

    def elaborate(self, platform):
        m = Module()
        spad_base = operand(self.ins, "LD", "dst")     # = ST's src
        ext_base = operand(self.ins, "LD", "src")      # = ST's dst
        length = operand(self.ins, "LD", "len")        # = ST's len
        is_load = Signal()                             # latched at start: LD (1) or ST (0)
        requested = Signal(len(length))                # words asked for so far
        completed = Signal(len(length))                # words written so far
        read_pending = Signal()                        # ST: a scratchpad word arrives this cycle

        more_to_request = self.busy & (requested != length)
        last = completed == length - 1
        m.d.sync += self.done.eq(0)

        with m.If(self.start):
            m.d.sync += [
                self.busy.eq(1),
                is_load.eq(self.ins.op == isa.OP_BY_NAME["LD"].code),
                requested.eq(0),
                completed.eq(0),
            ]

        with m.If(is_load):
            # requests to external memory; answers written to the scratchpad as they arrive
            arriving = self.busy & self.ext_rvalid
            m.d.comb += [
                self.ext_re.eq(more_to_request),
                self.ext_addr.eq(ext_base + requested),
                self.spad.wr_en.eq(arriving),
                self.spad.wr_addr.eq((spad_base + completed)[:SPAD_ADDR_BITS]),
                self.spad.wr_data.eq(self.ext_rdata),
            ]
            with m.If(more_to_request):
                m.d.sync += requested.eq(requested + 1)
            with m.If(arriving):
                m.d.sync += completed.eq(completed + 1)
                with m.If(last):
                    m.d.sync += [self.busy.eq(0), self.done.eq(1)]
        with m.Else():
            # scratchpad reads; each word goes to external memory the cycle it arrives
            m.d.comb += [
                self.spad.rd_en.eq(more_to_request),
                self.spad.rd_addr.eq((spad_base + requested)[:SPAD_ADDR_BITS]),
                self.ext_we.eq(read_pending),
                self.ext_addr.eq(ext_base + completed),
                self.ext_wdata.eq(self.spad.rd_data),
            ]
            m.d.sync += read_pending.eq(more_to_request)
            with m.If(more_to_request):
                m.d.sync += requested.eq(requested + 1)
            with m.If(read_pending):
                m.d.sync += completed.eq(completed + 1)
                with m.If(last):
                    m.d.sync += [self.busy.eq(0), self.done.eq(1)]
        return m
