"""The DMA's contracts: the unit contract, and the transfer itself.

The environment (:class:`DMAEnvironment`) answers every external read request exactly
``config.lat`` cycles later, in order, and the scratchpad every read one cycle later,
with a word that names its address: ``key + address`` (``key`` a free constant), so a
word moved to the wrong place, out of order, twice or not at all shows in the data.

:class:`DMATransfer` asserts, for LD and ST of any legal length (bounded) and any
addresses: the k-th request (external reads for LD, scratchpad reads for ST) asks for
word k of the source region, the k-th write goes to word k of the destination region
and carries source word k, nothing is written outside a write, and when ``done``
comes exactly ``len`` words have been asked for and written.  Wide ports
(``ext_port_words`` > 1): the same per lane of each chunk.
"""
from __future__ import annotations

from amaranth.hdl import Assert, Const, Cover, Module, Signal, Value
from amaranth.hdl._ast import AnyConst

from .. import isa
from ..rtl import decoder
from .unit import UnitContract, lanes

__all__ = ["DMAEnvironment", "DMAContract", "DMATransfer"]


class DMAEnvironment(UnitContract):
    """A unit contract whose memories answer with ``key + address``."""

    def environment(self, m: Module) -> None:
        u = self.unit
        self.key = key = Signal(isa.WORD_BITS)
        if self.formal:
            m.d.comb += key.eq(AnyConst(isa.WORD_BITS))
        w = getattr(u, "words", 1)
        # scratchpad: the word at rd_addr + i, one cycle later
        rd_addr = Signal.like(u.spad.rd_addr)
        m.d.sync += rd_addr.eq(u.spad.rd_addr)
        if w == 1:
            m.d.comb += u.spad.rd_data.eq(key + rd_addr)
        else:
            for i in range(w):
                m.d.comb += u.spad.rd_data[i].eq(key + rd_addr + i)
        # external memory: a request answered config.lat cycles later, in order
        lat = self.config.lat
        valid = [Signal(name=f"req_valid_{k}") for k in range(lat)]
        addr = [Signal.like(u.ext_addr, name=f"req_addr_{k}") for k in range(lat)]
        m.d.sync += [valid[0].eq(u.ext_re), addr[0].eq(u.ext_addr)]
        for k in range(1, lat):
            m.d.sync += [valid[k].eq(valid[k - 1]), addr[k].eq(addr[k - 1])]
        m.d.comb += u.ext_rvalid.eq(valid[-1])
        if w == 1:
            m.d.comb += u.ext_rdata.eq(key + addr[-1])
        else:
            for i in range(w):
                m.d.comb += u.ext_rdata[i].eq(key + addr[-1] + i)


class DMAContract(DMAEnvironment):
    """The unit contract of the DMA (LD and ST)."""

    def __init__(self, unit, config, *, bounds=None, name="contract", formal=True):
        super().__init__(unit, config, ["LD", "ST"], bounds=bounds, name=name, formal=formal)


class DMATransfer(DMAEnvironment):
    """Exactly ``len`` words moved, in order, inside both regions (LD and ST)."""

    def __init__(self, unit, config, *, bounds=None, name="transfer", formal=True):
        super().__init__(unit, config, ["LD", "ST"], bounds=bounds, name=name, formal=formal)

    def properties(self, m: Module) -> None:
        u, held, key = self.unit, self.held, self.key
        w = getattr(u, "words", 1)
        ld = held.op == isa.OP_BY_NAME["LD"].code
        spad_base = decoder.operand(held, "LD", "dst")      # = ST's src
        ext_base = decoder.operand(held, "LD", "src")       # = ST's dst
        length = decoder.operand(held, "LD", "len")
        asked = Signal(len(length) + 1)                     # words asked for so far
        moved = Signal(len(length) + 1)                     # words written so far
        with m.If(self.start):
            m.d.sync += [asked.eq(0), moved.eq(0)]

        def count(enables):
            total = Const(0, 4)
            for en in enables:
                total = total + en
            return total

        ext_re = [(u.ext_re & (u.ext_mask[i] if w > 1 else 1), i) for i in range(w)]
        ext_we = [(u.ext_we & (u.ext_mask[i] if w > 1 else 1), i) for i in range(w)]
        spad_rd, spad_wr = lanes(u.spad, "rd"), lanes(u.spad, "wr")
        reads = [(en, u.ext_addr, off, ext_base) for en, off in ext_re]       # LD: from external memory
        writes = [(en, u.spad.wr_addr, off, spad_base) for en, off in spad_wr]
        st_reads = [(en, u.spad.rd_addr, off, spad_base) for en, off in spad_rd]
        st_writes = [(en, u.ext_addr, off, ext_base) for en, off in ext_we]

        for is_ld, rd, wr, other_rd, other_wr in ((1, reads, writes, st_reads, st_writes),
                                                  (0, st_reads, st_writes, reads, writes)):
            with m.If(self.running & (ld if is_ld else ~ld)):
                # the memories the other direction uses are left alone
                for en, *_ in other_rd + other_wr:
                    m.d[self.checks] += Assert(~en)
                # lanes in order: lane i is word asked + i (a chunk's lanes are its first words)
                for k, (en, addr, off, base) in enumerate(rd):
                    with m.If(en):
                        m.d[self.checks] += Assert((addr + off) == base + asked + k)
                        m.d[self.checks] += Assert(asked + k < length)
                for k, (en, addr, off, base) in enumerate(wr):
                    with m.If(en):
                        m.d[self.checks] += Assert((addr + off) == base + moved + k)
                        m.d[self.checks] += Assert(moved + k < length)
                m.d.sync += [asked.eq(asked + count(e for e, *_ in rd)),
                             moved.eq(moved + count(e for e, *_ in wr))]
                # the data written is the source word (key + its address)
                src_base = ext_base if is_ld else spad_base
                for k, (en, addr, off, base) in enumerate(wr):
                    data = (u.spad.wr_data if is_ld else u.ext_wdata)
                    lane = data if w == 1 else data[off]
                    with m.If(en):
                        m.d[self.checks] += Assert(lane == (key + src_base + moved + k)[:isa.WORD_BITS])
        # lanes of a chunk are used from lane 0 up (no hole): checked by the per-lane addresses above
        with m.If(u.done):
            m.d[self.checks] += [Assert(asked == length), Assert(moved == length)]
        m.d.comb += [Cover(u.done & ld & (length == 2)), Cover(u.done & ~ld & (length == 2))]
