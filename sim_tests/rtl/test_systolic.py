"""The systolic array (ga2_hdl/rtl/systolic.py) against numpy, including its exact timing."""
import numpy as np
import pytest
from amaranth.sim import Simulator

from ga2_hdl import isa
from ga2_hdl.rtl.systolic import SystolicArray


def wrap32(x: np.ndarray) -> np.ndarray:
    return ((x.astype(np.int64) + (1 << 31)) % (1 << 32)) - (1 << 31)


def stream(size, a, b, *, gap_before=0, trace=None, pause_at=None):
    """Clear, then present step k = (a[:, k], b[k, :]) for k in 0..K-1; return acc after draining.

    ``trace`` (optional dict) receives, per cycle after the first step, the accumulator matrix,
    to check exactly when each PE is final.  ``pause_at`` (a cycle) holds ``run`` low for three
    cycles before that cycle's step, with valid junk on the lanes: every register must freeze.
    """
    M, K = a.shape
    N = b.shape[1]
    dut = SystolicArray(size, config=isa.BOOK)
    out = {}

    async def bench(ctx):
        ctx.set(dut.run, 1)
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        for _ in range(gap_before):                 # junk on the lanes without valid must not count
            ctx.set(dut.valid, 0)
            for i in range(size):
                ctx.set(dut.a[i], -77)
                ctx.set(dut.b[i], 99)
            await ctx.tick()
        cycles = K + 1 + 2 * (size - 1) + 2
        for c in range(cycles):
            if c == pause_at:
                ctx.set(dut.run, 0)
                ctx.set(dut.valid, 1)
                for i in range(size):
                    ctx.set(dut.a[i], 101)
                    ctx.set(dut.b[i], -101)
                for _ in range(3):
                    await ctx.tick()
                ctx.set(dut.run, 1)
            if c < K:
                ctx.set(dut.valid, 1)
                for i in range(size):
                    ctx.set(dut.a[i], int(a[i, c]) if i < M else 0)
                    ctx.set(dut.b[i], int(b[c, i]) if i < N else 0)
            else:
                ctx.set(dut.valid, 0)
                for i in range(size):
                    ctx.set(dut.a[i], 55)               # junk without valid
                    ctx.set(dut.b[i], -13)
            await ctx.tick()
            if trace is not None:
                trace[c] = np.array([[ctx.get(dut.acc[i * size + j]) for j in range(size)] for i in range(size)])
        out["acc"] = np.array([[ctx.get(dut.acc[i * size + j]) for j in range(size)] for i in range(size)])
        # freezing: with run low, nothing changes even with valid data on the lanes
        ctx.set(dut.run, 0)
        ctx.set(dut.valid, 1)
        for _ in range(3):
            await ctx.tick()
        frozen = np.array([[ctx.get(dut.acc[i * size + j]) for j in range(size)] for i in range(size)])
        assert (frozen == out["acc"]).all()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return out["acc"]


@pytest.mark.parametrize("M,K,N", [(4, 64, 4), (1, 1, 1), (3, 5, 2), (4, 7, 1)])
def test_products_match_numpy(M, K, N):
    rng = np.random.default_rng(M * 100 + K * 10 + N)
    a = rng.integers(-127, 128, size=(M, K))
    b = rng.integers(-127, 128, size=(K, N))
    acc = stream(4, a, b, gap_before=2)
    assert (acc[:M, :N] == a @ b).all()


@pytest.mark.parametrize("pause_at", [0, 2, 6])
def test_run_low_freezes_the_skew_and_the_cells_mid_stream(pause_at):
    rng = np.random.default_rng(pause_at)
    a = rng.integers(-128, 128, size=(4, 5))
    b = rng.integers(-128, 128, size=(5, 4))
    assert (stream(4, a, b, pause_at=pause_at) == wrap32(a @ b)).all()


def test_extremes_and_wraparound():
    # the largest product a 64-step MM can build: 64 * (-128 * -128) = 2**20 in every PE
    a = np.full((4, 64), -128)
    b = np.full((64, 4), -128)
    acc = stream(4, a, b)
    assert (acc == a @ b).all() and acc[0, 0] == 64 * 16384
    # mixed signs at the extremes
    a = np.array([[127, -128, 127, -128]])
    b = np.array([[-128], [-128], [127], [127]])
    acc = stream(4, a, b)
    assert acc[0, 0] == (a @ b)[0, 0]


def test_accumulator_wraps_at_32_bits():
    # int8 products over K <= 64 never reach 2**31 (at most 2**20), so the wrap is shown on a
    # narrow accumulator: the same truncating adder, a width the test can overflow.
    dut_bits = 16
    a = np.full((1, 8), 127)
    b = np.full((8, 1), 127)
    dut = SystolicArray(1, acc_bits=dut_bits, config=isa.BOOK)
    got = {}

    async def bench(ctx):
        ctx.set(dut.run, 1)
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        for k in range(8):
            ctx.set(dut.valid, 1)
            ctx.set(dut.a[0], 127)
            ctx.set(dut.b[0], 127)
            await ctx.tick()
        ctx.set(dut.valid, 0)
        for _ in range(SystolicArray.EDGE_LATENCY + SystolicArray.MAC_LATENCY):
            await ctx.tick()
        got["acc"] = ctx.get(dut.acc[0])

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    true = int((a @ b)[0, 0])                      # 129032, beyond int16
    assert got["acc"] == ((true + (1 << 15)) % (1 << 16)) - (1 << 15)


def test_exact_skew_timing():
    """PE(i, j) is final exactly at cycle (K-1) + EDGE_LATENCY + MAC_LATENCY + i + j after the first step, not before."""
    M = N = 4
    K = 6
    rng = np.random.default_rng(3)
    a = rng.integers(1, 100, size=(M, K))          # positive: every step changes every sum
    b = rng.integers(1, 100, size=(K, N))
    trace = {}
    stream(4, a, b, trace=trace)
    c = a @ b
    for i in range(M):
        for j in range(N):
            final_at = (K - 1) + SystolicArray.EDGE_LATENCY + SystolicArray.MAC_LATENCY + i + j   # final after this tick
            assert trace[final_at][i, j] == c[i, j]
            assert trace[final_at - 1][i, j] != c[i, j]
    # the whole 4x4 tile is final after K + 2 + (M-1) + (N-1) ticks: the K+M+N-2 of the MM formula
    # plus the edge register and the product register
    assert (trace[K + 1 + (M - 1) + (N - 1)] == c).all()
    assert not (trace[K + (M - 1) + (N - 1)] == c).all()
