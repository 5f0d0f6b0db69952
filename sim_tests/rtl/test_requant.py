"""The requantizer datapath (ga2_hdl/rtl/requant.py) in Amaranth's simulator.

Every case is checked against ``isa.requantize`` AND against an independent
numpy computation (int64 arithmetic with floor division), plus a few results
worked out by hand.  The unit is pipelined, so one case is fed per cycle and
its result is read LATENCY cycles later.
"""
import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from ga2_hdl import isa
from ga2_hdl.rtl.requant import MANTISSA_BITS, SHIFT_BITS, Requantizer

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
M_MAX = (1 << MANTISSA_BITS) - 1
S_MAX = (1 << SHIFT_BITS) - 1


#: the requantizer's forms: (magnitude_stage, split_multiply), LATENCY 1, 2 and 3 (the book's RQ engine)
STAGES = ((False, False), (True, False), (True, True))
_STAGED = [(False, False)]          # which one simulate() builds (the autouse fixture below sets it)


@pytest.fixture(autouse=True, params=STAGES, ids=("two_stages", "magnitude_stage", "split_multiply"))
def _requantizer_kind(request):
    _STAGED[0] = request.param
    yield


def simulate(cases):
    """Feed (acc, m, s, relu) cases one per cycle; return the q of each."""
    magnitude_stage, split_multiply = _STAGED[0]
    dut = Requantizer(magnitude_stage=magnitude_stage, split_multiply=split_multiply)
    results = []

    async def bench(ctx):
        # The case set before tick j is answered after tick j + LATENCY - 1.
        in_flight = []
        for case in list(cases) + [None] * (dut.LATENCY - 1):
            if case is not None:
                acc, mant, shift, relu = case
                ctx.set(dut.acc, acc)
                ctx.set(dut.mantissa, mant)
                ctx.set(dut.shift, shift)
                ctx.set(dut.relu, relu)
            in_flight.append(case)
            await ctx.tick()
            if len(in_flight) == dut.LATENCY:
                assert in_flight.pop(0) is not None
                results.append(ctx.get(dut.q))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert len(results) == len(cases)
    return results


def numpy_requantize(cases):
    """An independent formulation: floor((|acc|*m + 2^(s-1)) / 2^s) on int64, sign, clip."""
    arr = np.array(cases, dtype=np.int64).reshape(-1, 4)
    acc, mant, shift, relu = arr.T
    mag = np.abs(acc) * mant                                   # < 2**55: exact in int64
    half = np.where(shift > 0, np.left_shift(np.int64(1), np.maximum(shift - 1, 0)), 0)
    rounded = (mag + half) >> shift                            # mag + half < 2**63: no overflow
    signed = np.where(acc < 0, -rounded, rounded)
    lo = np.where(relu == 1, 0, isa.INT8_MIN)
    return np.clip(signed, lo, isa.INT8_MAX).tolist()


def check(cases):
    got = simulate(cases)
    want_isa = [isa.requantize(a, m, s, bool(r)) for a, m, s, r in cases]
    want_np = numpy_requantize(cases)
    assert want_isa == want_np, "isa.requantize and the numpy formulation disagree"
    for case, g, w in zip(cases, got, want_isa):
        assert g == w, f"requant(acc={case[0]}, m={case[1]}, s={case[2]}, relu={case[3]}) = {g}, expected {w}"
    return got


def test_hand_worked_values():
    # (acc, m, s, relu) -> q, computed by hand
    table = {
        (5, 1 << 23, 24, 0): 3,          # 2.5 -> 3 (tie, away from zero)
        (-5, 1 << 23, 24, 0): -3,        # -2.5 -> -3
        (3, 1 << 23, 24, 0): 2,          # 1.5 -> 2
        (-3, 1 << 23, 24, 0): -2,
        (7, 1, 2, 0): 2,                 # 1.75 -> 2
        (-7, 1, 2, 0): -2,
        (5, 1, 2, 0): 1,                 # 1.25 -> 1
        (-5, 1, 2, 0): -1,
        (1000, 1, 0, 0): 127,            # saturation
        (-1000, 1, 0, 0): -127,          # never -128
        (-1000, 1, 0, 1): 0,             # relu
        (-1, 1, 1, 0): -1,               # -0.5 -> -1
        (-1, 1, 1, 1): 0,
        (1, 1, 1, 0): 1,                 # 0.5 -> 1
        (1, 1, 2, 0): 0,                 # 0.25 -> 0
        (-1, 1, 2, 0): 0,                # -0.25 -> 0 (no negative zero)
        (INT32_MIN, M_MAX, S_MAX, 0): 0, # everything shifted out
        (INT32_MIN, 1, 31, 0): -1,       # exactly -1
        (INT32_MIN, 1, 32, 0): -1,       # -0.5 -> -1
        (INT32_MAX, 1, 32, 0): 0,        # just under 0.5
        (100, 0, 0, 0): 0,               # zero mantissa
    }
    cases = list(table)
    got = check(cases)
    assert got == [table[c] for c in cases]


