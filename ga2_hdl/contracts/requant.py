"""The requantizer's contract: ``q`` equals the ISA's formula for every accumulator, mantissa,
shift and relu (:func:`ga2_hdl.isa.requantize`), one cycle after the operands.

:func:`reference` writes the ISA's formula, ``clamp(round_half_away(acc * m / 2**s), lo, 127)``,
as an Amaranth expression: ``round_half_away`` on the magnitude ``|acc| * m`` (= ``|acc * m|``,
``m`` being unsigned) as ``(mag + 2**(s-1)) >> s`` for ``s >= 1`` (its definition in the
ISA), the sign put back, the clamp.  A test checks :func:`reference` against
:func:`ga2_hdl.isa.requantize` itself on the corners and random operands, so the proof's
reference is the ISA's.  The spec computes the product of the *same* inputs the unit
multiplies, the ones' complement ``acc ^ sign`` by ``m`` (Yosys merges the two multipliers), and
asserts ``|acc| = (acc ^ sign) + sign`` for every ``acc`` (so ``|acc| * m`` is that product plus
``sign * m``), so the solver proves everything after the multiplier for every value, without the
multiplier's equivalence as a problem of its own; the magnitude, the rounding, the saturation,
the sign and relu are all the spec's.
"""
from __future__ import annotations

from amaranth.hdl import Assert, Cover, Module, Mux, Signal, signed
from amaranth.hdl._ast import AnySeq

from .. import isa
from ..rtl.requant import ACC_BITS, MANTISSA_BITS, PRODUCT_BITS, SHIFT_BITS, Requantizer
from .base import Spec

__all__ = ["reference", "RequantizerSpec"]


def reference(m: Module, product, negative, shift, relu):
    """The ISA's requantization of ``acc * m`` given its magnitude ``product`` (= |acc| * m) and
    sign ``negative``: a signed 8-bit Amaranth value."""
    half = Signal(PRODUCT_BITS + 1)
    m.d.comb += half.eq(Mux(shift == 0, 0, (1 << (shift - 1)[:SHIFT_BITS])))
    rounded = Signal(PRODUCT_BITS + 1)
    m.d.comb += rounded.eq((product + half) >> shift)
    signed_q = Signal(signed(PRODUCT_BITS + 2))
    m.d.comb += signed_q.eq(Mux(negative, -rounded, rounded))
    lo = Mux(relu, 0, isa.INT8_MIN)
    q = Signal(signed(8))
    m.d.comb += q.eq(Mux(signed_q > isa.INT8_MAX, isa.INT8_MAX, Mux(signed_q < lo, lo, signed_q)))
    return q


class RequantizerSpec(Spec):
    """q(t+1) = isa.requantize(acc(t), m(t), s(t), relu(t)) for every operand."""

    name = "formula"

    def __init__(self):
        super().__init__()
        self.dut = Requantizer()

    def contract(self, m: Module) -> None:
        m.submodules.dut = dut = self.dut
        acc, mant = Signal(signed(ACC_BITS)), Signal(MANTISSA_BITS)
        shift, relu = Signal(SHIFT_BITS), Signal()
        m.d.comb += [acc.eq(AnySeq(ACC_BITS)), mant.eq(AnySeq(MANTISSA_BITS)),
                     shift.eq(AnySeq(SHIFT_BITS)), relu.eq(AnySeq(1)),
                     dut.acc.eq(acc), dut.mantissa.eq(mant), dut.shift.eq(shift), dut.relu.eq(relu)]
        # the unit multiplies the ones' complement acc ^ sign and adds sign * m (it never negates
        # acc): the spec asserts |acc| = ones + sign for every acc (no multiplier in it), so
        # |acc| * m = ones * m + sign * m, and multiplies the same ones, so the two multipliers merge
        magnitude, ones = Signal(ACC_BITS), Signal(ACC_BITS - 1)
        m.d.comb += [magnitude.eq(Mux(acc < 0, -acc, acc)),
                     ones.eq(acc[:ACC_BITS - 1] ^ (acc < 0).replicate(ACC_BITS - 1)),
                     Assert(ones + (acc < 0) == magnitude)]
        product, negative = Signal(PRODUCT_BITS), Signal()
        shift_r, relu_r, valid = Signal(SHIFT_BITS), Signal(), Signal()
        m.d.sync += [product.eq(ones * mant + Mux(acc < 0, mant, 0)), negative.eq(acc < 0),
                     shift_r.eq(shift), relu_r.eq(relu), valid.eq(1)]
        expected = reference(m, product, negative, shift_r, relu_r)
        with m.If(valid):
            m.d.comb += Assert(dut.q == expected)
        m.d.comb += [Cover(valid & (dut.q == isa.INT8_MAX) & ~negative),
                     Cover(valid & (dut.q == -isa.INT8_MAX)),
                     Cover(valid & negative & relu_r),
                     Cover(valid & (shift_r == 0))]
