"""The requantizer: an int32 accumulator back to an int8, as ``isa.requantize``.

    q = clamp(round_half_away(acc * m / 2**s), -127 (0 with relu), 127)

for every int32 ``acc``, every 24-bit ``m`` (the ISA's RQ operand is 24 bits
wide; nothing requires ``m >= 2**23`` here), every 6-bit ``s`` and both values
of ``relu``.

Structure (two stages, one register between them)

* Stage 1, the cycle the operands arrive: the magnitude ``|acc|`` times ``m`` plus a
  rounding bias, without negating ``acc``: ``|acc| = ones + sign`` with ``ones = acc ^
  sign`` (one gate per bit, below 2**31), so the stage computes ``ones * m + offset``, a
  31 x 24 unsigned multiplier and one add, where ``offset = sign * m + bias`` is formed
  beside the multiplier from ``s`` and the sign: ``bias = +2**(s-1)`` for a positive acc,
  ``-2**(s-1)`` for a negative one (0 and -1 for ``s = 0``).  Shifts of 56 and more act as
  56 (every product rounds to 0 there either way).  The biased product (signed, 58 bits),
  the sign, ``s``, ``relu`` and the saturation limit are registered.
* Stage 2, the next cycle (combinational from the registers): ``t``, 8 bits of the biased
  product shifted right by ``s``, is the rounded magnitude
  ``floor((|acc| * m + 2**(s-1)) / 2**s)`` for a positive acc (round half up, that is
  away from zero once the sign is put back) and the rounded magnitude less one for a
  negative acc (``floor((|acc| * m - 2**(s-1)) / 2**s)``), whose ones' complement ``~t``
  is the negated result: no adder and no negation in this stage, only the window and one
  gate.  The magnitude saturates at 127 by one compare of the biased product with the
  smallest that saturates (``128 * 2**s``, or ``127 * 2**s`` for a negative acc, computed
  beside the multiplier and clipped to 2**56, which no biased product reaches); rounding
  the magnitude makes the result symmetric, ``requant(-a) = -requant(a)``, and -128 cannot
  occur.  Negatives become 0 when ``relu`` is set.

So ``q`` is valid :attr:`Requantizer.LATENCY` = 1 cycle after its operands; a
new set of operands may arrive every cycle.

``Requantizer(magnitude_stage=True)`` registers the sign and ``ones`` first (a stage 0
in the cycle the operands arrive), so the multiplier starts from a register: LATENCY = 2.
``split_multiply=True`` multiplies in halves (``|acc|`` and ``m`` each cut at bit 18, an ECP5
multiplier block's width), registers the four partial products (and the offset) and adds them in
the next stage: one more cycle of latency.  The low and the high halves' products sit side by side
(no adder between them), so the sum has three addends; and the saturation's compare is made in the
same stage, as the sign of ``|acc| * m + (offset - limit)`` (``offset - limit`` registered beside the
offset), so stage 2 only selects.  The book's RQ engine uses both (it reads its first element in the start cycle
and writes its last in the cycle after its done, :func:`ga2_hdl.isa.trailing_write_cycles`,
so the extra stages cost no cycle: docs/fpga.md).
"""
from amaranth.hdl import Cat, Module, Mux, Signal, Value, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .. import isa

_RQ = isa.OP_BY_NAME["RQ"]

ACC_BITS = isa.WORD_BITS                     #: the accumulator is a whole signed word
MANTISSA_BITS = _RQ.operand("m").bits        #: 24
SHIFT_BITS = _RQ.operand("s").bits           #: 6
PRODUCT_BITS = ACC_BITS + MANTISSA_BITS      #: ``|acc| <= 2**31``, ``m < 2**24``: the product fits in 56 bits
#: the product plus the rounding bias (at most 2**55 either way): signed, two bits more
BIASED_BITS = PRODUCT_BITS + 2
Q_BITS = 8                                   #: the int8 result
#: with ``split_multiply``, ``|acc|`` and ``m`` are multiplied in halves, the low ones this many bits (an
#: ECP5 multiplier's width, so each partial product is one multiplier block and no adder after it)
MULTIPLY_SPLIT = 18


