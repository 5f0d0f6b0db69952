"""The vector engines' values: every word VADD and RQ write, AMAX's index, against the ISA's arithmetic.

:class:`VectorValues` is a :class:`~ga2_hdl.contracts.values.FreeWords` contract (the unit
contract's sequencer and bounded instructions, free words in the scratchpad, every output written
once the instruction ends, nothing read after it is written): the elements read are the words of
the source regions of the ISA's ``regions`` rule (:func:`ga2_hdl.rtl.decoder.spad_accesses`), one
per offset below the bounded ``len``.  Asserted for each word written:

* VADD: at ``dst + i``, :func:`saturating_add` of the words at ``src1 + i`` and ``src2 + i``
  (``clamp(int8 + int8, -127, 127)``, the ISA's arithmetic, as a 32-bit word);
* AMAX: at ``dst``, :func:`first_max_index` of the ``len`` signed words at ``src``: the index
  of the first maximum;
* RQ, the engine's data path (the requantizer's arithmetic is proven alone, ``requant.formula``
  and ``requant.formula_pipelined``): at ``dst + i``, the result ``q`` of one of the engine's
  requantizers (:class:`ga2_hdl.rtl.requant.Requantizer`, found in the engine's elaborated
  design) whose operands ``LATENCY`` cycles before (its own contract's latency) were the word at
  ``src + i`` and the instruction's ``m``, ``s`` and ``relu``: the right word, in the right lane
  and order, with the instruction's constants.  With the requantizer's property,
  ``q = isa.requantize(int32 src[i], m, s, relu)`` follows; a requantizer of a form no property
  proves (:data:`PROVEN_FORMS`) makes the property not apply
  (:class:`~ga2_hdl.contracts.base.NotApplicable`: ``ga2 prove`` reports it skipped).

The hardware forms :func:`saturating_add` and :func:`first_max_index` are written once, here;
``sim_tests/gen/test_formal.py`` simulates them against the golden model
(:class:`ga2_hdl.golden.Machine`, which uses :func:`ga2_hdl.isa.clamp` and
:func:`ga2_hdl.isa.int8_of`) on corner and random words.
"""
from __future__ import annotations

from amaranth.hdl import Const, Cover, Fragment, Module, Mux, Signal, Value, signed

from .. import isa
from ..rtl import decoder
from ..rtl.decoder import spad_accesses
from ..rtl.requant import Requantizer
from .base import NotApplicable
from .requant import _delayed
from .values import FreeWords, wide_lane

__all__ = ["int8_of", "saturating_add", "first_max_index", "requantizers", "PROVEN_FORMS", "VectorValues"]

#: the requantizer's forms (magnitude_stage, split_multiply) whose arithmetic a property proves
PROVEN_FORMS = {(False, False): "requant.formula", (True, True): "requant.formula_pipelined"}


def int8_of(word) -> Value:
    """The int8 an operand word holds (``isa.int8_of``): its low byte, signed."""
    return Value.cast(word)[:8].as_signed()


def saturating_add(m: Module, x, y) -> Signal:
    """VADD's arithmetic on two words: ``word_of(clamp(int8_of(x) + int8_of(y), INT8_MIN, INT8_MAX))``,
    a 32-bit word (the clamped sum sign-extended)."""
    total = Signal(signed(9))
    word = Signal(isa.WORD_BITS)
    m.d.comb += [
        total.eq(int8_of(x) + int8_of(y)),
        word.eq(Mux(total > isa.INT8_MAX, isa.INT8_MAX, Mux(total < isa.INT8_MIN, isa.INT8_MIN, total))),
    ]
    return word


def first_max_index(m: Module, words, length) -> Signal:
    """AMAX's result: the index of the first maximum of the signed 32-bit ``words[:length]``
    (``length`` >= 1, a hardware value; the words past it are ignored), as a 32-bit word."""
    best, index = words[0].as_signed(), Const(0, isa.WORD_BITS)
    for i, w in enumerate(words[1:], start=1):
        take = Signal(name=f"amax_take_{i}")
        m.d.comb += take.eq((i < length) & (w.as_signed() > best))     # ties keep the first
        best, index = Mux(take, w.as_signed(), best), Mux(take, i, index)
    out = Signal(isa.WORD_BITS)
    m.d.comb += out.eq(index)
    return out


def requantizers(fragment) -> list:
    """Every :class:`~ga2_hdl.rtl.requant.Requantizer` in an elaborated design (its fragments' origins)."""
    found = []
    for sub, *_ in fragment.subfragments:
        found += [o for o in (getattr(sub, "origins", None) or ()) if isinstance(o, Requantizer)]
        found += requantizers(sub)
    return found


