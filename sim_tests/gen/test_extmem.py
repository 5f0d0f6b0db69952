"""The external-memory model of docs/chip.md (gen/sim/extmem.py) and the write monitor."""
import random

from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from ga2_hdl import isa
from ga2_hdl.rtl.layout import ExtPort
from gen.sim.extmem import ExternalMemoryModel, WriteMonitor


def test_latency_and_read_before_write():
    """A request sampled at edge n is answered at edge n + LAT, with the word as it was before
    that edge's write; requests pipeline one per cycle; writes land at the edge."""
    port = ExtPort().create()
    model = ExternalMemoryModel(port, words=64, init=list(range(100, 164)), config=isa.BOOK)
    rng = random.Random(4)

    async def bench(ctx):
        mem = list(range(100, 164))
        expected = {}                     # edge index at which an answer must be visible -> data
        for edge in range(60):
            re = rng.random() < 0.6
            we = rng.random() < 0.4
            addr = rng.randrange(64)
            wdata = rng.getrandbits(32)
            ctx.set(port.ext_re, re)
            ctx.set(port.ext_we, we)
            ctx.set(port.ext_addr, addr)
            ctx.set(port.ext_wdata, wdata)
            if re:
                expected[edge + isa.LAT] = mem[addr]       # read before this edge's write
            if we:
                mem[addr] = wdata
            await ctx.tick()
            # after edge `edge + 1` ... the chip samples at the next edge what is visible now
            visible_at = edge + 1
            want = expected.pop(visible_at, None)
            assert ctx.get(port.ext_rvalid) == (want is not None), f"edge {visible_at}"
            if want is not None:
                assert ctx.get(port.ext_rdata) == want
        for a in range(64):
            assert ctx.get(model.memory.data[a]) == mem[a]

    m = Module()
    m.submodules.model = model
    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


def test_write_monitor_blocks():
    en_a, addr_a = Signal(), Signal(16)
    en_b, addr_b = Signal(), Signal(12)
    mon = WriteMonitor({"a": (en_a, addr_a, 8192), "b": (en_b, addr_b, 4096)}, block_words=64)

    async def bench(ctx):
        for en, addr, value in ((en_a, addr_a, 300), (en_a, addr_a, 7), (en_a, addr_a, 5000),
                                (en_a, addr_a, 320), (en_b, addr_b, 4095)):
            ctx.set(en, 1)
            ctx.set(addr, value)
            await ctx.tick()
            ctx.set(en, 0)
        ctx.set(addr_a, 9999)             # no enable: not recorded
        await ctx.tick()
        a, b = ctx.get(mon.blocks["a"]), ctx.get(mon.blocks["b"])
        assert a == (1 << 0) | (1 << 4) | (1 << 5) | (1 << 78)
        assert mon.written_ranges(a, 8192) == [range(0, 64), range(256, 384), range(4992, 5056)]
        assert mon.written_ranges(b, 4096) == [range(4032, 4096)]
        assert mon.written_ranges(a, 300) == [range(0, 64), range(256, 300)]      # clipped
        ctx.set(mon.clear, 1)
        await ctx.tick()
        ctx.set(mon.clear, 0)
        assert ctx.get(mon.blocks["a"]) == 0 and ctx.get(mon.blocks["b"]) == 0

    sim = Simulator(mon)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
