"""compiler.schedule: Capra's scheduling pass for a chip with overlap.

Without overlap it changes nothing (the book's bytes); with overlap the scheduled
program leaves the golden model's memory exactly as the original does and is
never slower, on the chapter's programs (example A's plain steps, verifier and
draft programs) and on random programs.
"""
import functools
import random

import pytest

from compiler.schedule import dependencies, rename_loads, schedule, schedule_program, spread_buffers
from ga2_hdl import golden, isa
from ga2_hdl.config import PRESETS
from ga2_hdl.isa import make
from gen.fuzz.programs import random_program

OVERLAP = PRESETS["overlap"]


@functools.lru_cache(maxsize=None)
def chapter_programs():
    """Example A's programs: four plain decoding steps, and the verifier and draft programs of
    eight speculative tokens (k = 3): [(name, code, ext)]."""
    from spec.runs import example_a_chip, make_model, plain_row
    plain = plain_row("plain", make_model("random", 1), 4, config=isa.BOOK).log
    chip, _wd = example_a_chip(8, 3, config=isa.BOOK)
    spec = chip.generate(0, 8).log
    return [(f"{r.kind} {r.shape}", r.code, r.ext) for r in plain + spec[:4]]


def test_without_overlap_programs_are_unchanged():
    for name, code, _ext in chapter_programs():
        assert [i.encode() for i in schedule(code, isa.BOOK)] == [i.encode() for i in code], name
    code, _ext = random_program(random.Random(3), config=isa.BOOK)
    assert schedule(code, config=isa.BOOK) == code


def test_scheduled_chapter_programs_compute_the_same_memory_faster():
    iset = isa.instruction_set(OVERLAP)
    for name, code, ext in chapter_programs():
        new = schedule(code, OVERLAP)
        assert sorted(i.op for i in new) == sorted(i.op for i in code) and new[-1] == isa.HALT
        a = golden.run(code, ext, config=OVERLAP)
        b = golden.run(new, ext, config=OVERLAP)
        assert (b.error, b.ext) == (a.error, a.ext), name
        assert b.counters[1:] == a.counters[1:], name          # the same busy cycles and instructions
        # a draft program is one chain (loads, MMs, RQ, AMAX, stores): the one overlap it had, AMAX and
        # the store of the RQ's output reading one buffer at once, reads one partition twice
        assert b.counters.total <= a.counters.total if name.startswith("draft") else \
            b.counters.total < a.counters.total, name
        assert b.counters == iset.counters(new)


def test_scheduled_random_programs_compute_the_same_memory():
    rng = random.Random(5)
    moved = 0
    for _ in range(30):
        code, ext = random_program(rng, config=isa.BOOK)
        new = schedule(code, OVERLAP)
        a, b = golden.run(code, ext, config=OVERLAP), golden.run(new, ext, config=OVERLAP)
        assert (b.error, b.ext) == (a.error, a.ext), [str(i) for i in code]
        assert b.counters.total <= a.counters.total
        moved += new != code
    assert moved > 10


def test_dependencies_follow_every_hazard_through_both_memories():
    code = [make("LD", dst=0, src=0, len=4),         # 0
            make("ST", src=100, dst=2, len=1),       # 1: writes ext 2, which 0 reads (WAR in ext)
            make("MM", dst=50, A=0, B=10, M=1, K=1, N=1),   # 2: reads 0 (RAW on 0)
            make("RQ", dst=60, src=70, len=1, m=1 << 23, s=23),  # 3: independent of all
            make("LD", dst=10, src=9, len=1)]        # 4: writes 10, which 2 reads (WAR)
    assert dependencies(code, OVERLAP) == [set(), {0}, {0}, set(), {2}]


def test_renaming_moves_a_reused_load_and_its_readers_only():
    mm = dict(M=1, K=4, N=1)
    code = [make("LD", dst=0, src=0, len=8), make("MM", dst=20, A=0, B=4, **mm),
            make("LD", dst=0, src=8, len=8), make("MM", dst=24, A=0, B=4, **mm),
            make("ST", src=20, dst=100, len=5)]
    new = rename_loads(code, OVERLAP)
    assert new[:2] == code[:2] and new[4] == code[4]
    assert (new[2].dst, new[3].A, new[3].B) == (25, 25, 29)     # the first word no instruction touched
    ext = list(range(1, 17))
    assert golden.run(new + [isa.HALT], ext, config=OVERLAP).ext == golden.run(code + [isa.HALT], ext, config=isa.BOOK).ext


