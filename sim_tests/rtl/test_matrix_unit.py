"""The matrix unit (ga2_hdl/rtl/matrix_unit.py): MM against numpy, with exact busy times.

The scratchpad starts full of random words (upper bytes are junk the unit must
ignore; low bytes include -128 and 127) and a series of MMs runs on it, each
reading what the previous ones wrote.  A numpy model follows along: after each
MM its C span is compared, after the last the whole scratchpad (so every word
outside C, including the gaps a stride leaves between rows of C, is checked
untouched).
"""
import random

import numpy as np
import pytest

from ga2_hdl import isa
from ga2_hdl.rtl.matrix_unit import MatrixUnit
from sim_tests.spad_harness import UnitBench
from sim_tests.configs import FAST, MATRIX_CONFIGS


def int8_low(words: np.ndarray) -> np.ndarray:
    return ((words & 0xFF) ^ 0x80) - 0x80


def numpy_mm(spad: np.ndarray, ins: isa.Instruction) -> np.ndarray:
    """The MM semantics, independently of the golden model: returns the new scratchpad."""
    M, K, N = ins.M, ins.K, ins.N
    a = np.array([[spad[ins.A + m * ins.lda + k] for k in range(K)] for m in range(M)], dtype=np.int64)
    if ins.tb:
        b = np.array([[spad[ins.B + n * ins.ldb + k] for n in range(N)] for k in range(K)], dtype=np.int64)
    else:
        b = np.array([[spad[ins.B + k * ins.ldb + n] for n in range(N)] for k in range(K)], dtype=np.int64)
    c = int8_low(a) @ int8_low(b)
    out = spad.copy()
    for m in range(M):
        for n in range(N):
            out[ins.dst + m * ins.ldc + n] = int(c[m, n]) & isa.WORD_MASK
    return out


def random_mm(rng: random.Random, M=None, K=None, N=None, tb=None) -> isa.Instruction:
    """A legal MM with random shape, strides (including strides smaller than a row) and places."""
    while True:
        M = M or rng.randint(1, 4)
        K = K or rng.choice([1, 2, 3, rng.randint(1, 64), 64])
        N = N or rng.randint(1, 4)
        tb = rng.randint(0, 1) if tb is None else tb
        lda = rng.choice([K, K + rng.randint(0, 9), rng.randint(0, 80)])
        ldb = rng.choice([K if tb else N, rng.randint(0, 80)])
        ldc = rng.choice([N, N + rng.randint(1, 5), rng.randint(0, 9)])
        fields = dict(M=M, K=K, N=N, tb=tb, lda=lda, ldb=ldb, ldc=ldc)
        fields.update(dst=rng.randrange(isa.SPAD_WORDS), A=rng.randrange(isa.SPAD_WORDS),
                      B=rng.randrange(isa.SPAD_WORDS))
        ins = isa.make("MM", **fields)
        if isa.check(ins)[0] == isa.ErrorCode.OK:
            return ins


def run_jobs(instructions, seed, config=isa.BOOK):
    """Run the MMs one after the other on one scratchpad filled with random words.

    After each MM the words of its C span (and one word either side) are compared with the
    numpy model; after the last one the whole scratchpad is.
    """
    rng = np.random.default_rng(seed)
    spad = rng.integers(0, 1 << 32, size=isa.SPAD_WORDS, dtype=np.int64)
    pick = rng.random(isa.SPAD_WORDS)            # make the int8 extremes common in the low byte
    spad = np.where(pick < 0.1, (spad & ~0xFF) | 0x80, spad)
    spad = np.where((pick >= 0.1) & (pick < 0.2), (spad & ~0xFF) | 0x7F, spad)
    initial = spad.tolist()
    expect_busy = []
    jobs = []
    for j, ins in enumerate(instructions):
        spad = numpy_mm(spad, ins)
        lo = max(ins.dst - 1, 0)
        hi = min(ins.dst + (ins.M - 1) * ins.ldc + ins.N + 1, isa.SPAD_WORDS)

        def after(ctx, b, w, ins=ins, want=spad, lo=lo, hi=hi, last=(j == len(instructions) - 1)):
            if last:
                lo, hi = 0, isa.SPAD_WORDS
            got = np.array(b.spad_read(ctx, lo, hi - lo), dtype=np.int64)
            bad = np.flatnonzero(got != want[lo:hi])
            assert bad.size == 0, (f"{ins}: spad[{lo + bad[0]}] = {got[bad[0]]:#x}, expected "
                                   f"{want[lo + bad[0]]:#x} ({bad.size} words differ)")

        jobs.append((ins, None, after))
        expect_busy.append(isa.instruction_set(config).busy(ins))
    busy = UnitBench(MatrixUnit(config=config), spad_init=initial).run(jobs)
    assert busy == expect_busy
    return busy


