"""The 40-bit divider (ga2_hdl/rtl/divider.py) in Amaranth's simulator.

Each division is started with a one-cycle pulse; the test counts the cycles to
``done`` (must be exactly CYCLES = 40), checks that ``done`` lasts one cycle,
that the result holds afterwards, and compares with isa.divide_u40 and with
numpy's integer division (numpy uint64 holds 40-bit operands exactly).
"""
import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from ga2_hdl import isa
from ga2_hdl.rtl.divider import Divider

MASK = (1 << isa.DIV_BITS) - 1


CYCLES = isa.DIV_BITS       # the documented start-to-done time


def simulate(pairs, hold_cycles=2, quotient_bits=None):
    """Run every (num, den) through one divider (a short one with ``quotient_bits``); return
    [(quot, rem, cycles_to_done)]."""
    dut = Divider(quotient_bits=quotient_bits)
    assert dut.CYCLES == (CYCLES if quotient_bits is None else quotient_bits + 1)
    out = []

    async def bench(ctx):
        for num, den in pairs:
            ctx.set(dut.numerator, num)
            ctx.set(dut.denominator, den)
            ctx.set(dut.start, 1)
            assert not ctx.get(dut.done)
            await ctx.tick()
            ctx.set(dut.start, 0)
            # the operands are needed in the start cycle only: scramble them
            ctx.set(dut.numerator, num ^ MASK)
            ctx.set(dut.denominator, den ^ 0x5A5A5A5A5A)
            cycles = 1
            while not ctx.get(dut.done):
                assert ctx.get(dut.busy)
                await ctx.tick()
                cycles += 1
                assert cycles <= 100, "divider never finished"
            result = (ctx.get(dut.quotient), ctx.get(dut.remainder))
            assert not ctx.get(dut.busy)
            for _ in range(hold_cycles):          # done is one cycle; the result holds
                await ctx.tick()
                assert not ctx.get(dut.done)
                assert (ctx.get(dut.quotient), ctx.get(dut.remainder)) == result
            out.append(result + (cycles,))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return out


def check(pairs):
    got = simulate(pairs)
    n = np.array([p[0] for p in pairs], dtype=np.uint64)
    d = np.array([p[1] for p in pairs], dtype=np.uint64)
    safe = np.where(d == 0, 1, d)
    np_q = np.where(d == 0, MASK, n // safe)
    np_r = np.where(d == 0, n, n % safe)
    for i, ((num, den), (q, r, cycles)) in enumerate(zip(pairs, got)):
        assert cycles == CYCLES, f"{num}/{den}: done after {cycles} cycles"
        assert (q, r) == isa.divide_u40(num, den), f"{num:#x} / {den:#x}: got q={q:#x} r={r:#x}"
        assert (q, r) == (int(np_q[i]), int(np_r[i]))


def test_zero_divisor():
    pairs = [(0, 0), (1, 0), (123456789, 0), (MASK, 0), (1 << 38, 0)]
    check(pairs)
    for (num, _), (q, r, _) in zip(pairs, simulate(pairs)):
        assert q == MASK and r == num            # the defined result, spelled out


def test_one_and_largest_operands():
    check([(0, 1), (1, 1), (MASK, 1), (MASK, MASK), (MASK, MASK - 1), (MASK - 1, MASK),
           (1 << 39, (1 << 39) + 1), ((1 << 39) + 1, 1 << 39), (5, 7), (7, 5), (MASK, 2), (MASK, 3)])


def test_random_operands():
    rng = random.Random(6)
    pairs = []
    for _ in range(120):
        nb, db = rng.randrange(1, isa.DIV_BITS + 1), rng.randrange(1, isa.DIV_BITS + 1)
        pairs.append((rng.getrandbits(nb), rng.getrandbits(db)))
    check(pairs)


def test_softmax_denominators():
    # r = 2^38 // S with S from one T[0] = 65535 up to a long row of them
    rng = random.Random(60)
    dens = [65535, 65536, 65535 * 2, 65535 * 64, 65535 * 4096, (1 << 22), 3]
    dens += [rng.randrange(65535, 65535 * 4096) for _ in range(40)]
    check([(isa.SOFTMAX_NUMERATOR, s) for s in dens])


def test_back_to_back_start_with_done():
    # a new start in the done cycle of the previous division
    dut = Divider()
    pairs = [(1000, 7), (MASK, 12345), (1 << 38, 65535)]
    got = []

    async def bench(ctx):
        ctx.set(dut.numerator, pairs[0][0]); ctx.set(dut.denominator, pairs[0][1]); ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        i, cycle = 1, 1
        while len(got) < len(pairs):
            if ctx.get(dut.done):
                got.append((ctx.get(dut.quotient), ctx.get(dut.remainder), cycle))
                if i < len(pairs):
                    ctx.set(dut.numerator, pairs[i][0]); ctx.set(dut.denominator, pairs[i][1])
                    ctx.set(dut.start, 1)
                    i += 1
            await ctx.tick()
            ctx.set(dut.start, 0)
            cycle += 1

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert [(q, r) for q, r, _ in got] == [isa.divide_u40(n, d) for n, d in pairs]
    assert [c for _, _, c in got] == [40, 80, 120]


@pytest.mark.slow
def test_random_operands_many():
    rng = random.Random(7)
    pairs = [(rng.getrandbits(rng.randrange(1, 41)), rng.getrandbits(rng.randrange(0, 41)))
             for _ in range(5000)]
    check(pairs)
    check([(isa.SOFTMAX_NUMERATOR, s) for s in range(65535, 65535 * 4096, 65535 * 7 + 13)])


def test_short_division_on_every_softmax_sum_shape():
    """``quotient_bits``: the softmax's short division (Config.short_division) on SM's numerator and sums
    from one T[0] up to 4096 of them, and the generator's short form on random operands whose quotient
    fits: the full division's quotient and remainder, in quotient_bits + 1 cycles."""
    q = isa.SM_QUOTIENT_BITS
    rng = random.Random(61)
    dens = [65535, 65536, 65537, 65535 * 2, 65535 * 4096, (1 << 15) + 1]
    dens += [rng.randrange(65535, 65535 * 4096) for _ in range(30)]
    pairs = [(isa.SOFTMAX_NUMERATOR, d) for d in dens if isa.SOFTMAX_NUMERATOR >> q < d]
    for bits, cases in ((q, pairs), (7, [(n, d) for n, d in ((rng.getrandbits(40), rng.getrandbits(40) | 1)
                                                             for _ in range(200)) if n >> 7 < d][:40])):
        assert len(cases) >= 30
        for (num, den), (quot, rem, cycles) in zip(cases, simulate(cases, quotient_bits=bits)):
            assert cycles == bits + 1, f"{num}/{den}: done after {cycles} cycles"
            assert (quot, rem) == isa.divide_u40(num, den), f"{num:#x} / {den:#x}: got q={quot:#x} r={rem:#x}"


def test_a_short_division_outside_its_precondition_is_wrong():
    """The precondition matters: a quotient wider than quotient_bits comes out wrong (so the short
    division's tests above could fail)."""
    num, den = isa.SOFTMAX_NUMERATOR, 1 << 14          # 2**38 // 2**14 = 2**24: needs 25 bits
    (quot, _, _), = simulate([(num, den)], quotient_bits=isa.SM_QUOTIENT_BITS)
    assert quot != num // den
