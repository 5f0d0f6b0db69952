"""The softmax unit (ga2_hdl/rtl/softmax.py) on a real scratchpad, in Amaranth's simulator.

Each SM instruction is checked against isa.softmax_q16 and an independent numpy
computation, for its whole effect on the scratchpad (dst written, nothing else
touched) and for its exact busy time 3*len + 41 + 6.
"""
import random

import numpy as np
import pytest

from ga2_hdl import isa
from ga2_hdl.config import Config
from ga2_hdl.rtl.softmax import SoftmaxUnit, busy_cycles
from sim_tests.spad_harness import run_program

NP_TABLE = np.floor(65535.0 * np.exp(-np.arange(256) / 16.0) + 0.5).astype(np.int64)


def numpy_softmax(words):
    """Independent formulation on numpy int64: low bytes as int8, table lookup, one division."""
    x = np.array(words, dtype=np.int64) & 0xFF
    x = np.where(x >= 128, x - 256, x)
    e = NP_TABLE[x.max() - x]
    r = (1 << 38) // int(e.sum())
    return ((e * r + (1 << 21)) >> 22).tolist()


def sm(dst, src, length):
    return isa.make("SM", dst=dst, src=src, len=length)


def run_and_check(image, program, config=isa.BOOK):
    """Run SM instructions in order on ``config``'s softmax unit; compare memory and busy times with the
    references (3*len + 41 + 6 on the book's chip, 3*len + 25 + 6 with the short division)."""
    expected = list(image) + [0] * (isa.SPAD_WORDS - len(image))
    for ins in program:
        words = expected[ins.src:ins.src + ins.len]
        probs = isa.softmax_q16(isa.int8_of(w) for w in words)
        assert probs == numpy_softmax(words), "isa.softmax_q16 and numpy disagree"
        expected[ins.dst:ins.dst + ins.len] = probs
    final, busy = run_program(lambda: SoftmaxUnit(config=config), expected[:0] + list(image), program)
    division = 25 if config.short_division else 41
    iset = isa.instruction_set(config)
    for ins, w in zip(program, busy):
        assert w == iset.busy(ins) == 3 * ins.len + division + 6 == busy_cycles(ins.len, config), \
            f"{ins}: busy {w} cycles, the ISA says {iset.busy(ins)}"
    for addr, (got, want) in enumerate(zip(final, expected)):
        assert got == want, f"scratchpad[{addr}] = {got:#x}, expected {want:#x}"
    return final


def scores_image(rows, base_gap=0):
    """Lay rows of int8 scores out as sign-extended words from address 0; return (image, starts)."""
    image, starts = [], []
    for row in rows:
        starts.append(len(image))
        image += [isa.word_of(v) for v in row]
        image += [0xDEAD0000 + i for i in range(base_gap)]
    return image, starts


def test_length_one():
    image = [isa.word_of(-37), isa.word_of(127), isa.word_of(-128)]
    program = [sm(100, 0, 1), sm(101, 1, 1), sm(2, 2, 1)]
    final = run_and_check(image, program)
    assert final[100] == final[101] == final[2] == isa.Q16_ONE


def test_equal_scores():
    rows = [[5] * 7, [-128] * 16, [127] * 3]
    image, starts = scores_image(rows)
    program = [sm(1000 + s, s, len(r)) for s, r in zip(starts, rows)]
    final = run_and_check(image, program)
    for s, r in zip(starts, rows):
        probs = final[1000 + s:1000 + s + len(r)]
        assert len(set(probs)) == 1 and abs(sum(probs) - isa.Q16_ONE) <= len(r)


def test_range_wider_than_the_table():
    # differences up to 255 = 127 - (-128): the table's zero tail is used
    rows = [[127, -128, 0, -128, 127, 100, -100, 50], [-128] * 5 + [127] + [-128] * 3,
            list(range(-128, 128, 16))]
    image, starts = scores_image(rows, base_gap=2)
    program = [sm(2000 + s, s, len(r)) for s, r in zip(starts, rows)]
    final = run_and_check(image, program)
    assert final[2000 + starts[1]] == 0 and final[2000 + starts[1] + 5] > 65000


