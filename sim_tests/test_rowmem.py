"""The operand row memory (ga2_hdl/rowmem.py): one-lane writes, all-lane synchronous reads."""
import random

from amaranth.sim import Simulator

from ga2_hdl.rowmem import OperandRowMemory


def test_lane_writes_and_row_reads():
    rng = random.Random(2)
    dut = OperandRowMemory(lanes=4, depth=64)
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
