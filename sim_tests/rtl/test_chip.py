"""The whole chip (ga2_hdl/rtl/chip.py) in Amaranth's simulator against the golden model.

* every program of the directed suite (gen/fuzz/programs.py) and a handful of random
  programs give exactly the golden model's final external memory, all five
  counters and the halt status (through the `amaranth` simulator interface);
* the top-level port protocol of docs/chip.md, cycle by cycle: start,
  running, halted, the program-memory port (ignored while running), a fault's
  status and status_pc, and running off the end of the instruction memory.
"""
import pytest
from amaranth.hdl import Module
from amaranth.sim import Simulator

from ga2_hdl import golden, isa
from ga2_hdl.formats.bundle import Bundle
from ga2_hdl.rtl.chip import COUNTER_PORTS, GA2Chip
from ga2_hdl.config import PRESETS
from ga2_hdl.isa import HALT, ErrorCode, make
from gen.sim.extmem import ExternalMemoryModel
from gen.fuzz.programs import random_bundle
from gen.fuzz.directed import directed_suite
from gen.sim.simulator import get_simulator
from ga2_hdl.config import PRESETS, Config
from gen.fuzz import programs as fuzz


def test_directed_suite_matches_golden():
    bundle = Bundle.from_programs(directed_suite(config=isa.BOOK), config=isa.BOOK)
    report = get_simulator("amaranth", config=isa.BOOK).run_bundle(bundle)
    assert report.passed, report.line()
    assert report.cycles == bundle.total_cycles
    codes = {p.expected.error for p in bundle.programs}
    assert len(codes) >= 6, "the suite should exercise the error codes"


def test_random_programs_match_golden():
    bundle = random_bundle(5, seed=2024, config=isa.BOOK)
    report = get_simulator("amaranth", config=isa.BOOK).run_bundle(bundle)
    assert report.passed, report.line()


@pytest.mark.slow
def test_many_random_programs_match_golden():
    bundle = random_bundle(200, seed=77, config=isa.BOOK)
    report = get_simulator("amaranth", config=isa.BOOK).run_bundle(bundle)
    assert report.passed, report.line()


def test_run_program_interface_and_smaller_external_memory():
    program = [make("LD", dst=0, src=2040, len=8), make("ST", src=0, dst=0, len=8), HALT]
    ext = [0] * 2040 + list(range(1, 9))
    sim = get_simulator("amaranth", config=isa.BOOK)
    got = sim.run_program(program, ext, ext_words=2048)
    want = golden.run(program, ext, ext_words=2048, config=isa.BOOK)
    assert (got.counters, got.ext, got.error) == (want.counters, want.ext, want.error)
    assert got.ext[:8] == list(range(1, 9))
    # the EXT_RANGE bound follows ext_words
    bad = [make("LD", dst=0, src=2047, len=2), HALT]
    got = sim.run_program(bad, [], ext_words=2048)
    assert (got.error, got.error_pc) == (ErrorCode.EXT_RANGE, 0)


class _Bench:
    """The chip with its external memory, driven port by port."""

    def __init__(self, **chip_args):
        self.chip = GA2Chip(**chip_args)
        self.ext = ExternalMemoryModel(self.chip, self.chip.ext_words, config=self.chip.config)
        m = Module()
        m.submodules.chip = self.chip
        m.submodules.ext = self.ext
        self.top = m

    def run(self, bench):
        sim = Simulator(self.top)
        sim.add_clock(1e-6)
        sim.add_testbench(bench)
        sim.run()

    async def load(self, ctx, words):
        ctx.set(self.chip.imem_we, 1)
        for addr, w in enumerate(words):
            ctx.set(self.chip.imem_addr, addr)
            ctx.set(self.chip.imem_wdata, w.encode() if isinstance(w, isa.Instruction) else w)
            await ctx.tick()
        ctx.set(self.chip.imem_we, 0)

    def counters(self, ctx):
        return isa.Counters(*(ctx.get(getattr(self.chip, p)) for p in COUNTER_PORTS))

    def outcome(self, ctx):
        """What a run leaves: ``status``, ``status_pc`` and the five counters."""
        return ctx.get(self.chip.status), ctx.get(self.chip.status_pc), self.counters(ctx)

    async def start(self, ctx, write=None):
        """One start cycle, with ``write`` = (address, word) written into the instruction memory in it."""
        if write is not None:
            ctx.set(self.chip.imem_we, 1)
            ctx.set(self.chip.imem_addr, write[0])
            ctx.set(self.chip.imem_wdata, write[1].encode())
        ctx.set(self.chip.start, 1)
        await ctx.tick()
        ctx.set(self.chip.start, 0)
        ctx.set(self.chip.imem_we, 0)

    async def until_halted(self, ctx, cycles: int):
        """``ctx.tick().until(halted)``, bounded: a program that takes ``cycles`` cycles has halted by
        the tick ``cycles`` + 1 after the start cycle, so a chip that never halts fails at once
        instead of running until the test is killed."""
        for _ in range(cycles + 1):
            await ctx.tick()
            if ctx.get(self.chip.halted):
                return
        raise AssertionError(f"not halted {cycles + 1} cycles after the start (the program takes {cycles})")