def test_boundary_cross_product():
    accs = [0, 1, -1, 2, -2, 127, -127, 128, -128, 255, -255, 12345, -12345,
            INT32_MAX, INT32_MIN, INT32_MIN + 1]
    mants = [0, 1, 3, 1 << 23, (1 << 23) + 1, M_MAX]
    cases = [(a, mm, s, r) for a in accs for mm in mants for s in range(0, S_MAX + 1, 3) for r in (0, 1)]
    cases += [(a, M_MAX, s, 0) for a in (INT32_MIN, INT32_MAX, -(1 << 20), 1 << 20) for s in range(S_MAX + 1)]
    check(cases)


def test_rounding_ties_both_signs():
    rng = random.Random(31)
    cases = []
    for s in range(1, 32):                       # m = 1: acc = (2k+1) * 2^(s-1) is a tie
        for _ in range(4):
            k = rng.randrange(0, max(1, (INT32_MAX >> s)))
            acc = (2 * k + 1) << (s - 1)
            for sign in (1, -1):
                cases.append((sign * acc, 1, s, 0))
    for s in range(24, 55):                      # m = 2^23: acc * m / 2^s = acc / 2^(s-23)
        acc = (2 * rng.randrange(0, max(1, INT32_MAX >> (s - 23))) + 1) << (s - 24)
        if acc <= INT32_MAX:
            for sign in (1, -1):
                cases.append((sign * acc, 1 << 23, s, 0))
                cases.append((sign * acc, 1 << 23, s, 1))
    for acc, mant, s, _ in cases:
        assert 2 * ((abs(acc) * mant) % (1 << s)) == 1 << s, "not a tie"
    got = check(cases)
    # a tie rounds away from zero: the result's magnitude is the larger neighbour
    for (acc, mant, s, relu), q in zip(cases, got):
        exact_twice = (2 * abs(acc) * mant) >> s          # = 2 * |x| exactly, odd at a tie
        if abs(q) < isa.INT8_MAX and not (relu and acc < 0):
            assert abs(q) == (exact_twice + 1) // 2


def test_saturation_and_relu():
    rng = random.Random(32)
    cases = []
    for _ in range(300):
        s = rng.randrange(0, 40)
        mant = rng.randrange(1 << 23, 1 << 24)
        # |acc * m / 2^s| well above 127
        lo = min(INT32_MAX, ((128 << s) // mant) + 1)
        acc = rng.randrange(lo, INT32_MAX + 1) if lo < INT32_MAX else INT32_MAX
        relu = rng.randrange(2)
        cases += [(acc, mant, s, relu), (-acc, mant, s, relu)]
    got = check(cases)
    for (acc, mant, s, relu), q in zip(cases, got):
        if abs(acc) * mant >= (128 << s):
            assert q == (isa.INT8_MAX if acc > 0 else (0 if relu else isa.INT8_MIN))


def random_cases(rng, n):
    cases = []
    for _ in range(n):
        kind = rng.randrange(4)
        if kind == 0:
            acc = rng.randrange(INT32_MIN, INT32_MAX + 1)
        elif kind == 1:
            acc = rng.randrange(-5000, 5001)
        else:
            acc = rng.randrange(-(1 << rng.randrange(1, 32)), 1 << rng.randrange(1, 32))
        mant = rng.randrange(1 << 23, 1 << 24) if kind != 3 else rng.randrange(0, 1 << 24)
        s = rng.randrange(16, 48) if kind != 3 else rng.randrange(0, S_MAX + 1)
        cases.append((acc, mant, s, rng.randrange(2)))
    return cases


def test_random():
    # 3,000 cases per form here (the formula is proven for every operand by requant.formula and
    # requant.formula_pipelined, sim_tests/gen/test_formal.py); 200,000 in the slow test_random_long
    check(random_cases(random.Random(33), 3_000))


@pytest.mark.slow
def test_random_long():
    check(random_cases(random.Random(34), 200_000))


@pytest.mark.slow
def test_all_shifts_all_small_accumulators():
    cases = [(a, mm, s, r) for a in range(-300, 301) for mm in (1, (1 << 23) + 12345)
             for s in range(S_MAX + 1) for r in (0, 1)]
    check(cases)
