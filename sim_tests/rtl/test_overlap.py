"""The overlapped timing rule (ga2_hdl.isa.IssueTimer) and the golden model under it.

Directed cases for each hazard kind, with their cycles worked out by hand; a
cycle-stepping model of the sequencer written here (states FETCH and ISSUE, one
cycle at a time, units busy t+1 .. t+W) agrees with the timer on random programs;
the book's chip keeps its rule.  On the chip (preset ``overlap``): the hazard programs, a plain
decoding step as Capra's scheduling pass orders it (three units busy at once) and random
programs agree golden = Amaranth = Icarus = Verilator; slow tests replay scheduled decoding
(plain, verifier, draft programs) and 300 random programs with the directed suite.
"""
import functools
import random

import pytest

from ga2_hdl import golden, isa
from ga2_hdl.config import PRESETS, Config
from ga2_hdl.isa import ErrorCode, Instruction, make
from gen.fuzz.programs import random_program
from ga2_hdl import golden
from ga2_hdl.config import Config, PRESETS
from ga2_hdl.rtl.sram import Scratchpad

from sim_tests.spad_bench import assert_cells, simulate

OVERLAP = PRESETS["overlap"]
BOOK = Config.book()

LD4 = make("LD", dst=0, src=0, len=4)                        # W = 4 + 8 + 1 = 13, writes spad 0..3
MM1 = dict(M=1, K=1, N=1)                                    # W = 1 + 1 + 1 + 1 + 7 = 11


def counters(program, config=OVERLAP):
    return isa.instruction_set(config).counters(program + [isa.HALT])


def test_busy_times_of_the_cases():
    iset = isa.instruction_set(OVERLAP)
    assert iset.busy(LD4) == 13
    assert iset.busy(make("MM", dst=100, A=200, B=300, **MM1)) == 11
    assert iset.busy(make("RQ", dst=2, src=10, len=1)) == 3


@pytest.mark.parametrize("name, program, total", [
    # (the overlap preset: eight partitions of 512 words, 0..511, 512..1023, 1024..1535, ...)
    # LD issued in cycle 1 (busy 2..14); the MM in 3 (busy 4..14), its regions in partitions 2, 4, 6: 15
    ("independent", [LD4, make("MM", dst=1100, A=2100, B=3100, **MM1)], 16),
    # read-after-write: MM reads word 0, which the LD writes: issued in 15, busy to 26, HALT in 27
    ("RAW", [LD4, make("MM", dst=1100, A=0, B=3100, **MM1)], 28),
    # write-after-read: the LD writes word 0, which the MM reads: LD waits until 13 (MM busy 2..12)
    ("WAR", [make("MM", dst=1100, A=0, B=3100, **MM1), LD4], 28),
    # write-after-write: RQ writes word 2 inside the LD's 0..3: issued in 15, busy 16..18, HALT in 19
    ("WAW", [LD4, make("RQ", dst=2, src=1010, len=1)], 20),
    # reads of one partition: the ST (busy 2..7) and the MM reading its word 0 take turns: MM issued
    # in 8, busy 9..19, HALT in 20 (one read port per partition)
    ("RAR", [make("ST", src=0, dst=0, len=4), make("MM", dst=1100, A=0, B=3100, **MM1)], 21),
    # the same unit runs one instruction at a time, even on disjoint partitions: LD 1..14, LD 15..28
    ("same unit", [LD4, make("LD", dst=1050, src=50, len=4)], 30),
    # disjoint words of one partition: the RQ waits for the LD (issued in 15, busy 16..18, HALT in 19)
    ("one partition", [LD4, make("RQ", dst=4, src=10, len=1)], 20),
    # just past the end of a partition is another partition (LD 1020..1023, RQ 1024 and 2000)
    ("adjacent", [make("LD", dst=1020, src=0, len=4), make("RQ", dst=1024, src=2000, len=1)], 16),
    # a region across a partition boundary touches both: the RQ's src 1023..1024 meets the LD's
    # 1020..1023 (RQ issued in 15, busy 16..19, HALT in 20)
    ("across", [make("LD", dst=1020, src=0, len=4), make("RQ", dst=2000, src=1023, len=2)], 21),
])
def test_directed_hazards(name, program, total):
    c = counters(program)
    assert c.total == total, name
    iset = isa.instruction_set(OVERLAP)
    busy = {u: sum(iset.busy(i) for i in program if i.spec.unit == u) for u in isa.UNIT_COUNTER}
    assert (c.matrix, c.dma, c.vector) == (busy[isa.Unit.MATRIX], busy[isa.Unit.DMA], busy[isa.Unit.VECTOR])
    assert c.instructions == len(program)
    # the book's chip: each instruction costs fetch + issue + busy, HALT fetch + issue
    assert counters(program, BOOK).total == sum(i.cycles() for i in program) + isa.FETCH_ISSUE_CYCLES