#: the chip's two sequencers: the book's, and the overlapped one (its own FSM, the same port protocol)
SEQUENCERS = [pytest.param(isa.BOOK, id="book"), pytest.param(PRESETS["overlap"], id="overlap")]


@pytest.mark.parametrize("config", SEQUENCERS)
def test_port_protocol_cycle_by_cycle(config):
    """running / halted / counters around start and HALT, for a 2-instruction program."""
    program = [make("LD", dst=0, src=0, len=3), HALT]
    ld_cycles = program[0].cycles()                      # 2 + 3 + LAT + 1
    expected = isa.instruction_set(config).counters(program)
    total = expected.total                               # ld_cycles + 2 in order; one less with overlap
    b = _Bench(config=config)
    chip = b.chip

    async def bench(ctx):
        assert not ctx.get(chip.halted) and not ctx.get(chip.running)   # after reset, before any run
        await b.load(ctx, program)
        assert not ctx.get(chip.running)
        ctx.set(chip.start, 1)
        await ctx.tick()                                  # the start cycle
        ctx.set(chip.start, 0)
        for cycle in range(total):                        # cycle 0 is the first FETCH
            assert ctx.get(chip.running), f"cycle {cycle}: running"
            assert not ctx.get(chip.halted), f"cycle {cycle}: halted too early"
            assert ctx.get(chip.cnt_total) == cycle
            await ctx.tick()
        assert ctx.get(chip.halted) and not ctx.get(chip.running)
        assert b.counters(ctx) == expected == (total, 0, ld_cycles - 2, 0, 1)
        assert (ctx.get(chip.status), ctx.get(chip.status_pc)) == (ErrorCode.OK, 1)
        for _ in range(5):                                # halted is sticky, counters frozen
            await ctx.tick()
            assert ctx.get(chip.halted) and ctx.get(chip.cnt_total) == total
        # a second start clears everything and runs again
        ctx.set(chip.start, 1)
        await ctx.tick()
        ctx.set(chip.start, 0)
        assert not ctx.get(chip.halted) and ctx.get(chip.running) and ctx.get(chip.cnt_total) == 0
        assert b.counters(ctx) == (0,) * 5
        assert (ctx.get(chip.status), ctx.get(chip.status_pc)) == (ErrorCode.OK, 0), "start clears the status"
        await b.until_halted(ctx, total)
        assert b.counters(ctx) == (total, 0, ld_cycles - 2, 0, 1)

    b.run(bench)


