"""The requantizer: an int32 accumulator back to an int8, as ``isa.requantize``.

    q = clamp(round_half_away(acc * m / 2**s), -127 (0 with relu), 127)

for every int32 ``acc``, every 24-bit ``m`` (the ISA's RQ operand is 24 bits
wide; nothing requires ``m >= 2**23`` here), every 6-bit ``s`` and both values
of ``relu``.

Structure (two stages, one register between them)

* Stage 1, the cycle the operands arrive: the magnitude ``|acc|`` times ``m``,
  without negating ``acc``: ``|acc| = ones + sign`` with ``ones = acc ^ sign`` (one gate
  per bit, below 2**31), so the product is ``ones * m + sign * m``: a 31 x 24 unsigned
  multiplier and one add, 56-bit product.  The product, the sign, ``s - 1``,
  ``s = 0``, ``relu`` and the saturation limit are registered.
* Stage 2, the next cycle (combinational from the registers): round the
  magnitude to nearest, ties up (= away from zero once the sign is put back).
  Stage 1 registers ``s - 1``, so stage 2 starts with the 8-bit window
  ``h = (product >> (s - 1))[:8]`` (the product in half units, the rounding bit as
  its lsb; ``2 * product`` for ``s = 0``): the rounded magnitude is ``h[1:] + h[0]``,
  which is ``floor((product + 2**(s-1)) / 2**s)`` without a 63-bit adder.  The sign
  goes back in the same adder (``-(x + c) = ~x + ~c``: the inputs inverted by the
  sign), so there is no second carry chain for the negation.  The magnitude
  saturates at 127 by one compare of the product with the smallest product that
  saturates (a register stage 1 computes from ``s``, clipped to ``2**56``, which no
  product reaches), so only those 8 bits are needed; rounding the magnitude makes
  the result symmetric, ``requant(-a) = -requant(a)``, and -128 cannot occur.
  Negatives become 0 when ``relu`` is set.

So ``q`` is valid :attr:`Requantizer.LATENCY` = 1 cycle after its operands; a
new set of operands may arrive every cycle.

``Requantizer(magnitude_stage=True)`` registers the sign and ``ones`` first (a stage 0
in the cycle the operands arrive), so the multiplier starts from a register: LATENCY = 2.
``split_multiply=True`` multiplies m in two halves (``m[:18]`` and ``m[18:]``), registers the
two partial products and adds them (and ``sign * m``) in the next stage: one more cycle
of latency.  The book's RQ engine uses both (it reads its first element in the start cycle
and writes its last in the cycle after its done, :func:`ga2_hdl.isa.trailing_write_cycles`,
so the extra stages cost no cycle: docs/fpga.md).
"""
from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .. import isa

_RQ = isa.OP_BY_NAME["RQ"]

