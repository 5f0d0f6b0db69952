"""SM's values: the probabilities the softmax engine leaves in ``dst``, against the ISA's softmax.

:class:`SoftmaxValues` is a :class:`~ga2_hdl.contracts.values.FreeWords` contract (the unit
contract's sequencer and bounded instructions, a free word at every element of ``src`` the
bounded ``len`` uses, drawn anew at each start) around the softmax engine
(:class:`ga2_hdl.rtl.softmax.SoftmaxUnit`).  SM parks its exponentials in ``dst`` and reads them
back, so its scratchpad model keeps what the instruction writes: a read of an element of ``dst``
already written answers the last word written there, of an element of ``src`` (not yet written)
its free word, of anything else any value.  One SM runs, started in the first cycle: with the
depth its busy time and the cycles after it, the only start whose words are all checked (with the
start free, each later cycle also checked the division's operands of a later start, 6 to 20 s a
cycle: no verdict at 56 cycles in 8 minutes).  The divider and the exp table are the engine's own
(``SoftmaxUnit.datapath`` names them), nothing cut.

The ISA's softmax (:func:`ga2_hdl.isa.softmax_q16`) on the scores ``x_i = int8_of(src[i])``:
``mx = max x``, ``e_i = EXP_TABLE[mx - x_i]``, ``S = sum e_i``, ``r = 2**38 // S`` (the 40-bit
divider, :func:`ga2_hdl.isa.divide_u40`), ``p_i = (e_i * r + 2**21) >> 22``.  The spec computes
``mx``, ``e_i`` and ``S`` itself from the free words (:func:`exp_terms`) and proves the rest in
three parts, as ``rq.values`` leaves the requantizer's arithmetic to ``requant.formula``:

* the division's operands: the engine starts its divider exactly once per instruction, on ``(2**38, S)``; its quotient is taken as the divider returns
  it at its ``done`` (``q``).  That this quotient is ``2**38 // S`` is the divider's own
  property (``divider.*``: the generator proven at 8 bits; the 40-bit instance is the same
  generator, not proven here; the quotient here is the real divider's on these operands);
* the scaling, at each element: the last word written at ``dst + i`` by the end of the
  instruction is ``(P + 2**21) >> 22`` (the spec's rounding and shift, in full width), ``P`` the
  product the engine's multiplier formed :data:`MULTIPLY_TO_WRITE` cycles before the write, whose
  operands were then ``e_i`` (the exponential read back from ``dst``) and ``q`` (all 40 bits:
  the engine's narrower ``r`` must hold the whole quotient).  The spec multiplies the engine's
  own operand signals, so Yosys merges the two multipliers (as ``requant.formula`` and
  ``systolic.pe_product`` do): that ``$mul`` is the product is the tools';
* every element of ``dst`` below ``len`` written by the end (the cycle after ``done``).

With ``division=True`` (the property ``sm.division``) the spec asserts instead, at the divider's
``done``, that the quotient is ``2**38 // S`` (a 40-bit division of the spec's own): the divider's
arithmetic on every denominator SM gives it at the bounded length, without the scaling.

With the divider's property each word is the ISA's ``p_i``; ``sim_tests/gen/test_formal.py``
simulates :func:`exp_terms` and the scaling (:func:`scaled`) against
:func:`ga2_hdl.isa.softmax_q16`.
"""
from __future__ import annotations

from amaranth.hdl import Array, Assert, Assume, Const, Cover, Fragment, Module, Mux, Signal, Value
from amaranth.hdl._ast import AnySeq

from .. import isa
from ..rtl import decoder
from ..rtl.softmax import SCALE_DEPTH
from .requant import _delayed
from .unit import UnitContract, lanes
from .values import FreeWords, wide_lane
from .vector import int8_of

__all__ = ["exp_terms", "scaled", "MULTIPLY_TO_WRITE", "SoftmaxValues"]

#: cycles from the SCALE multiply's operands to the write of its rounded product: the multiply
#: (product register), the rounding (prob register), then the write (softmax.py's SCALE pass of
#: depth 3 counts the read back as its first stage)
MULTIPLY_TO_WRITE = SCALE_DEPTH - 1
#: the quotient's width and the rounding of the scaling (p = (e * r + HALF) >> SHIFT)
Q_BITS, SHIFT, HALF = isa.DIV_BITS, isa.SOFTMAX_OUT_SHIFT, 1 << (isa.SOFTMAX_OUT_SHIFT - 1)


