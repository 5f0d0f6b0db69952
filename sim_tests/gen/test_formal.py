"""The formal contracts (ga2_hdl/contracts) through SymbiYosys: they hold, their covers are reached,
and each is shown able to fail on a mutant from the mutation engine; the clock/reset pitfall.

Needs the optional extra ``formal`` (``pip install -e '.[formal]'``; ``make test`` installs it):
without it every test here is skipped with that reason.  The fast properties run in the
default suite (with the 40-bit divider's proof, 15 s); the DMA's, the matrix unit's, SM's, the 8-bit divider's and the VADD and RQ values take
10-60 s each (load 2-6 on 2 cores) and are marked slow (their planted mutants fail within seconds
and run in the default suite).  SM's values (len <= 3, 59 cycles) take 3 to 4.5 minutes with
their covers (slow); its planted mutant fails in seconds (default suite).  SM's division (len <= 2,
56 cycles) takes 4.5 to 5.5 minutes with its covers, its planted divider mutant about 25 s (both slow).  MM's values (two instructions, 32 cycles) take about 7 minutes and
its accumulator-clear mutant about 2.5 (load 3-3.5): both slow.  The whole array's pieces
(``systolic.values``, ``matrix.staging``, ``matrix.stream``, ``matrix.write_back``) take 45 to 70 s each
with their covers at load 2 (slow); their planted mutants fail in 2 to 7 s (default suite).  On wide2
``matrix.staging`` takes about 9 minutes and ``matrix.write_back`` about 1.5 (load 4: slow); their
wide-path mutants fail in 4 to 7 s (default suite).
"""
import random
import re

import pytest
from amaranth.hdl import Assert, Module, Mux, Signal, signed
from amaranth.sim import Simulator

from ga2_hdl import isa
from ga2_hdl.config import Config, load as load_config
from ga2_hdl.contracts.base import Spec
from gen.formal import mutants, prove, sby

needs_tools = pytest.mark.skipif(sby.tools_problem() is not None, reason=str(sby.tools_problem()))
BOOK = Config.book()
FAST = ("requant.formula", "requant.formula_pipelined", "rq.contract", "vadd.contract", "amax.contract",
        "amax.values", "systolic.pe_product", "systolic.transport", "divider.quotient_remainder")
#: properties whose proof is slow but whose planted mutant fails within seconds
FAST_MUTANTS = FAST + ("vadd.values", "rq.values", "sm.values", "chip.sequencer", "matrix.values_2x2",
                       "systolic.values", "matrix.staging", "matrix.stream", "matrix.write_back",
                       "divider.quotient_remainder_8bit_short")
PROPS = {p.key: p for p in prove.PROPERTIES}

