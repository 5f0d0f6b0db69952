"""The vector engines' values: every word VADD and RQ write, AMAX's index, against the ISA's arithmetic.

:class:`VectorValues` is a :class:`~ga2_hdl.contracts.unit.UnitContract` (the same sequencer,
the same bounded instructions) whose scratchpad holds *free words*: at each start, one free
32-bit word per offset of each source region the instruction reads (``len`` is bounded, so a
few words; the source regions of the ISA's ``regions`` rule, through
:func:`ga2_hdl.rtl.decoder.spad_accesses`).  The scratchpad answers a read of lane ``j`` one cycle
later with the word at ``rd_addr + j``: the free word of that offset inside the first source
region holding the address (VADD's two sources are identical or disjoint, so an address has one
word), any value elsewhere or on a lane not read.  Asserted, besides the unit contract:

* VADD: every word written, at ``dst + i``, is :func:`saturating_add` of the words at ``src1 + i``
  and ``src2 + i`` (``clamp(int8 + int8, -127, 127)``, the ISA's arithmetic, as a 32-bit word);
* AMAX: the word written (at ``dst``) is :func:`first_max_index` of the ``len`` signed words at
  ``src``: the index of the first maximum;
* RQ, the engine's data path (the requantizer's arithmetic is proven alone, ``requant.formula``
  and ``requant.formula_pipelined``): every word written, at ``dst + i``, is the result ``q`` of
  one of the engine's requantizers (:class:`ga2_hdl.rtl.requant.Requantizer`, found in the
  engine's elaborated design) whose operands ``LATENCY`` cycles before (its own contract's
  latency) were the word at ``src + i`` and the instruction's ``m``, ``s`` and ``relu``; so the
  right word, in the right lane and order, with the instruction's constants.  With the
  requantizer's property, ``q = isa.requantize(int32 src[i], m, s, relu)`` follows; a
  requantizer of a form no property proves is refused (:data:`PROVEN_FORMS`: the property is
  then skipped, :class:`~ga2_hdl.contracts.base.NotApplicable`);
* every word of the destination written by the end of the instruction (the cycle after its last
  possible write: ``done``, or the trailing cycle after it), and no word of a source read after
  the instruction wrote it (what makes a memory that writes do not change a faithful model:
  an engine that read back what it wrote would fail here, not pass on stale values).

Each start draws new words, so the second of two instructions back to back computes on values of
its own.  The hardware forms :func:`saturating_add` and :func:`first_max_index` are written once,
here; ``sim_tests/gen/test_formal.py`` simulates them against the golden model
(:class:`ga2_hdl.golden.Machine`, which uses :func:`ga2_hdl.isa.clamp` and
:func:`ga2_hdl.isa.int8_of`) on corner and random words.  Only the solver's form exists
(``formal=True``).
"""
from __future__ import annotations

from amaranth.hdl import Assert, Cat, Const, Cover, Fragment, Module, Mux, Signal, Value, signed
from amaranth.hdl._ast import AnySeq

from .. import isa
from ..rtl import decoder
from ..rtl.decoder import spad_accesses
from ..rtl.requant import Requantizer
from .base import NotApplicable
from .requant import _delayed
from .unit import UnitContract, lanes

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


