"""The scratchpad (ga2_hdl/rtl/sram.py): synchronous read, write, the AND-OR port multiplexer."""
import random

import pytest
from amaranth.sim import Simulator

from ga2_hdl import isa
from ga2_hdl.config import PRESETS
from ga2_hdl.rtl.sram import Scratchpad

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


def test_ported_conflict_flag_and_write_outputs():
    """With overlap every master has its own ports; ``conflict`` then flags exactly two writes of one
    address in one cycle (what the sequencer's hazard rule excludes), nothing else: not idle masters,
    not two reads of one address, not a read and a write of one address by different masters, not
    writes of different addresses.  ``write_en``/``write_addr`` name a single writer's write."""
    dut = _scratchpad(config=PRESETS["overlap"])

    async def bench(ctx):
        _idle_all(ctx, dut, junk=0x00500500)       # idle lines holding one address everywhere
        assert not ctx.get(dut.conflict), "idle"
        for name in MASTERS:                       # every master reads address 5
            ctx.set(dut.masters[name].rd_en, 1)
            ctx.set(dut.masters[name].rd_addr, 5)
        assert not ctx.get(dut.conflict), "three reads of one address"
        ctx.set(dut.masters[DMA].wr_en, 1)         # a write of the address the others read
        ctx.set(dut.masters[DMA].wr_addr, 5)
        assert not ctx.get(dut.conflict), "a write and reads of one address"
        ctx.set(dut.masters[VECTOR].wr_en, 1)      # writes of two different addresses
        ctx.set(dut.masters[VECTOR].wr_addr, 6)
        assert not ctx.get(dut.conflict), "writes of different addresses"
        for a, b in ((DMA, VECTOR), (DMA, MATRIX), (MATRIX, VECTOR)):
            _idle_all(ctx, dut)
            for name in (a, b):
                ctx.set(dut.masters[name].wr_en, 1)
                ctx.set(dut.masters[name].wr_addr, 7)
            assert ctx.get(dut.conflict), f"masters {a} and {b} write address 7"
            ctx.set(dut.masters[b].wr_addr, 8)
            assert not ctx.get(dut.conflict), f"masters {a} and {b} write 7 and 8"
        # the debug outputs name the write of a single writer, whatever the idle masters' lines hold
        for name in MASTERS:
            _idle_all(ctx, dut, junk=0x00ABCDEF)
            assert not ctx.get(dut.write_en), "write_en while every master is idle"
            ctx.set(dut.masters[name].wr_en, 1)
            ctx.set(dut.masters[name].wr_addr, 0x246)
            assert (ctx.get(dut.write_en), ctx.get(dut.write_addr)) == (1, 0x246), f"master {name} writes 0x246"

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
