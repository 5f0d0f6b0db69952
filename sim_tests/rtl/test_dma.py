"""The DMA (ga2_hdl/rtl/dma.py) with a scratchpad and the contract's external-memory model.

Each LD/ST copies random 32-bit words (all bit positions exercised), the
words around the destination must be untouched, and the measured busy time
must equal the ISA formula (LD len+LAT+1, ST len+2) exactly.
"""
import random

import pytest

from ga2_hdl import isa
from ga2_hdl.config import Config
from ga2_hdl.rtl.dma import DMA
from sim_tests.configs import WIDE4
from sim_tests.spad_harness import UnitBench

EXT_WORDS = 2048


def _ld_job(rng, dst, src, length, expect):
    ins = isa.make("LD", dst=dst, src=src, len=length)
    data = [rng.getrandbits(32) for _ in range(length)]
    guard = [rng.getrandbits(32) for _ in range(2)]

    def before(ctx, b):
        b.ext_write(ctx, src, data)
        if dst > 0:
            b.spad_write(ctx, dst - 1, guard[:1])
        if dst + length < isa.SPAD_WORDS:
            b.spad_write(ctx, dst + length, guard[1:])

    def after(ctx, b, w):
        assert b.spad_read(ctx, dst, length) == data, f"{ins}: scratchpad contents"
        if dst > 0:
            assert b.spad_read(ctx, dst - 1, 1) == guard[:1], f"{ins}: wrote below dst"
        if dst + length < isa.SPAD_WORDS:
            assert b.spad_read(ctx, dst + length, 1) == guard[1:], f"{ins}: wrote past the end"
        expect.append(ins.busy())

    return ins, before, after


def _st_job(rng, src, dst, length, expect):
    ins = isa.make("ST", src=src, dst=dst, len=length)
    data = [rng.getrandbits(32) for _ in range(length)]
    guard = [rng.getrandbits(32) for _ in range(2)]

    def before(ctx, b):
        b.spad_write(ctx, src, data)
        if dst > 0:
            b.ext_write(ctx, dst - 1, guard[:1])
        if dst + length < EXT_WORDS:
            b.ext_write(ctx, dst + length, guard[1:])

    def after(ctx, b, w):
        assert b.ext_read(ctx, dst, length) == data, f"{ins}: external memory contents"
        if dst > 0:
            assert b.ext_read(ctx, dst - 1, 1) == guard[:1], f"{ins}: wrote below dst"
        if dst + length < EXT_WORDS:
            assert b.ext_read(ctx, dst + length, 1) == guard[1:], f"{ins}: wrote past the end"
        expect.append(ins.busy())

    return ins, before, after


def test_ld_st_contents_and_exact_busy_times():
    rng = random.Random(5)
    expect = []
    jobs = []
    shapes = [(1, 0, 0), (2, 5, 7), (3, 100, 2045), (17, 4079, 40), (64, 1000, 1984), (200, 3, 900)]
    for length, spad_at, ext_at in shapes:
        jobs.append(_ld_job(rng, spad_at, ext_at, length, expect))
        jobs.append(_st_job(rng, spad_at, ext_at, length, expect))
    # back-to-back instructions of the same kind, and each kind after the other
    jobs.append(_ld_job(rng, 10, 20, 5, expect))
    jobs.append(_ld_job(rng, 15, 25, 1, expect))
    jobs.append(_st_job(rng, 30, 40, 1, expect))
    jobs.append(_st_job(rng, 31, 41, 9, expect))
    jobs.append(_ld_job(rng, 0, 0, 4, expect))
    busy = UnitBench(DMA(config=isa.BOOK), ext_words=EXT_WORDS).run(jobs)
    assert len(busy) == len(jobs)
    assert busy == expect
    # the formula itself, stated once more in numbers for the first shapes: LD 1 word = 1+8+1, ST = 1+2
    assert busy[:2] == [10, 3]


def external_port_monitor(dma, seen):
    """Record every external-memory request of every instruction: {ins: [(cycle, 're'|'we', addr)]}."""
    def monitor(ctx, ins, cycle):
        for kind in ("re", "we"):
            if ctx.get(getattr(dma, f"ext_{kind}")):
                seen.setdefault(ins, []).append((cycle, kind, ctx.get(dma.ext_addr)))
    return monitor


