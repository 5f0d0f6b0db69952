"""The issue-time legality check in hardware against isa.check, instruction by instruction."""
import random

import pytest
from amaranth.sim import Simulator

from ga2_hdl import isa
from ga2_hdl.rtl.decoder import IssueCheck, operand, unit_ops


def _interesting(bits: int, rng: random.Random) -> int:
    """Values near the edges that the rules care about, and some uniform ones."""
    top = (1 << bits) - 1
    pool = [0, 1, 2, 3, 4, 5, 63, 64, 65, isa.SPAD_WORDS - 1, isa.SPAD_WORDS, isa.SPAD_WORDS + 1,
            2047, 2048, 8191, 8192, top, top - 1]
    pool = [v for v in pool if 0 <= v <= top]
    if rng.random() < 0.5:
        return rng.choice(pool)
    return rng.randrange(1 << min(bits, rng.choice((3, 7, 12, bits))))


def random_instruction(rng: random.Random) -> isa.Instruction:
    op = rng.choice(list(range(16)) + [c for c in isa.OP_BY_CODE for _ in range(4)])
    if op not in isa.OP_BY_CODE:
        return isa.Instruction(op, a=rng.randrange(1 << 16), x=rng.randrange(1 << 18))
    spec = isa.OP_BY_CODE[op]
    fields = {f: 0 for f in isa.OPERAND_FIELDS}
    for o in spec.operands:
        fields[o.field] |= _interesting(o.bits, rng) << o.lsb
    # overlapping-but-not-identical regions are rare by chance: provoke them
    if spec.disjoint_or_same and rng.random() < 0.3:
        base = rng.randrange(200)
        fields["a"] = base
        fields["b"] = base + rng.choice((0, 1, 2, 5))
    return isa.Instruction(op, **fields)


@pytest.mark.parametrize("ext_words", [isa.EXT_WORDS_DEFAULT, 2048])
def test_issue_check_matches_isa_check(ext_words):
    rng = random.Random(ext_words)
    cases = [random_instruction(rng) for _ in range(3000)]
    # every operation's own MM examples at the edge of the shape rules
    cases += [isa.make("MM", dst=0, A=0, B=0, M=m, K=k, N=n) for m in (0, 1, 4, 5) for k in (0, 1, 64, 65)
              for n in (0, 4, 5)]
    cases += [isa.make("MM", dst=4095, A=0, B=0, M=1, K=1, N=1, tb=tb, ldb=4095) for tb in (0, 1)]
    dut = IssueCheck(ext_words, config=isa.BOOK)
    seen = set()

    async def bench(ctx):
        for ins in cases:
            ctx.set(dut.ins.as_value(), ins.encode())
            want, why = isa.check(ins, ext_words)
            got = ctx.get(dut.error)
            assert got == want, f"{ins}: hardware says {isa.ErrorCode(got).name}, isa.check {want.name} ({why})"
            seen.add(want)

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    assert seen == set(isa.ErrorCode) - {isa.ErrorCode.NO_HALT}   # every code is exercised


def test_operand_slices_follow_the_isa():
    ins = isa.make("MM", dst=1, A=2, B=3, M=4, K=5, N=2, tb=1, lda=7, ldb=9, ldc=11)
    from amaranth.hdl import Signal
    from ga2_hdl.rtl.layout import INSTRUCTION
    sig = Signal(INSTRUCTION)
    got = {}

    async def bench(ctx):
        ctx.set(sig.as_value(), ins.encode())
        for o in isa.OP_BY_NAME["MM"].operands:
            got[o.name] = ctx.get(operand(sig, "MM", o.name))

    from amaranth.hdl import Module
    m = Module()
    m.d.comb += Signal().eq(sig.as_value()[0])
    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert got == ins.operands()


def test_unit_ops():
    # every operation but HALT runs on exactly one unit, and unit_ops lists it there (the ops
    # themselves are the ISA's: the book's table is checked in test_isa.py)
    units = [u for u in isa.Unit if u is not isa.Unit.NONE]
    listed = [code for u in units for code in unit_ops(u, config=isa.BOOK)]
    assert sorted(listed) == sorted(s.code for s in isa.OPS if s.unit is not isa.Unit.NONE)
    for u in units:
        assert unit_ops(u, config=isa.BOOK) == tuple(sorted(s.code for s in isa.OPS if s.unit is u))


_FLAGGED = """
from ga2_hdl.isa import Extension, Operand, OpSpec, Region, Unit
def ops(config):
    return (OpSpec(12, "PICK", Unit.VECTOR,   # free: relu_ext 8, test_extension 9..11, overread_ext 13 (one process loads them all)
                   (Operand("dst", "a"), Operand("src", "b"), Operand("len", "c"), Operand("sel", "fl", 0, 1)),
                   "copy from src, or from dst + 8", "len + 1", lambda i: i.len + 1,
                   lambda i: (Region("spad", i.dst, i.len, "dst"),
                              Region("spad", i.src if i.sel else i.dst + 8, i.len, "src")),
                   lengths=("len",), disjoint_or_same=True),)
EXTENSION = Extension(ops=ops, golden={"PICK": lambda m, i: None})
"""