def test_largest_tile_both_layouts():
    # 4x64 by 64x4, B plain and transposed, dense and strided
    ins = [
        isa.make("MM", dst=3000, A=0, B=512, M=4, K=64, N=4),
        isa.make("MM", dst=3000, A=0, B=512, M=4, K=64, N=4, tb=1),
        isa.make("MM", dst=4000, A=7, B=900, M=4, K=64, N=4, tb=1, lda=70, ldb=100, ldc=9),
    ]
    busy = run_jobs(ins, seed=1)
    assert busy[0] == 4 * 64 + 64 * 4 + (64 + 4 + 4 - 2) + 16 + 7 == 605


def test_smallest_and_edge_shapes():
    ins = [
        isa.make("MM", dst=0, A=1, B=2, M=1, K=1, N=1),
        isa.make("MM", dst=4095, A=4094, B=4093, M=1, K=1, N=1, tb=1),     # last words of the scratchpad
        isa.make("MM", dst=10, A=20, B=30, M=4, K=1, N=4),
        isa.make("MM", dst=10, A=20, B=30, M=1, K=64, N=1),
        isa.make("MM", dst=10, A=20, B=30, M=4, K=1, N=1, tb=1),
        isa.make("MM", dst=10, A=20, B=30, M=1, K=2, N=4, tb=1, ldb=2),
        isa.make("MM", dst=20, A=20, B=24, M=2, K=3, N=2),                  # C overwrites A
        isa.make("MM", dst=0, A=0, B=0, M=3, K=5, N=2, lda=0, ldb=0, ldc=0),  # zero strides
    ]
    run_jobs(ins, seed=2)


def test_random_shapes_strides_and_transposition():
    rng = random.Random(3)
    ins = [random_mm(rng, K=rng.randint(1, 12)) for _ in range(24)]
    ins.append(random_mm(rng, M=3, K=40, N=2, tb=1))
    run_jobs(ins, seed=3)


def test_exact_busy_time_over_many_shapes():
    """W = M*K + K*N + (K+M+N-2) + M*N + 7 for every M, N and a spread of K (contents checked too)."""
    shapes = [(m, k, n) for m in range(1, 5) for n in range(1, 5) for k in (1, 2, 7)]
    ins = [isa.make("MM", dst=2000, A=0, B=1000, M=m, K=k, N=n, tb=(m + n) % 2) for m, k, n in shapes]
    run_jobs(ins, seed=4)


@pytest.mark.slow
def test_many_random_mms():
    rng = random.Random(44)
    run_jobs([random_mm(rng) for _ in range(400)], seed=44)


# ==================================================================== wide ports
# The matrix unit with a wide scratchpad port (``Config.spad_ports`` = P > 1), against numpy.
# The same checks as sim_tests/rtl/test_matrix_unit.py (C against an independent numpy
# model, every other word untouched, the busy time exactly the configuration's
# ISA formula, the unit contract every cycle), on shapes where K and N are and
# are not multiples of P, unaligned bases, strides smaller than a row, and both
# layouts of B.