class Requantizer(wiring.Component):
    """Pipelined requantizer datapath (no control: it computes every cycle).

    Ports
    -----
    acc : In(signed(32))
        The int32 accumulator (cycle k).
    mantissa : In(24)
        m (cycle k).
    shift : In(6)
        s (cycle k).
    relu : In(1)
        Clamp at 0 from below (cycle k).
    q : Out(signed(8))
        The result for cycle k's operands, in cycle k + LATENCY.
    """

    LATENCY = 1

    acc: In(signed(ACC_BITS))
    mantissa: In(MANTISSA_BITS)
    shift: In(SHIFT_BITS)
    relu: In(1)
    q: Out(signed(Q_BITS))

    def __init__(self, *, magnitude_stage: bool = False, split_multiply: bool = False):
        self.magnitude_stage = magnitude_stage
        self.split_multiply = split_multiply
        self.LATENCY = type(self).LATENCY + int(magnitude_stage) + int(split_multiply)
        super().__init__()

    def elaborate(self, platform):
        m = Module()

        # |acc| = ones + negative, with ones = acc ^ sign (the ones' complement of a negative acc:
        # one gate per bit, no carry chain, and below 2**31); the multiply stage adds the missing
        # negative * m to ones * m, so the unit never negates the accumulator
        negative = self.acc < 0
        ones = Signal(ACC_BITS - 1)
        m.d.comb += ones.eq(self.acc[:ACC_BITS - 1] ^ negative.replicate(ACC_BITS - 1))
        mantissa, shift, relu = self.mantissa, self.shift, self.relu
        # the rounding's constants come from s alone (docstring): shifts of PRODUCT_BITS or more
        # round every product to 0, as PRODUCT_BITS does (s_eff); what is registered of s is its
        # thermometer code ``at_least[k] = s_eff >= k``, from which every bit of every constant is
        # a gate of two or three of its bits (_constants): the decode of s is spread over the two
        # cycles, and no register of s drives a whole constant.  RQ's s is the instruction's:
        # constant while it runs
        s_eff = Signal(range(PRODUCT_BITS + 1), name="s_eff")
        at_least = Signal(PRODUCT_BITS + 2, name="at_least")
        m.d.comb += [s_eff.eq(Mux(shift > PRODUCT_BITS, PRODUCT_BITS, shift)),
                     at_least.eq(Cat(1, *(s_eff >= k for k in range(1, PRODUCT_BITS + 2))))]   # s_eff >= 0
        if self.magnitude_stage:
            # ---- stage 0: the sign and the ones' complement (and the other operands), registered
            negative, ones, mantissa, relu, s_eff, at_least = _registered(
                m, "_0", negative=negative, ones=ones, mantissa=mantissa, relu=relu, s_eff=s_eff,
                at_least=at_least)
        half, minus_half, limit_positive, limit_negative = _constants(m, at_least)
        offset = Signal(signed(BIASED_BITS), name="offset")         # sign * m + the rounding bias
        m.d.comb += offset.eq(Mux(negative, mantissa, 0) + Mux(negative, minus_half, half))
        limit = Mux(negative, limit_negative, limit_positive)

        if self.split_multiply:
            # ---- stage 1a: the four partial products of |acc|'s and m's halves, registered: each
            # is one multiplier block from a register into a register, with no adder after it;
            # their sum (shifted into place, with the offset) is stage 1's
            split = [(0, MULTIPLY_SPLIT), (MULTIPLY_SPLIT, None)]
            partial = {}
            for i, (a_lo, a_hi) in enumerate(split):
                for j, (b_lo, b_hi) in enumerate(split):
                    a, b = ones[a_lo:a_hi], mantissa[b_lo:b_hi]
                    partial[i, j] = Signal(len(a) + len(b), name=f"partial_{i}{j}")
                    m.d.sync += partial[i, j].eq(a * b)
            # the saturation's compare moves into the sum's stage: biased >= limit exactly when
            # ones * m + (offset - limit) >= 0, the same addends as the biased product's but the
            # last, so stage 2 only selects (offset - limit formed here, beside the offset).  Both
            # fit BIASED_BITS signed: offset - limit >= -2**55 - 2**56, and |acc| * m < 2**55
            over_limit = Signal(signed(BIASED_BITS), name="over_limit")
            m.d.comb += over_limit.eq(offset - limit)
            offset, over_limit, negative, s_eff, relu = _registered(
                m, "_1", offset=offset, over_limit=over_limit, negative=negative, s=s_eff, relu=relu)
            # the low halves' product is 2 * MULTIPLY_SPLIT bits wide and the high halves' starts at
            # bit 2 * MULTIPLY_SPLIT: side by side they are one addend with no adder (Cat); the two
            # cross products share the shift MULTIPLY_SPLIT.  Three addends, not five: the sum is
            # two adders deep, not four
            assert len(partial[0, 0]) == 2 * MULTIPLY_SPLIT
            magnitude_product = Signal(PRODUCT_BITS, name="magnitude_product")    # ones * m
            m.d.comb += magnitude_product.eq(Cat(partial[0, 0], partial[1, 1])
                                             + ((partial[0, 1] + partial[1, 0]) << MULTIPLY_SPLIT))
            biased_sum = magnitude_product + offset
            past_limit = Signal(signed(BIASED_BITS), name="past_limit")   # biased - limit
            m.d.comb += past_limit.eq(magnitude_product + over_limit)
            saturates_next = ~past_limit[-1]
        else:
            biased_sum = ones * mantissa + offset

        # ---- stage 1: |acc| * m + the rounding bias (ones * m + sign * m + bias)
        biased = Signal(signed(BIASED_BITS))
        m.d.sync += biased.eq(biased_sum)
        if self.split_multiply:
            negative_r, shift_r, relu_r, saturates = _registered(
                m, "_r", negative=negative, shift=s_eff, relu=relu, saturates=saturates_next)
        else:
            negative_r, shift_r, relu_r, limit_r = _registered(
                m, "_r", negative=negative, shift=s_eff, relu=relu, limit=limit)
            saturates = biased >= limit_r

        # ---- stage 2: the window, the sign by inverting it, the saturation (with split_multiply
        # the compare's result registered by stage 1, else one compare here)
        t = Signal(8)                      # 8 bits of the biased product shifted by s (arithmetic)
        m.d.comb += t.eq((biased >> shift_r)[:8])
        with m.If(negative_r & relu_r):
            m.d.comb += self.q.eq(0)
        with m.Elif(saturates):
            m.d.comb += self.q.eq(Mux(negative_r, -isa.INT8_MAX, isa.INT8_MAX))
        with m.Else():
            m.d.comb += self.q.eq(Mux(negative_r, ~t, t))
        return m