def test_a_load_partly_overwritten_later_is_not_renamed():
    # the RQ overwrites words 0..1 only; the second MM still reads the load's words 4..7
    mm = dict(M=1, K=4, N=1)
    code = [make("LD", dst=0, src=0, len=8), make("MM", dst=20, A=0, B=4, **mm),
            make("LD", dst=0, src=8, len=8), make("RQ", dst=0, src=30, len=2, m=1 << 23, s=23),
            make("MM", dst=24, A=0, B=4, **mm), make("ST", src=20, dst=100, len=5)]
    assert rename_loads(code, OVERLAP) == code
    ext = list(range(1, 17))
    new = schedule(code + [isa.HALT], OVERLAP)
    assert golden.run(new, ext, config=OVERLAP).ext == golden.run(code + [isa.HALT], ext, config=isa.BOOK).ext


def test_a_program_that_faults_is_left_alone():
    code = [make("LD", dst=0, src=0, len=4), make("LD", dst=0, src=8190, len=5), isa.HALT]
    assert schedule(code, OVERLAP) == code


def test_schedule_program_keeps_the_nodes_of_instructions():
    from compiler import compile_graph
    from spec.runs import make_model
    from spec.graphs import decode_step_graph
    from spec.on_chip import calibrate_plain
    model = make_model("random", 1)
    samples, ranges = calibrate_plain(model, 2)
    prog = compile_graph(decode_step_graph(model, 2), samples[2], ranges=ranges, config=isa.BOOK)
    assert schedule_program(prog, isa.BOOK) is prog
    new = schedule_program(prog, OVERLAP)
    assert new.code != prog.code and len(new.code) == len(prog.code)
    # on one partition Capra places the buffers as for the book and then schedules (with partitions it
    # places loaded tensors in partitions of their own: compiler/planner.py)
    one = OVERLAP.replace(name="overlap1", spad_partitions=1)
    assert compile_graph(decode_step_graph(model, 2), samples[2], ranges=ranges, config=one).code == \
        schedule_program(prog, one).code
    ops = lambda p, nid: sorted(i.op for pc, i in enumerate(p.code) if p.node_at(pc) == nid)
    for nid, _first in prog.steps:
        assert ops(new, nid) == ops(prog, nid)


def _reusing_program(rng):
    """A short random program over a small scratchpad window, so loads overwrite words that
    earlier instructions used, MM writes with gaps (ldc > N), RQ in place and stores read them."""
    code = []
    for _ in range(rng.randint(3, 14)):
        k = rng.random()
        if k < 0.4:
            code.append(make("LD", dst=rng.randint(0, 30), src=rng.randint(0, 40), len=rng.randint(1, 12)))
        elif k < 0.6:
            M, K, N = rng.randint(1, 3), rng.randint(1, 4), rng.randint(1, 3)
            code.append(make("MM", dst=rng.randint(0, 30), A=rng.randint(0, 30), B=rng.randint(0, 30),
                             M=M, K=K, N=N, ldc=rng.randint(N, N + 3), lda=rng.randint(K, K + 2)))
        elif k < 0.8:
            n, src = rng.randint(1, 6), rng.randint(0, 30)
            dst = rng.choice([src, rng.randint(0, 30)])
            code.append(make("RQ", dst=dst if dst == src or abs(dst - src) >= n else src, src=src, len=n,
                             m=1 << 23, s=23))
        else:
            code.append(make("ST", src=rng.randint(0, 40), dst=rng.randint(50, 90), len=rng.randint(1, 10)))
    return code + [isa.HALT], [rng.randint(0, 255) for _ in range(64)]


def test_renaming_and_scheduling_never_change_memory():
    rng = random.Random(1)
    renamed = 0
    for _ in range(150):
        code, ext = _reusing_program(rng)
        ref = golden.run(code, ext, config=OVERLAP)
        new = rename_loads(code[:-1], OVERLAP) + [isa.HALT]
        renamed += new != code
        for variant in (new, schedule(code, OVERLAP)):
            got = golden.run(variant, ext, config=OVERLAP)
            assert (got.ext, got.error) == (ref.ext, ref.error), ([str(i) for i in code], [str(i) for i in variant])
    assert renamed > 50


