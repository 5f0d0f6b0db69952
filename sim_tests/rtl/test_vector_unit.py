"""The vector unit (ga2_hdl/rtl/vector_unit.py) on a real scratchpad, in Amaranth's simulator.

Every instruction's effect on the whole scratchpad is compared with a reference
built from isa.py's primitives and with an independent numpy computation; every
busy time is measured from start to done and must equal the ISA formula.
"""
import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from ga2_hdl import isa
from ga2_hdl.rtl.vector_unit import VectorUnit
from sim_tests.spad_harness import SpadHarness, run_program
from sim_tests.configs import SPAD_PORT_CONFIGS

MASK = isa.WORD_MASK
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


# ---------------------------------------------------------------- references

def isa_effect(mem, ins):
    """Apply one vector instruction to ``mem`` with isa.py's primitives (reads all, then writes)."""
    name = ins.mnemonic
    if name == "RQ":
        out = [isa.requantize(isa.int32_of(w), ins.m, ins.s, bool(ins.relu)) for w in mem[ins.src:ins.src + ins.len]]
    elif name == "SM":
        out = isa.softmax_q16(isa.int8_of(w) for w in mem[ins.src:ins.src + ins.len])
    elif name == "VADD":
        out = [isa.clamp(isa.int8_of(a) + isa.int8_of(b), isa.INT8_MIN, isa.INT8_MAX)
               for a, b in zip(mem[ins.src1:ins.src1 + ins.len], mem[ins.src2:ins.src2 + ins.len])]
    elif name == "AMAX":
        vals = [isa.int32_of(w) for w in mem[ins.src:ins.src + ins.len]]
        out = [vals.index(max(vals))]
    else:
        raise ValueError(name)
    mem[ins.dst:ins.dst + len(out)] = [isa.word_of(v) for v in out]


