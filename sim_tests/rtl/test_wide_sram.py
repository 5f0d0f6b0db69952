"""The banked scratchpad (ga2_hdl/rtl/sram.py with ``words`` > 1): B consecutive words per access.

Every cycle one master (the others idle with junk on their lines) reads and/or
writes a run of B consecutive words from any address, under random lane masks,
near the top of the address space too (addresses wrap at 4096); a model follows:
a read gives, the next cycle, the words of the lanes its mask selects (and holds
when no read is enabled), a write changes exactly the lanes its mask selects.
``write_en``/``write_addr``/``write_last`` and ``conflict`` are checked too.
"""
import random

import pytest
from amaranth.sim import Simulator

from ga2_hdl import isa
from ga2_hdl.rtl.sram import Scratchpad

TOP = isa.SPAD_WORDS


@pytest.mark.parametrize("words", [pytest.param(2, marks=pytest.mark.slow), 4,
                                   pytest.param(8, marks=pytest.mark.slow)])
def test_banked_reads_and_writes_from_any_address(words):
    rng = random.Random(words)
    init = [rng.getrandbits(32) for _ in range(TOP)]
    dut = Scratchpad(3, init=init, words=words)
    model = list(init)
    assert dut.n_banks == words and dut.memory is None

    def idle(ctx, junk):
        for p in dut.masters:
            ctx.set(p.rd_en, 0)
            ctx.set(p.wr_en, 0)
            ctx.set(p.rd_addr, junk & 0xFFF)
            ctx.set(p.wr_addr, (junk >> 12) & 0xFFF)
            ctx.set(p.rd_mask, junk & ((1 << words) - 1))      # masks without enables: ignored
            ctx.set(p.wr_mask, (junk >> 3) & ((1 << words) - 1))
            for i in range(words):
                ctx.set(p.wr_data[i], junk ^ i)

    async def bench(ctx):
        last_read = None
        for step in range(400):
            idle(ctx, rng.getrandbits(32))
            p = dut.masters[rng.randrange(3)]
            op = rng.choice(("read", "write", "both", "none"))
            near_top = rng.random() < 0.2
            ra = rng.randrange(TOP - words, TOP) if near_top else rng.randrange(TOP)
            wa = rng.randrange(TOP)
            rmask, wmask = rng.getrandbits(words) or 1, rng.getrandbits(words) or 1
            read_addrs = {(ra + i) % TOP for i in range(words) if rmask >> i & 1}
            if op == "both":           # the contract: no word read and written in one cycle
                wmask &= ~sum(1 << i for i in range(words) if (wa + i) % TOP in read_addrs) & ((1 << words) - 1)
                if not wmask:
                    op = "read"
            data = [rng.getrandbits(32) for _ in range(words)]
            if op in ("read", "both"):
                ctx.set(p.rd_en, 1)
                ctx.set(p.rd_addr, ra)
                ctx.set(p.rd_mask, rmask)
            if op in ("write", "both"):
                ctx.set(p.wr_en, 1)
                ctx.set(p.wr_addr, wa)
                ctx.set(p.wr_mask, wmask)
                for i in range(words):
                    ctx.set(p.wr_data[i], data[i])
            assert ctx.get(dut.conflict) == 0
            writing = op in ("write", "both")
            assert ctx.get(dut.write_en) == writing
            if writing:
                assert ctx.get(dut.write_addr) == wa and ctx.get(dut.write_last) == (wa + words - 1) % TOP
            reading = op in ("read", "both")
            want = [model[(ra + i) % TOP] for i in range(words)] if reading else None
            await ctx.tick()
            if writing:
                for i in range(words):
                    if wmask >> i & 1:
                        model[(wa + i) % TOP] = data[i]
            if reading:
                last_read = (want, rmask)
            if last_read is not None:
                got = dut.masters[rng.randrange(3)].rd_data       # broadcast to every master
                want_words, mask = last_read
                for i in range(words):
                    if mask >> i & 1:
                        assert ctx.get(got[i]) == want_words[i], f"step {step}: lane {i}"
        for a in range(TOP):
            assert ctx.get(dut.cell(a)) == model[a], f"word {a}"

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("words", [2, 4, 8])
def test_two_masters_at_once_is_a_conflict(words):
    """(Also builds the banked scratchpad of every width in the default suite: 2, 4 and 8 banks.)"""
    dut = Scratchpad(3, words=words)
    assert dut.n_banks == words and dut.memory is None

    async def bench(ctx):
        ctx.set(dut.masters[0].rd_en, 1)
        ctx.set(dut.masters[2].rd_en, 1)
        assert ctx.get(dut.conflict) == 1
        ctx.set(dut.masters[2].rd_en, 0)
        ctx.set(dut.masters[1].wr_en, 1)
        assert ctx.get(dut.conflict) == 0

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