@pytest.mark.parametrize("config", SEQUENCERS)
def test_fault_status_and_imem_port_ignored_while_running(config):
    # pc 0: a legal MM; pc 1: a bad shape -> halts there; the HALT at 2 is never reached
    program = [make("MM", dst=100, A=0, B=0, M=2, K=3, N=2), make("MM", dst=0, A=0, B=0, M=5, K=1, N=1), HALT]
    want = golden.run(program, [], config=config)
    b = _Bench(config=config)
    chip = b.chip

    async def bench(ctx):
        await b.load(ctx, program)
        ctx.set(chip.start, 1)
        await ctx.tick()
        ctx.set(chip.start, 0)
        # try to overwrite the faulting word with a HALT while running: must be ignored
        ctx.set(chip.imem_we, 1)
        ctx.set(chip.imem_addr, 1)
        ctx.set(chip.imem_wdata, 0)
        await ctx.tick()
        ctx.set(chip.imem_we, 0)
        await b.until_halted(ctx, want.counters.total)
        assert (ctx.get(chip.status), ctx.get(chip.status_pc)) == (ErrorCode.BAD_SHAPE, 1) \
            == (want.error, want.error_pc)
        assert b.counters(ctx) == want.counters
        if not config.overlap:                            # in order: the MM, then the fault's fetch and issue
            assert want.counters.total == program[0].cycles() + 2
        # the next start clears the fault's status and pc while the program runs
        ctx.set(chip.start, 1)
        await ctx.tick()
        ctx.set(chip.start, 0)
        assert ctx.get(chip.running) and (ctx.get(chip.status), ctx.get(chip.status_pc)) == (ErrorCode.OK, 0)
        await b.until_halted(ctx, want.counters.total)
        assert (ctx.get(chip.status), ctx.get(chip.status_pc)) == (ErrorCode.BAD_SHAPE, 1)

    b.run(bench)


@pytest.mark.parametrize("config", SEQUENCERS)
def test_running_off_the_end_of_instruction_memory(config):
    """Only stale memory can do this (loaders refuse programs without HALT): NO_HALT at pc = imem_words,
    after the units in flight finish, with the counters of the same program ending in a HALT."""
    words = [make("ST", src=0, dst=i, len=1) for i in range(4)]
    config = config.replace(name=f"{config.name}_imem4", imem_words=4)
    b = _Bench(config=config)
    chip = b.chip

    async def bench(ctx):
        await b.load(ctx, words)
        ctx.set(chip.start, 1)
        await ctx.tick()
        ctx.set(chip.start, 0)
        st = words[0].cycles()
        await b.until_halted(ctx, 4 * st + 2)
        assert (ctx.get(chip.status), ctx.get(chip.status_pc)) == (ErrorCode.NO_HALT, 4)
        assert b.counters(ctx) == isa.instruction_set(config).counters(words + [HALT])
        if not config.overlap:
            assert b.counters(ctx) == (4 * st + 2, 0, 4 * (st - 2), 0, 4)

    b.run(bench)


@pytest.mark.parametrize("config", SEQUENCERS)
@pytest.mark.parametrize("case", ["legal_over_fault", "fault_over_legal", "halt_over_legal", "word1", "word2"])
def test_word_written_in_the_start_cycle_is_the_one_that_runs(config, case):
    """A word written through the port in the start cycle itself (word 0 included, whose check the
    book's sequencer keeps ready from the write: docs/fpga.md) runs as written: its verdict, its
    status and pc and all five counters are those of the program as it is after the write."""
    legal = make("LD", dst=0, src=0, len=3)
    fault = make("MM", dst=0, A=0, B=0, M=5, K=1, N=1)              # BAD_SHAPE
    st = make("ST", src=0, dst=8, len=2)
    before, (addr, word) = {
        "legal_over_fault": ([fault, st, HALT], (0, legal)),
        "fault_over_legal": ([legal, st, HALT], (0, fault)),
        "halt_over_legal": ([legal, st, HALT], (0, HALT)),
        "word1": ([legal, st, HALT], (1, fault)),
        "word2": ([legal, st, st, HALT], (2, fault)),
    }[case]
    after = list(before)
    after[addr] = word
    want = golden.run(after, [], config=config)
    b = _Bench(config=config)
    chip = b.chip

    async def bench(ctx):
        await b.load(ctx, before)
        await b.start(ctx, write=(addr, word))            # the start cycle, with the write
        await b.until_halted(ctx, want.counters.total)
        assert b.outcome(ctx) == (want.error, want.error_pc, want.counters)

    b.run(bench)