ACC_BITS = isa.WORD_BITS                     #: the accumulator is a whole signed word
MANTISSA_BITS = _RQ.operand("m").bits        #: 24
SHIFT_BITS = _RQ.operand("s").bits           #: 6
PRODUCT_BITS = ACC_BITS + MANTISSA_BITS      #: ``|acc| <= 2**31``, ``m < 2**24``: the product fits in 56 bits
Q_BITS = 8                                   #: the int8 result
#: with ``split_multiply``, m is multiplied in two halves, the low one this many bits (an ECP5
#: multiplier's width, so each half is one or two multiplier blocks and no adder between them)
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
        if self.magnitude_stage:
            # ---- stage 0: the sign and the ones' complement (and the other operands), registered
            staged = [Signal(1, name="negative_0"), Signal(ACC_BITS - 1, name="ones_0"),
                      Signal(MANTISSA_BITS, name="mantissa_0"), Signal(SHIFT_BITS, name="shift_0"),
                      Signal(1, name="relu_0")]
            m.d.sync += [r.eq(v) for r, v in zip(staged, (negative, ones, mantissa, shift, relu))]
            negative, ones, mantissa, shift, relu = staged

        if self.split_multiply:
            # ---- stage 1a: the two partial products of m's halves, registered (each half's
            # multiplier runs from a register into a register); their sum is stage 1's
            lo = Signal(ACC_BITS - 1 + MULTIPLY_SPLIT, name="partial_lo")
            hi = Signal(ACC_BITS - 1 + MANTISSA_BITS - MULTIPLY_SPLIT, name="partial_hi")
            correction = Signal(MANTISSA_BITS, name="correction")
            later = [Signal(1, name="negative_1"), Signal(SHIFT_BITS, name="shift_1"), Signal(1, name="relu_1")]
            m.d.sync += [lo.eq(ones * mantissa[:MULTIPLY_SPLIT]), hi.eq(ones * mantissa[MULTIPLY_SPLIT:]),
                         correction.eq(Mux(negative, mantissa, 0)),
                         *(r.eq(v) for r, v in zip(later, (negative, shift, relu)))]
            negative, shift, relu = later
            magnitude_times_m = lo + (hi << MULTIPLY_SPLIT) + correction
        else:
            magnitude_times_m = ones * mantissa + Mux(negative, mantissa, 0)

        # ---- stage 1: magnitude times mantissa

        product = Signal(PRODUCT_BITS)
        negative_r = Signal()
        is_zero_r = Signal()                 # s = 0: no rounding, the product itself
        window_r = Signal(SHIFT_BITS)        # s - 1 (for s >= 1): where the rounding window starts
        relu_r = Signal()
        # the smallest product that saturates: rounded >= 128 exactly when product >= limit
        # (2**7 for s = 0; else (product >> (s-1)) >= 255, that is product >= 255 * 2**(s-1)),
        # so stage 2 needs only 8 bits of the shifted product and one compare. A limit at or
        # above 2**PRODUCT_BITS is never reached: it is kept as 2**PRODUCT_BITS, so the compare
        # is PRODUCT_BITS + 1 bits wide
        limit_r = Signal(PRODUCT_BITS + 1)
        full_limit = Signal(8 + (1 << SHIFT_BITS))
        m.d.comb += full_limit.eq(Mux(shift == 0, isa.INT8_MAX + 1, Const(255, 8) << (shift - 1)[:SHIFT_BITS]))
        m.d.sync += [
            product.eq(magnitude_times_m),                  # = |acc| * m
            negative_r.eq(negative),
            is_zero_r.eq(shift == 0),
            window_r.eq((shift - 1)[:SHIFT_BITS]),
            relu_r.eq(relu),
            limit_r.eq(Mux(full_limit >> PRODUCT_BITS != 0, 1 << PRODUCT_BITS, full_limit)),
        ]

        # ---- stage 2: round, saturate, sign, relu
        # h: the product in half units (product / 2**(s-1), truncated: its lsb is the rounding bit);
        # below the limit h <= 254, so 8 bits of it are enough. For s = 0 the product itself, with
        # rounding bit 0: h = 2 * product (below the limit product <= 127).
        h = Signal(8)
        with m.If(is_zero_r):
            m.d.comb += h.eq(Cat(Const(0, 1), product[:7]))
        with m.Else():
            m.d.comb += h.eq((product >> window_r)[:8])
        # the rounded magnitude is r = h[1:] + h[0]; its negation -r = ~h[1:] + ~h[0] (8 bits), so
        # one adder on inputs inverted by the sign gives the signed result without a second carry
        # chain for the negation
        flip = negative_r.replicate(8)
        signed_r = Signal(signed(8))
        m.d.comb += signed_r.eq((h[1:] ^ flip) + (h[0] ^ negative_r))
        saturates = product >= limit_r

        with m.If(negative_r & relu_r):
            m.d.comb += self.q.eq(0)
        with m.Elif(saturates):
            m.d.comb += self.q.eq(Mux(negative_r, -isa.INT8_MAX, isa.INT8_MAX))
        with m.Else():
            m.d.comb += self.q.eq(signed_r)
        return m