#: one planted mutant per property, from the mutation engine: (file, change, context)
PLANTED = {
    "requant.formula": ("ga2_hdl/rtl/requant.py", "Mux(negative, mantissa, 0) -> Mux(negative, mantissa, 1)",
                        "offset.eq"),
    "requant.formula_pipelined": ("ga2_hdl/rtl/requant.py", "m.d.sync += partial[i, j].eq(a * b) -> pass", ""),
    "rq.contract": ("ga2_hdl/rtl/vector_unit.py", "rd_index < length -> rd_index <= length",
                    "RequantizeEngine._words"),
    "vadd.contract": ("ga2_hdl/rtl/vector_unit.py", "slot < 2 * length -> slot <= 2 * length", "AddEngine._words"),
    "amax.contract": ("ga2_hdl/rtl/vector_unit.py", "rd_index == length - 1 -> rd_index != length - 1",
                      "ArgmaxEngine._words"),
    # the value properties: data bugs the unit contract passes (an operand read twice, ties kept last)
    "vadd.values": ("ga2_hdl/rtl/vector_unit.py", "p2, p1 -> p1, p2", "AddEngine._words"),
    "amax.values": ("ga2_hdl/rtl/vector_unit.py", "value2 > best -> value2 >= best", "ArgmaxEngine._words"),
    # RQ's data path: m, s and relu never loaded into the engine's registers (the requantizer gets 0s)
    "rq.values": ("ga2_hdl/rtl/vector_unit.py", "m.d.sync += local.eq(value) -> pass", "RequantizeEngine._words"),
    "dma.contract": ("ga2_hdl/rtl/dma.py", "self.busy.eq(0) -> self.busy.eq(1)", ""),
    "dma.transfer": ("ga2_hdl/rtl/dma.py", "requested + 1 -> requested + 2", ""),
    "sm.contract": ("ga2_hdl/rtl/softmax.py", "s.rd_index < s.length -> s.rd_index <= s.length", "SoftmaxUnit._scale"),
    # MAX's compare taken in every cycle: the score registered in the start cycle (no read behind it)
    # may become the maximum
    "sm.values": ("ga2_hdl/rtl/softmax.py", "v2 & (score_r > running_max) -> 1", ""),
    # the divider's remainder step subtracting the wrong way round: a wrong quotient, on time
    "sm.division": ("ga2_hdl/rtl/divider.py", "brought_down - divisor -> divisor - brought_down", ""),
    "matrix.contract": ("ga2_hdl/rtl/matrix_unit.py", "wb.n == last_n -> wb.n != last_n", "_write_back: with m.If"),
    # the array's arithmetic: the product register one bit narrower (-128 * -128 wraps)
    "systolic.pe_product": ("ga2_hdl/rtl/systolic.py", "2 * OPERAND.width -> (2 * OPERAND.width) - 1",
                            "products = Signal"),
    # the skew registers advancing in cycles without run (the MM schedule never stalls the array in its
    # streaming, so systolic.values cannot see it; the transport holds for every input sequence)
    "systolic.transport": ("ga2_hdl/rtl/systolic.py", "self.run -> 1", "_skew: with m.Elif(self.run)"),
    # lane 3 of A and of B never fed (only row 3 and column 3 see it)
    "systolic.values": ("ga2_hdl/rtl/systolic.py", "n -> n - 1", "_skew: for i in range(n)"),
    # the accumulators not cleared between tiles: the second MM's C starts from the first's
    "matrix.values": ("ga2_hdl/rtl/systolic.py", "acc.eq(0), -> ", "ProcessingElement"),
    # row 1's A lane takes row 0's skew stage (lane 0 is right: the 1 x 1 values cannot see it)
    "matrix.values_2x2": ("ga2_hdl/rtl/systolic.py", "starts[i] + s - 1 -> starts[i] + s - 2", "_skew"),
    # the whole array's pieces: row 1 of A never staged (the walker's row index steps by 2)
    "matrix.staging": ("ga2_hdl/rtl/matrix_unit.py", "walk.outer + 1 -> walk.outer + 2", "MatrixUnit._stage"),
    # the array stopped one cycle early: the corner cell's last product never accumulated
    "matrix.stream": ("ga2_hdl/rtl/matrix_unit.py", "K + M + N - 2 -> K + M + N - 3", "stream_last"),
    # the write-back's row base never advanced: rows 2 and 3 of C written over row 1 (only M >= 3 sees it)
    "matrix.write_back": ("ga2_hdl/rtl/matrix_unit.py", "wb.row.eq(next_row), -> ", "_write_back"),
    "divider.quotient_remainder_8bit": ("ga2_hdl/rtl/divider.py",
                                        "brought_down >= divisor -> brought_down > divisor", ""),
    # the short division's start: the skipped steps' remainder (numerator >> q) never loaded
    "divider.quotient_remainder_8bit_short": ("ga2_hdl/rtl/divider.py", "rem.eq(self.numerator >> q), -> ",
                                              "numerator >> q"),
    # the first step (in the start cycle, on the inputs): the remainder's test reads the denominator's bit 1
    "divider.quotient_remainder": ("ga2_hdl/rtl/divider.py", "0 -> 1", "first_rem = top"),
    # every unit started at each issue (two starts in one cycle)
    "chip.sequencer": ("ga2_hdl/rtl/chip.py", "selected -> 1",
                       "GA2Chip._sequencer: m.d.comb += unit.start.eq(selected)"),
}


def _marks(key, fast=FAST):
    return [needs_tools] + ([] if key in fast else [pytest.mark.slow])


def test_every_property_has_a_planted_mutant():
    assert set(PLANTED) == set(PROPS)


@pytest.mark.parametrize("key", [pytest.param(k, marks=_marks(k)) for k in PROPS])
def test_property_holds_and_covers_are_reached(key, tmp_path):
    rec = prove.check_property(PROPS[key], BOOK, keep=str(tmp_path))
    assert rec["status"] in ("proven", "bounded"), rec
    assert rec["covers"] == "reached", rec
    if PROPS[key].mode == "prove":
        assert rec["status"] == "proven", rec


@pytest.mark.parametrize("key", [pytest.param(k, marks=_marks(k, FAST_MUTANTS)) for k in PROPS])
def test_planted_mutant_is_rejected(key):
    mutant = mutants.find(*PLANTED[key])
    rec = mutants.check_mutant(mutant, key, "book")
    assert rec["status"] == "failed", (mutant.label, rec)
    assert rec.get("vcd"), rec