CONFIGS = list(MATRIX_CONFIGS)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_wide_mm_shapes_layouts_and_busy(config):
    P = config.spad_ports
    iset = isa.instruction_set(config)
    rng = random.Random(P)
    ins = [
        isa.make("MM", dst=3001, A=3, B=517, M=4, K=64, N=4),
        isa.make("MM", dst=3001, A=3, B=517, M=4, K=64, N=4, tb=1),
        isa.make("MM", dst=4000, A=7, B=900, M=4, K=63, N=3, tb=1, lda=70, ldb=100, ldc=9),
        isa.make("MM", dst=0, A=1, B=2, M=1, K=1, N=1),
        isa.make("MM", dst=4095, A=4094, B=4093, M=1, K=1, N=1, tb=1),
        isa.make("MM", dst=4093, A=4090, B=4091, M=1, K=3, N=3, ldb=1),     # B rows overlap, at the end
        isa.make("MM", dst=20, A=20, B=24, M=2, K=3, N=2),                  # C overwrites A
        isa.make("MM", dst=0, A=0, B=0, M=3, K=5, N=2, lda=0, ldb=0, ldc=0),
        isa.make("MM", dst=11, A=20, B=30, M=3, K=P + 1, N=max(1, min(P - 1, config.array)), ldc=1),
        isa.make("MM", dst=2000, A=1, B=700, M=config.array, K=P + 3, N=config.array),       # the whole array
        isa.make("MM", dst=2000, A=1, B=700, M=config.array, K=2 * P - 1, N=config.array, tb=1, ldb=2 * P + 1),
    ]
    ins += [random_mm(rng, K=rng.randint(1, 12)) for _ in range(10)]
    busy = run_jobs(ins, seed=10 + P, config=config)
    book = isa.instruction_set(isa.BOOK)
    for i, b in zip(ins, busy):
        cd = isa.ceil_div
        b_reads = i.N * cd(i.K, P) if i.tb else i.K * cd(i.N, P)
        stream = i.M + i.N - 1 if config.stream_while_staging and not i.tb else i.K + i.M + i.N - 2
        control = 6 if config.mm_done_with_write else 7
        assert b == i.M * cd(i.K, P) + b_reads + stream + i.M * cd(i.N, P) + control == iset.busy(i)
        assert b <= book.busy(i)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_wide_mm_reads_exactly_its_operands(config):
    """The chunk masks select the words of A and B and no other: the last chunk of a row that is
    not a multiple of P words long is cut at the row's end, for A, B and B transposed."""
    from ga2_hdl.rtl.matrix_unit import MatrixUnit
    from sim_tests.spad_harness import UnitBench, _lanes
    P = config.spad_ports
    ins = [isa.make("MM", dst=3000, A=5, B=700, M=3, K=P + 1, N=2, lda=P + 4, ldb=P + 3),
           isa.make("MM", dst=3000, A=5, B=700, M=2, K=2 * P - 1, N=3, tb=1, lda=2 * P + 1, ldb=2 * P + 2),
           isa.make("MM", dst=3000, A=9, B=400, M=4, K=3, N=P + 1, lda=5, ldb=P + 6)]
    seen: dict[int, set[int]] = {}

    def monitor(ctx, i, cycle):
        spad = unit.spad
        seen.setdefault(id(i), set()).update(_lanes(ctx, spad, spad.rd_en, spad.rd_addr, spad.rd_mask))

    unit = MatrixUnit(config=config)
    UnitBench(unit, spad_init=[0] * isa.SPAD_WORDS).run([(i, None, None) for i in ins], monitor=monitor)
    for i in ins:
        a = {i.A + m * i.lda + k for m in range(i.M) for k in range(i.K)}
        b = ({i.B + n * i.ldb + k for n in range(i.N) for k in range(i.K)} if i.tb else
             {i.B + k * i.ldb + n for k in range(i.K) for n in range(i.N)})
        assert seen[id(i)] == a | b, f"{i}: read {sorted(seen[id(i)] - (a | b))} beyond A and B"


# ==================================================================== streaming while staging
# ``Config.stream_while_staging``: the stream of a B not transposed starts as B's rows land, K - 1
# cycles earlier.  The same checks (C against numpy, every other word untouched, the busy time the
# configuration's formula, the unit contract every cycle), on shapes where a row of B takes one
# read and several (N above P), K from 1 to 64, both layouts.