def check_external_requests(ins, requests, busy):
    """LD asks for each source word once, in order, in t+1 .. t+len; ST writes each destination word
    once, in order, in t+2 .. t+len+1; nothing else goes out on the port."""
    if ins.mnemonic == "LD":
        assert requests == [(1 + i, "re", ins.src + i) for i in range(ins.len)], f"{ins}: external reads"
    else:
        assert requests == [(2 + i, "we", ins.dst + i) for i in range(ins.len)], f"{ins}: external writes"
    assert all(c <= busy for c, _, _ in requests)


def test_whole_scratchpad_load():
    rng = random.Random(9)
    expect = []
    jobs = [_ld_job(rng, 0, 0, isa.SPAD_WORDS, expect), _st_job(rng, 0, 4096, isa.SPAD_WORDS, expect),
            _ld_job(rng, 7, 100, 3, expect), _st_job(rng, 4093, 8189, 3, expect)]
    dma = DMA(config=isa.BOOK)
    seen = {}
    busy = UnitBench(dma, ext_words=8192).run(jobs, monitor=external_port_monitor(dma, seen))
    assert busy == expect
    assert busy[:2] == [isa.SPAD_WORDS + isa.LAT + 1, isa.SPAD_WORDS + 2]
    for (ins, _, _), w in zip(jobs, busy):
        check_external_requests(ins, seen.get(ins, []), w)


#: the longest transfers whose counts need a counter's top bit: 32,769 words one at a time, and
#: 65,535 words (the len field's largest value) two at a time, 32,768 chunks; on a 64K-word scratchpad
LONGEST = [pytest.param(Config(name="spad64k", spad_words=65536, ext_words=65536), 32769, id="one-word-port"),
           pytest.param(Config(name="spad64k_w2", spad_words=65536, ext_words=65536, ext_port_words=2), 65535,
                        id="two-word-port")]


