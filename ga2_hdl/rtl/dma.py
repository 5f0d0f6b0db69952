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

Wide ports (``Config.ext_port_words`` = w > 1).  The DMA moves a *chunk* of w
consecutive words per cycle: chunk j is words j*w .. j*w+w-1 of the transfer
(from any address: the external port and the scratchpad's banks both take w
consecutive words at any start), the last chunk masked to the words below
``len``.  Everything above holds with "word" read as "chunk", so with
R = ceil(len/w) chunks: LD busy R + LAT + 1 cycles, ST busy R + 2.  The counters count
chunks; each chunk's lane mask is ``lane < len - j*w``.  Cost over the book's
DMA: the w-word data paths (no arithmetic on the data), w comparators for the
mask.
"""
from amaranth.hdl import Cat, Module, Mux, Signal, Value
from amaranth.lib import wiring

from .. import isa
from ..config import Config
from .decoder import operand
from .layout import ExtPort, SpadPort, UnitSignature, spad_addr_bits, spad_read_word

__all__ = ["DMA"]

# LD and ST keep the scratchpad address in field a, the external one in b, the length in c;
# the decoder reads them through the ISA's operand names, and these asserts keep the sharing honest.
assert isa.OP_BY_NAME["LD"].operand("dst").field == isa.OP_BY_NAME["ST"].operand("src").field
assert isa.OP_BY_NAME["LD"].operand("src").field == isa.OP_BY_NAME["ST"].operand("dst").field
assert isa.OP_BY_NAME["LD"].operand("len").field == isa.OP_BY_NAME["ST"].operand("len").field


class DMA(wiring.Component):
    """Executes LD and ST.

    Parameters
    ----------
    config : Config
        The chip (required; ``isa.BOOK`` is the book's): the scratchpad address width.  The latency
        ``config.lat`` is the external memory's, not the DMA's: the DMA writes each word
        the cycle its answer arrives, whatever the latency.

    Ports
    -----
    start, ins, done, busy, spad : UnitSignature
        The unit contract (:class:`ga2_hdl.rtl.layout.UnitSignature`); ``spad`` LD writes, ST reads.
    ext_addr, ext_re, ext_we, ext_wdata, ext_rdata, ext_rvalid (, ext_mask) : ExtPort
        The members of :class:`ga2_hdl.rtl.layout.ExtPort`: the chip's external-memory port (see
        the module docstring).
    """

    def __init__(self, *, config: Config):
        self.config = config
        self.words = config.ext_port_words
        super().__init__(UnitSignature(spad=SpadPort(words=self.words, config=config),
                                       config=config, **ExtPort(words=self.words).members))

    def elaborate(self, platform):
        m = Module()
        addr_bits = spad_addr_bits(self.config)
        w = self.words                                 # words per chunk (1: the book's port)
        wide = w > 1
        shift = w.bit_length() - 1
        spad_base = operand(self.ins, "LD", "dst")     # = ST's src
        ext_base = operand(self.ins, "LD", "src")      # = ST's dst
        length = operand(self.ins, "LD", "len")        # = ST's len
        is_load = Signal()                             # latched at start: LD (1) or ST (0)
        requested = Signal(len(length))                # words (chunks) asked for so far
        completed = Signal(len(length))                # words (chunks) written so far
        read_pending = Signal()                        # ST: a scratchpad word arrives this cycle

        word_done = Signal()                           # a word (chunk) is written this cycle (either memory)

        if wide:
            last_chunk = Signal(len(length))           # R - 1, latched at start
            count, last = last_chunk + 1, last_chunk
        else:                                          # one word per chunk: R = len
            count, last = length, length - 1

        more_to_request = self.busy & (requested != count)
        m.d.sync += self.done.eq(0)

        with m.If(self.start):
            m.d.sync += [
                self.busy.eq(1),
                is_load.eq(self.ins.op == isa.OP_BY_NAME["LD"].code),
                requested.eq(0),
                completed.eq(0),
            ]
            if wide:
                m.d.sync += last_chunk.eq((length - 1) >> shift)
        with m.If(more_to_request):
            m.d.sync += requested.eq(requested + 1)
        with m.If(word_done):
            m.d.sync += completed.eq(completed + 1)
            with m.If(completed == last):
                m.d.sync += self.done.eq(1)
        with m.If(self.done):
            m.d.sync += self.busy.eq(0)

        def first_word(chunk):
            """Offset in the transfer of chunk ``chunk``'s first word."""
            return chunk << shift if wide else chunk

        def mask(chunk):
            """The lanes of chunk ``chunk`` that hold words of the transfer (below ``len``)."""
            remaining = Signal(len(length) + 1)
            m.d.comb += remaining.eq(length - first_word(chunk))
            return Cat(*(remaining > i for i in range(w)))

        if wide:
            request_mask, completed_mask = mask(requested), mask(completed)
        # the scratchpad addresses from registers (no adder after the instruction register, on any
        # port width): the base while idle (the start cycle's is the instruction's, held from then
        # on), one chunk further with each read (ST) or write (LD)
        rd_ptr, wr_ptr = Signal(addr_bits, name="spad_rd_ptr"), Signal(addr_bits, name="spad_wr_ptr")
        with m.If(~self.busy):
            m.d.sync += [rd_ptr.eq(spad_base), wr_ptr.eq(spad_base)]
        with m.If(more_to_request):
            m.d.sync += rd_ptr.eq(rd_ptr + w)
        with m.If(word_done):
            m.d.sync += wr_ptr.eq(wr_ptr + w)
        spad_wr_addr, spad_rd_addr = wr_ptr, rd_ptr

        with m.If(is_load):
            # requests to external memory; answers written to the scratchpad as they arrive
            m.d.comb += [
                self.ext_re.eq(more_to_request),
                self.ext_addr.eq(ext_base + first_word(requested)),
                word_done.eq(self.busy & self.ext_rvalid),
                self.spad.wr_en.eq(word_done),
                self.spad.wr_addr.eq(spad_wr_addr),
                self.spad.wr_data.eq(self.ext_rdata),
            ]
            if wide:
                m.d.comb += [self.ext_mask.eq(Mux(more_to_request, request_mask, 0)),
                             self.spad.wr_mask.eq(Mux(word_done, completed_mask, 0))]
        with m.Else():
            # scratchpad reads; each word goes to external memory the cycle it arrives
            m.d.comb += [
                self.spad.rd_en.eq(more_to_request),
                self.spad.rd_addr.eq(spad_rd_addr),
                word_done.eq(read_pending),
                self.ext_we.eq(word_done),
                self.ext_addr.eq(ext_base + first_word(completed)),
            ]
            if wide:
                m.d.comb += [self.spad.rd_mask.eq(Mux(more_to_request, request_mask, 0)),
                             self.ext_mask.eq(Mux(word_done, completed_mask, 0))]
            m.d.sync += read_pending.eq(more_to_request)
        # ST: the word read is the word written.  A submodule of its own, so that in Amaranth's
        # simulator another unit's scratchpad reads wake only this assignment, not the DMA's logic.
        m.submodules.st_data = st_data = Module()
        st_data.d.comb += self.ext_wdata.eq(Mux(is_load, 0, Value.cast(spad_read_word(self.spad))))
        return m