def numpy_effect(mem, ins):
    """The same, written independently on numpy int64 arrays."""
    a = np.array(mem, dtype=np.int64)
    s32 = np.where(a >= 1 << 31, a - (1 << 32), a)
    s8 = (a & 0xFF) - ((a & 0x80) << 1)
    name = ins.mnemonic
    if name == "RQ":
        x = s32[ins.src:ins.src + ins.len]
        mag = np.abs(x) * ins.m
        half = (1 << (ins.s - 1)) if ins.s else 0
        q = np.where(x < 0, -((mag + half) >> ins.s), (mag + half) >> ins.s)
        out = np.clip(q, 0 if ins.relu else -127, 127)
    elif name == "VADD":
        out = np.clip(s8[ins.src1:ins.src1 + ins.len] + s8[ins.src2:ins.src2 + ins.len], -127, 127)
    elif name == "AMAX":
        out = np.array([int(np.argmax(s32[ins.src:ins.src + ins.len]))])    # argmax: first maximum
    elif name == "SM":
        table = np.floor(65535.0 * np.exp(-np.arange(256) / 16.0) + 0.5).astype(np.int64)
        x = s8[ins.src:ins.src + ins.len]
        e = table[x.max() - x]
        out = (e * ((1 << 38) // int(e.sum())) + (1 << 21)) >> 22
    a[ins.dst:ins.dst + len(out)] = out & MASK
    mem[:] = a.tolist()


def run_and_check(image, program, config=isa.BOOK):
    image = list(image) + [0] * (isa.SPAD_WORDS - len(image))
    for ins in program:
        assert isa.check(ins)[0] == isa.ErrorCode.OK, f"test program is illegal: {ins}: {isa.check(ins)[1]}"
    expected, expected_np = list(image), list(image)
    for ins in program:
        isa_effect(expected, ins)
        numpy_effect(expected_np, ins)
    assert expected == expected_np, "isa reference and numpy reference disagree"
    reads = []

    def count_reads(ctx, harness, ins, cycle):
        if cycle == 0:
            reads.append(0)
        spad = harness.unit.spad
        # words read: one per read on a one-word port, the read mask's lanes on a wide one
        reads[-1] += ctx.get(spad.rd_en) * (bin(ctx.get(spad.rd_mask)).count("1") if spad.signature.wide else 1)

    iset = isa.instruction_set(config)
    final, busy = run_program(lambda: VectorUnit(config=config), image, program, monitor=count_reads)
    for ins, w, n in zip(program, busy, reads):
        assert w == iset.busy(ins), f"{ins}: busy {w} cycles, the ISA says {iset.busy(ins)}"
        # every source word is read once per pass, and nothing else: RQ and AMAX one pass, VADD two
        # operands, SM three passes
        want = {"RQ": 1, "AMAX": 1, "VADD": 2, "SM": 3}[ins.mnemonic] * ins.len
        assert n == want, f"{ins}: {n} scratchpad reads, expected {want}"
    for addr, (got, want) in enumerate(zip(final, expected)):
        assert got == want, f"scratchpad[{addr}] = {got:#x}, expected {want:#x}"
    return final, busy


def words(values):
    return [isa.word_of(v) for v in values]


# ---------------------------------------------------------------- RQ

def test_rq_lengths_busy_times_and_relu():
    rng = random.Random(71)
    accs = [0, 1, -1, 5, -5, 127, -128, 1000, -1000, INT32_MAX, INT32_MIN] + \
           [rng.randrange(INT32_MIN, INT32_MAX + 1) for _ in range(30)] + [rng.randrange(-5000, 5000) for _ in range(30)]
    image = words(accs)
    n = len(accs)
    program = [
        isa.make("RQ", dst=500, src=0, len=1, m=1 << 23, s=24),
        isa.make("RQ", dst=600, src=0, len=2, m=(1 << 23) + 12345, s=20),
        isa.make("RQ", dst=700, src=0, len=n, m=rng.randrange(1 << 23, 1 << 24), s=30),
        isa.make("RQ", dst=800, src=0, len=n, m=rng.randrange(1 << 23, 1 << 24), s=40, relu=1),
        isa.make("RQ", dst=900, src=0, len=n, m=1 << 23, s=23),        # saturates most
        isa.make("RQ", dst=1000, src=0, len=n, m=(1 << 24) - 1, s=63),  # shifts everything out
        isa.make("RQ", dst=1100, src=0, len=n, m=1, s=0, relu=1),
    ]
    _, busy = run_and_check(image, program)
    assert busy[:3] == [3, 4, n + 2]


def test_rq_in_place():
    rng = random.Random(72)
    accs = [rng.randrange(-(1 << 20), 1 << 20) for _ in range(25)]
    image = [0xCAFEF00D] * 10 + words(accs) + [0xCAFEF00D] * 10
    run_and_check(image, [isa.make("RQ", dst=10, src=10, len=25, m=(1 << 23) + 99, s=35),
                          isa.make("RQ", dst=10, src=10, len=25, m=1 << 23, s=23, relu=1)])


# ---------------------------------------------------------------- VADD

def test_vadd_saturation_negative_and_busy_times():
    a = [127, -127, 100, -100, 0, 1, -1, 127, -128, 64, -64, 5]
    b = [127, -127, 100, -100, 0, -1, 1, -127, -128, 63, -63, -10]
    image = words(a) + words(b)
    n = len(a)
    program = [isa.make("VADD", dst=100, src1=0, src2=n, len=n),
               isa.make("VADD", dst=200, src1=0, src2=n, len=1),
               isa.make("VADD", dst=300, src1=3, src2=n + 3, len=2)]
    final, busy = run_and_check(image, program)
    assert final[100:100 + n] == words([127, -127, 127, -127, 0, 0, 0, 0, -127, 127, -127, -5])
    assert busy == [2 * n + 2, 4, 6]


def test_vadd_uses_the_low_byte():
    image = [0x12345605, 0xFFFFFF80, 0x7F, 0xABCDEF01] + [0x000001FF, 0x80000001, 0x7F, 0xFFFFFFFF]
    final, _ = run_and_check(image, [isa.make("VADD", dst=10, src1=0, src2=4, len=4)])
    assert final[10:14] == words([4, -127, 127, 0])


def test_vadd_in_place_every_way():
    rng = random.Random(73)
    n = 21
    a = words(rng.randrange(-128, 128) for _ in range(n))
    b = words(rng.randrange(-128, 128) for _ in range(n))
    image = a + b
    run_and_check(image, [isa.make("VADD", dst=0, src1=0, src2=n, len=n),      # dst = src1
                          isa.make("VADD", dst=n, src1=0, src2=n, len=n),      # dst = src2
                          isa.make("VADD", dst=0, src1=0, src2=0, len=n),      # all three
                          isa.make("VADD", dst=500, src1=n, src2=n, len=n)])   # src1 = src2


# ---------------------------------------------------------------- AMAX

def test_amax_first_maximum_ties_negatives():
    cases = [
        [7],                                             # len 1
        [3, 9, 9, 1],                                    # tie: first wins
        [9, 3, 9, 9],
        [-5, -3, -3, -8],                                # all negative
        [INT32_MIN] * 6,                                 # all the smallest int32: index 0
        [INT32_MIN, INT32_MIN, INT32_MIN + 1, INT32_MIN + 1],
        [INT32_MAX, 0, INT32_MAX],
        [0] * 9 + [1],                                   # maximum last
        [-1, 0xFFFF, -(1 << 30), 65535],                 # sign matters: 0xFFFF > -1
    ]
    image, program = [], []
    for k, vals in enumerate(cases):
        program.append(isa.make("AMAX", dst=3000 + k, src=len(image), len=len(vals)))
        image += words(vals)
    final, busy = run_and_check(image, program)
    assert final[3000:3000 + len(cases)] == [0, 1, 0, 1, 0, 2, 0, 9, 1]
    assert busy == [len(v) + 3 for v in cases]


def test_amax_destination_inside_source_and_random():
    rng = random.Random(74)
    vals = [rng.randrange(-100, 100) for _ in range(40)]
    vals[rng.randrange(40)] = 100
    vals[rng.randrange(40)] = 100
    image = words(vals)
    run_and_check(image, [isa.make("AMAX", dst=5, src=0, len=40),     # overwrites one of its inputs
                          isa.make("AMAX", dst=0, src=0, len=40)])


# ---------------------------------------------------------------- SM through the unit, and a mix

def test_mixed_program_busy_times_and_quiet_idle():
    rng = random.Random(75)
    image = words(rng.randrange(-128, 128) for _ in range(64)) + words(rng.randrange(-(1 << 16), 1 << 16) for _ in range(64))
    program = [
        isa.make("SM", dst=1000, src=0, len=1),
        isa.make("SM", dst=0, src=0, len=17),
        isa.make("RQ", dst=200, src=64, len=64, m=(1 << 23) + 3, s=28),
        isa.make("VADD", dst=300, src1=200, src2=20, len=30),
        isa.make("AMAX", dst=400, src=64, len=64),
        isa.make("SM", dst=2000, src=200, len=64),
        isa.make("RQ", dst=64, src=64, len=1, m=1 << 23, s=23),
        isa.make("AMAX", dst=401, src=300, len=1),
        isa.make("VADD", dst=300, src1=300, src2=300, len=30),
    ]
    _, busy = run_and_check(image, program)
    assert busy == [50, 98, 66, 62, 67, 239, 3, 4, 62]


def test_start_for_another_unit_is_ignored():
    harness = SpadHarness(VectorUnit(config=isa.BOOK))
    seen = []

    async def bench(ctx):
        for ins in (isa.make("LD", dst=0, src=0, len=5), isa.make("MM", dst=0, A=0, B=0, M=2, K=2, N=2),
                    isa.HALT):
            ctx.set(harness.ins.as_value(), ins.encode())
            ctx.set(harness.start, 1)
            await ctx.tick()
            ctx.set(harness.start, 0)
            for _ in range(60):
                spad = harness.unit.spad
                seen.append((ctx.get(harness.done), ctx.get(spad.rd_en), ctx.get(spad.wr_en)))
                await ctx.tick()

    sim = Simulator(harness)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert not any(any(s) for s in seen)


def random_vector_programs(seed, count):
    """Random legal programs of RQ/SM/VADD/AMAX over a random scratchpad, identical regions included."""
    rng = random.Random(seed)
    for _ in range(count):
        image = [rng.getrandbits(32) if rng.random() < 0.5 else isa.word_of(rng.randrange(-128, 128))
                 for _ in range(isa.SPAD_WORDS)]
        program = []
        while len(program) < 12:
            op = rng.choice(["RQ", "SM", "VADD", "AMAX"])
            n = rng.choice([1, 2, 3, rng.randrange(1, 200)])
            a, b, c = (rng.randrange(0, isa.SPAD_WORDS - n + 1) for _ in range(3))
            if op == "RQ":
                ins = isa.make("RQ", dst=rng.choice([a, b]), src=b, len=n, m=rng.randrange(1 << 24),
                               s=rng.randrange(64), relu=rng.randrange(2))
            elif op == "SM":
                ins = isa.make("SM", dst=rng.choice([a, b]), src=b, len=n)
            elif op == "VADD":
                ins = isa.make("VADD", dst=rng.choice([a, b, c]), src1=b, src2=rng.choice([b, c]), len=n)
            else:
                ins = isa.make("AMAX", dst=a, src=b, len=n)
            if isa.check(ins)[0] == isa.ErrorCode.OK:
                program.append(ins)
        yield image, program


def test_random_vector_programs():
    for image, program in random_vector_programs(76, 2):
        run_and_check(image, program)


@pytest.mark.slow
def test_random_vector_programs_many():
    for image, program in random_vector_programs(77, 40):
        run_and_check(image, program)


def test_amax_over_the_whole_scratchpad_reports_indices_above_2047():
    # indices need all 12 address bits: the maximum at 4095, then at 2048, then a tie won by the first
    rng = random.Random(73)
    image = [isa.word_of(rng.randrange(-1000, 1000)) for _ in range(isa.SPAD_WORDS)]
    image[4095] = isa.word_of(INT32_MAX)
    program = [isa.make("AMAX", dst=4095, src=0, len=isa.SPAD_WORDS)]
    final, _ = run_and_check(image, program)
    assert final[4095] == 4095
    image[4095], image[2048], image[3000] = 0, isa.word_of(50_000), isa.word_of(50_000)
    final, _ = run_and_check(image, [isa.make("AMAX", dst=0, src=0, len=isa.SPAD_WORDS)])
    assert final[0] == 2048


def test_vadd_in_place_over_the_whole_scratchpad():
    # 2 x 4096 read slots: the slot counter must count to 8192 without wrapping
    rng = random.Random(74)
    image = [isa.word_of(rng.randrange(-128, 128)) for _ in range(isa.SPAD_WORDS)]
    final, busy = run_and_check(image, [isa.make("VADD", dst=0, src1=0, src2=0, len=isa.SPAD_WORDS)])
    assert busy == [2 * isa.SPAD_WORDS + 2]


# ==================================================================== wide ports
# The vector unit with a wide scratchpad port (``Config.spad_ports`` = P > 1).
# RQ, VADD and AMAX run P words per cycle, SM one (on lane 0); every result is
# checked against isa.py's primitives and an independent numpy model, every
# other word of the scratchpad stays as it was, every source word is read
# exactly once per pass (the read masks are exact), the busy time is the
# configuration's ISA formula, and the unit contract holds every cycle.  Lengths
# are and are not multiples of P, bases are unaligned, regions are in place and
# back to back.

CONFIGS = list(SPAD_PORT_CONFIGS)
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_wide_vector_ops(config):
    P = config.spad_ports
    rng = random.Random(100 + P)
    n = 37
    accs = [0, 1, -1, 127, -128, INT32_MAX, INT32_MIN] + [rng.randrange(INT32_MIN, INT32_MAX + 1) for _ in range(n - 7)]
    image = words(accs) + words(rng.randrange(-128, 128) for _ in range(n)) + [0xCAFEF00D] * 5
    ties = [5, 9, 9, 2, 9, -3, 9, 1]                    # the first maximum is at 1
    image += words(ties)
    t0 = len(image) - len(ties)
    program = [
        isa.make("RQ", dst=500, src=0, len=1, m=1 << 23, s=24),
        isa.make("RQ", dst=601, src=3, len=P + 1, m=(1 << 23) + 12345, s=20),
        isa.make("RQ", dst=701, src=0, len=n, m=rng.randrange(1 << 23, 1 << 24), s=30, relu=1),
        isa.make("RQ", dst=n, src=n, len=n, m=(1 << 23) + 99, s=20),          # in place
        isa.make("VADD", dst=900, src1=0, src2=n, len=n),
        isa.make("VADD", dst=1003, src1=5, src2=n + 1, len=P - 1 or 1),
        isa.make("VADD", dst=n, src1=n, src2=1, len=n - 1),                    # dst = src1
        isa.make("VADD", dst=2, src1=20, src2=2, len=15),                      # dst = src2
        isa.make("VADD", dst=1101, src1=7, src2=7, len=P * 2),                 # src1 = src2
        isa.make("AMAX", dst=1200, src=0, len=n),
        isa.make("AMAX", dst=1201, src=t0, len=len(ties)),
        isa.make("AMAX", dst=t0 + 3, src=t0, len=len(ties)),                   # dst inside src
        isa.make("AMAX", dst=1202, src=t0 + 1, len=1),
        isa.make("SM", dst=1300, src=n, len=P + 3),
        isa.make("SM", dst=n, src=n, len=9),                                   # in place
        isa.make("RQ", dst=4096 - P - 1, src=4096 - 2 * P - 2, len=P + 1, m=1 << 23, s=23),  # the last words
    ]
    _, busy = run_and_check(image, program, config=config)
    cd = isa.ceil_div
    for ins, b in zip(program, busy):
        want = {"RQ": cd(ins.len, P) + 2, "VADD": 2 * cd(ins.len, P) + 2,
                "AMAX": cd(ins.len, P) + 2 + (P.bit_length() - 1),      # log2(P) levels of its lane tree
                "SM": 3 * ins.len + 47}[ins.mnemonic]
        assert b == want, f"{ins}: busy {b}, expected {want}"


@pytest.mark.parametrize("ports", [1, 2])
def test_rq_with_overlap_multiplies_in_one_stage_and_writes_no_trailing_chunk(ports):
    """With overlap the next instruction may issue in the cycle after done, so the RQ engine keeps
    the one-stage multiply (``Requantizer(split_multiply=False)``) and writes its last element
    (chunk) with done: the bench (``trailing_write_cycles`` = 0) refuses a write after done.
    Without overlap (the other tests) it multiplies in two stages and writes the last one a cycle
    after done, in the same busy time.  On the one-word port (the ``overlap`` preset's) and a
    2-word one."""
    from ga2_hdl.config import Config
    config = Config(name=f"p{ports}_overlap", spad_ports=ports, overlap=True)
    vector = isa.Unit.VECTOR
    assert isa.trailing_write_cycles(config, vector) == 0 and isa.trailing_write_cycles(CONFIGS[0], vector) == 1
    rng = random.Random(7)
    accs = [0, -1, INT32_MIN, INT32_MAX] + [rng.randrange(INT32_MIN, INT32_MAX + 1) for _ in range(9)]
    program = [isa.make("RQ", dst=100, src=0, len=1, m=(1 << 23) + 5, s=20),
               isa.make("RQ", dst=201, src=1, len=len(accs) - 1, m=rng.randrange(1 << 24), s=27, relu=1),
               isa.make("RQ", dst=0, src=0, len=len(accs), m=(1 << 23) + 99, s=25)]      # in place
    _, busy = run_and_check(words(accs), program, config=config)
    assert busy == [isa.ceil_div(ins.len, ports) + 2 for ins in program]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_wide_amax_of_negative_values_starts_below_every_word(config):
    """Every word negative, the first maximum not at index 0 and not in the first chunk: the
    running best must start at the smallest int32 (a start at 0 would keep index 0), and so must
    the masked lanes of a short last chunk (a start or a masked lane at -62, or at -2**30, above
    every word of a vector, would win); a vector of nothing but -2**31 gives index 0, also right
    after an AMAX whose answer was not 0 (the index starts at 0 with every instruction)."""
    P = config.spad_ports
    values = [-9, -70000, INT32_MIN] + [-5] * P + [-2, -3, -2, INT32_MIN + 1]
    deep = [-70000, -1000, -5000] + [INT32_MIN + 7] * (P - 1) + [-999, INT32_MIN]   # the maximum: -999
    floor = [INT32_MIN + 5, INT32_MIN + 9, INT32_MIN] + [INT32_MIN] * (P + 1)     # all below -2**30
    d, f = len(values), len(values) + len(deep)
    program = [isa.make("AMAX", dst=100, src=0, len=len(values)),
               isa.make("AMAX", dst=101, src=1, len=2),                 # INT32_MIN vs -70000: index 0
               isa.make("AMAX", dst=102, src=d, len=3),                 # -1000 at 1, a short chunk
               isa.make("AMAX", dst=103, src=d, len=len(deep)),
               isa.make("AMAX", dst=104, src=f, len=3),                 # INT32_MIN + 9 at 1
               isa.make("AMAX", dst=105, src=f + 2, len=P + 2)]         # all INT32_MIN, after an answer 1
    spad, _ = run_and_check(words(values + deep + floor), program, config=config)
    assert spad[100] == values.index(max(values)) and spad[101] == 0
    assert spad[102:106] == [1, len(deep) - 2, 1, 0]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_wide_amax_index_past_half_the_scratchpad(config):
    """The maximum's index needs every bit of a scratchpad address: a vector of 3,000 words whose
    maximum is at index 2,600 (> 2,048, the top bit of a 4,096-word scratchpad's index)."""
    rng = random.Random(12)
    values = [rng.randrange(-1000, 1000) for _ in range(3000)]
    values[2600] = 5000
    program = [isa.make("AMAX", dst=4000, src=0, len=len(values))]
    spad, _ = run_and_check(words(values), program, config=config)
    assert spad[4000] == 2600


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_wide_amax_ties_across_lanes_keep_the_first_index(config):
    """The lane tree's tie rule: two equal maxima at every pair of positions i < j of a 2P-word
    vector (in one chunk, in the two halves of one tree level, in two chunks), the source at every
    alignment to the chunks; the answer is i."""
    P = config.spad_ports
    n = 2 * P
    image, sources, want = [], [], []
    for i in range(n):
        for j in range(i + 1, n):
            values = [-7] * n
            values[i] = values[j] = 40 + i                        # the equal maxima
            skew = (i + j) % P                                    # words before the vector
            image += [0] * skew
            sources.append(len(image))
            image += words(values)
            want.append(i)
    dst = len(image)
    assert dst + len(sources) <= isa.SPAD_WORDS
    program = [isa.make("AMAX", dst=dst + k, src=src, len=n) for k, src in enumerate(sources)]
    spad, _ = run_and_check(image, program, config=config)
    assert spad[dst:dst + len(sources)] == want


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_wide_amax_masked_lanes_never_win(config):
    """A chunk's lanes at and past ``len`` hold no defined value (a bank not read keeps its last
    output): each short AMAX follows one that leaves 1,000 on every bank's output, so a lane
    the mask does not remove from the compare would win over the vector's own words."""
    P = config.spad_ports
    image = words([1000] * P) + words(range(10, 10 - P, -1))         # the first maximum: index 0
    program = []
    for r in range(1, P):
        program += [isa.make("AMAX", dst=100, src=0, len=P),             # every bank's output: 1000
                    isa.make("AMAX", dst=200 + r, src=P, len=r)]
    spad, _ = run_and_check(image, program, config=config)
    assert spad[100] == 0 and spad[201:200 + P] == [0] * (P - 1)
