"""The DMA (ga2_hdl/dma.py) with a scratchpad and the contract's external-memory model.

Each LD/ST copies random 32-bit words (all bit positions exercised), the
words around the destination must be untouched, and the measured busy time
must equal the ISA formula (LD len+LAT+1, ST len+2) exactly.
"""
import random

from ga2_hdl import isa
from ga2_hdl.dma import DMA
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
    busy = UnitBench(DMA(), ext_words=EXT_WORDS).run(jobs)
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
    dma = DMA()
    seen = {}
    busy = UnitBench(dma, ext_words=8192).run(jobs, monitor=external_port_monitor(dma, seen))
    assert busy == expect
    assert busy[:2] == [isa.SPAD_WORDS + isa.LAT + 1, isa.SPAD_WORDS + 2]
    for (ins, _, _), w in zip(jobs, busy):
        check_external_requests(ins, seen.get(ins, []), w)
