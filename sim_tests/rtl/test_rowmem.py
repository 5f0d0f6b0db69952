"""The operand row memory (ga2_hdl/rtl/rowmem.py): one-lane writes, all-lane synchronous reads."""
import random

import pytest
from amaranth.sim import Simulator

from ga2_hdl import isa
from ga2_hdl.rtl.rowmem import BankedOperandRowMemory, OperandRowMemory


def test_lane_writes_and_row_reads():
    rng = random.Random(2)
    dut = OperandRowMemory(lanes=4, depth=64, config=isa.BOOK)
    model = [[0] * 4 for _ in range(64)]

    async def bench(ctx):
        # fill in a scattered order, as staging with strides and transposition does
        order = [(lane, k) for lane in range(4) for k in range(64)]
        rng.shuffle(order)
        for lane, k in order:
            v = rng.randrange(-128, 128)
            ctx.set(dut.wr_en, 1)
            ctx.set(dut.wr_lane, lane)
            ctx.set(dut.wr_addr, k)
            ctx.set(dut.wr_data, v)
            await ctx.tick()
            model[k][lane] = v
        ctx.set(dut.wr_en, 0)
        for k in list(range(64)) + [0, 63, 5]:
            ctx.set(dut.rd_en, 1)
            ctx.set(dut.rd_addr, k)
            await ctx.tick()
            assert [ctx.get(dut.rd_data[i]) for i in range(4)] == model[k], f"row {k}"
        # the read data holds while rd_en is low
        ctx.set(dut.rd_en, 0)
        ctx.set(dut.rd_addr, 9)
        await ctx.tick()
        assert [ctx.get(dut.rd_data[i]) for i in range(4)] == model[5]
        # a write without wr_en changes nothing
        ctx.set(dut.wr_data, 1)
        ctx.set(dut.wr_addr, 9)
        await ctx.tick()
        ctx.set(dut.rd_en, 1)
        await ctx.tick()
        assert [ctx.get(dut.rd_data[i]) for i in range(4)] == model[9]

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("banks", [2, 4])
def test_banked_writes_store_only_the_masked_values(banks):
    """BankedOperandRowMemory (the wide matrix unit's operand memory): writes along k (values j to
    one lane, steps wr_k + j) and across lanes (values j to lanes wr_lane + j, one step) store exactly
    the values whose wr_mask bit is set, nothing of the others (not even in another lane of the same
    step: a chunk's masked-off tail is a step beyond K), and nothing without wr_en; every row reads
    back the next cycle, and the read data holds while rd_en is low."""
    lanes, depth = 4, 64
    rng = random.Random(banks)
    dut = BankedOperandRowMemory(lanes, depth, banks)
    model = [[0] * lanes for _ in range(depth)]

    def pack(values):
        return sum((v & 0xFF) << (8 * j) for j, v in enumerate(values))

    async def bench(ctx):
        for step in range(400):
            along = rng.random() < 0.5
            lane = rng.randrange(lanes)
            k = rng.randrange(0, depth, banks) if along else rng.randrange(depth)
            mask = rng.randrange(1 << banks)
            values = [rng.randrange(-128, 128) for _ in range(banks)]
            enabled = rng.random() < 0.9
            ctx.set(dut.wr_en, enabled)
            ctx.set(dut.wr_along_k, along)
            ctx.set(dut.wr_lane, lane)
            ctx.set(dut.wr_k, k)
            ctx.set(dut.wr_mask, mask)
            ctx.set(dut.wr_data.as_value(), pack(values))
            await ctx.tick()
            for j in range(banks):
                if enabled and mask >> j & 1:
                    if along:
                        model[k + j][lane] = values[j]
                    elif lane + j < lanes:
                        model[k][lane + j] = values[j]
            if step % 50 == 49:            # now and then, every row against the model
                ctx.set(dut.wr_en, 0)
                for row in range(depth):
                    ctx.set(dut.rd_en, 1)
                    ctx.set(dut.rd_addr, row)
                    await ctx.tick()
                    got = [ctx.get(dut.rd_data[i]) for i in range(lanes)]
                    assert got == model[row], f"step {step}: row {row}: expected {model[row]}, got {got}"
                # the read data holds while rd_en is low, whatever the address says
                ctx.set(dut.rd_en, 0)
                for row in (0, 1, banks + 1):
                    ctx.set(dut.rd_addr, row)
                    await ctx.tick()
                    assert [ctx.get(dut.rd_data[i]) for i in range(lanes)] == model[depth - 1], \
                        f"step {step}: rd_data changed while rd_en was low"

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