@pytest.mark.parametrize("config", SEQUENCERS)
def test_a_start_in_the_first_idle_cycle_runs_the_program_from_word_0(config):
    """Both sequencers read ahead (word 1 and beyond before their FETCH): a start in the very first
    idle cycle after a halt, with the program's second word rewritten while the chip was halted,
    runs the program as it is then, its counters the golden model's."""
    first = [make("LD", dst=0, src=0, len=3), make("ST", src=0, dst=8, len=2), HALT]
    second = [first[0], make("MM", dst=100, A=0, B=0, M=2, K=3, N=2), HALT]
    b = _Bench(config=config)
    chip = b.chip

    async def run(ctx, program, write=None):
        """Start now (the first idle cycle after the last run's halt), with ``write`` = (address,
        word) in the start cycle; check the run against the golden model."""
        want = golden.run(program, [], config=config)
        await b.start(ctx, write=write)
        await b.until_halted(ctx, want.counters.total)      # returns in the first idle cycle
        assert (ctx.get(chip.status), b.counters(ctx)) == (want.error, want.counters)

    async def bench(ctx):
        await b.load(ctx, first)
        await run(ctx, first)
        await run(ctx, first)                                # started the cycle it halted in + 1
        await run(ctx, second, write=(1, second[1]))         # word 1 rewritten in that start cycle
        ctx.set(chip.imem_we, 1)                             # word 1 back, the cycle before a start
        ctx.set(chip.imem_addr, 1)
        ctx.set(chip.imem_wdata, first[1].encode())
        await ctx.tick()
        ctx.set(chip.imem_we, 0)
        await run(ctx, first)

    b.run(bench)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_busy_time_leaves_the_read_ahead_its_three_cycles(name):
    """The book sequencer checks the next word over three WAIT cycles (GA2Chip._sequencer): every
    operation's smallest legal instruction (lengths 1, shapes at their lower bound) keeps its unit
    busy at least DEEP_CHECK_BUSY cycles, on every preset.  With fetch_on_done (``fast``) the last
    WAIT cycle is the FETCH, so the busy times of 3 leave the check two cycles (and the chip takes
    the two-cycle check)."""
    from ga2_hdl.rtl.chip import DEEP_CHECK_BUSY, check_cycles, short_busy_times
    config = PRESETS[name]
    assert short_busy_times(config, DEEP_CHECK_BUSY) == []
    # the rule sees the preset's operations at their shortest: some are busy exactly 3 cycles
    assert any(busy == DEEP_CHECK_BUSY for _, busy in short_busy_times(config, DEEP_CHECK_BUSY + 1))
    assert check_cycles(config) == (2 if config.fetch_on_done else 3)


def test_bad_parameters_are_refused(refused):
    refused(lambda: GA2Chip(ext_words=70000, config=isa.BOOK))
    refused(lambda: GA2Chip(config=isa.BOOK.replace(name="huge_imem", imem_words=1 << 16)), match="imem_words=65536")


def test_a_unit_built_without_its_chip_is_a_type_error_not_the_books(refused):
    # config is required below the entry points: a forgotten one is an error, never the book's chip
    from ga2_hdl.rtl.vector_unit import VectorUnit
    refused(lambda: VectorUnit(), TypeError, match="config")   # both check first: nothing is built
    refused(lambda: GA2Chip(), TypeError, match="config")
    refused(lambda: GA2Chip(ext_words=4096), TypeError, match="config")


def test_overlap_with_wide_ports_builds_banks_with_ports_per_master():
    """Overlapped issue and wide ports together: a banked scratchpad whose every bank has a read and
    a write port per master (sim_tests/rtl/test_overlap.py runs it against the golden model)."""
    chip = GA2Chip(config=isa.BOOK.replace(name="both", overlap=True, spad_ports=2))
    assert chip.spad.n_banks == 2 and chip.spad.memory is None


# ==================================================================== wide ports
# Chips with wide ports (presets ``wide2``, ``wide4``) against the golden model, end to end.
# * the golden model's counters on a wide chip are the configuration's ISA
#   formulas (``instruction_set(config).counters``), never the book's, and the
#   memory results are the book chip's (the widths change time, not values);
# * the chip in Amaranth's simulator runs directed programs exactly as the golden
#   model predicts (memory, status and all five counters);
# * (slow) the directed suite and random programs (gen/fuzz/programs.py) in every
#   simulator: golden = Amaranth = Icarus = Verilator = CXXRTL.

WIDE = ("wide2", "wide4")