def exp_table():
    """``isa.EXP_TABLE`` as an Amaranth array of 16-bit constants (indexed by a hardware value)."""
    return Array(Const(v, 16) for v in isa.EXP_TABLE)


def exp_terms(m: Module, words, length):
    """The ISA's exponentials of the first ``length`` scores (``length`` >= 1 a hardware value;
    the words past it ignored): ``([e_i], S)``, ``e_i = EXP_TABLE[max - int8_of(word_i)]`` for every
    word (16-bit signals) and ``S`` their sum below ``length``."""
    scores = [int8_of(w) for w in words]
    best = scores[0]
    for i, x in enumerate(scores[1:], start=1):
        best = Mux((i < length) & (x > best), x, best)
    mx = Signal.like(scores[0], name="sm_max")
    m.d.comb += mx.eq(best)
    table = exp_table()
    terms = []
    for i, x in enumerate(scores):
        e = Signal(16, name=f"sm_e{i}")
        m.d.comb += e.eq(table[(mx - x)[:8]])        # 0 .. 255: mx >= x below length
        terms.append(e)
    total = Signal(Q_BITS, name="sm_sum")
    m.d.comb += total.eq(sum(Mux(i < length, e, 0) for i, e in enumerate(terms)))
    return terms, total


def scaled(m: Module, product) -> Signal:
    """The ISA's scaling of a product ``e * r``: ``(product + 2**21) >> 22`` as a 32-bit word."""
    word = Signal(isa.WORD_BITS)
    m.d.comb += word.eq((product + HALF) >> SHIFT)
    return word


