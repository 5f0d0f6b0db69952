"""The golden model against independent arithmetic and hand-worked timing.

Expected values here are computed in the test itself (numpy, fractions, plain
integer code written separately), never with ``isa``'s arithmetic primitives,
so a wrong primitive cannot hide behind itself.
"""
import math
import random
from fractions import Fraction

import numpy as np
import pytest

from ga2_hdl import golden, isa
from ga2_hdl.isa import ErrorCode, IsaError, make

H = isa.HALT
EXT = isa.EXT_WORDS_DEFAULT


# ----------------------------------------------------------------------------- independent references

def s8(w):
    """Low byte of a 32-bit word as a signed int8 (via numpy's int8 view, not isa)."""
    return int(np.array([w & 0xFF], dtype=np.uint8).view(np.int8)[0])


def s32(w):
    return int(np.array([w & 0xFFFFFFFF], dtype=np.uint32).view(np.int32)[0])


def u32(v):
    return int(np.array([v], dtype=np.int64).astype(np.uint32)[0]) if v < 0 else v & 0xFFFFFFFF


def ref_requant(acc, m, s, relu):
    x = Fraction(acc * m, 2 ** s)
    mag = math.floor(abs(x) + Fraction(1, 2))
    r = mag if x >= 0 else -mag
    return max(0 if relu else -127, min(127, r))


REF_TABLE = [int(Fraction(65535) * Fraction(math.exp(-d / 16)).limit_denominator(10 ** 15) + Fraction(1, 2))
             for d in range(256)]