def _amax_tree_allowance(code, config) -> int:
    """The cycles a wide chip may spend beyond the book's on ``code`` (run to its HALT): AMAX's lane
    tree, log2(P) levels, costs log2(P) - len more than the book's len + 3 on a vector shorter than
    log2(P) words (docs/chip.md's table)."""
    levels = config.spad_ports.bit_length() - 1
    extra = 0
    for ins in code:
        if ins == isa.HALT:
            break
        if ins.mnemonic == "AMAX":
            extra += max(0, levels - ins.len)
    return extra


@pytest.mark.parametrize("name", WIDE)
def test_golden_counters_follow_the_configurations_formulas(name):
    config = PRESETS[name]
    iset = isa.instruction_set(config)
    for title, code, ext in directed_suite(config=isa.BOOK):
        book = golden.run(code, ext, config=isa.BOOK)
        wide = golden.run(code, ext, config=config)
        assert wide.ext == book.ext and wide.error == book.error and wide.error_pc == book.error_pc, title
        if wide.error == isa.ErrorCode.OK:
            assert wide.counters == iset.counters(code), title
            assert wide.counters.total <= book.counters.total + _amax_tree_allowance(code, config), title
            assert wide.counters.instructions == book.counters.instructions, title


#: where the reader programs below store their results in external memory
OUT = 4000
#: one reader of each kind whose first read, in its start cycle, is word ``a`` (its result to ``d``)
READERS = [
    lambda a, d: make("RQ", dst=d, src=a, len=2, m=(1 << 23) + 9, s=20),
    lambda a, d: make("VADD", dst=d, src1=a, src2=a - 1, len=1),
    lambda a, d: make("VADD", dst=d, src1=a - 1, src2=a, len=1),
    lambda a, d: make("SM", dst=d, src=a, len=2),
    lambda a, d: make("AMAX", dst=d, src=a, len=2),
    lambda a, d: make("MM", dst=d, A=a, B=a - 1, M=1, K=1, N=1),
    lambda a, d: make("ST", src=a, dst=OUT + 2 * d, len=1),
]


def _reads_after_a_trailing_write():
    """Programs in which an instruction's first read (in its start cycle) is the word RQ wrote in
    the cycle after its done (RQ's trailing write, in the next instruction's FETCH): the word
    reaches the block RAM a cycle late behind the owned scratchpad's write stage, so only the
    forward gives the reader the new word.  One reader of each kind, each after an RQ of its own."""
    accs = [3_000_000 + 777_777 * i for i in range(8)] + [10]       # word 8: the word after RQ's
    items = []
    for k, reader in enumerate(READERS):
        dst = 100 + 16 * k
        code = [make("LD", dst=0, src=0, len=8), make("LD", dst=dst + 8, src=8, len=1),
                make("RQ", dst=dst, src=0, len=8, m=(1 << 23) + 123457 * k, s=40),
                reader(dst + 7, 300), make("ST", src=300, dst=OUT, len=2),
                make("ST", src=dst, dst=OUT + 8, len=9), HALT]
        items.append((f"trailing_write_then_{code[3].spec.mnemonic.lower()}_{k}", code, accs))
    return items


def test_the_word_rq_writes_after_its_done_is_read_by_the_next_instruction():
    """Every reader sees the word RQ wrote in the cycle before its start cycle: the owned
    scratchpad's forward (``Scratchpad._write_stage``).  Without it, RQ, VADD (src1) and SM read
    the old word (the directed suite and the random programs do not have this case); AMAX, MM
    and ST read their first word later and would not need it, as long as they do not read in
    their start cycle."""
    bundle = Bundle.from_programs(_reads_after_a_trailing_write(), config=isa.BOOK)
    report = get_simulator("amaranth", config=isa.BOOK).run_bundle(bundle)
    assert report.passed, report.line()


def _reads_in_the_cycle_after_done():
    """Programs in which an instruction's first read, in its start cycle, is the last word an LD or
    an MM wrote: with ``Config.fetch_on_done`` that start is the cycle after the writer's done, in
    which the owned scratchpad's write stage still holds the word.  One reader of each kind after
    each writer."""
    accs = [3_000_000 + 777_777 * i for i in range(16)]
    items = []
    for k, reader in enumerate(READERS):
        dst = 100 + 16 * k
        writers = {"ld": make("LD", dst=dst, src=0, len=9),
                   "mm": make("MM", dst=dst + 7, A=0, B=4, M=1, K=3, N=2)}
        for name, writer in writers.items():
            code = [make("LD", dst=0, src=0, len=16), writer, reader(dst + 8, 300),
                    make("ST", src=300, dst=OUT, len=2), make("ST", src=dst, dst=OUT + 8, len=9), HALT]
            items.append((f"{name}_then_{code[2].spec.mnemonic.lower()}_{k}", code, accs))
    return items