#: more planted mutants of a value property, each a data bug its unit contract passes
MORE_PLANTED = {
    # a wrong operand routing: A's words staged at step 0 whatever their k (the walker's k and lane swapped)
    "matrix.values": ("ga2_hdl/rtl/matrix_unit.py", "walk.outer, inner -> inner, walk.outer", "r.land.k"),
    # SCALE's rounding dropped (p = (e * r) >> 22): the scaling's half of the property
    "sm.values": ("ga2_hdl/rtl/softmax.py", "1 << (isa.SOFTMAX_OUT_SHIFT - 1) -> 0 << (isa.SOFTMAX_OUT_SHIFT - 1)", ""),
}


@pytest.mark.slow
@needs_tools
@pytest.mark.parametrize("key", list(MORE_PLANTED))
def test_more_planted_mutants_are_rejected(key):
    rec = mutants.check_mutant(mutants.find(*MORE_PLANTED[key]), key, "book")
    assert rec["status"] == "failed", rec


#: the value properties' mutants that are data bugs, each with the unit contract that must hold on it
DATA_BUGS = [pytest.param(PLANTED["matrix.values"], "matrix.contract", id="matrix-clear"),
             pytest.param(MORE_PLANTED["matrix.values"], "matrix.contract", id="matrix-routing"),
             pytest.param(PLANTED["sm.values"], "sm.contract", id="sm-max"),
             pytest.param(MORE_PLANTED["sm.values"], "sm.contract", id="sm-rounding")]


@pytest.mark.slow
@needs_tools
@pytest.mark.parametrize("planted,contract", DATA_BUGS)
def test_value_mutants_pass_the_unit_contract(planted, contract):
    """The value properties' mutants are data bugs: the unit contract (timing, ports, regions) holds on them."""
    rec = mutants.check_mutant(mutants.find(*planted), contract, "book")
    assert rec["status"] == "bounded", rec


@needs_tools
def test_divider_step_specs_product_is_the_multiplication():
    """The 40-bit proof's spec builds the quotient so far times the divisor by shift and add; at 8 bits
    the solver also proves that product equal to the multiplication of the bits recorded and D."""
    from ga2_hdl.contracts.divider import DividerStepSpec
    verdict = sby.check(DividerStepSpec(8, check_product=True), mode="prove", depth=2, name="div8product")
    assert verdict.status == "proven", verdict.detail


def test_divider_step_spec_names_a_missing_register():
    """The step invariant reads the divider's registers by name: a name the divider does not assign is
    refused with the name, not read as a free value."""
    from amaranth.hdl import Fragment
    from ga2_hdl.contracts.divider import registers
    from ga2_hdl.rtl.divider import Divider
    fragment = Fragment.get(Divider(8), None)
    assert set(registers(fragment, ("rem", "divisor"))) == {"rem", "divisor"}
    with pytest.raises(LookupError, match="remainder_register"):
        registers(fragment, ("rem", "remainder_register"))


#: the divider's mutants argued equivalent in gen/mutation/equivalents.py: the 40-bit proof holds on each
DIVIDER_EQUIVALENTS = [
    ("w -> w - 1", "steps_left = Signal(range(w))"),
    ("w + 1 -> (w + 1) - 1", "brought_down = Signal(w + 1)"),
    ("w - 1 -> w - 0", "next_num_quot = Cat(fits, num_quot[:w - 1])"),
    ("w - 1 -> w - 0", "first_num_quot = Cat(first_fits, self.numerator[:w - 1])"),
]


@pytest.mark.slow
@needs_tools
@pytest.mark.parametrize("change,context", DIVIDER_EQUIVALENTS)
def test_divider_mutants_argued_equivalent_are_proven_correct(change, context):
    from gen.mutation.equivalents import argument_for
    mutant = mutants.find("ga2_hdl/rtl/divider.py", change, context)
    assert argument_for(mutant), mutant
    rec = mutants.check_mutant(mutant, "divider.quotient_remainder", "book")
    assert rec["status"] == "proven", rec


@needs_tools
def test_rq_values_is_skipped_where_no_property_proves_the_requantizer():
    """With overlap the RQ engine's requantizer has a form (magnitude stage, one-stage multiply) that
    neither requant property proves: rq.values says so instead of proving half a claim."""
    rec = prove.check_property(PROPS["rq.values"], load_config("overlap"), covers=False)
    assert rec["status"] == "skipped" and "(True, False)" in rec["detail"], rec


#: the whole array's pieces on a wide port (wide2: two-word scratchpad port, 4 x 4 array), each with a
#: planted mutant of the wide path only (a one-word port never elaborates it)
WIDE_PLANTED = {
    # the staging register's last lane never loaded: every value landing in bank (or lane) P-1 is 0
    "matrix.staging": ("ga2_hdl/rtl/matrix_unit.py", "self.ports -> self.ports - 1", "staged.data[j].eq"),
    # the write-back register's last lane never selected: C[m][n] with n mod P = P-1 written as 0
    "matrix.write_back": ("ga2_hdl/rtl/matrix_unit.py", "self.ports -> self.ports - 1",
                          "_write_back: for j in range(self.ports))]"),
}


