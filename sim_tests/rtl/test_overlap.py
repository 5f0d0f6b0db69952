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
    # LD issued in cycle 1 (busy 2..14); the independent MM in 3 (busy 4..14); HALT waits for both: 15
    ("independent", [LD4, make("MM", dst=100, A=200, B=300, **MM1)], 16),
    # read-after-write: MM reads word 0, which the LD writes: issued in 15, busy to 26, HALT in 27
    ("RAW", [LD4, make("MM", dst=100, A=0, B=300, **MM1)], 28),
    # write-after-read: the LD writes word 0, which the MM reads: LD waits until 13 (MM busy 2..12)
    ("WAR", [make("MM", dst=100, A=0, B=300, **MM1), LD4], 28),
    # write-after-write: RQ writes word 2 inside the LD's 0..3: issued in 15, busy 16..18, HALT in 19
    ("WAW", [LD4, make("RQ", dst=2, src=10, len=1)], 20),
    # read-after-read is no hazard: both read word 0
    ("RAR", [make("ST", src=0, dst=0, len=4), make("MM", dst=100, A=0, B=300, **MM1)], 16),
    # the same unit runs one instruction at a time, even on disjoint regions: LD 1..14, LD 15..28
    ("same unit", [LD4, make("LD", dst=50, src=50, len=4)], 30),
    # just past the end of a region is no conflict (dst 4 after the LD's 0..3)
    ("adjacent", [LD4, make("RQ", dst=4, src=10, len=1)], 16),
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
                    last >= cycle and p.conflicts(q) for last, rs in flight for p in acc for q in rs)
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
        code, _ext = random_program(rng)
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
        code, ext = random_program(rng, illegal=0.3)
        a = golden.run(code, ext, config=OVERLAP)
        b = golden.run(code, ext)
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
        ("independent", [make("LD", dst=0, src=0, len=8), make("MM", dst=20, A=0, B=4, **mm),
                         make("LD", dst=100, src=8, len=8), make("AMAX", dst=40, src=100, len=8),
                         make("ST", src=20, dst=200, len=1), make("ST", src=40, dst=201, len=1), isa.HALT], ext),
        # read-after-read: the ST and the MM read the same words at once
        ("RAR", [make("LD", dst=0, src=0, len=8), make("MM", dst=20, A=0, B=4, **mm),
                 make("ST", src=0, dst=200, len=8), make("ST", src=20, dst=210, len=1), isa.HALT], ext),
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
    log = plain_row("plain", make_model("random", 1), plain_tokens).log if plain_tokens else []
    if speculative_tokens:
        chip, _wd = example_a_chip(speculative_tokens, 3)
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
    book = {name: golden.run(code, ext) for name, code, ext in hazard_programs()}
    for name in by_name:
        assert by_name[name].ext == book[name].ext, name
        assert by_name[name].counters.total < book[name].counters.total, name
    assert by_name["RAW"].ext[200:202] == [3 * 5 + 1 * 7 + 2 * -2 + -1 * 4, 2 * 14]   # RQ: x * 2^23 / 2^22
    assert by_name["WAR"].ext[200:204] == [100, 101, 102, 103] and by_name["WAR"].ext[210] == 14
    assert by_name["WAW"].ext[200:204] == [100, 101, 102, 103]
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