@pytest.mark.parametrize("config", [isa.BOOK.replace(name="book_fod", fetch_on_done=True),
                                    pytest.param(PRESETS["fast"], marks=pytest.mark.slow)], ids=lambda c: c.name)
def test_the_word_written_with_done_is_read_by_an_instruction_started_the_cycle_after(config):
    """With ``Config.fetch_on_done`` the next instruction starts in the cycle after an LD's or MM's
    done; every reader reading the writer's last word in that start cycle gets the new word, and
    every counter is the golden model's (one cycle sooner than without the field)."""
    items = _reads_in_the_cycle_after_done()
    without = config.replace(fetch_on_done=False)
    iset = isa.instruction_set(config)
    for title, code, ext in items:
        saved = sum(iset.spec(ins.op).unit != isa.Unit.VECTOR for ins in code[:-1])    # a cycle after each
        assert golden.run(code, ext, config=config).counters.total == \
            golden.run(code, ext, config=without).counters.total - saved, title
    bundle = Bundle.from_programs(items, config=config)
    report = get_simulator("amaranth", config=config).run_bundle(bundle)
    assert report.passed, report.line()


#: P = W (the presets), and P != W: a unit narrower than the banked scratchpad on its low lanes
CHIP_CONFIGS = [PRESETS["wide4"], Config(name="p2w4", spad_ports=2, ext_port_words=4),
                pytest.param(Config(name="p4w1", spad_ports=4), marks=pytest.mark.slow)]


@pytest.mark.parametrize("config", CHIP_CONFIGS, ids=lambda c: c.name)
def test_chip_runs_directed_programs(config):
    names = ("ld_st_12", "mm_3x5x2", "mm_3x5x2_tb", "rq_20", "vadd_20", "amax_20", "len1_all", "mm_strides")
    chosen = [p for p in directed_suite(config=isa.BOOK) if p[0] in names]
    bundle = Bundle.from_programs(chosen, config=config)
    assert len(bundle.programs) == len(names)
    report = get_simulator("amaranth", config=config).run_bundle(bundle)
    assert report.passed, report.line()


@pytest.mark.slow
@pytest.mark.parametrize("name", WIDE)
@pytest.mark.parametrize("sim", ["amaranth", "icarus", "verilator", "cxxrtl"])
def test_directed_suite_and_random_programs_in_every_simulator(name, sim):
    config = PRESETS[name]
    report = fuzz.fuzz(20 if sim == "amaranth" else 200, seed=12, sims=("golden", sim), directed=True,
                       config=config)
    assert report["mismatches"] == 0, report["first_mismatch"]


@pytest.mark.slow
@pytest.mark.parametrize("name", WIDE)
def test_wide_chip_verilog_lints_clean(tmp_path, name):
    from gen.verilog import export as verilog
    exported = verilog.export("chip", config=PRESETS[name])
    verilog.lint(exported.write(tmp_path), exported.unit)