STREAM_CONFIGS = (isa.BOOK.replace(name="book_sws", stream_while_staging=True), FAST)   # fast streams


@pytest.mark.parametrize("config", STREAM_CONFIGS, ids=lambda c: c.name)
def test_stream_while_staging_values_and_busy(config):
    P, size = config.spad_ports, config.array
    rng = random.Random(17 + P)
    ins = [
        isa.make("MM", dst=3001, A=3, B=517, M=size, K=64, N=size),
        isa.make("MM", dst=3001, A=3, B=517, M=size, K=64, N=size, tb=1),
        isa.make("MM", dst=0, A=1, B=2, M=1, K=1, N=1),
        isa.make("MM", dst=0, A=1, B=2, M=1, K=2, N=size),
        isa.make("MM", dst=20, A=20, B=24, M=2, K=3, N=2),                  # C overwrites A
        isa.make("MM", dst=0, A=0, B=0, M=3, K=5, N=2, lda=0, ldb=0, ldc=0),
        isa.make("MM", dst=11, A=20, B=30, M=1, K=16, N=size, ldb=size + 3),
        isa.make("MM", dst=4093, A=4090, B=4091, M=1, K=3, N=3, ldb=1),     # B rows overlap, at the end
    ]
    ins += [random_mm(rng, K=rng.randint(1, 20), tb=0) for _ in range(8)]
    busy = run_jobs(ins, seed=20 + P, config=config)
    before = isa.instruction_set(config.replace(stream_while_staging=False))
    for i, b in zip(ins, busy):
        assert b == before.busy(i) - (0 if i.tb else i.K - 1)


# ==================================================================== done with the last write
# ``Config.mm_done_with_write``: done in the cycle of the last write, not the cycle after.  Every write
# (its cycle after the start, address, lanes and data) is the one the unit makes without the field, and
# the busy time one cycle less (the unit contract checked every cycle, on the book's array and on fast).

DONE_CONFIGS = (isa.BOOK.replace(name="book_mmdw", mm_done_with_write=True), FAST)   # fast has it


def _writes(config, ins):
    from amaranth.hdl import Value
    from sim_tests.spad_harness import _lanes
    unit = MatrixUnit(config=config)
    trace: dict[int, list] = {}

    def monitor(ctx, i, cycle):
        spad = unit.spad
        if ctx.get(spad.wr_en):
            lanes = sorted(_lanes(ctx, spad, spad.wr_en, spad.wr_addr, getattr(spad, "wr_mask", None)))
            trace.setdefault(id(i), []).append((cycle, lanes, ctx.get(Value.cast(spad.wr_data))))

    rng = random.Random(5)
    busy = UnitBench(unit, spad_init=[rng.getrandbits(32) for _ in range(isa.SPAD_WORDS)]).run(
        [(i, None, None) for i in ins], monitor=monitor)
    return busy, [trace.get(id(i)) for i in ins]


@pytest.mark.parametrize("config", DONE_CONFIGS, ids=lambda c: c.name)
def test_done_with_the_last_write_keeps_every_write_and_saves_a_cycle(config):
    assert config.mm_done_with_write
    size = config.array
    rng = random.Random(41)
    ins = [isa.make("MM", dst=3001, A=3, B=517, M=size, K=9, N=size),
           isa.make("MM", dst=3001, A=3, B=517, M=size, K=9, N=size, tb=1),
           isa.make("MM", dst=0, A=1, B=2, M=1, K=1, N=1),
           isa.make("MM", dst=11, A=20, B=30, M=1, K=16, N=size, ldb=size + 3)]
    ins += [random_mm(rng, K=rng.randint(1, 12)) for _ in range(4)]
    busy, writes = _writes(config, ins)
    busy_before, writes_before = _writes(config.replace(mm_done_with_write=False), ins)
    assert [b + 1 for b in busy] == busy_before
    for i, w, wb in zip(ins, writes, writes_before):
        assert w and w == wb, f"{i}: the writes differ"
    assert run_jobs(ins, seed=43, config=config) == busy