def _constants(m: Module, at_least) -> list[Signal]:
    """The rounding's constants from the thermometer code of the effective shift s
    (``at_least[k] = s >= k``, k = 0 .. PRODUCT_BITS + 1): the bias 2**(s-1) (0 for s = 0), the
    bias of a negative acc -2**(s-1) (-1 for s = 0), and the smallest biased products that
    saturate, ``128 * 2**s`` and ``127 * 2**s``, each clipped to 2**PRODUCT_BITS.  Bit i of
    2**(s-1) is ``s == i + 1``; of -2**(s-1), ``s <= i + 1``; of ``128 * 2**s``, ``s == i - 7``;
    of ``127 * 2**s``, ``i - 6 <= s <= i``; a clipped constant is 2**PRODUCT_BITS alone."""
    ge = lambda k: at_least[k] if k > 0 else 1                  # s >= k (s >= 0 always)
    between = lambda lo, hi: ge(lo) & ~at_least[hi + 1]         # lo <= s <= hi
    # the clipped constants: 128 * 2**s >= 2**PRODUCT_BITS from s = PRODUCT_BITS - 7 on, 127 * 2**s
    # from s = PRODUCT_BITS - 6 on
    clip_positive, clip_negative = at_least[PRODUCT_BITS - 7], at_least[PRODUCT_BITS - 6]
    half = Signal(PRODUCT_BITS, name="half")
    minus_half = Signal(signed(BIASED_BITS), name="minus_half")
    limit_positive = Signal(PRODUCT_BITS + 1, name="limit_128")
    limit_negative = Signal(PRODUCT_BITS + 1, name="limit_127")
    m.d.comb += [
        half.eq(Cat(*(between(i + 1, i + 1) for i in range(PRODUCT_BITS)))),
        minus_half.eq(Cat(*(~at_least[i + 2] for i in range(PRODUCT_BITS)), 1, 1)),
        limit_positive.eq(Cat(*(between(i - 7, i - 7) if i >= 7 else 0 for i in range(PRODUCT_BITS)),
                              clip_positive)),
        limit_negative.eq(Cat(*(between(max(i - 6, 0), i) & ~clip_negative for i in range(PRODUCT_BITS)),
                              clip_negative)),
    ]
    return [half, minus_half, limit_positive, limit_negative]


def _registered(m: Module, suffix: str, **values) -> list[Signal]:
    """A register of each value's shape, named after its keyword and ``suffix``, loaded from it
    every cycle: the values one stage later, in order."""
    regs = [Signal(Value.cast(v).shape(), name=name + suffix) for name, v in values.items()]
    m.d.sync += [r.eq(v) for r, v in zip(regs, values.values())]
    return regs