class VectorValues(UnitContract):
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

    #: op -> the property's assertion on the words written (a method name)
    CHECKS = {"VADD": "_check_vadd", "AMAX": "_check_amax", "RQ": "_check_rq"}

    def __init__(self, unit, config, op: str, *, bounds, name="values", formal: bool = True):
        if not formal:
            raise ValueError("the value properties exist for the solver only (formal=True)")
        if op not in self.CHECKS:
            raise ValueError(f"{op}: no value property (one of {', '.join(self.CHECKS)})")
        super().__init__(unit, config, [op], bounds=bounds, name=name, formal=formal)
        self.op = op
        self.spec = self.iset.by_name[op]
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

    # ------------------------------------------------------------------ the memory
    def sources(self, ins) -> list[tuple[Value, Value]]:
        """(start, end) of every region the instruction reads, in the ISA's order."""
        return [(start, end) for start, end, writes in spad_accesses(ins, self.spec) if not writes]

    def word_at(self, addr) -> Value:
        """The word the scratchpad holds at ``addr`` during the held instruction: the free word of
        its offset in the first source region holding it (0 outside every source: never asked for
        by an engine that keeps to its regions, which the unit contract asserts)."""
        value = Const(0, isa.WORD_BITS)
        for words, (start, end) in reversed(list(zip(self.words, self.sources(self.held)))):
            for i in reversed(range(self.size)):
                value = Mux((addr >= start) & (addr < end) & (addr - start == i), words[i], value)
        return value

    def environment(self, m: Module) -> None:
        u = self.unit
        # one free word per offset of each source region, drawn anew at each start
        self.words = [[Signal(isa.WORD_BITS, name=f"src{r}_word{i}") for i in range(self.size)]
                      for r in range(len(self.sources(self.fresh)))]
        with m.If(self.start):
            m.d.sync += [w.eq(AnySeq(isa.WORD_BITS)) for ws in self.words for w in ws]
        # the answer to a read: one cycle later, per lane, the word at its address
        rd_addr = Signal.like(u.spad.rd_addr)
        m.d.sync += rd_addr.eq(u.spad.rd_addr)
        wide = getattr(u.spad, "rd_mask", None) is not None
        for en, off in lanes(u.spad, "rd"):
            was_read = Signal(name=f"rd_lane{off}")
            m.d.sync += was_read.eq(en)
            lane = u.spad.rd_data[off] if wide else u.spad.rd_data
            m.d.comb += lane.eq(Mux(was_read, self.word_at(rd_addr + off), AnySeq(isa.WORD_BITS)))

    # ------------------------------------------------------------------ the properties
    def properties(self, m: Module) -> None:
        super().properties(m)                          # the unit contract, on the same environment
        u, p = self.unit, self.unit.spad
        dst = decoder.operand(self.held, self.spec, "dst")
        out_len = 1 if self.op == "AMAX" else self.size
        length = 1 if self.op == "AMAX" else decoder.operand(self.held, self.spec, "len")
        written = Signal(out_len, name="written")      # destination words written so far
        hits = [Const(0)] * out_len
        wide = getattr(p, "wr_mask", None) is not None
        if self.op == "RQ":
            self.taps(m)
        for en, off in lanes(p, "wr"):
            data = p.wr_data[off] if wide else p.wr_data
            addr = p.wr_addr + off
            for i in range(out_len):
                at = Signal(name=f"wr_lane{off}_at{i}")
                m.d.comb += at.eq(en & (addr == dst + i))
                hits[i] = hits[i] | at
                with m.If(at):
                    m.d.comb += Assert(getattr(self, self.CHECKS[self.op])(m, i, data))
        with m.If(self.start):
            m.d.sync += written.eq(0)
        with m.Else():
            m.d.sync += written.eq(written | Cat(*hits))
        # no source word read after the instruction wrote it (reads see the words of the start)
        for en, off in lanes(p, "rd"):
            for i in range(out_len):
                with m.If(self.running & en & (p.rd_addr + off == dst + i)):
                    m.d.comb += Assert(~written[i])
        # by the end (the cycle after the last possible write), every destination word written
        end = self.trailing_now if self.trailing else (u.done & self.running)
        after = Signal()
        m.d.sync += after.eq(end)
        for i in range(out_len):
            with m.If(after & (i < length)):
                m.d.comb += Assert(written[i])
        self.covers(m, p, dst, wide)

    def covers(self, m: Module, p, dst, wide) -> None:
        """Each op completes at the bounded length with data the assertions are about."""
        data = p.wr_data[0] if wide else p.wr_data
        length = decoder.operand(self.held, self.spec, "len")
        full = self.running & (length == self.size)
        if self.op == "VADD":      # a saturated and a negative sum written, an instruction of len words
            m.d.comb += [Cover(p.wr_en & (data == isa.INT8_MAX)),
                         Cover(p.wr_en & (data == isa.word_of(isa.INT8_MIN))),
                         Cover(self.unit.done & full)]
        elif self.op == "RQ":      # both saturations written, an instruction of len words
            m.d.comb += [Cover(p.wr_en & full & (data == isa.INT8_MAX)),
                         Cover(p.wr_en & full & (data == isa.word_of(-isa.INT8_MAX)))]
        else:                      # the maximum at the last index, and a tie kept at the first
            m.d.comb += [Cover(p.wr_en & full & (data == self.size - 1)),
                         Cover(p.wr_en & full & (data == 0) & (self.words[0][0] == self.words[0][1]))]

    def _check_vadd(self, m: Module, i: int, data) -> Value:
        src1, src2 = (decoder.operand(self.held, self.spec, n) for n in ("src1", "src2"))
        return data == saturating_add(m, self.word_at(src1 + i), self.word_at(src2 + i))

    def _check_amax(self, m: Module, i: int, data) -> Value:
        src = decoder.operand(self.held, self.spec, "src")
        length = decoder.operand(self.held, self.spec, "len")
        return data == first_max_index(m, [self.word_at(src + k) for k in range(self.size)], length)

    def taps(self, m: Module) -> None:
        """Each requantizer's result (as a word) beside its operands of ``LATENCY`` cycles before."""
        self.tapped = []
        for k, r in enumerate(self.requantizers):
            q = Signal(isa.WORD_BITS, name=f"rq{k}_q")
            m.d.comb += q.eq(r.q)                      # sign-extended, as the engine writes it
            self.tapped.append((q, *_delayed(m, (r.acc, r.mantissa, r.shift, r.relu), r.LATENCY)))

    def _check_rq(self, m: Module, i: int, data) -> Value:
        """Some requantizer's q, from the word at src + i and the instruction's m, s and relu."""
        name = lambda n: decoder.operand(self.held, self.spec, n)
        word = self.word_at(name("src") + i)
        ok = Const(0)
        for q, acc, mant, shift, relu in self.tapped:
            ok = ok | ((data == q) & (acc == word) & (mant == name("m")) & (shift == name("s"))
                       & (relu == name("relu")))
        return ok

