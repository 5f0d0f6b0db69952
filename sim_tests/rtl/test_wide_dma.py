"""The DMA with a wide external port (``Config.ext_port_words`` = w > 1) on the unit harness.

Every LD/ST moves random words between unaligned addresses, with lengths that
are and are not multiples of w; the words around the destination stay as they
were, the busy time is the configuration's ISA formula (``ceil(len/w) + LAT + 1``,
``ceil(len/w) + 2``) exactly, and the port asks for (or writes) each word of the
transfer exactly once, in order, w words per cycle, and no other word.
"""
import random

import pytest

from ga2_hdl import isa
from ga2_hdl.config import Config
from ga2_hdl.rtl.dma import DMA
from sim_tests.spad_harness import UnitBench

EXT_WORDS = 2048
CONFIGS = [Config(name="w2", ext_port_words=2), Config(name="w4p1", ext_port_words=4),
           Config(name="wide4", spad_ports=4, ext_port_words=4), Config(name="w8lat3", ext_port_words=8, lat=3)]


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