def test_narrow_units_use_the_banked_scratchpad_one_at_a_time():
    """Units narrower than the banked scratchpad (the matrix and vector units' 2-word ports on p2w4's
    4 banks, linked by chip._connect_narrow) drive its master ports only while they access it: in
    every cycle of an LD, MM, VADD and ST program at most one master reads and at most one writes
    (the scratchpad's ``conflict`` flag stays low; the multiplexer ORs the masters' addresses, so a
    second reader would corrupt the first's), while the narrow units do read (counted: not vacuous)."""
    config = Config(name="p2w4", spad_ports=2, ext_port_words=4)
    names = ("mm_3x5x2", "vadd_20")
    programs = [p for p in directed_suite(config=config) if p[0] in names]
    b = _Bench(config=config)
    chip = b.chip
    narrow = [master for master, unit in zip(chip.spad.masters, chip.units.values())
              if unit.signature.members["spad"].signature.words < chip.spad_words_per_access]
    assert len(narrow) == 2
    reads = {"narrow": 0}

    async def bench(ctx):
        for name, code, ext in programs:
            await b.load(ctx, code)
            for addr, word in enumerate(ext):
                ctx.set(b.ext.memory.data[addr], word & isa.WORD_MASK)
            ctx.set(chip.start, 1)
            await ctx.tick()
            ctx.set(chip.start, 0)
            total = isa.instruction_set(config).counters(code).total
            for cycle in range(total + 1):
                assert not ctx.get(chip.spad.conflict), f"{name}: two masters at once in cycle {cycle}"
                reads["narrow"] += sum(ctx.get(master.rd_en) for master in narrow)
                if ctx.get(chip.halted):
                    break
                await ctx.tick()
            assert ctx.get(chip.halted), f"{name}: not halted after {total} cycles"

    b.run(bench)
    assert reads["narrow"] > 0


#: a word the instruction memory's read port may hold at power-on: its output register has no initial
#: value (none in the Verilog, any in the solver's model; Amaranth's simulator starts it at 0, which
#: here is also the memory's word 1, a HALT), so a testbench sets it to this legal instruction
POWER_ON_JUNK = make("ST", src=0, dst=40, len=4)


@pytest.mark.parametrize("config", SEQUENCERS)
def test_a_start_in_the_first_cycle_after_power_on_runs_the_program(config):
    """A start in the very first cycle, word 0 written in the same cycle (word 1 is the memory's initial
    zero, a HALT), runs that program whatever the read port's output register holds at power-on (here
    a word of the testbench's, as the solver may choose): its status and counters are the golden
    model's (the overlapped sequencer once read ahead word 1 from that register: docs/formal.md)."""
    program = [make("LD", dst=0, src=0, len=3), HALT]
    want = golden.run(program, [], config=config)
    b = _Bench(config=config)
    chip = b.chip

    async def bench(ctx):
        (port,) = chip.imem.read_ports
        ctx.set(port.data, POWER_ON_JUNK.encode())
        await b.start(ctx, write=(0, program[0]))         # cycle 0: the write and the start
        await b.until_halted(ctx, want.counters.total)
        assert b.outcome(ctx) == (want.error, want.error_pc, want.counters)

    b.run(bench)


@pytest.mark.parametrize("config", SEQUENCERS)
def test_a_start_in_the_first_cycle_after_a_reset_runs_the_program(config):
    """A one-cycle reset in any cycle of a run (every cycle from its start cycle to two cycles after
    its halt), then in the very first cycle after it word 0 written (a reset clears the sequencers'
    copy of word 0: docs/chip.md) and a start: the program as the memory then holds it runs, status
    and counters the golden model's.  The instruction memory keeps its words across the reset, and the
    read port's output register is not reset in the Verilog (Amaranth's simulator clears it when the
    port is not reading)."""
    from amaranth.hdl import ClockDomain
    program = [make("LD", dst=0, src=0, len=3), make("ST", src=0, dst=8, len=2),
               make("ST", src=1, dst=12, len=1), make("ST", src=0, dst=20, len=3),
               make("LD", dst=8, src=3, len=2), make("ST", src=8, dst=30, len=2), HALT]
    word0 = make("LD", dst=4, src=0, len=2)
    first = golden.run(program, [], config=config)
    want = golden.run([word0, *program[1:]], [], config=config)
    b = _Bench(config=config)
    b.top.domains.sync = sync = ClockDomain("sync")
    chip = b.chip

    async def bench(ctx):
        await b.load(ctx, program)
        for k in range(first.counters.total + 3):
            await b.start(ctx, write=(0, program[0]))     # word 0 back, with the start
            for _ in range(k):
                await ctx.tick()
            ctx.set(sync.rst, 1)                          # the reset in the run's cycle k
            await ctx.tick()
            ctx.set(sync.rst, 0)
            await b.start(ctx, write=(0, word0))          # the first cycle after it: word 0, start
            await b.until_halted(ctx, want.counters.total)
            assert b.outcome(ctx) == (want.error, want.error_pc, want.counters), f"reset in cycle {k} of the run"

    b.run(bench)