def test_scores_are_the_low_byte():
    # upper bits of the words are ignored: 0x12345680 is -128, 0xFFFFFF05 is 5
    image = [0x12345680, 0xFFFFFF05, 0x0000007F, 0xABCDEF00]
    run_and_check(image, [sm(10, 0, 4)])


def test_in_place_and_disjoint_random_rows():
    rng = random.Random(61)
    rows = [[rng.randrange(-128, 128) for _ in range(n)] for n in (13, 40)]
    rows += [[rng.randrange(-8, 8) for _ in range(31)]]            # ties and small differences
    image, starts = scores_image(rows, base_gap=1)
    program = [sm(starts[0], starts[0], 13),                        # in place
               sm(3000, starts[1], 40),                             # disjoint
               sm(starts[2], starts[2], 31),                        # in place
               sm(starts[2], starts[2], 31)]                        # again, on probabilities' low bytes
    run_and_check(image, program)


def test_long_row_in_place():
    rng = random.Random(62)
    row = [rng.choice([rng.randrange(-128, 128), 127, -128]) for _ in range(600)]
    image = [0x55555555] * 50 + [isa.word_of(v) for v in row] + [0xAAAAAAAA] * 50
    run_and_check(image, [sm(50, 50, 600)])


def test_region_at_the_top_of_the_scratchpad():
    rng = random.Random(63)
    n = 20
    image = [0] * (isa.SPAD_WORDS - n) + [isa.word_of(rng.randrange(-128, 128)) for _ in range(n)]
    run_and_check(image, [sm(isa.SPAD_WORDS - n, isa.SPAD_WORDS - n, n), sm(0, isa.SPAD_WORDS - n, n)])


def test_the_largest_sum_fills_the_sum_register():
    """The whole scratchpad of equal scores, in place: every term is T[0] = 65535, so the sum is
    4096 * 65535 = 268,431,360, the largest S there is, which needs all of SUM_BITS = 28 bits (above
    2**27 from 2049 equal terms on); a narrower sum register wraps and every probability doubles."""
    from ga2_hdl.rtl.softmax import sum_bits
    SUM_BITS = sum_bits(isa.BOOK)          # the book chip's sum register

    n = isa.SPAD_WORDS
    assert n * isa.EXP_TABLE[0] >= 1 << (SUM_BITS - 1)
    final = run_and_check([isa.word_of(-3)] * n, [sm(0, 0, n)])
    assert len(set(final)) == 1


#: a small scratchpad (64 words) whose every word one SM reads, in place: the pass counters then
#: reach spad_words, one past the largest address, and must not wrap to 0 (a read counter of
#: range(spad_words) would, and read on past the pass's end)
SMALL_SPAD = Config(name="spad64", spad_words=64)


