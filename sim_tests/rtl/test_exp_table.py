"""The exp-table ROM (ga2_hdl/rtl/exp_table.py): every entry, read through the
synchronous port, against isa.EXP_TABLE and an independent numpy evaluation."""
import numpy as np
from amaranth.sim import Simulator

from ga2_hdl import isa
from ga2_hdl.rtl.exp_table import ExpTable


def read_rom(addresses):
    dut = ExpTable()
    out = []

    async def bench(ctx):
        for a in addresses:
            ctx.set(dut.addr, a)
            await ctx.tick()
            # LATENCY = 1: the entry for the address of the last cycle
            out.append(ctx.get(dut.data))

    assert ExpTable.LATENCY == 1
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return out


def test_every_entry_in_order_and_reversed():
    n = isa.EXP_TABLE_SIZE
    addresses = list(range(n)) + list(reversed(range(n)))
    got = read_rom(addresses)
    expected_np = np.floor(65535.0 * np.exp(-np.arange(n) / 16.0) + 0.5).astype(np.int64)
    assert list(isa.EXP_TABLE) == expected_np.tolist()
    assert got[:n] == list(isa.EXP_TABLE)
    assert got[n:] == list(reversed(isa.EXP_TABLE))


def test_shape_of_table():
    got = read_rom([0, 1, 16, 32, 255])
    # T[0] = 65535 (one whole), T[16] = round(65535/e), the tail is 0
    assert got[0] == 65535
    assert got[2] == round(65535 / np.e)
    assert got[3] == round(65535 / np.e ** 2)
    assert got[4] == 0
    assert all(a >= b for a, b in zip(isa.EXP_TABLE, isa.EXP_TABLE[1:]))