class VectorValues(FreeWords):
    """The values one vector engine computes (``op``: ``"VADD"``, ``"AMAX"`` or ``"RQ"``) on free source words.

    Parameters
    ----------
    unit : wiring.Component
        The engine (``VectorUnit.engines_of(config)[op]``), built for ``config``.
    config : Config
        Its chip.
    op : str
        The mnemonic.
    bounds : dict
        The bounded sizes (``{"len": 3}``): one free word per offset below ``bounds["len"]``.
    name : str
        The report's name.
    """

    #: op -> the property's assertion on a word written (a method name)
    CHECKS = {"VADD": "_check_vadd", "AMAX": "_check_amax", "RQ": "_check_rq"}

    def __init__(self, unit, config, op: str, *, bounds, name="values", formal: bool = True):
        if op not in self.CHECKS:
            raise ValueError(f"{op}: no value property (one of {', '.join(self.CHECKS)})")
        super().__init__(unit, config, op, bounds=bounds, name=name, formal=formal)
        self.size = self.bounds["len"]
        self.unit_fragment = None

    def elaborate(self, platform):
        if self.op == "RQ":          # the engine elaborated here, to find its requantizers
            self.unit_fragment = Fragment.get(self.unit, platform)
            self.requantizers = requantizers(self.unit_fragment)
            forms = {(r.magnitude_stage, r.split_multiply) for r in self.requantizers}
            if not self.requantizers or not forms <= set(PROVEN_FORMS):
                raise NotApplicable(f"RQ's engine has requantizers of the forms (magnitude_stage, split_multiply) "
                                    f"{sorted(forms)}; a property proves only {sorted(PROVEN_FORMS)}")
        return super().elaborate(platform)

    def unit_design(self):
        return self.unit if self.unit_fragment is None else self.unit_fragment

    def operand(self, name) -> Value:
        """An operand of the held instruction."""
        return decoder.operand(self.held, self.spec, name)

    def inputs(self, ins):
        """The words of the source regions, one per offset below the bound, in the ISA's order."""
        return [(start + i, start + i < end) for start, end, writes in spad_accesses(ins, self.spec)
                if not writes for i in range(self.size)]

    def outputs(self, ins):
        dst = decoder.operand(ins, self.spec, "dst")
        if self.op == "AMAX":
            return [(dst, Const(1))]
        return [(dst + i, i < decoder.operand(ins, self.spec, "len")) for i in range(self.size)]

    def check(self, m: Module, j: int, data) -> Value:
        return getattr(self, self.CHECKS[self.op])(m, j, data)

    def properties(self, m: Module) -> None:
        if self.op == "RQ":
            self.taps(m)
        super().properties(m)

    def covers(self, m: Module) -> None:
        """Each op completes at the bounded length with data the assertions are about."""
        p = self.unit.spad
        data = wide_lane(p, "wr_data", 0)
        full = self.running & (self.operand("len") == self.size)
        if self.op == "VADD":      # a saturated and a negative sum written, an instruction of len words
            m.d.comb += [Cover(p.wr_en & (data == isa.INT8_MAX)),
                         Cover(p.wr_en & (data == isa.word_of(isa.INT8_MIN))),
                         Cover(self.unit.done & full)]
        elif self.op == "RQ":      # both saturations written, an instruction of len words
            m.d.comb += [Cover(p.wr_en & full & (data == isa.INT8_MAX)),
                         Cover(p.wr_en & full & (data == isa.word_of(-isa.INT8_MAX)))]
        else:                      # the maximum at the last index, and a tie kept at the first
            m.d.comb += [Cover(p.wr_en & full & (data == self.size - 1)),
                         Cover(p.wr_en & full & (data == 0) & (self.words[0] == self.words[1]))]

    def _check_vadd(self, m: Module, i: int, data) -> Value:
        src1, src2 = self.operand("src1"), self.operand("src2")
        return data == saturating_add(m, self.word_at(src1 + i), self.word_at(src2 + i))

    def _check_amax(self, m: Module, i: int, data) -> Value:
        src = self.operand("src")
        return data == first_max_index(m, [self.word_at(src + k) for k in range(self.size)], self.operand("len"))

    def taps(self, m: Module) -> None:
        """Each requantizer's result (as a word) beside its operands of ``LATENCY`` cycles before."""
        self.tapped = []
        for k, r in enumerate(self.requantizers):
            q = Signal(isa.WORD_BITS, name=f"rq{k}_q")
            m.d.comb += q.eq(r.q)                      # sign-extended, as the engine writes it
            self.tapped.append((q, *_delayed(m, (r.acc, r.mantissa, r.shift, r.relu), r.LATENCY)))

    def _check_rq(self, m: Module, i: int, data) -> Value:
        """Some requantizer's q, from the word at src + i and the instruction's m, s and relu."""
        name = self.operand
        word = self.word_at(name("src") + i)
        ok = Const(0)
        for q, acc, mant, shift, relu in self.tapped:
            ok = ok | ((data == q) & (acc == word) & (mant == name("m")) & (shift == name("s"))
                       & (relu == name("relu")))
        return ok

