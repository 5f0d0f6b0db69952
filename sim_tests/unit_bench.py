"""A bench for one execution unit: the unit, a scratchpad, and (for the DMA) external memory.

Used by the unit tests of the DMA and the matrix unit.  ``UnitBench.run``
drives the unit control contract exactly as the sequencer does (``ins`` held
stable, ``start`` high for one cycle) and measures the busy time W as the
number of cycles from ``start`` to ``done``; it also checks that ``done`` is
a single-cycle pulse, that ``busy`` is high in exactly the cycles t+1 .. t+W,
that the idle unit leaves the scratchpad enables low, and that no two masters
ever drive the scratchpad at once.
"""
from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from ga2_hdl import isa
from ga2_hdl.sram import Scratchpad
from gen.extmem import ExternalMemoryModel


class UnitBench:
    """Runs a list of (instruction, setup) jobs through one unit in one simulation."""

    def __init__(self, unit, *, ext_words: int = 0, spad_init=()):
        self.unit = unit
        self.spad = Scratchpad(1, init=spad_init)
        self.ext = ExternalMemoryModel(unit, ext_words) if ext_words else None
        m = Module()
        m.submodules.unit = unit
        m.submodules.spad = self.spad
        wiring.connect(m, unit=unit.spad, scratchpad=self.spad.masters[0])
        if self.ext is not None:
            m.submodules.ext = self.ext
        self.top = m

    def run(self, jobs, *, timeout: int = 100_000):
        """``jobs``: list of (Instruction, before, after) where before(ctx, bench) prepares memory
        and after(ctx, bench, busy) checks it.  Returns the list of measured busy times."""
        busy_times = []
        unit = self.unit

        async def bench(ctx):
            for ins, before, after in jobs:
                if before:
                    before(ctx, self)
                ctx.set(unit.ins.as_value(), ins.encode())
                ctx.set(unit.start, 1)
                assert not ctx.get(unit.busy), f"{ins}: busy in the start cycle"
                await ctx.tick()
                ctx.set(unit.start, 0)
                w = 1
                while True:
                    assert ctx.get(unit.busy), f"{ins}: busy low in busy cycle t+{w}"
                    assert not ctx.get(self.spad.conflict)
                    if ctx.get(unit.done):
                        break
                    await ctx.tick()
                    w += 1
                    assert w <= timeout, f"{ins}: no done after {timeout} cycles"
                await ctx.tick()
                assert not ctx.get(unit.done), f"{ins}: done is high for more than one cycle"
                assert not ctx.get(unit.busy), f"{ins}: busy still high after done"
                assert not ctx.get(unit.spad.rd_en) and not ctx.get(unit.spad.wr_en), \
                    f"{ins}: the idle unit drives the scratchpad"
                busy_times.append(w)
                if after:
                    after(ctx, self, w)

        sim = Simulator(self.top)
        sim.add_clock(1e-6)
        sim.add_testbench(bench)
        sim.run()
        return busy_times

    # memory helpers (testbench side)
    def spad_write(self, ctx, addr: int, words):
        for i, w in enumerate(words):
            ctx.set(self.spad.memory.data[addr + i], w & isa.WORD_MASK)

    def spad_read(self, ctx, addr: int, n: int) -> list[int]:
        return [ctx.get(self.spad.memory.data[addr + i]) for i in range(n)]

    def ext_write(self, ctx, addr: int, words):
        for i, w in enumerate(words):
            ctx.set(self.ext.memory.data[addr + i], w & isa.WORD_MASK)

    def ext_read(self, ctx, addr: int, n: int) -> list[int]:
        return [ctx.get(self.ext.memory.data[addr + i]) for i in range(n)]