def ref_softmax(scores):
    top = max(scores)
    e = [REF_TABLE[top - x] for x in scores]
    r = (2 ** 38) // sum(e)
    return [(ei * r + 2 ** 21) // 2 ** 22 for ei in e]


def ref_mm(spad, ins):
    M, K, N = ins.M, ins.K, ins.N
    A = np.array([[s8(spad[ins.A + m * ins.lda + k]) for k in range(K)] for m in range(M)], dtype=np.int64)
    if ins.tb:
        B = np.array([[s8(spad[ins.B + n * ins.ldb + k]) for n in range(N)] for k in range(K)], dtype=np.int64)
    else:
        B = np.array([[s8(spad[ins.B + k * ins.ldb + n]) for n in range(N)] for k in range(K)], dtype=np.int64)
    return A @ B


def run_ok(code, ext=None, config=isa.BOOK, **kw):
    r = golden.run(code + [H], ext, config=config, **kw)
    assert r.error == ErrorCode.OK, r.message
    return r


def words(vals):
    return [v & 0xFFFFFFFF for v in vals]


# ----------------------------------------------------------------------------- data movement and timing

def test_ld_st_copy_and_timing_hand_worked():
    data = [0xDEADBEEF, 1, 2, 0xFFFFFFFF, 5, 6, 7, 8, 9, 10, 11, 0x80000000]
    r = run_ok([make("LD", dst=100, src=3, len=12), make("ST", src=100, dst=500, len=12)], [0, 0, 0] + data)
    assert r.ext[500:512] == data
    assert r.ext[3:15] == data          # the source is untouched
    # LD 12: fetch+issue 2 + 12 + LAT 8 + 1 = 23; ST 12: 2 + 12 + 2 = 16; HALT 2
    assert r.counters == (23 + 16 + 2, 0, 21 + 14, 0, 2)


def test_immediate_halt():
    r = golden.run([H], [7, 8], config=isa.BOOK)
    assert r.counters == (2, 0, 0, 0, 0)
    assert r.ext[:3] == [7, 8, 0] and len(r.ext) == EXT
    assert (r.error, r.error_pc) == (ErrorCode.OK, 0)


def test_halt_pc_is_reported_and_words_after_halt_never_run():
    r = golden.run([make("LD", dst=0, src=0, len=1), H], config=isa.BOOK)
    assert (r.error, r.error_pc) == (ErrorCode.OK, 1)


def test_each_busy_formula_on_hand_worked_programs():
    # one instruction each; totals = 2 (fetch+issue) + busy + 2 (HALT)
    cases = [
        (make("LD", dst=0, src=0, len=12), "dma", 12 + 8 + 1),
        (make("ST", src=0, dst=0, len=7), "dma", 7 + 2),
        (make("MM", dst=1000, A=0, B=500, M=4, K=64, N=4), "matrix", 256 + 256 + 70 + 16 + 7),
        (make("MM", dst=1000, A=0, B=500, M=1, K=1, N=1), "matrix", 1 + 1 + 1 + 1 + 7),
        (make("MM", dst=1000, A=0, B=500, M=3, K=5, N=2), "matrix", 15 + 10 + 8 + 6 + 7),
        (make("RQ", dst=0, src=0, len=10, m=1 << 23, s=1), "vector", 12),
        (make("SM", dst=0, src=0, len=10), "vector", 30 + 41 + 6),
        (make("VADD", dst=0, src1=0, src2=0, len=10), "vector", 22),
        (make("AMAX", dst=0, src=0, len=10), "vector", 13),
    ]
    for ins, unit, busy in cases:
        r = run_ok([ins])
        expect = {"total": 2 + busy + 2, "matrix": 0, "dma": 0, "vector": 0, "instructions": 1}
        expect[unit] = busy
        assert r.counters == tuple(expect.values()), ins


def test_ext_image_padding_and_refusals():
    r = run_ok([], [1, 2, 3], ext_words=16)
    assert r.ext == [1, 2, 3] + [0] * 13
    assert run_ok([], [-1], ext_words=16).ext[0] == 0xFFFFFFFF     # two's complement accepted
    with pytest.raises(IsaError, match="longer than the memory"):
        golden.run([H], [0] * 17, ext_words=16, config=isa.BOOK)
    with pytest.raises(IsaError, match="not a 32-bit value"):
        golden.run([H], [0, 1 << 32], ext_words=16, config=isa.BOOK)
    with pytest.raises(IsaError, match="not a 32-bit value"):
        golden.run([H], [-(1 << 31) - 1], ext_words=16, config=isa.BOOK)


def test_program_refusals():
    with pytest.raises(IsaError, match="does not end with HALT"):
        golden.run([make("LD", dst=0, src=0, len=1)], config=isa.BOOK)
    with pytest.raises(IsaError, match="does not end with HALT"):
        golden.run([H, make("LD", dst=0, src=0, len=1)], config=isa.BOOK)
    with pytest.raises(IsaError, match="empty program"):
        golden.run([], config=isa.BOOK)
    with pytest.raises(IsaError, match="does not fit the instruction memory"):
        golden.run([make("ST", src=0, dst=0, len=1)] * isa.IMEM_WORDS + [H], config=isa.BOOK)
    # exactly IMEM_WORDS is fine
    r = golden.run([make("ST", src=0, dst=0, len=1)] * (isa.IMEM_WORDS - 1) + [H], config=isa.BOOK)
    assert r.counters.instructions == isa.IMEM_WORDS - 1


def test_program_as_raw_words():
    code = [make("LD", dst=0, src=0, len=2).encode(), make("ST", src=0, dst=9, len=2).encode(), 0]
    assert golden.run(code, [4, 5], config=isa.BOOK).ext[9:11] == [4, 5]


def test_keep_spad():
    r = golden.run([make("LD", dst=4094, src=0, len=2), H], [3, 4], keep_spad=True, config=isa.BOOK)
    assert r.spad[4094:] == [3, 4] and len(r.spad) == isa.SPAD_WORDS
    assert golden.run([H], config=isa.BOOK).spad is None


# ----------------------------------------------------------------------------- MM

def _mm_program(a_words, b_words, **mm):
    ext = list(a_words) + list(b_words)
    code = [make("LD", dst=0, src=0, len=len(ext)),
            make("MM", dst=3000, A=0, B=len(a_words), **mm),
            make("ST", src=3000, dst=4000, len=mm["M"] * mm.get("ldc", mm["N"]))]
    return code, ext


@pytest.mark.parametrize("tb", [0, 1])
def test_mm_largest_tile_extremes(tb):
    rng = random.Random(tb)
    a = [rng.choice([-128, 127, -127, rng.randint(-128, 127)]) for _ in range(256)]
    b = [rng.choice([-128, 127, -127, rng.randint(-128, 127)]) for _ in range(256)]
    code, ext = _mm_program(words(a), words(b), M=4, K=64, N=4, tb=tb, ldb=64 if tb else 4)
    r = run_ok(code, ext, keep_spad=True)
    A = np.array(a).reshape(4, 64)
    B = np.array(b).reshape(4, 64).T if tb else np.array(b).reshape(64, 4)
    assert r.ext[4000:4016] == [u32(v) for v in (A @ B).flatten()]
    assert r.counters.matrix == 605


def test_mm_all_minus_128_and_negative_results():
    code, ext = _mm_program(words([-128] * 256), words([-128] * 256), M=4, K=64, N=4)
    r = run_ok(code, ext)
    assert r.ext[4000:4016] == [64 * 128 * 128] * 16
    code, ext = _mm_program(words([-128] * 256), words([127] * 256), M=4, K=64, N=4)
    assert run_ok(code, ext).ext[4000:4016] == [u32(-64 * 128 * 127)] * 16


def test_mm_reads_low_byte_only():
    # 0x12345601 is int8 1; 0xFFFFFF80 is -128; 0x000000FF is -1
    code, ext = _mm_program([0x12345601, 0xFFFFFF80], [0x000000FF, 0xABCDEF02], M=1, K=2, N=1)
    assert run_ok(code, ext).ext[4000] == u32(1 * -1 + -128 * 2)


def test_mm_random_shapes_strides_transposed_against_numpy():
    rng = random.Random(5)
    for trial in range(60):
        M, K, N = rng.randint(1, 4), rng.randint(1, 64), rng.randint(1, 4)
        tb = rng.randint(0, 1)
        lda = rng.choice([K, K + rng.randint(1, 7), rng.randint(0, K)])
        ldb = rng.choice([K if tb else N, rng.randint(0, 12)])
        ldc = N + rng.randint(0, 3)
        spad_data = [rng.getrandbits(32) for _ in range(1024)]
        ins = make("MM", dst=2000, A=rng.randint(0, 100), B=rng.randint(0, 100), M=M, K=K, N=N, tb=tb,
                   lda=lda, ldb=ldb, ldc=ldc)
        assert isa.check(ins)[0] == ErrorCode.OK
        r = run_ok([make("LD", dst=0, src=0, len=1024), ins], spad_data, keep_spad=True)
        C = ref_mm(spad_data, ins)
        for m in range(M):
            for n in range(N):
                assert r.spad[2000 + m * ldc + n] == u32(int(C[m, n])), (trial, m, n)
        assert r.counters.matrix == M * K + K * N + (K + M + N - 2) + M * N + 7


def test_mm_destination_over_its_operands_reads_first():
    # C overwrites A: every product must use the old A.
    a = [1, 2, 3, 4]            # 2x2
    b = [5, 6, 7, 8]            # 2x2
    code = [make("LD", dst=0, src=0, len=8), make("MM", dst=0, A=0, B=4, M=2, K=2, N=2),
            make("ST", src=0, dst=100, len=4)]
    r = run_ok(code, a + b)
    assert r.ext[100:104] == [19, 22, 43, 50]


# ----------------------------------------------------------------------------- RQ

def _rq_results(accs, m, s, relu, inplace=False):
    n = len(accs)
    dst = 0 if inplace else 2000
    code = [make("LD", dst=0, src=0, len=n), make("RQ", dst=dst, src=0, len=n, m=m, s=s, relu=relu),
            make("ST", src=dst, dst=5000, len=n)]
    r = run_ok(code, words(accs))
    assert r.counters.vector == n + 2
    return [s32(w) for w in r.ext[5000:5000 + n]]


def test_rq_rounding_ties_both_signs():
    # m = 2^23, s = 24: acc / 2 exactly; odd accs are ties, rounded away from zero
    accs = [1, -1, 3, -3, 5, -5, 7, -7, 0, 2, -2, 253, -253]
    assert _rq_results(accs, 1 << 23, 24, 0) == [1, -1, 2, -2, 3, -3, 4, -4, 0, 1, -1, 127, -127]
    # m = 3*2^22, s = 25: acc * 3/8; acc = 4 -> 1.5 -> 2; acc = -4 -> -2; acc = 12 -> 4.5 -> 5
    assert _rq_results([4, -4, 12, -12, 1, -1, 3, -3], 3 << 22, 25, 0) == [2, -2, 5, -5, 0, 0, 1, -1]


def test_rq_saturation_never_minus_128_and_relu():
    accs = [0x7FFFFFFF, -0x80000000, 127, -127, 128, -128, 1000, -1000, 0]
    assert _rq_results(accs, 1 << 23, 23, 0) == [127, -127, 127, -127, 127, -127, 127, -127, 0]
    assert _rq_results(accs, 1 << 23, 23, 1) == [127, 0, 127, 0, 127, 0, 127, 0, 0]
    # the biggest product (|acc| * (2^24-1)) with s = 0 and s = 63
    assert _rq_results(accs, (1 << 24) - 1, 0, 0) == [127, -127, 127, -127, 127, -127, 127, -127, 0]
    assert _rq_results(accs, (1 << 24) - 1, 63, 0) == [0] * 9


def test_rq_random_against_fractions_in_place_and_not():
    rng = random.Random(11)
    for trial in range(30):
        n = rng.randint(1, 50)
        accs = [rng.choice([rng.randint(-(1 << 31), (1 << 31) - 1), rng.randint(-5000, 5000)]) for _ in range(n)]
        m = rng.randrange(1 << 24)
        s = rng.randint(0, 63)
        relu = rng.randint(0, 1)
        want = [ref_requant(a, m, s, relu) for a in accs]
        assert _rq_results(accs, m, s, relu, inplace=bool(trial % 2)) == want


# ----------------------------------------------------------------------------- SM

def _sm(scores_words, inplace=False):
    n = len(scores_words)
    dst = 0 if inplace else 3000
    code = [make("LD", dst=0, src=0, len=n), make("SM", dst=dst, src=0, len=n),
            make("ST", src=dst, dst=6000, len=n)]
    r = run_ok(code, scores_words)
    assert r.counters.vector == 3 * n + 47
    return r.ext[6000:6000 + n]


def test_sm_equal_scores():
    for n in (1, 2, 3, 7, 8, 64):
        p = _sm(words([-9] * n))
        assert p == [(65535 * ((2 ** 38) // (65535 * n)) + 2 ** 21) >> 22] * n
        assert abs(sum(p) - 65536) <= n
    assert _sm([5]) == [65536]           # one score: probability 1.0, represented as 65536


def test_sm_range_wider_than_table_and_table_tail():
    scores = [127, -128, -127, 0, 126, -1, 111, 112]
    p = _sm(words(scores))
    assert p == ref_softmax(scores)
    assert p[1] == 0 and p[2] == 0       # d = 255, 254: the table's tail is 0
    assert p[0] > p[4] > p[7] > p[6]


def test_sm_reads_low_byte_and_in_place():
    rng = random.Random(3)
    ws = [rng.getrandbits(32) for _ in range(40)]
    want = ref_softmax([s8(w) for w in ws])
    assert _sm(ws) == want
    assert _sm(ws, inplace=True) == want


def test_sm_random_against_reference():
    rng = random.Random(4)
    for _ in range(20):
        scores = [rng.randint(-128, 127) for _ in range(rng.randint(1, 100))]
        assert _sm(words(scores)) == ref_softmax(scores)


def test_reference_table_matches_book_endpoints():
    # T[0] = 65535 and T[16] = round(65535 / e) = 24109: facts of the table the unit uses
    assert REF_TABLE[0] == 65535 and REF_TABLE[16] == 24109
    assert list(isa.EXP_TABLE) == REF_TABLE


# ----------------------------------------------------------------------------- VADD, AMAX

def test_vadd_saturation_low_bytes_and_identical_operands():
    x = [127, -128, 100, -100, 0x1FF, 0xFFFFFF80, 5]
    y = [127, -128, 100, -100, 0x101, 0x80, -3]
    n = len(x)
    code = [make("LD", dst=0, src=0, len=2 * n), make("VADD", dst=100, src1=0, src2=n, len=n),
            make("VADD", dst=200, src1=0, src2=0, len=n), make("VADD", dst=0, src1=0, src2=n, len=n),
            make("ST", src=100, dst=1000, len=n), make("ST", src=200, dst=1100, len=n),
            make("ST", src=0, dst=1200, len=n)]
    r = run_ok(code, words(x) + words(y))
    want = [max(-127, min(127, s8(a) + s8(b))) for a, b in zip(words(x), words(y))]
    assert [s32(w) for w in r.ext[1000:1000 + n]] == want == [127, -127, 127, -127, 0, -127, 2]
    assert [s32(w) for w in r.ext[1100:1100 + n]] == [max(-127, min(127, 2 * s8(a))) for a in words(x)]
    assert [s32(w) for w in r.ext[1200:1200 + n]] == want      # in place over src1
    assert r.counters.vector == 3 * (2 * n + 2)


def test_amax_first_maximum_signed_32bit():
    vals = [-5, 7, 7, -0x80000000, 7, 0x7FFFFFFF - 1, 0x7FFFFFFF - 1, -1]
    code = [make("LD", dst=0, src=0, len=8), make("AMAX", dst=100, src=0, len=8),
            make("AMAX", dst=101, src=0, len=5), make("AMAX", dst=102, src=3, len=1),
            make("AMAX", dst=7, src=0, len=8),     # dst inside src: reads first
            make("ST", src=100, dst=50, len=3), make("ST", src=7, dst=60, len=1)]
    r = run_ok(code, words(vals))
    assert r.ext[50:53] == [5, 1, 0]
    assert r.ext[60] == 5
    assert r.counters.vector == (8 + 3) + (5 + 3) + (1 + 3) + (8 + 3)


def test_amax_all_negative():
    vals = [-9, -3, -0x80000000, -3]
    r = run_ok([make("LD", dst=0, src=0, len=4), make("AMAX", dst=10, src=0, len=4),
                make("ST", src=10, dst=20, len=1)], words(vals))
    assert r.ext[20] == 1


# ----------------------------------------------------------------------------- long vectors

def test_long_vectors_use_bit_12_of_the_length():
    n = isa.SPAD_WORDS                      # 4096 = 0x1000
    rng = random.Random(9)
    data = [rng.getrandbits(32) for _ in range(n)]
    code = [make("LD", dst=0, src=0, len=n), make("VADD", dst=0, src1=0, src2=0, len=n),
            make("ST", src=0, dst=n, len=n)]
    r = run_ok(code, data)
    assert r.ext[n:2 * n] == [u32(max(-127, min(127, 2 * s8(w)))) for w in data]
    assert r.counters == (2 + n + 9 + 2 + 2 * n + 2 + 2 + n + 2 + 2, 0, n + 9 + n + 2, 2 * n + 2, 3)


# ----------------------------------------------------------------------------- illegal instructions

PRE = [make("LD", dst=0, src=0, len=4), make("ST", src=0, dst=100, len=4)]
POST = [make("ST", src=0, dst=200, len=4)]
PRE_COUNTERS = [(2 + 13) + (2 + 6), 0, 13 + 6, 0, 2]


@pytest.mark.parametrize("bad, code", [
    (isa.Instruction(op=isa.RESERVED_OP_CODES[0]), ErrorCode.BAD_OPCODE),     # no chip defines it
    (isa.Instruction(op=isa.instruction_set(config=isa.BOOK).undefined_codes()[0], a=1), ErrorCode.BAD_OPCODE),
    (make("LD", dst=4093, src=0, len=4), ErrorCode.SPAD_RANGE),
    (make("MM", dst=0, A=4090, B=0, M=2, K=4, N=1), ErrorCode.SPAD_RANGE),
    (make("MM", dst=4094, A=0, B=0, M=1, K=4, N=3), ErrorCode.SPAD_RANGE),
    (make("VADD", dst=0, src1=0, src2=0, len=0xFFFF), ErrorCode.SPAD_RANGE),
    (make("LD", dst=0, src=8190, len=3), ErrorCode.EXT_RANGE),
    (make("ST", src=0, dst=8192, len=1), ErrorCode.EXT_RANGE),
    (make("MM", dst=0, A=0, B=0, M=5, K=1, N=1), ErrorCode.BAD_SHAPE),
    (make("MM", dst=0, A=0, B=0, M=1, K=65, N=1), ErrorCode.BAD_SHAPE),
    (make("MM", dst=0, A=0, B=0, M=1, K=1, N=0), ErrorCode.BAD_SHAPE),
    (make("RQ", dst=0, src=0, len=0, m=1, s=0), ErrorCode.ZERO_LENGTH),
    (make("AMAX", dst=0, src=0, len=0), ErrorCode.ZERO_LENGTH),
    (make("LD", dst=5000, src=9000, len=0), ErrorCode.ZERO_LENGTH),       # zero length wins over range
    (make("MM", dst=4095, A=4095, B=0, M=9, K=1, N=1), ErrorCode.BAD_SHAPE),  # shape wins over range
    (make("VADD", dst=1, src1=0, src2=0, len=4), ErrorCode.OVERLAP),
    (make("VADD", dst=10, src1=0, src2=3, len=4), ErrorCode.OVERLAP),
    (make("SM", dst=3, src=0, len=4), ErrorCode.OVERLAP),
    (make("RQ", dst=0, src=3, len=4, m=1, s=0), ErrorCode.OVERLAP),
    (make("VADD", dst=4094, src1=4000, src2=4000, len=4), ErrorCode.SPAD_RANGE),  # range before overlap
])
def test_illegal_instruction_halts_with_code_and_changes_nothing(bad, code):
    ext = [11, 22, 33, 44]
    r = golden.run(PRE + [bad] + POST + [H], ext, config=isa.BOOK)
    assert (r.error, r.error_pc) == (code, 2), r.message
    assert r.message == isa.check(bad)[1]          # why, once: the address is error_pc
    assert list(r.counters) == [PRE_COUNTERS[0] + 2] + PRE_COUNTERS[1:]
    assert r.ext[100:104] == ext and r.ext[200:204] == [0] * 4    # nothing after the fault ran


def test_identical_regions_are_legal_for_rq_sm_vadd():
    for ins in (make("RQ", dst=7, src=7, len=5, m=1 << 23, s=23), make("SM", dst=7, src=7, len=5),
                make("VADD", dst=7, src1=7, src2=7, len=5), make("VADD", dst=20, src1=7, src2=7, len=5)):
        assert golden.run([ins, H], config=isa.BOOK).error == ErrorCode.OK


def test_ext_words_is_a_parameter():
    # the book's early chapters: 2048 words
    assert golden.run([make("LD", dst=0, src=2047, len=1), H], ext_words=2048, config=isa.BOOK).error == ErrorCode.OK
    r = golden.run([make("LD", dst=0, src=2047, len=2), H], ext_words=2048, config=isa.BOOK)
    assert r.error == ErrorCode.EXT_RANGE and len(r.ext) == 2048


def test_a_run_without_its_chip_is_a_type_error_not_the_books():
    # config is required below the entry points: a forgotten one is an error, never the book's chip
    with pytest.raises(TypeError, match="config"):
        golden.run([isa.HALT])
    with pytest.raises(TypeError, match="config"):
        golden.Machine()
    with pytest.raises(TypeError, match="config"):
        isa.instruction_set()
