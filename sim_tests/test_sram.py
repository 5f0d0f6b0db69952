"""The scratchpad (ga2_hdl/sram.py): synchronous read, write, the AND-OR port multiplexer."""
import random

import pytest
from amaranth.sim import Simulator

from ga2_hdl import isa
from ga2_hdl.sram import Scratchpad

MASTERS = range(3)                  # the chip has three: DMA, matrix unit, vector unit
DMA, MATRIX, VECTOR = MASTERS


def _scratchpad(**kw):
    return Scratchpad(len(MASTERS), **kw)


def _idle_all(ctx, dut, junk=0):
    """Every master idle, with (possibly non-zero) junk on its address and data lines."""
    for name in MASTERS:
        p = dut.masters[name]
        ctx.set(p.rd_en, 0)
        ctx.set(p.wr_en, 0)
        ctx.set(p.rd_addr, junk & 0xFFF)
        ctx.set(p.wr_addr, (junk >> 12) & 0xFFF)
        ctx.set(p.wr_data, junk)


def test_each_master_reads_and_writes_through_the_mux():
    rng = random.Random(1)
    init = [rng.getrandbits(32) for _ in range(isa.SPAD_WORDS)]
    dut = _scratchpad(init=init)
    model = list(init)

    async def bench(ctx):
        for step in range(600):
            _idle_all(ctx, dut, junk=rng.getrandbits(32))   # idle masters' lines must not leak
            who = dut.masters[rng.choice(MASTERS)]
            op = rng.choice(("read", "write", "both"))
            ra, wa = rng.randrange(isa.SPAD_WORDS), rng.randrange(isa.SPAD_WORDS)
            if op == "both" and ra == wa:
                wa = (wa + 1) % isa.SPAD_WORDS           # never in legal programs
            wd = rng.getrandbits(32)
            if op in ("read", "both"):
                ctx.set(who.rd_en, 1)
                ctx.set(who.rd_addr, ra)
            if op in ("write", "both"):
                ctx.set(who.wr_en, 1)
                ctx.set(who.wr_addr, wa)
                ctx.set(who.wr_data, wd)
            assert not ctx.get(dut.conflict)
            # the debug outputs name the write the memory takes this cycle
            assert ctx.get(dut.write_en) == (op != "read"), f"step {step}: write_en"
            if op != "read":
                assert ctx.get(dut.write_addr) == wa, f"step {step}: write_addr"
            await ctx.tick()
            if op in ("read", "both"):
                for name in MASTERS:                      # rd_data is broadcast
                    assert ctx.get(dut.masters[name].rd_data) == model[ra], f"step {step}: read {ra}"
            if op in ("write", "both"):
                model[wa] = wd
            held = ctx.get(dut.masters[DMA].rd_data)
            _idle_all(ctx, dut, junk=rng.getrandbits(32))
            assert not ctx.get(dut.write_en), f"step {step}: write_en while every master is idle"
            await ctx.tick()
            assert ctx.get(dut.masters[DMA].rd_data) == held, "rd_data must hold while no read is enabled"
        for a in range(0, isa.SPAD_WORDS, 7):
            assert ctx.get(dut.memory.data[a]) == model[a]

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


def test_conflict_flag():
    dut = _scratchpad()

    async def bench(ctx):
        _idle_all(ctx, dut)
        ctx.set(dut.masters[DMA].rd_en, 1)
        assert not ctx.get(dut.conflict)
        ctx.set(dut.masters[VECTOR].rd_en, 1)
        assert ctx.get(dut.conflict)
        ctx.set(dut.masters[VECTOR].rd_en, 0)
        ctx.set(dut.masters[MATRIX].wr_en, 1)
        assert not ctx.get(dut.conflict)
        ctx.set(dut.masters[VECTOR].wr_en, 1)
        assert ctx.get(dut.conflict)

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError):
        Scratchpad(0)
    with pytest.raises(ValueError):
        _scratchpad(depth=5000)