class SoftmaxValues(FreeWords):
    """SM's values on free scores (the module's docstring).

    Parameters
    ----------
    unit : SoftmaxUnit
        The engine (``VectorUnit.engines_of(config)["SM"]``), built for ``config``.
    config : Config
        Its chip.
    bounds : dict
        ``{"len": L}``: one free word per offset below L.
    name : str
        The report's name.
    """

    def __init__(self, unit, config, *, bounds, name="values", division: bool = False, formal: bool = True):
        super().__init__(unit, config, "SM", bounds=bounds, name=name, formal=formal)
        self.size = self.bounds["len"]
        #: the division only (``sm.division``): the quotient the divider returns = 2**38 // S
        self.division = division
        self.unit_fragment = None

    def elaborate(self, platform):
        # the engine elaborated here: its divider and SCALE's multiplier operands (``datapath``)
        self.unit_fragment = Fragment.get(self.unit, platform)
        self.path = self.unit.datapath
        return super().elaborate(platform)

    def unit_design(self):
        return self.unit_fragment

    def operand(self, ins, name) -> Value:
        return decoder.operand(ins, self.spec, name)

    def inputs(self, ins):
        src, length = self.operand(ins, "src"), self.operand(ins, "len")
        return [(src + i, i < length) for i in range(self.size)]

    def outputs(self, ins):
        dst, length = self.operand(ins, "dst"), self.operand(ins, "len")
        return [(dst + i, i < length) for i in range(self.size)]

    # ------------------------------------------------------------------ the memory
    def environment(self, m: Module) -> None:
        """Free source words; the words the instruction writes to ``dst`` kept and read back."""
        p = self.unit.spad
        self.words = [Signal(isa.WORD_BITS, name=f"word{j}") for j in range(self.size)]
        outs = self.outputs(self.held)
        self.kept = [Signal(isa.WORD_BITS, name=f"kept{j}") for j in range(self.size)]
        self.stored = Signal(self.size, name="stored")       # dst elements written since the start
        with m.If(self.start):
            m.d.sync += [w.eq(AnySeq(isa.WORD_BITS)) for w in self.words]
            m.d.sync += self.stored.eq(0)
        for en, off in lanes(p, "wr"):
            for j, (at, used) in enumerate(outs):
                with m.If(~self.start & en & used & (p.wr_addr + off == at)):
                    m.d.sync += [self.kept[j].eq(wide_lane(p, "wr_data", off)), self.stored[j].eq(1)]
        rd_addr = Signal.like(p.rd_addr)
        m.d.sync += rd_addr.eq(p.rd_addr)
        for en, off in lanes(p, "rd"):
            was_read = Signal(name=f"rd_lane{off}")
            m.d.sync += was_read.eq(en)
            value = AnySeq(isa.WORD_BITS)                     # neither written nor a score: any word
            for word, (at, used) in zip(self.words, self.inputs(self.held)):
                value = Mux(used & (rd_addr + off == at), word, value)
            for j, (at, used) in enumerate(outs):             # written: the last word written
                value = Mux(used & self.stored[j] & (rd_addr + off == at), self.kept[j], value)
            m.d.comb += wide_lane(p, "rd_data", off).eq(Mux(was_read, value, AnySeq(isa.WORD_BITS)))

    # ------------------------------------------------------------------ the properties
    def properties(self, m: Module) -> None:
        UnitContract.properties(self, m)               # the unit contract, on the same environment
        p, path, div = self.unit.spad, self.path, self.path.divider
        length = self.operand(self.held, "len")
        self.terms, total = exp_terms(m, self.words, length)

        self.first_start(m)
        # the division: one start per instruction, on (2**38, S); its quotient as returned at done
        started, returned = Signal(2, name="div_started"), Signal(name="div_returned")
        q = Signal(Q_BITS, name="div_q")
        with m.If(self.start):
            m.d.sync += [started.eq(0), returned.eq(0)]
        with m.Elif(self.running & div.start):
            m.d.sync += started.eq(Mux(started == 3, 3, started + 1))
            m.d.comb += [Assert(div.numerator == isa.SOFTMAX_NUMERATOR), Assert(div.denominator == total)]
        with m.If(self.running & div.done & (started == 1) & ~returned):
            m.d.sync += [q.eq(div.quotient), returned.eq(1)]
            if self.division:          # the 40-bit division itself, on the operands SM gives it
                m.d.comb += [Assert(div.quotient == Const(isa.SOFTMAX_NUMERATOR, Q_BITS) // total),
                             Cover(self.operand(self.held, "len") == self.size)]
        if self.division:
            return

        # the scaling: each write carries the rounding of the product of MULTIPLY_TO_WRITE cycles before
        product = Signal(len(path.e_read) + len(path.r), name="scale_product")
        m.d.comb += product.eq(path.e_read * path.r)       # the engine's own operands: one multiplier
        product_then, e_then, r_then = _delayed(m, (product, path.e_read, path.r), MULTIPLY_TO_WRITE)
        good = Signal(self.size, name="scaled_right")       # dst + j's last write the ISA's p_j
        outs = self.outputs(self.held)
        for en, off in lanes(p, "wr"):
            data = wide_lane(p, "wr_data", off)
            right = (data == scaled(m, product_then)) & returned & (r_then == q)
            for j, (at, used) in enumerate(outs):
                with m.If(~self.start & en & used & (p.wr_addr + off == at)):
                    m.d.sync += good[j].eq(right & (e_then == self.terms[j]))
        with m.If(self.start):
            m.d.sync += good.eq(0)

        # by the end (the cycle after done, or after the trailing cycle), every dst element right
        end = self.trailing_now if self.trailing else (self.unit.done & self.running)
        after = Signal(name="after_end")
        m.d.sync += after.eq(end)
        with m.If(after):
            m.d.comb += [Assert(started == 1), Assert(returned)]
            for j, (at, used) in enumerate(outs):
                with m.If(used):
                    m.d.comb += [Assert(self.stored[j]), Assert(good[j])]
        self.covers(m, after)

    def first_start(self, m: Module) -> None:
        """SM started in the first cycle, once: the only start whose instruction ends within the
        depth (its busy time and the cycles after it), so the only one whose words are all checked."""
        first = Signal(init=1, name="first_cycle")
        m.d.sync += first.eq(0)
        m.d.comb += Assume(self.start == first)

    def covers(self, m: Module, after=None) -> None:
        """SM completes at the bounded length on two different scores (and on equal ones)."""
        if after is None:
            return
        full = self.operand(self.held, "len") == self.size
        if self.size > 1:
            differ = int8_of(self.words[0]) != int8_of(self.words[1])
            m.d.comb += [Cover(after & full & differ), Cover(after & full & ~differ)]
        else:
            m.d.comb += Cover(after & full)
