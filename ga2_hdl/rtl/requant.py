"""The requantizer: an int32 accumulator back to an int8, as ``isa.requantize``.

    q = clamp(round_half_away(acc * m / 2**s), -127 (0 with relu), 127)

for every int32 ``acc``, every 24-bit ``m`` (the ISA's RQ operand is 24 bits
wide; nothing requires ``m >= 2**23`` here), every 6-bit ``s`` and both values
of ``relu``.

Structure (two stages, one register between them)

* Stage 1, the cycle the operands arrive: take the magnitude ``|acc|`` (an
  unsigned 32-bit value, so -2**31 is fine) and multiply it by ``m``: a
  32 x 24 unsigned multiplier, 56-bit product.  The product, the sign, ``s``
  and ``relu`` are registered.
* Stage 2, the next cycle (combinational from the registers): round the
  magnitude to nearest, ties up (= away from zero once the sign is put back),
  as ``((product >> (s - 1)) + 1) >> 1`` for ``s >= 1`` and ``product`` for
  ``s = 0``.  This is ``floor((product + 2**(s-1)) / 2**s)`` without a 63-bit
  adder: the rounding bit is the last bit shifted out.  Then saturate the
  magnitude at 127 (by one compare of the product with the smallest product that
  saturates, a register stage 1 computes from ``s``, so only the low 8 bits of the
  shifted product are needed), restore the sign (rounding the magnitude makes the result
  symmetric, ``requant(-a) = -requant(a)``, and -128 cannot occur), and clamp
  negatives to 0 when ``relu`` is set.

So ``q`` is valid :attr:`Requantizer.LATENCY` = 1 cycle after its operands; a
new set of operands may arrive every cycle.

``Requantizer(magnitude_stage=True)`` registers the sign and the magnitude first (a stage 0
in the cycle the operands arrive), so the multiplier starts from a register: LATENCY = 2.
The book's RQ engine uses it (it reads its first element in the start cycle, so the extra
stage costs no cycle: docs/fpga.md).
"""
from amaranth.hdl import Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .. import isa

_RQ = isa.OP_BY_NAME["RQ"]

ACC_BITS = isa.WORD_BITS                     #: the accumulator is a whole signed word
MANTISSA_BITS = _RQ.operand("m").bits        #: 24
SHIFT_BITS = _RQ.operand("s").bits           #: 6
PRODUCT_BITS = ACC_BITS + MANTISSA_BITS      #: ``|acc| <= 2**31``, ``m < 2**24``: the product fits in 56 bits
Q_BITS = 8                                   #: the int8 result


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

    def __init__(self, *, magnitude_stage: bool = False):
        self.magnitude_stage = magnitude_stage
        self.LATENCY = type(self).LATENCY + int(magnitude_stage)
        super().__init__()

    def elaborate(self, platform):
        m = Module()

        negative = self.acc < 0
        magnitude = Signal(ACC_BITS)
        m.d.comb += magnitude.eq(Mux(negative, -self.acc, self.acc))  # 2**31 fits unsigned
        mantissa, shift, relu = self.mantissa, self.shift, self.relu
        if self.magnitude_stage:
            # ---- stage 0: the sign and the magnitude (and the other operands), registered
            staged = [Signal(1, name="negative_0"), Signal(ACC_BITS, name="magnitude_0"),
                      Signal(MANTISSA_BITS, name="mantissa_0"), Signal(SHIFT_BITS, name="shift_0"),
                      Signal(1, name="relu_0")]
            m.d.sync += [r.eq(v) for r, v in zip(staged, (negative, magnitude, mantissa, shift, relu))]
            negative, magnitude, mantissa, shift, relu = staged

        # ---- stage 1: magnitude times mantissa

        product = Signal(PRODUCT_BITS)
        negative_r = Signal()
        shift_r = Signal(SHIFT_BITS)
        relu_r = Signal()
        # the smallest product that saturates: rounded >= 128 exactly when product >= limit
        # (2**7 for s = 0; else (product >> (s-1)) >= 255, that is product >= 255 * 2**(s-1)),
        # so stage 2 needs only 8 bits of the shifted product and one compare
        limit_r = Signal(8 + (1 << SHIFT_BITS))
        m.d.sync += [
            product.eq(magnitude * mantissa),
            negative_r.eq(negative),
            shift_r.eq(shift),
            relu_r.eq(relu),
            limit_r.eq(Mux(shift == 0, isa.INT8_MAX + 1, Const(255, 8) << (shift - 1)[:SHIFT_BITS])),
        ]

        # ---- stage 2: round, saturate, sign, relu
        rounded = Signal(PRODUCT_BITS)
        with m.If(shift_r == 0):
            m.d.comb += rounded.eq(product)
        with m.Else():
            # product / 2**(s-1), truncated, keeps the rounding bit as its lsb.
            in_half_units = Signal(PRODUCT_BITS)
            m.d.comb += [
                in_half_units.eq(product >> (shift_r - 1)[:SHIFT_BITS]),
                rounded.eq((in_half_units[:8] + 1) >> 1),    # below limit: in_half_units <= 254
            ]

        saturated = Signal(range(isa.INT8_MAX + 1))
        m.d.comb += saturated.eq(Mux(product >= limit_r, isa.INT8_MAX, rounded))

        with m.If(negative_r & relu_r):
            m.d.comb += self.q.eq(0)
        with m.Elif(negative_r):
            m.d.comb += self.q.eq(-saturated)
        with m.Else():
            m.d.comb += self.q.eq(saturated)
        return m