@pytest.mark.parametrize("config, program", [
    (isa.BOOK, [sm(1000 + 100 * i, 100 * i, n) for i, n in enumerate((1, 2, 5, 17))]),
    (SMALL_SPAD, [sm(0, 0, SMALL_SPAD.spad_words), sm(40, 10, 5)]),
], ids=["book", "whole_small_scratchpad"])
def test_busy_time_formula_from_structure(config, program):
    """The phases of the formula, seen on the unit's scratchpad port: MAX reads src in t+1 .. t+len and
    lasts len + MAX_DEPTH cycles; EXP reads src again and writes e to dst, lasting len + EXP_DEPTH;
    the division takes DIV_PHASE_CYCLES with the port quiet; SCALE reads dst and writes p, ending
    with done at t + len + SCALE_DEPTH after it began.  So the constants of busy_cycles are the RTL's.
    Each pass reads exactly its len words, also when len is the whole scratchpad."""
    from ga2_hdl.rtl.softmax import (DIV_PHASE_CYCLES, EXP_DEPTH, EXP_WRITE_LAG, MAX_DEPTH, READ_AHEAD,
                                     SCALE_DEPTH, SCALE_READ_AHEAD, SoftmaxUnit)
    from sim_tests.spad_harness import SpadHarness, run_jobs

    for n in (1, 2, 100, 4096):
        assert busy_cycles(n) == isa.make("SM", dst=0, src=0, len=n).busy()
    seen = {ins: [] for ins in program}

    def monitor(ctx, ins, cycle):
        port = harness.unit.spad
        seen[ins].append((cycle, ctx.get(port.rd_en), ctx.get(port.rd_addr), ctx.get(port.wr_en),
                          ctx.get(port.wr_addr)))

    harness = SpadHarness(SoftmaxUnit(config=config))
    busy = run_jobs(harness, [(ins, None, None) for ins in program], monitor=monitor)
    for ins, w in zip(program, busy):
        n = ins.len
        reads = [(c, a) for c, r, a, _, _ in seen[ins] if r]
        writes = [(c, a) for c, _, _, wr, a in seen[ins] if wr]
        src = list(range(ins.src, ins.src + n))
        dst = list(range(ins.dst, ins.dst + n))
        max_pass = n + MAX_DEPTH
        exp_pass = n + EXP_DEPTH
        scale_start = max_pass + exp_pass + DIV_PHASE_CYCLES     # the SCALE pass begins after this cycle
        # MAX: reads of src in t+1 .. t+n, READ_AHEAD cycles early (from the start cycle); EXP: reads of
        # src again from the cycle after MAX ends, as early (from MAX's last cycle)
        assert reads[:n] == [(1 - READ_AHEAD + i, a) for i, a in enumerate(src)], ins
        assert reads[n:2 * n] == [(max_pass + 1 - READ_AHEAD + i, a) for i, a in enumerate(src)], ins
        # EXP writes e to dst, its last write EXP_WRITE_LAG cycles after the pass's last cycle (in the
        # division phase's first, which leaves the port free)
        assert [a for _, a in writes[:n]] == dst and writes[n - 1][0] == max_pass + exp_pass + EXP_WRITE_LAG, ins
        # the division: the port is quiet until SCALE reads dst, from SCALE_READ_AHEAD cycles before
        # the pass begins (the cycle after the division)
        assert reads[2 * n:] == [(scale_start + 1 - SCALE_READ_AHEAD + i, a) for i, a in enumerate(dst)], ins
        # SCALE writes p to dst, the last write in the cycle of done
        assert [a for _, a in writes[n:]] == dst and writes[-1][0] == scale_start + n + SCALE_DEPTH == w, ins
        assert w == busy_cycles(n) == ins.busy(), ins


@pytest.mark.slow
def test_many_random_rows_and_the_whole_scratchpad():
    rng = random.Random(64)
    rows = [[rng.randrange(-128, 128) for _ in range(rng.randrange(1, 70))] for _ in range(40)]
    image, starts = scores_image(rows)
    program = [sm(s, s, len(r)) if i % 2 else sm(2048 + s, s, len(r))
               for i, (s, r) in enumerate(zip(starts, rows))]
    run_and_check(image, program)
    full = [isa.word_of(rng.randrange(-128, 128)) for _ in range(isa.SPAD_WORDS)]
    run_and_check(full, [sm(0, 0, isa.SPAD_WORDS)])


def test_the_short_division_gives_the_same_words_sixteen_cycles_sooner():
    """``Config.short_division``: every probability the book's, each SM 16 cycles shorter (the divider
    finds only the 23 quotient bits a sum of at least T[0] allows)."""
    rng = random.Random(77)
    rows = [[127], [-128] * 16, [127, -128, 0, -128, 127, 100, -100, 50],
            [rng.randrange(-128, 128) for _ in range(40)], [rng.randrange(-3, 4) for _ in range(64)]]
    image, starts = scores_image(rows)
    program = [sm(2000 + s, s, len(r)) for s, r in zip(starts, rows)]
    short = Config(name="short", short_division=True)
    assert run_and_check(image, program, short) == run_and_check(image, program)