def test_fault_waits_for_the_units_in_flight():
    ext = list(range(1, 20))
    bad = Instruction(isa.RESERVED_OP_CODES[0])
    res = golden.run([LD4, bad, make("ST", src=0, dst=100, len=4), isa.HALT], ext, config=OVERLAP)
    assert (res.error, res.error_pc) == (ErrorCode.BAD_OPCODE, 1)
    # the LD (issued in 1, busy 2..14) completes; the fault halts in 15, the first idle cycle
    assert res.counters == isa.Counters(total=16, matrix=0, dma=13, vector=0, instructions=1)
    assert res.ext[100:104] == [0, 0, 0, 0]          # nothing after the fault ran


def _partition_of(region, config=OVERLAP):
    """The partitions a scratchpad region touches, as a set (written here from the configuration's
    sizes, not with the ISA's rule)."""
    size = config.spad_words // config.spad_partitions
    return set(range(region.start // size, (region.end - 1) // size + 1))


def test_partition_rule_on_spans():
    """``isa.partitions_meet`` against the sets of partitions two spans touch, on every preset's
    partition size and on one partition (every two spans meet)."""
    rng = random.Random(3)
    for config in (OVERLAP, PRESETS["fast_overlap"], OVERLAP.replace(spad_partitions=16),
                   OVERLAP.replace(spad_partitions=1)):
        top = config.spad_words
        for _ in range(2000):
            p0, q0 = rng.randrange(top), rng.randrange(top)
            p1, q1 = rng.randint(p0 + 1, min(top, p0 + 600)), rng.randint(q0 + 1, min(top, q0 + 600))
            p, q = isa.Region("spad", p0, p1 - p0, "a"), isa.Region("spad", q0, q1 - q0, "b")
            want = bool(_partition_of(p, config) & _partition_of(q, config))
            assert bool(isa.partitions_meet(p0, p1, q0, q1, config)) == want, (config.name, p, q)
            assert isa.spad_hazard(p, q, config) == want
            assert not isa.spad_hazard(p, isa.Region("ext", q0, q1 - q0, "b"), config)


def _stepped(iset, program):
    """The sequencer cycle by cycle: FETCH one cycle, then ISSUE, repeated while the instruction
    cannot start; a started unit is busy t+1 .. t+W.  Returns the five counters."""
    busy_until = {}                                  # unit -> last busy cycle
    flight = []                                      # (last busy cycle, spad accesses)
    cnt = dict(total=0, matrix=0, dma=0, vector=0, instructions=0)
    pc, state, cycle = 0, "FETCH", 0
    while True:
        cnt["total"] += 1
        if state == "FETCH":
            state = "ISSUE"
        else:
            ins = program[pc]
            idle = all(last < cycle for last in busy_until.values())
            if ins.op == isa.HALT.op:
                if idle:
                    break
            else:
                spec = iset.spec(ins.op)
                acc = [r for r in spec.accesses(ins) if r.memory == "spad"]
                blocked = busy_until.get(spec.unit, -1) >= cycle or any(
                    last >= cycle and _partition_of(p) & _partition_of(q) for last, rs in flight
                    for p in acc for q in rs)
                if not blocked:
                    w = spec.busy(ins)
                    busy_until[spec.unit] = cycle + w
                    flight.append((cycle + w, acc))
                    cnt[{isa.Unit.MATRIX: "matrix", isa.Unit.DMA: "dma", isa.Unit.VECTOR: "vector"}[spec.unit]] += w
                    cnt["instructions"] += 1
                    pc += 1
                    state = "FETCH"
        cycle += 1
    return isa.Counters(**cnt)


def test_timer_agrees_with_a_cycle_stepping_sequencer():
    rng = random.Random(12)
    iset = isa.instruction_set(OVERLAP)
    faster = 0
    for _ in range(50):
        code, _ext = random_program(rng, config=isa.BOOK)
        got = iset.counters(code)
        assert got == _stepped(iset, code), [str(i) for i in code]
        book = isa.program_counters(code)
        assert got[1:] == book[1:]                   # the same busy times and instructions
        assert got.total <= book.total
        faster += got.total < book.total
    assert faster > 30


def test_golden_memory_is_the_book_chips():
    rng = random.Random(7)
    for _ in range(40):
        code, ext = random_program(rng, illegal=0.3, config=isa.BOOK)
        a = golden.run(code, ext, config=OVERLAP)
        b = golden.run(code, ext, config=isa.BOOK)
        assert (a.ext, a.error, a.error_pc) == (b.ext, b.error, b.error_pc)
        if a.error == ErrorCode.OK:
            assert a.counters == isa.instruction_set(OVERLAP).counters(code)
        assert a.counters.total <= b.counters.total


def test_accesses_mark_what_each_op_writes():
    iset = isa.instruction_set(OVERLAP)
    st = iset.by_name["ST"].accesses(make("ST", src=5, dst=7, len=2))
    assert [(r.memory, r.role, r.write) for r in st] == [("spad", "src", False), ("ext", "dst", True)]
    for spec in iset.ops:
        assert spec.writes == frozenset({"dst"})


# ----------------------------------------------------------------------------- the chip

def hazard_programs():
    """One program per hazard kind, whose memory shows the order the rule keeps (the counters
    show the stalls): (name, code, external image)."""
    a = [3, 1, 2, 0xFFFFFFFF, 5, 7, 0xFFFFFFFE, 4]          # A (1 x 4) then B (4 x 1) ... as int8
    new = [100, 101, 102, 103]
    ext = a + new + list(range(1, 9))
    mm = dict(M=1, K=4, N=1)
    return [
        # RAW across units: the MM reads what the LD writes, the RQ what the MM writes
        ("RAW", [make("LD", dst=0, src=0, len=8), make("MM", dst=20, A=0, B=4, **mm),
                 make("RQ", dst=30, src=20, len=1, m=1 << 23, s=22), make("ST", src=20, dst=200, len=1),
                 make("ST", src=30, dst=201, len=1), isa.HALT], ext),
        # WAR: the second LD overwrites the MM's operands while... not before the MM has read them
        ("WAR", [make("LD", dst=0, src=0, len=8), make("MM", dst=20, A=0, B=4, **mm),
                 make("LD", dst=0, src=8, len=4), make("ST", src=0, dst=200, len=4),
                 make("ST", src=20, dst=210, len=1), isa.HALT], ext),
        # WAW: the MM writes word 21, then the LD writes 20..23: the LD's word stays
        ("WAW", [make("LD", dst=0, src=0, len=8), make("MM", dst=21, A=0, B=4, **mm),
                 make("LD", dst=20, src=8, len=4), make("ST", src=20, dst=200, len=4), isa.HALT], ext),
        # independent: the next load runs while the matrix unit computes; AMAX in parallel too
        # (the second LD and the AMAX in partitions of their own, away from the MM's partition 0)
        ("independent", [make("LD", dst=0, src=0, len=8), make("MM", dst=20, A=0, B=4, **mm),
                         make("LD", dst=1100, src=8, len=8), make("AMAX", dst=2040, src=1100, len=8),
                         make("ST", src=20, dst=200, len=1), make("ST", src=2040, dst=201, len=1), isa.HALT], ext),
        # read-after-read: the ST and the MM read the same words at once
        ("RAR", [make("LD", dst=0, src=0, len=8), make("MM", dst=20, A=0, B=4, **mm),
                 make("ST", src=0, dst=200, len=8), make("ST", src=20, dst=210, len=1), isa.HALT], ext),
        # regions across a partition boundary (1023 | 1024 on every preset): an RQ whose source ends in
        # the partition a load writes, and an AMAX reading the far partition of a load across the
        # boundary, both wait for the load (they read words it writes)
        ("across", [make("LD", dst=1024, src=8, len=4), make("RQ", dst=2000, src=1020, len=5, m=1 << 23, s=23),
                    make("LD", dst=1020, src=0, len=8), make("AMAX", dst=3000, src=1025, len=3),
                    make("ST", src=2000, dst=200, len=5), make("ST", src=3000, dst=210, len=1), isa.HALT], ext),
        # a hazard and a fault seen only through a region's product (rows - 1) * stride: the MM's A
        # rows 0, 400, 800, 1200 (lda = 400) reach the words 1200..1203 the load before it writes, in
        # a partition of their own, so it waits for the load (C[3] = A[3][0] * B = 3 * 5); the next
        # MM's A, 2 rows 200 apart from 4000, runs past the scratchpad's end (SPAD_RANGE), which its
        # first row alone does not
        ("strided", [make("LD", dst=2000, src=4, len=1), make("LD", dst=1200, src=0, len=4),
                     make("MM", dst=2500, A=0, B=2000, M=4, K=1, N=1, lda=400),
                     make("ST", src=2500, dst=200, len=4),
                     make("MM", dst=100, A=4000, B=2000, M=2, K=1, N=1, lda=200), isa.HALT], ext),
        # a fault while units run: they complete, nothing after the fault runs
        ("fault", [make("LD", dst=0, src=0, len=8), make("MM", dst=20, A=0, B=4, **mm),
                   make("LD", dst=50, src=8, len=4), make("VADD", dst=60, src1=0, src2=4, len=4),
                   make("ST", src=50, dst=8190, len=4), make("ST", src=20, dst=200, len=1), isa.HALT], ext),
    ]


def scheduled_chapter_programs(plain_tokens=1, speculative_tokens=0):
    """Example A's programs (plain steps; verifier and draft programs of speculative decoding with
    k = 3) as Capra's scheduling pass orders them for overlap: DMA, matrix and vector units busy
    at once, on renamed scratchpad words.  [(name, code, ext)]"""
    from compiler.schedule import schedule
    from spec.runs import example_a_chip, make_model, plain_row
    log = plain_row("plain", make_model("random", 1), plain_tokens, config=isa.BOOK).log if plain_tokens else []
    if speculative_tokens:
        chip, _wd = example_a_chip(speculative_tokens, 3, config=isa.BOOK)
        log += chip.generate(0, speculative_tokens).log
    return [(f"scheduled {r.kind} {r.shape}", schedule(r.code, OVERLAP), r.ext) for r in log]


@functools.lru_cache(maxsize=None)
def hazard_bundle(random_programs=4, seed=12):
    from ga2_hdl.formats.bundle import Bundle
    from gen.fuzz import programs as fuzz
    b = Bundle.from_programs(hazard_programs() + scheduled_chapter_programs(1), config=OVERLAP)
    extra = fuzz.random_bundle(random_programs, seed, config=OVERLAP, illegal=0.25)
    b.programs += extra.programs
    return b


def test_hazard_programs_in_the_golden_model():
    by_name = {name: golden.run(code, ext, config=OVERLAP) for name, code, ext in hazard_programs()}
    book = {name: golden.run(code, ext, config=isa.BOOK) for name, code, ext in hazard_programs()}
    for name in by_name:
        assert by_name[name].ext == book[name].ext, name
        assert by_name[name].counters.total < book[name].counters.total, name
    assert by_name["RAW"].ext[200:202] == [3 * 5 + 1 * 7 + 2 * -2 + -1 * 4, 2 * 14]   # RQ: x * 2^23 / 2^22
    assert by_name["WAR"].ext[200:204] == [100, 101, 102, 103] and by_name["WAR"].ext[210] == 14
    assert by_name["WAW"].ext[200:204] == [100, 101, 102, 103]
    assert by_name["across"].ext[200:205] == [0, 0, 0, 0, 100] and by_name["across"].ext[210] == 0   # 7, -2, 4 (not 101..103)
    assert by_name["strided"].ext[200:204] == [0, 0, 0, 15]
    assert (by_name["strided"].error, by_name["strided"].error_pc) == (ErrorCode.SPAD_RANGE, 4)
    assert (by_name["fault"].error, by_name["fault"].error_pc) == (ErrorCode.EXT_RANGE, 4)
    assert by_name["fault"].counters.instructions == 4 and by_name["fault"].ext[200] == 0


@pytest.mark.parametrize("sim", ["amaranth", "icarus", "verilator"])
def test_chip_agrees_with_the_golden_model(sim):
    from gen.sim.simulator import get_simulator
    bundle = hazard_bundle()
    report = get_simulator(sim, config=OVERLAP).run_bundle(bundle)
    assert report.passed, report.line()
    assert len(report.results) == len(bundle.programs)


@pytest.mark.slow
@pytest.mark.parametrize("sim", ["amaranth", "icarus", "verilator"])
def test_scheduled_decoding_on_the_overlap_chip(sim):
    from ga2_hdl.formats.bundle import Bundle
    from gen.sim.simulator import get_simulator
    bundle = Bundle.from_programs(scheduled_chapter_programs(4, 8), config=OVERLAP)
    report = get_simulator(sim, config=OVERLAP).run_bundle(bundle)
    assert report.passed, report.line()
    assert len(report.results) == len(bundle.programs) > 10


@pytest.mark.slow
def test_fuzz_on_the_overlap_chip_in_every_simulator():
    from gen.fuzz.programs import fuzz
    report = fuzz(300, 2026, ("golden", "amaranth", "icarus", "verilator"), directed=True, config=OVERLAP)
    assert report["mismatches"] == 0, report["first_mismatch"]
    assert all(r["programs_run"] == report["programs"] for r in report["results"].values())


def test_scratchpad_ports_never_race_on_the_overlap_chip_in_amaranth():
    """The ported scratchpad's contract on the chip: the hazard rule keeps two units in flight from
    writing one word, so the scratchpad's ``conflict`` flag (two writes of one address in a cycle)
    stays low in every cycle of the hazard programs and of a scheduled decoding step, while the
    units do use their ports at once (counted, so the check is not vacuous)."""
    from amaranth.hdl import Module
    from amaranth.sim import Simulator

    from ga2_hdl.rtl.chip import GA2Chip
    from gen.sim.extmem import ExternalMemoryModel

    programs = hazard_programs() + scheduled_chapter_programs(1)
    chip = GA2Chip(config=OVERLAP)
    ext_model = ExternalMemoryModel(chip, chip.ext_words, config=OVERLAP)
    top = Module()
    top.submodules.chip, top.submodules.ext = chip, ext_model
    masters = list(chip.spad.masters)
    at_once = {"accesses": 0, "writes": 0}

    async def bench(ctx):
        for name, code, ext in programs:
            ctx.set(chip.imem_we, 1)
            for addr, ins in enumerate(code):
                ctx.set(chip.imem_addr, addr)
                ctx.set(chip.imem_wdata, ins.encode())
                await ctx.tick()
            ctx.set(chip.imem_we, 0)
            for addr, word in enumerate(ext):
                ctx.set(ext_model.memory.data[addr], word & isa.WORD_MASK)
            ctx.set(chip.start, 1)
            await ctx.tick()
            ctx.set(chip.start, 0)
            for cycle in range(golden.run(code, ext, config=OVERLAP).counters.total + 1):
                assert not ctx.get(chip.spad.conflict), f"{name}: two writes of one scratchpad word in cycle {cycle}"
                writes = sum(ctx.get(p.wr_en) for p in masters)
                at_once["writes"] += writes > 1
                at_once["accesses"] += sum(ctx.get(p.wr_en) | ctx.get(p.rd_en) for p in masters) > 1
                if ctx.get(chip.halted):
                    break
                await ctx.tick()
            assert ctx.get(chip.halted), f"{name}: not halted after the golden model's cycles"

    sim = Simulator(top)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert at_once["accesses"] > 0 and at_once["writes"] > 0, at_once


# ==================================================================== wide ports
# Overlap together with wide ports: the scratchpad's banks with a read and a write port per master.
# The chip ``wide4_overlap`` (4-word scratchpad and external ports, overlap) runs the hazard programs
# of tests/test_overlap.py (RAW, WAR, WAW, independent units, read-after-read, a fault while units
# run), example A's plain step as Capra schedules it for overlap, and random programs (a quarter
# illegal) in Amaranth's simulator, Icarus and Verilator: every counter and word equal to that chip's
# golden model.  The slow test adds the directed suite and 300 random programs on the 8-word chip.

WIDE_OVERLAP = Config(name="wide4_overlap", spad_ports=4, ext_port_words=4, overlap=True, spad_partitions=4)
#: two banks of two partitions: the smallest partitioned, banked scratchpad
TWO_BANKS = Config(name="wide2_overlap", spad_ports=2, ext_port_words=2, overlap=True, spad_partitions=2)
#: overlap on one partition: the book's scratchpad and multiplexer, no two units on it at once
ONE_PARTITION = Config(name="overlap1", overlap=True)


def offset_programs():
    """Accesses that start in the last bank (offset w - 1) and so reach the next row in every
    other bank, by the DMA, the matrix and the vector unit, some of them at once (in partitions
    of their own: wide4_overlap's 0 .. 1023, 1024 .. 2047, ...), and a run across a partition boundary."""
    from ga2_hdl.isa import HALT, make
    ext = [(7 * i + 3) % 255 - 127 & 0xFFFFFFFF for i in range(64)]
    return [("bank offsets", [
        make("LD", dst=3, src=0, len=16),
        make("LD", dst=1203, src=21, len=13),                 # partition 1: beside the MM
        make("MM", dst=2040, A=3, B=11, M=2, K=4, N=2),       # partitions 0 and 2
        make("VADD", dst=3051, src1=1203, src2=1207, len=8),  # partitions 1 and 3, beside the MM
        make("LD", dst=1021, src=30, len=8),                  # 1021 .. 1028: partitions 0 and 1
        make("ST", src=3, dst=100, len=16),
        make("ST", src=2040, dst=121, len=4),
        make("ST", src=3051, dst=131, len=8),
        make("ST", src=1203, dst=143, len=13),
        make("ST", src=1021, dst=160, len=8),
        HALT], ext)]


def _scheduled(config, plain_tokens=1):
    from compiler.schedule import schedule
    from spec.runs import make_model, plain_row
    log = plain_row("plain", make_model("random", 1), plain_tokens, config=config).log
    return [(f"scheduled {r.kind} {r.shape}", schedule(r.code, config), r.ext) for r in log]


@functools.lru_cache(maxsize=None)
def bundle(config=WIDE_OVERLAP, random_programs=6, seed=21):
    from ga2_hdl.formats.bundle import Bundle
    from gen.fuzz import programs as fuzz
    scheduled = _scheduled(config) if config == WIDE_OVERLAP else []
    b = Bundle.from_programs(hazard_programs() + offset_programs() + scheduled, config=config)
    b.programs += fuzz.random_bundle(random_programs, seed, config=config, illegal=0.25).programs
    return b


def test_the_scratchpad_builds_a_memory_per_partition_and_bank():
    spad = Scratchpad(3, config=WIDE_OVERLAP, words=4)
    assert spad.n_banks == 4 and spad.n_partitions == 4 and spad.memory is None
    assert [b.depth for b in spad.banks] == [256] * 16 == [WIDE_OVERLAP.spad_memory_words] * 16
    assert spad.bank_names()[:2] == ["part0_bank0", "part0_bank1"] and spad.bank_names()[-1] == "part3_bank3"
    one = Scratchpad(3, config=ONE_PARTITION)
    assert one.n_partitions == 1 and one.memory is not None and one.memory.depth == 4096


def test_overlap_hides_cycles_on_the_wide_chip_too():
    wide = WIDE_OVERLAP.replace(name="wide4", overlap=False, spad_partitions=1)
    for name, code, ext in hazard_programs():
        a, b = golden.run(code, ext, config=WIDE_OVERLAP), golden.run(code, ext, config=wide)
        assert a.ext == b.ext, name
        assert a.counters.total <= b.counters.total, name


@pytest.mark.parametrize("sim,config", [("amaranth", WIDE_OVERLAP), ("amaranth", TWO_BANKS),
                                        ("amaranth", ONE_PARTITION),
                                        pytest.param("icarus", WIDE_OVERLAP, marks=pytest.mark.slow),
                                        pytest.param("verilator", WIDE_OVERLAP, marks=pytest.mark.slow)],
                         ids=["amaranth-wide4", "amaranth-wide2", "amaranth-one-partition", "icarus-wide4",
                              "verilator-wide4"])
def test_wide_overlap_chip_agrees_with_the_golden_model(sim, config):
    from gen.sim.simulator import get_simulator
    b = bundle(config)
    report = get_simulator(sim, config=config).run_bundle(b)
    assert report.passed, report.line()
    assert len(report.results) == len(b.programs)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["wide8_overlap", "fast_overlap"])
def test_fuzz_on_the_wide_overlap_presets_in_every_simulator(name):
    from gen.fuzz.programs import fuzz
    report = fuzz(300, 2027, ("golden", "amaranth", "icarus", "verilator"), directed=True, config=PRESETS[name])
    assert report["mismatches"] == 0, report["first_mismatch"]
    assert all(r["programs_run"] == report["programs"] for r in report["results"].values())


@pytest.mark.parametrize("config, words", [(WIDE_OVERLAP, 4), (TWO_BANKS, 2), (OVERLAP, 1)],
                         ids=["4 banks", "2 banks", "1 bank"])
def test_partitions_serve_one_master_each_at_once_and_flag_a_shared_memory(config, words):
    """The partitioned scratchpad alone (2, 4 or 8 partitions, 3 masters): every cycle each master
    reads and writes its own runs of ``words`` words from any address (across partition boundaries
    and the top of the memory too), in partitions no other master touches that cycle, as the issue
    rule guarantees; a model follows each master's read data (its own, from the memory it read)
    and the memory; the debug outputs name a lone write (``write_addr``, and with banks
    ``write_last``, its last address).  ``conflict`` rises exactly when two masters address one
    memory (partition and bank) in a cycle."""
    top, size = config.spad_words, config.spad_partition_words
    rng = random.Random(4)
    init = [rng.getrandbits(32) for _ in range(top)]
    dut = Scratchpad(3, config=config, init=init, words=words)
    model = list(init)
    wide = words > 1
    full = (1 << words) - 1

    def address():           # near a partition boundary a third of the time
        if rng.random() < 0.35:
            return (rng.randrange(config.spad_partitions) * size - rng.randrange(1, words + 2)) % top
        return rng.randrange(top)

    def drive(p, rd, ra, rmask, wr, wa, wmask, data):
        ctx_set = drive.ctx.set
        ctx_set(p.rd_en, rd)
        ctx_set(p.rd_addr, ra)
        ctx_set(p.wr_en, wr)
        ctx_set(p.wr_addr, wa)
        if wide:
            ctx_set(p.rd_mask, rmask)
            ctx_set(p.wr_mask, wmask)
            for i in range(words):
                ctx_set(p.wr_data[i], data[i])
        else:
            ctx_set(p.wr_data, data[0])

    async def bench(ctx):
        drive.ctx = ctx
        pending = [None] * 3
        for step in range(300):
            taken: set[int] = set()                       # partitions other masters touch this cycle
            writes = []
            for j, p in enumerate(dut.masters):
                ra, wa = address(), address()
                rmask, wmask = (rng.getrandbits(words) or 1, rng.getrandbits(words)) if wide else (1, 1)
                reads = {(ra + i) % top for i in range(words) if rmask >> i & 1}
                wset = {(wa + i) % top for i in range(words) if wmask >> i & 1}
                parts = {a // size for a in reads | wset}
                ok = not parts & taken and rng.random() < 0.85
                rd = ok and rng.random() < 0.8
                wr = ok and bool(wset) and not wset & reads and rng.random() < 0.8
                data = [rng.getrandbits(32) for _ in range(words)]
                drive(p, rd, ra, rmask, wr, wa, wmask, data)
                if rd:
                    taken |= {a // size for a in reads}
                    pending[j] = ([model[(ra + i) % top] for i in range(words)], rmask)
                if wr:
                    taken |= {a // size for a in wset}
                    writes.append((wa, wmask, data))
            assert ctx.get(dut.conflict) == 0, f"step {step}: masters on disjoint partitions flagged"
            assert ctx.get(dut.write_en) == bool(writes), f"step {step}: write_en"
            if len(writes) == 1:
                assert ctx.get(dut.write_addr) == writes[0][0], f"step {step}: write_addr"
                if wide:
                    assert ctx.get(dut.write_last) == (writes[0][0] + words - 1) % top, f"step {step}: write_last"
            await ctx.tick()
            for wa, wmask, data in writes:
                for i in range(words):
                    if wmask >> i & 1:
                        model[(wa + i) % top] = data[i]
            for p in dut.masters:            # idle lines pointing elsewhere: the data is the read's
                drive(p, 0, address(), full, 0, address(), full, [0] * words)
            for j, p in enumerate(dut.masters):
                if pending[j] is not None:
                    want, mask = pending[j]
                    for i in range(words):
                        got = ctx.get(p.rd_data[i]) if wide else ctx.get(p.rd_data)
                        if mask >> i & 1:
                            assert got == want[i], f"step {step}: master {j} lane {i}"
            pending = [None] * 3
        for p in dut.masters:
            drive(p, 0, 0, 0, 0, 0, 0, [0] * words)
        # two masters on one memory: master a writes word 10 (partition 0, bank 2 of 4);
        # the other's word 10 or 14 (the same memory) conflicts, 11 (another bank; with one bank
        # the same memory) and 10 + size (the same bank of the next partition) do not; reads likewise
        bank_mask = 0b0001 if wide else 1
        for a, b in ((0, 1), (1, 2), (0, 2)):
            for kind in ("wr", "rd"):
                for other, clash in ((10, True), (14, True), (11, not wide), (10 + size, False)):
                    for j, p in enumerate(dut.masters):
                        on = j in (a, b)
                        drive(p, on and kind == "rd", 10 if j == a else other, bank_mask,
                              on and kind == "wr", 10 if j == a else other, bank_mask, [0] * words)
                    assert ctx.get(dut.conflict) == clash, (a, b, kind, other)
                for p in dut.masters:
                    drive(p, 0, 0, 0, 0, 0, 0, [0] * words)
        await ctx.tick()        # the memories take a write a cycle after its master (the write stage)
        assert_cells(ctx, dut, model, top)

    simulate(dut, bench)