@pytest.mark.slow
@pytest.mark.parametrize("config, length", LONGEST)
def test_corner_longest_ld_counts_past_15_bits(config, length):
    """An LD so long that the DMA's request and completion counts pass 2**15 (the words, or the
    chunks of a wide port): it asks the external memory for each word exactly once, signals done in
    exactly the ISA's busy cycle and copies the words, at both ends and across the 2**15 boundary.
    (~33,000 cycles in Amaranth's simulator, about half a minute: slow, and the RTL mutation run's
    last stage for the DMA, reached only by a mutant every fast check passes.)"""
    from amaranth.hdl import Module, Signal
    from amaranth.lib import wiring
    from amaranth.sim import Simulator

    from ga2_hdl.rtl.sram import Scratchpad
    from gen.sim.extmem import ExternalMemoryModel
    w = config.ext_port_words
    image = [(i * 2654435761 + 12345) & isa.WORD_MASK for i in range(config.ext_words)]
    dma = DMA(config=config)
    spad = Scratchpad(1, config=config, words=w)
    ext = ExternalMemoryModel(dma, config.ext_words, lat=config.lat, init=image, config=config)
    m = Module()
    m.submodules.dma, m.submodules.spad, m.submodules.ext = dma, spad, ext
    wiring.connect(m, dma.spad, spad.masters[0])
    asked, dones = Signal(32), Signal(8)          # words asked for (counted in hardware), done pulses
    with m.If(dma.ext_re):
        m.d.sync += asked.eq(asked + sum(dma.ext_mask[i] for i in range(w)) if w > 1 else asked + 1)
    with m.If(dma.done):
        m.d.sync += dones.eq(dones + 1)
    src, dst = 1, 1                               # unaligned for a wide port; 1 + 65535 ends both memories
    ins = isa.make("LD", dst=dst, src=src, len=length)
    iset = isa.instruction_set(config)
    assert iset.check(ins, config.ext_words)[0] == isa.ErrorCode.OK
    busy = iset.busy(ins)
    assert -(-length // w) > 1 << 15 - (w > 1)    # the counts the test is about

    async def bench(ctx):
        ctx.set(dma.ins.as_value(), ins.encode())
        ctx.set(dma.start, 1)
        await ctx.tick()
        ctx.set(dma.start, 0)
        await ctx.tick().repeat(busy - 1)
        assert (ctx.get(dma.done), ctx.get(dones)) == (1, 0), f"done in cycle t+{busy} (the ISA's), once"
        await ctx.tick().repeat(3)
        assert (ctx.get(asked), ctx.get(dones)) == (length, 1), "every word asked for once; one done"
        for i in (0, 1, 2, 32766, 32767, 32768, length - 2, length - 1):
            assert ctx.get(spad.cell(dst + i)) == image[src + i], f"spad[{dst + i}]"

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


# ==================================================================== wide ports
# The DMA with a wide external port (``Config.ext_port_words`` = w > 1) on the unit harness.
# Every LD/ST moves random words between unaligned addresses, with lengths that
# are and are not multiples of w; the words around the destination stay as they
# were, the busy time is the configuration's ISA formula (``ceil(len/w) + LAT + 1``,
# ``ceil(len/w) + 2``) exactly, and the port asks for (or writes) each word of the
# transfer exactly once, in order, w words per cycle, and no other word.

CONFIGS = [Config(name="w2", ext_port_words=2), Config(name="w4p1", ext_port_words=4),
           WIDE4, Config(name="w8lat3", ext_port_words=8, lat=3)]


def _job(rng, kind, spad_at, ext_at, length, iset, expect):
    ins = isa.make(kind, **({"dst": spad_at, "src": ext_at} if kind == "LD" else {"src": spad_at, "dst": ext_at}),
                   len=length)
    data = [rng.getrandbits(32) for _ in range(length)]
    guard = [rng.getrandbits(32) for _ in range(2)]
    to_spad = kind == "LD"
    at = spad_at if to_spad else ext_at
    size = isa.SPAD_WORDS if to_spad else EXT_WORDS

    def write_dst(ctx, b, addr, words):
        (b.spad_write if to_spad else b.ext_write)(ctx, addr, words)

    def read_dst(ctx, b, addr, n):
        return (b.spad_read if to_spad else b.ext_read)(ctx, addr, n)

    def before(ctx, b):
        (b.ext_write if to_spad else b.spad_write)(ctx, ext_at if to_spad else spad_at, data)
        if at > 0:
            write_dst(ctx, b, at - 1, guard[:1])
        if at + length < size:
            write_dst(ctx, b, at + length, guard[1:])

    def after(ctx, b, w):
        assert read_dst(ctx, b, at, length) == data, f"{ins}: contents"
        if at > 0:
            assert read_dst(ctx, b, at - 1, 1) == guard[:1], f"{ins}: wrote below the destination"
        if at + length < size:
            assert read_dst(ctx, b, at + length, 1) == guard[1:], f"{ins}: wrote past the end"
        expect.append(iset.busy(ins))

    return ins, before, after


def _monitor(dma, seen):
    """Every word the external port asks for or writes: {ins: [(cycle, 're'|'we', address)]}."""
    def monitor(ctx, ins, cycle):
        for kind in ("re", "we"):
            if ctx.get(getattr(dma, f"ext_{kind}")):
                base, mask = ctx.get(dma.ext_addr), ctx.get(dma.ext_mask)
                assert mask, f"{ins}: ext_{kind} with an empty mask in cycle t+{cycle}"
                seen.setdefault(ins, []).extend((cycle, kind, base + i) for i in range(len(dma.ext_mask))
                                                if mask >> i & 1)
            elif kind == "re" and not ctx.get(dma.ext_we):
                assert ctx.get(dma.ext_mask) == 0, f"{ins}: ext_mask set without a request in cycle t+{cycle}"
    return monitor


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_wide_ld_st_contents_requests_and_busy(config):
    w = config.ext_port_words
    iset = isa.instruction_set(config)
    rng = random.Random(w * 31 + config.spad_ports)
    expect, jobs = [], []
    shapes = [(1, 0, 0), (w - 1 or 1, 5, 7), (w, 3, 2), (w + 1, 100, EXT_WORDS - w - 2), (3 * w + 2, isa.SPAD_WORDS - 3 * w - 3, 40),
              (4 * w, 1001, 1983), (130, 4, 901), (17, 4096 - 17, 2048 - 17)]
    for length, spad_at, ext_at in shapes:
        jobs.append(_job(rng, "LD", spad_at, ext_at, length, iset, expect))
        jobs.append(_job(rng, "ST", spad_at, ext_at, length, iset, expect))
    jobs.append(_job(rng, "LD", 10, 21, 5, iset, expect))
    jobs.append(_job(rng, "ST", 31, 41, 9, iset, expect))
    dma = DMA(config=config)
    seen = {}
    busy = UnitBench(dma, ext_words=EXT_WORDS).run(jobs, monitor=_monitor(dma, seen))
    assert busy == expect
    for (ins, _, _), b in zip(jobs, busy):
        chunks = isa.ceil_div(ins.len, w)
        if ins.mnemonic == "LD":
            assert b == chunks + config.lat + 1
            want = [(1 + i // w, "re", ins.src + i) for i in range(ins.len)]
        else:
            assert b == chunks + 2
            want = [(2 + i // w, "we", ins.dst + i) for i in range(ins.len)]
        assert seen.get(ins, []) == want, f"{ins}: the words on the external port"