def test_a_region_whose_start_a_flag_chooses(tmp_path, monkeypatch):
    """An extension's region rule that branches on a one-bit operand is built as one rule per flag
    value, multiplexed by the flag: the hardware must pick the start and the end of the flag's own
    variant (the OVERLAP rule reads the starts, the range rules the ends; instructions legal under one
    variant and refused under the other, both ways)."""
    from ga2_hdl.config import Config
    (tmp_path / "ext_flagged_start.py").write_text(_FLAGGED)
    monkeypatch.syspath_prepend(str(tmp_path))
    config = Config(name="ext_flagged_start", extensions=("ext_flagged_start",))
    iset = isa.instruction_set(config)
    top = config.spad_words
    cases = [iset.make("PICK", dst=top - 8, src=0, len=4, sel=1),      # src 0..3: legal; dst+8 would not be
             iset.make("PICK", dst=top - 8, src=0, len=4, sel=0),      # dst+8 = the end: SPAD_RANGE
             iset.make("PICK", dst=0, src=top - 2, len=4, sel=0),      # dst+8 legal; src would not be
             iset.make("PICK", dst=0, src=top - 2, len=4, sel=1),
             iset.make("PICK", dst=100, src=100, len=10, sel=1),      # src = dst: identical regions
             iset.make("PICK", dst=100, src=100, len=10, sel=0)]      # dst+8: overlapping, not identical
    want = [iset.check(ins, config.ext_words)[0] for ins in cases]
    assert want == [isa.ErrorCode.OK, isa.ErrorCode.SPAD_RANGE, isa.ErrorCode.OK, isa.ErrorCode.SPAD_RANGE,
                    isa.ErrorCode.OK, isa.ErrorCode.OVERLAP]
    dut = IssueCheck(config=config)

    async def bench(ctx):
        for ins, code in zip(cases, want):
            ctx.set(dut.ins.as_value(), ins.encode())
            assert ctx.get(dut.error) == code, f"{ins}: hardware {isa.ErrorCode(ctx.get(dut.error)).name}, isa {code.name}"

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("narrow, multiplier", [(4, False), (8, False), (9, True)])
def test_shift_add_uses_a_multiplier_only_past_shift_add_bits(narrow, multiplier):
    """decoder._shift_add's rule: a product whose narrower factor has at most SHIFT_ADD_BITS (8) bits
    is logic (shifts and adds, the staged check's row counts times strides), a wider one a multiplier
    (a ``$mul`` cell, which the FPGA maps to one of its few multiplier blocks)."""
    from amaranth.back import rtlil
    from amaranth.hdl import Module, signed, unsigned
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out
    from ga2_hdl.rtl.decoder import SHIFT_ADD_BITS, _shift_add
    assert SHIFT_ADD_BITS == 8

    class Product(wiring.Component):
        a: In(signed(narrow))
        b: In(unsigned(12))
        p: Out(signed(narrow + 13))

        def elaborate(self, platform):
            m = Module()
            m.d.comb += self.p.eq(_shift_add(self.b, self.a))
            return m

    assert ("cell $mul " in rtlil.convert(Product())) == multiplier


def test_shift_add_products_are_exact():
    """The staged check's products of a narrow factor (decoder._shift_add: shifts and adds, not a
    multiplier block) equal a * b for every narrow value, unsigned and two's complement."""
    from amaranth.hdl import Module, Signal, signed, unsigned
    from amaranth.sim import Simulator
    from ga2_hdl.rtl.decoder import _shift_add
    a, b, c, d = Signal(signed(4)), Signal(unsigned(12)), Signal(unsigned(7)), Signal(signed(13))
    p1, p2 = Signal(signed(20)), Signal(signed(22))
    m = Module()
    m.d.comb += [p1.eq(_shift_add(a, b)), p2.eq(_shift_add(c, d))]
    bad = []

    async def bench(ctx):
        for av in range(-8, 8):
            for bv in (0, 1, 5, 1234, 2048, 4095):
                ctx.set(a, av)
                ctx.set(b, bv)
                if ctx.get(p1) != av * bv:
                    bad.append((av, bv, ctx.get(p1)))
        for cv in range(128):
            for dv in (-4096, -1, 0, 1, 77, 4095):
                ctx.set(c, cv)
                ctx.set(d, dv)
                if ctx.get(p2) != cv * dv:
                    bad.append((cv, dv, ctx.get(p2)))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert not bad