@pytest.mark.slow
@needs_tools
@pytest.mark.parametrize("key", list(WIDE_PLANTED))
def test_whole_array_pieces_hold_on_wide_ports(key, tmp_path):
    """Staging's and the write-back's properties on wide2 (the banked operand memories' write port, the
    P-word write-back), at the book's bounds and depth rule, their covers reached."""
    rec = prove.check_property(PROPS[key], load_config("wide2"), keep=str(tmp_path))
    assert (rec["status"], rec["covers"]) == ("bounded", "reached"), rec


@needs_tools
@pytest.mark.parametrize("key", list(WIDE_PLANTED))
def test_wide_path_mutant_is_rejected_on_wide_ports(key):
    """Each wide-path mutant fails its property on wide2 (4 to 7 s each at load 3.3: default suite)."""
    mutant = mutants.find(*WIDE_PLANTED[key])
    rec = mutants.check_mutant(mutant, key, "wide2")
    assert rec["status"] == "failed", (mutant.label, rec)
    assert rec.get("vcd"), rec


@pytest.mark.slow
@needs_tools
@pytest.mark.parametrize("key", list(WIDE_PLANTED))
def test_book_planted_mutant_is_rejected_on_wide_ports(key):
    """The book's planted mutants of the two pieces (a walker's row step, the write-back's row base) fail on
    wide2 too (6 and 10 s at load 3.5)."""
    mutant = mutants.find(*PLANTED[key])
    rec = mutants.check_mutant(mutant, key, "wide2")
    assert rec["status"] == "failed", (mutant.label, rec)