def test_spreading_buffers_over_partitions_never_changes_memory():
    """``spread_buffers`` moves written buffers and their readers into other partitions (onto
    words no later instruction touches): on programs that reuse words (loads over used words,
    strided MM writes, RQ in place) the memory is the original's, and buffers do move (words
    re-used by a later instruction of the original stay off limits: a planted move onto them
    is caught by the same comparison)."""
    rng = random.Random(2)
    moved = spread = 0
    for _ in range(150):
        code, ext = _reusing_program(rng)
        ref = golden.run(code, ext, config=OVERLAP)
        for loads_only in (True, False):
            new = spread_buffers(code[:-1], OVERLAP, loads_only=loads_only) + [isa.HALT]
            moved += new != code
            size = OVERLAP.spad_partition_words
            spread += len({r.start // size for ins in new for r in ins.spec.accesses(ins) if r.memory == "spad"}) > 1
            got = golden.run(new, ext, config=OVERLAP)
            assert (got.ext, got.error) == (ref.ext, ref.error), ([str(i) for i in code], [str(i) for i in new])
    assert moved > 100 and spread > 100


def test_capra_places_loaded_tensors_in_partitions_of_their_own():
    """With partitions, a decoding step's weights sit outside the first partition, where the
    computed buffers are, spread over three or more; its loads then run beside the matrix unit: fewer cycles than the
    same step placed as on one partition."""
    from compiler import compile_graph
    from spec.runs import make_model
    from spec.graphs import decode_step_graph
    from spec.on_chip import calibrate_plain
    model = make_model("random", 1)
    samples, ranges = calibrate_plain(model, 2)
    size = OVERLAP.spad_partition_words
    prog = compile_graph(decode_step_graph(model, 2), samples[2], ranges=ranges, config=OVERLAP)
    weights = [i for i in prog.code if i.mnemonic == "LD" and i.len >= 256]
    assert weights and all(i.dst >= size for i in weights)
    assert len({i.dst // size for i in weights}) >= 3
    one = OVERLAP.replace(name="overlap1", spad_partitions=1)
    flat = compile_graph(decode_step_graph(model, 2), samples[2], ranges=ranges, config=one)
    iset = isa.instruction_set(OVERLAP)
    assert iset.counters(prog.code).total < iset.counters(schedule(flat.code, OVERLAP)).total


def test_a_strided_write_does_not_end_the_words_it_skips():
    # the MM writes words 0 and 4 only (M=2, ldc=4): words 1..3 still hold the second load's
    # values when the ST reads them, so that load must stay where it is
    code = [make("LD", dst=0, src=0, len=8), make("MM", dst=20, A=0, B=4, M=1, K=4, N=1),
            make("LD", dst=0, src=8, len=8), make("MM", dst=0, A=30, B=34, M=2, K=1, N=1, ldc=4),
            make("ST", src=1, dst=100, len=3), isa.HALT]
    assert rename_loads(code[:-1], OVERLAP) == code[:-1]
    ext = list(range(1, 17))
    assert golden.run(code, ext, config=OVERLAP).ext[100:103] == [10, 11, 12]


def test_overlap_bench_accounts_for_every_cycle():
    from spec.studies.overlap_bench import matrix_idle, measure, report
    result = measure(2, speculative=False)
    (entry,) = result.values()
    book, plain, scheduled = (entry["sums"][k] for k in ("book", "overlap", "overlap + schedule"))
    assert book[1:] == plain[1:] == scheduled[1:]          # the same busy cycles and instructions
    assert book[0] > plain[0] > scheduled[0]
    assert sum(entry["matrix_idle_scheduled"].values()) == scheduled[0] - scheduled[1]
    assert "overlap + schedule" in report(result)
    code = [make("LD", dst=0, src=0, len=4), make("MM", dst=10, A=0, B=2, M=1, K=2, N=1), isa.HALT]
    # LD issued in 1, busy 2..14; the MM waits for it (RAW) until 15, busy 16..15+W; HALT in 16+W
    w = isa.instruction_set(OVERLAP).busy(code[1])
    assert matrix_idle(code, OVERLAP) == {"before the first MM": 15, "waiting for the vector unit": 0,
                                          "waiting for the DMA": 0, "after the last MM": 1,
                                          "issue cycles of MMs": 1}
    assert isa.instruction_set(OVERLAP).counters(code).total == 15 + 1 + w + 1