@pytest.mark.parametrize("streaming", [False, True], ids=["", "streaming"])
@pytest.mark.parametrize("ports", [1, 2, 4, 8])
def test_write_back_schedule_ends_the_cycle_before_the_isas_busy_time(ports, streaming):
    """``matrix.write_back``'s cycles (X + 1 + m*ceil(N/P) + n div P, X = DRAIN + 2 + K + M + N, DRAIN
    ``matrix.stream``'s) for every MM shape up to 8 x 8 x 8: C's last write comes the cycle before
    ``done`` at the ISA's busy time (the golden model's), and a row's chunks are consecutive cycles.
    Streaming while staging, DRAIN is K - 1 cycles earlier for a B not transposed."""
    config = Config.book() if ports == 1 else Config(name=f"p{ports}", spad_ports=ports, ext_port_words=ports)
    config = config.replace(stream_while_staging=streaming)
    iset = isa.instruction_set(config)
    ceil = lambda v: -(-v // ports)
    for M in range(1, 9):
        for K in range(1, 9):
            for N in range(1, 9):
                for tb in (0, 1):
                    drain = M * ceil(K) + (N * ceil(K) if tb else K * ceil(N)) + 2
                    drain -= K - 1 if streaming and not tb else 0
                    X = drain + 2 + K + M + N
                    cycles = {(m, n): X + 1 + m * ceil(N) + n // ports for m in range(M) for n in range(N)}
                    ins = iset.make("MM", M=M, K=K, N=N, tb=tb, lda=K, ldb=N if not tb else K, ldc=N)
                    assert max(cycles.values()) + 1 == iset.busy(ins), (M, K, N, tb)
                    assert sorted(set(cycles.values())) == list(range(X + 1, X + 1 + M * ceil(N)))


@needs_tools
def test_the_read_ahead_finding_fails_the_sequencer_on_overlap():
    """The finding of docs/formal.md ("The sequencer") planted back by the mutation engine: the
    overlapped sequencer's ``nxt`` takes the instruction memory's output register exactly when it does
    not hold word 1 (at power on it has no value), and the sequencer's contract fails on overlap."""
    mutant = mutants.find("ga2_hdl/rtl/chip.py", "imem_rd.data, nxt -> nxt, imem_rd.data", "GA2Chip._overlapped")
    rec = mutants.check_mutant(mutant, "chip.sequencer", "overlap")
    assert rec["status"] == "failed", (mutant.label, rec)
    assert rec.get("vcd"), rec


@pytest.mark.slow
@needs_tools
def test_sequencer_holds_on_the_overlapped_chip(tmp_path):
    """The sequencer's contract on the preset overlap, at its own depth (13 cycles, about 5 minutes at
    load 2-3), its covers reached."""
    rec = prove.check_property(PROPS["chip.sequencer"], load_config("overlap"), keep=str(tmp_path))
    assert (rec["status"], rec["depth"], rec["covers"]) == ("bounded", prove.OVERLAP_SEQUENCER_DEPTH, "reached"), rec


@pytest.mark.parametrize("config", ["book", "wide2", "overlap"])
def test_sequencer_cut_points_name_the_chips_data_paths(config):
    """Each cut point of the sequencer's contract names a module (or a module's memory) of the
    converted design (a Yosys pattern: at least one): a misspelt one would cut nothing (only a
    slower proof), a renamed module too."""
    import fnmatch
    from ga2_hdl.contracts.sequencer import SequencerContract
    spec = SequencerContract(load_config(config))
    text = sby.convert(spec)
    bodies = dict(re.findall(r"^module \\(\S+)$(.*?)^end$", text, re.M | re.S))
    for sel in spec.cutpoints:
        module, _, cells = sel.partition("/")
        found = fnmatch.filter(bodies, module)
        assert found, (sel, sorted(bodies))
        if cells:                                  # t:TYPE: a cell of that type in the module
            assert all(f"cell {cells[2:]} " in bodies[name] for name in found), sel


# ------------------------------------------------------------------ the pitfalls
class _Counter(Spec):
    """Counts 0..9 and wraps; with ``bug`` it goes on to 10 in cycle 10."""

    def __init__(self, bug):
        super().__init__()
        self.bug = bug

    def contract(self, m):
        c = Signal(4)
        m.d.sync += c.eq(c + 1 if self.bug else Mux(c == 9, 0, c + 1))
        m.d.comb += Assert(c <= 9)


@needs_tools
def test_clock_and_reset_left_out_of_the_ports_pass_vacuously():
    assert sby.check(_Counter(True), mode="bmc", depth=14, name="c").status == "failed"
    # the pitfall: the same bug, the clock and reset not among the ports: nothing ever ticks
    assert sby.check(_Counter(True), mode="bmc", depth=14, name="c", clock=False).status == "bounded"
    assert sby.check(_Counter(False), mode="prove", depth=4, name="c").status == "proven"


@needs_tools
@pytest.mark.parametrize("multiclock", [False, True])
def test_depth_is_in_clock_cycles(multiclock):
    # the bug shows in cycle 10: 10 cycles (0..9) see nothing, 11 see it, whatever the clocking
    # (with multiclock on the runner asks SBY for twice the steps)
    assert sby.check(_Counter(True), mode="bmc", depth=11, name="c", multiclock=multiclock).status == "failed"
    if not multiclock:
        assert sby.check(_Counter(True), mode="bmc", depth=10, name="c").status == "bounded"


def test_missing_tools_are_named_in_one_line(monkeypatch):
    monkeypatch.setattr(sby, "_tool", lambda name: None)
    problem = sby.tools_problem()
    assert problem is not None and "\n" not in problem and ".[formal]" in problem


# ------------------------------------------------------------------ the references are the ISA's
def test_requantizer_reference_is_the_isa_formula():
    from ga2_hdl.contracts.requant import reference
    from ga2_hdl.rtl.requant import PRODUCT_BITS
    m = Module()
    product, negative, shift, relu = Signal(PRODUCT_BITS), Signal(), Signal(6), Signal()
    q = reference(m, product, negative, shift, relu)
    rng = random.Random(7)
    cases = [(acc, mant, s, r) for acc in (0, 1, -1, 2**31 - 1, -2**31, 127, -128, 300)
             for mant in (0, 1, 2**23, 2**24 - 1) for s in (0, 1, 2, 23, 31, 63) for r in (0, 1)]
    cases += [(rng.randrange(-2**31, 2**31), rng.randrange(2**24), rng.randrange(64), rng.randrange(2))
              for _ in range(300)]
    sim = Simulator(m)

    async def bench(ctx):
        for acc, mant, s, r in cases:
            ctx.set(product, abs(acc) * mant)
            ctx.set(negative, acc < 0)
            ctx.set(shift, s)
            ctx.set(relu, r)
            assert ctx.get(q) == isa.requantize(acc, mant, s, bool(r)), (acc, mant, s, r)

    sim.add_testbench(bench)
    sim.run()


def _golden(op, spad, **operands):
    """The golden model's result of one vector instruction on the scratchpad ``spad``."""
    from ga2_hdl.golden import Machine
    machine = Machine(config=BOOK)
    machine.spad[:len(spad)] = spad
    ins = isa.make(op, **operands)
    machine._execute[ins.op](machine, ins)
    return machine.spad.tolist()


def test_vector_references_are_the_golden_models():
    """The value properties' hardware forms (ga2_hdl/contracts/vector.py) equal the golden model's
    VADD and AMAX on corner and random words."""
    from ga2_hdl.contracts.vector import first_max_index, saturating_add
    corners = [0, 1, 127, 128, 129, 255, 0x7F, 0x80, 0xFF, 0x100, 0x17F, 0x7FFFFFFF, 0x80000000,
               0xFFFFFFFF, 0xFFFFFF81, 0x12345680]
    rng = random.Random(11)
    pairs = [(x, y) for x in corners for y in corners] + [(rng.getrandbits(32), rng.getrandbits(32))
                                                         for _ in range(200)]
    triples = [(rng.choice(corners), rng.choice(corners), rng.choice(corners), rng.randrange(1, 4))
               for _ in range(200)] + [(5, 5, 5, 3), (1, 7, 7, 3), (9, 2, 9, 3), (0x80000000,) * 3 + (2,)]
    m = Module()
    x, y = Signal(32), Signal(32)
    words, length = [Signal(32) for _ in range(3)], Signal(2)
    total, index = saturating_add(m, x, y), first_max_index(m, words, length)
    sim = Simulator(m)

    async def bench(ctx):
        for a, b in pairs:
            ctx.set(x, a)
            ctx.set(y, b)
            assert ctx.get(total) == _golden("VADD", [a, b], dst=2, src1=0, src2=1, len=1)[2], (a, b)
        for *ws, n in triples:
            for s, w in zip(words, ws):
                ctx.set(s, w)
            ctx.set(length, n)
            assert ctx.get(index) == _golden("AMAX", ws, dst=3, src=0, len=n)[3], (ws, n)

    sim.add_testbench(bench)
    sim.run()


def test_matrix_reference_is_the_golden_models():
    """MM's hardware form (ga2_hdl/contracts/matrix.py: dot_word) equals the golden model's MM, one
    element of C from K words of A and of B, on corner and random words."""
    from ga2_hdl.contracts.matrix import dot_word
    corners = [0, 1, 0x7F, 0x80, 0x81, 0xFF, 0x17F, 0xFFFFFF80, 0x7FFFFFFF, 0x80000000]
    rng = random.Random(13)
    cases = [([rng.choice(corners) for _ in range(6)], rng.randrange(1, 4)) for _ in range(150)]
    cases += [([0x80] * 6, 3), ([0x7F] * 6, 3), ([0x81, 0x81, 0x81, 0x7F, 0x7F, 0x7F], 3)]
    m = Module()
    a, b, k = [Signal(32) for _ in range(3)], [Signal(32) for _ in range(3)], Signal(2)
    c = dot_word(m, a, b, k)
    sim = Simulator(m)

    async def bench(ctx):
        for words, n in cases:
            for s, w in zip(a + b, words):
                ctx.set(s, w)
            ctx.set(k, n)
            # A (1 x n) at 0.., B (n x 1) at 3..: C at 6
            spad = words[:n] + [0] * (3 - n) + words[3:3 + n]
            assert ctx.get(c) == _golden("MM", spad, dst=6, A=0, B=3, M=1, K=n, N=1)[6], (words, n)

    sim.add_testbench(bench)
    sim.run()


def test_softmax_reference_is_the_golden_models():
    """SM's hardware form (ga2_hdl/contracts/softmax.py: exp_terms, then scaled with the quotient of
    isa.divide_u40, the divider's definition) equals the golden model's SM on corner and random scores."""
    from ga2_hdl.contracts.softmax import exp_terms, scaled
    corners = [0, 1, 0x7F, 0x80, 0x81, 0xFF, 0x17F, 0xFFFFFF80, 0x7FFFFFFF, 0x10, 0xF0]
    rng = random.Random(17)
    cases = [([rng.choice(corners) for _ in range(3)], rng.randrange(1, 4)) for _ in range(150)]
    cases += [([rng.getrandbits(32) for _ in range(3)], 3) for _ in range(100)]
    cases += [([0x7F, 0x80, 0x80], 3), ([0x80, 0x7F, 0x80], 2), ([5, 5, 5], 3), ([0x7F, 0x7F, 0x80], 3)]
    m = Module()
    words, length, product = [Signal(32) for _ in range(3)], Signal(2), Signal(40)
    terms, total = exp_terms(m, words, length)
    p = scaled(m, product)
    sim = Simulator(m)

    async def bench(ctx):
        for ws, n in cases:
            for s, w in zip(words, ws):
                ctx.set(s, w)
            ctx.set(length, n)
            r, _ = isa.divide_u40(isa.SOFTMAX_NUMERATOR, ctx.get(total))
            want = _golden("SM", ws[:n], dst=3, src=0, len=n)[3:3 + n]
            got = []
            for e in terms[:n]:
                ctx.set(product, ctx.get(e) * r)
                got.append(ctx.get(p))
            assert got == want, (ws, n)

    sim.add_testbench(bench)
    sim.run()


def test_busy_time_in_hardware_is_the_isas():
    """hardware_busy evaluates the ISA's busy function on hardware operands: equal to Instruction.busy."""
    from ga2_hdl.contracts.unit import hardware_busy
    from ga2_hdl.rtl.layout import INSTRUCTION
    for config in (BOOK, load_config("wide4")):
        iset = isa.instruction_set(config)
        m = Module()
        ins = Signal(INSTRUCTION)
        outs = {s.mnemonic: hardware_busy(ins, s) for s in iset.ops if s.mnemonic != "HALT"}
        rng = random.Random(3)
        samples = []
        for s in iset.ops:
            if s.mnemonic == "HALT":
                continue
            for _ in range(20):
                ops = {o.name: rng.randrange(1, 1 << min(o.bits, 6)) if o.bits > 1 else rng.randrange(2)
                       for o in s.operands}
                samples.append((s.mnemonic, iset.make(s.mnemonic, **ops)))
        sim = Simulator(m)

        async def bench(ctx):
            for name, i in samples:
                ctx.set(ins.as_value(), i.encode())
                assert ctx.get(outs[name]) == iset.busy(i), (config.name, str(i))

        sim.add_testbench(bench)
        sim.run()


# ------------------------------------------------------------------ the command
def test_prove_without_the_tools_says_what_to_install(monkeypatch, capsys):
    from ga2_cli.main import main
    monkeypatch.setattr(sby, "_tool", lambda name: None)
    assert main(["prove", "--unit", "requant"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and ".[formal]" in err[0], err


def test_prove_refuses_an_unknown_unit_in_one_line(capsys):
    from ga2_cli.main import main
    if sby.tools_problem() is not None:
        pytest.skip(sby.tools_problem())
    assert main(["prove", "--unit", "nosuch"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nosuch" in err[0] and "requant" in err[0], err


@needs_tools
def test_prove_writes_the_json(tmp_path, capsys):
    import json
    from ga2_cli.main import main
    out = tmp_path / "p.json"
    # AMAX's contract: the cheapest unit, bounded (test_property_holds_and_covers_are_reached checks
    # a proven one, requant.formula, through the same record)
    assert main(["prove", "--unit", "amax", "--json", str(out), "--keep", str(tmp_path)]) == 0
    rep = json.loads(out.read_text())
    recs = rep["properties"]
    assert [(r["unit"], r["name"], r["status"], r["covers"]) for r in recs] == [
        ("amax", "contract", "bounded", "reached"), ("amax", "values", "bounded", "reached")]
    assert recs[0]["depth"] == PROPS["amax.contract"].depth(BOOK)
    assert all(r["seconds"] > 0 for r in recs) and rep["config"] == "book"
    assert "amax.contract" in capsys.readouterr().out


# ------------------------------------------------------------------ the same assertions in simulation
SIM_PLANTED = {"rq": PLANTED["rq.contract"], "vadd": PLANTED["vadd.contract"], "amax": PLANTED["amax.contract"],
               "dma": PLANTED["dma.contract"], "sm": PLANTED["sm.contract"]}


@pytest.mark.parametrize("config", ["book", "wide2"])
@pytest.mark.parametrize("unit", list(SIM_PLANTED))
def test_contract_holds_in_amaranths_simulator(unit, config):
    """The contract's own Assert statements, checked by Amaranth's simulator on random legal
    instructions of lengths up to 20 (beyond the bounded proofs' sizes)."""
    from gen.formal.simcheck import simulate_contract
    simulate_contract(unit, load_config(config), instructions=12, seed=5)


@pytest.mark.parametrize("unit", list(SIM_PLANTED))
def test_contract_in_simulation_rejects_the_planted_mutant(unit):
    assert mutants.simulate_mutant(mutants.find(*SIM_PLANTED[unit]), unit).startswith("failed")


#: the streaming-while-staging schedule's planted mutant: the clear (and so the stream) a cycle early
#: on a one-word port, so that B's last row would be read the cycle it lands (``matrix.staging`` says
#: when each row lands, ``matrix.stream`` when the stream reads it)
STREAMING_PLANTED = ("ga2_hdl/rtl/matrix_unit.py", "2 -> 3", "first_read = 2 if")


def _book_with(tmp_path, name: str, *fields: str) -> str:
    """A configuration file: the book's chip named ``name`` with each bool field of ``fields`` set (the
    mutant's child process reads a file, not a Config)."""
    path = tmp_path / f"{name}.toml"
    path.write_text(f'name = "{name}"\n' + "".join(f"{f} = true\n" for f in fields))
    return str(path)


@pytest.fixture
def streaming_book(tmp_path):
    return _book_with(tmp_path, "book_sws", "stream_while_staging")


@needs_tools
def test_streaming_mutant_is_rejected_by_stream(streaming_book):
    """Streaming while staging, the stream started a cycle early (before B's last row lands) fails
    ``matrix.stream`` on the book's array."""
    mutant = mutants.find(*STREAMING_PLANTED)
    rec = mutants.check_mutant(mutant, "matrix.stream", streaming_book)
    assert rec["status"] == "failed", (mutant.label, rec)
    assert rec.get("vcd"), rec


@pytest.mark.slow
@needs_tools
@pytest.mark.parametrize("key", ["matrix.values", "matrix.staging", "matrix.stream", "matrix.write_back"])
def test_matrix_pieces_hold_streaming_while_staging(key, streaming_book, tmp_path):
    """The matrix unit's values and its three pieces on the book's array streaming while staging, their
    covers reached (staging at M, N, K <= 2, where a row of B lands while the stream runs)."""
    rec = prove.check_property(PROPS[key], load_config(streaming_book), keep=str(tmp_path))
    assert (rec["status"], rec["covers"]) == ("bounded", "reached"), rec


# ----------------------------------------------------------------------------- the thirteenth session's fields
@pytest.fixture
def timing_book(tmp_path):
    """The book's chip with fast's two timing fields: MM's done with its last write, SM's short division."""
    return _book_with(tmp_path, "book_timing", "mm_done_with_write", "short_division")


@needs_tools
def test_the_short_division_is_proven_at_40_bits_and_its_state_is_needed(timing_book, tmp_path):
    """``divider.quotient_remainder`` on a chip with ``short_division``: the 40-bit divider's short form
    (23 quotient bits, the precondition assumed) proven by k-induction, covers reached; with the skipped
    steps' count never loaded (``steps_left.eq(q)`` dropped) it fails."""
    rec = prove.check_property(PROPS["divider.quotient_remainder"], load_config(timing_book), keep=str(tmp_path))
    assert (rec["status"], rec["covers"]) == ("proven", "reached"), rec
    mutant = mutants.find("ga2_hdl/rtl/divider.py", "steps_left.eq(q), -> ", "steps_left.eq(q)")
    rec = mutants.check_mutant(mutant, "divider.quotient_remainder", timing_book)
    assert rec["status"] == "failed", (mutant.label, rec)


@needs_tools
def test_mm_done_with_write_a_cycle_early_fails_the_unit_contract(timing_book):
    """``matrix.contract`` says done comes in t+W of the ISA's busy time: with ``mm_done_with_write`` a
    done registered as before (a cycle late for the formula's 6) fails it."""
    from ga2_hdl.support.mutation import Mutant
    comb = "m.d.comb += self.done.eq(r.out.valid & r.out.last)"
    mutant = Mutant("ga2_hdl/rtl/matrix_unit.py", comb, comb.replace("comb", "sync"),
                    name="MM's done registered a cycle after its last write, with the field set")
    rec = mutants.check_mutant(mutant, "matrix.contract", timing_book)
    assert rec["status"] == "failed", (mutant.label, rec)


@pytest.fixture
def fetch_on_done_book(tmp_path):
    return _book_with(tmp_path, "book_fod", "fetch_on_done")


@needs_tools
@pytest.mark.parametrize("change", [
    # never merged: the book's FETCH after every unit (the next issue a cycle late after LD, ST, MM)
    "isa.fetch_after(self.config, kind) == 0 -> isa.fetch_after(self.config, kind) == -1",
    # merged after the vector unit instead of after the DMA and the matrix unit
    "isa.fetch_after(self.config, kind) == 0 -> isa.fetch_after(self.config, kind) != 0",
])
def test_fetch_on_done_at_the_wrong_units_fails_the_sequencer(fetch_on_done_book, change):
    """``chip.sequencer`` on a chip with ``fetch_on_done`` asserts the ISA's issue cycles (one after
    the done of LD, ST and MM, two after the vector unit's): a sequencer that merges FETCH into the
    done cycle after no unit, or after the wrong ones, fails it (about 15 s each)."""
    mutant = mutants.find("ga2_hdl/rtl/chip.py", change)
    rec = mutants.check_mutant(mutant, "chip.sequencer", fetch_on_done_book)
    assert rec["status"] == "failed", (mutant.label, rec)


@pytest.mark.slow
@needs_tools
def test_sequencer_holds_with_fetch_on_done(fetch_on_done_book, tmp_path):
    """The sequencer's contract on the book's chip with ``fetch_on_done``, at its depth (15 cycles,
    about 6 minutes), covers reached; and the DMA's and the matrix unit's unit contracts, which with
    the field allow no write after done (``isa.trailing_write_cycles`` 0)."""
    config = load_config(fetch_on_done_book)
    for key in ("chip.sequencer", "dma.contract", "matrix.contract"):
        rec = prove.check_property(PROPS[key], config, keep=str(tmp_path))
        assert (rec["status"], rec["covers"]) == ("bounded", "reached"), rec
