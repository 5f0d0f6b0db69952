"""The requantizer's contract: ``q`` equals the ISA's formula for every accumulator, mantissa,
shift and relu (:func:`ga2_hdl.isa.requantize`), one cycle after the operands.

:func:`reference` writes the ISA's formula, ``clamp(round_half_away(acc * m / 2**s), lo, 127)``,
as an Amaranth expression: ``round_half_away`` on the magnitude ``|acc| * m`` (= ``|acc * m|``,
``m`` being unsigned) as ``(mag + 2**(s-1)) >> s`` for ``s >= 1`` (its definition in the
ISA), the sign put back, the clamp.  A test checks :func:`reference` against
:func:`ga2_hdl.isa.requantize` itself on the corners and random operands, so the proof's
reference is the ISA's.  For the one-multiply form the spec computes the product of the *same* inputs the unit
multiplies, the ones' complement ``acc ^ sign`` by ``m`` (Yosys merges the two multipliers), and
asserts ``|acc| = (acc ^ sign) + sign`` for every ``acc`` (so ``|acc| * m`` is that product plus
``sign * m``); for the split form (the book's RQ engine) it forms the same four signed partial
products of ``acc`` and ``m`` as the unit and takes the magnitude of their sum itself.  Either way
the solver proves everything after the multipliers for every value, without the multipliers'
equivalence as a problem of its own; the magnitude, the rounding, the saturation, the sign and relu
are all the spec's.
"""
from __future__ import annotations

from amaranth.hdl import Assert, Const, Cover, Module, Mux, Signal, Value, signed
from amaranth.hdl._ast import AnySeq

from .. import isa
from ..rtl.requant import (ACC_BITS, MANTISSA_BITS, MANTISSA_SPLIT, MULTIPLY_SPLIT, PRODUCT_BITS, SHIFT_BITS,
                           Requantizer)
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
    """q(t+LATENCY) = isa.requantize(acc(t), m(t), s(t), relu(t)) for every operand.

    ``pipelined``: the book RQ engine's form (``magnitude_stage`` and ``split_multiply``,
    LATENCY 3); else the two-stage form (LATENCY 1).
    """

    name = "formula"

    def __init__(self, *, pipelined: bool = False):
        super().__init__()
        self.pipelined = pipelined
        self.dut = Requantizer(magnitude_stage=pipelined, split_multiply=pipelined)
        if pipelined:
            self.name = "formula_pipelined"

    def contract(self, m: Module) -> None:
        m.submodules.dut = dut = self.dut
        acc, mant = Signal(signed(ACC_BITS)), Signal(MANTISSA_BITS)
        shift, relu = Signal(SHIFT_BITS), Signal()
        m.d.comb += [acc.eq(AnySeq(ACC_BITS)), mant.eq(AnySeq(MANTISSA_BITS)),
                     shift.eq(AnySeq(SHIFT_BITS)), relu.eq(AnySeq(1)),
                     dut.acc.eq(acc), dut.mantissa.eq(mant), dut.shift.eq(shift), dut.relu.eq(relu)]
        negative = acc < 0
        if self.pipelined:
            # the unit's signed product: the same registers and multipliers as its first two
            # stages (they merge with the unit's): with acc = a_lo + a_hi * 2**MULTIPLY_SPLIT (a_hi
            # signed) and m = b_lo + b_hi * 2**MANTISSA_SPLIT, acc * m is the sum of the four
            # partial products below (the distributive law; sim_tests/rtl/test_requant.py runs the
            # unit itself on random and corner operands against the ISA's function); its magnitude
            # |acc * m| = |acc| * m is the spec's own negation
            acc_0, mant_0, stage0 = Signal.like(acc), Signal.like(mant), _delayed(m, (negative, shift, relu), 1)
            m.d.sync += [acc_0.eq(acc), mant_0.eq(mant)]
            partials = []
            for a, a_at in ((acc_0[:MULTIPLY_SPLIT], 0), (acc_0[MULTIPLY_SPLIT:].as_signed(), MULTIPLY_SPLIT)):
                for b, b_at in ((mant_0[:MANTISSA_SPLIT], 0), (mant_0[MANTISSA_SPLIT:], MANTISSA_SPLIT)):
                    partial = Signal((a * b).shape())
                    m.d.sync += partial.eq(a * b)
                    partials.append(partial << (a_at + b_at))
            signed_product = Signal(signed(PRODUCT_BITS + 1))
            m.d.comb += signed_product.eq(sum(partials))
            magnitude_times_m = Mux(signed_product < 0, -signed_product, signed_product)
            negative, shift, relu = _delayed(m, stage0, 1)
        else:
            # the one-multiply form multiplies the ones' complement acc ^ sign and adds sign * m (it
            # never negates acc): the spec asserts |acc| = ones + sign for every acc (no multiplier
            # in it), so |acc| * m = ones * m + sign * m, and multiplies the same ones, so the two
            # multipliers merge
            magnitude, ones = Signal(ACC_BITS), Signal(ACC_BITS - 1)
            m.d.comb += [magnitude.eq(Mux(acc < 0, -acc, acc)),
                         ones.eq(acc[:ACC_BITS - 1] ^ (acc < 0).replicate(ACC_BITS - 1)),
                         Assert(ones + (acc < 0) == magnitude)]
            magnitude_times_m = ones * mant + Mux(negative, mant, 0)
        product = Signal(PRODUCT_BITS)
        negative_r, shift_r, relu_r = _delayed(m, (negative, shift, relu), 1)
        m.d.sync += product.eq(magnitude_times_m)
        (valid,) = _delayed(m, (Const(1),), self.dut.LATENCY)
        expected = reference(m, product, negative_r, shift_r, relu_r)
        negative = negative_r
        with m.If(valid):
            m.d.comb += Assert(dut.q == expected)
        m.d.comb += [Cover(valid & (dut.q == isa.INT8_MAX) & ~negative),
                     Cover(valid & (dut.q == -isa.INT8_MAX)),
                     Cover(valid & negative & relu_r),
                     Cover(valid & (shift_r == 0))]


def _delayed(m: Module, values, cycles: int):
    """``values`` registered ``cycles`` times (each a signal of its own width)."""
    out = list(values)
    for _ in range(cycles):
        regs = [Signal(len(Value.cast(v))) for v in out]
        m.d.sync += [r.eq(v) for r, v in zip(regs, out)]
        out = regs
    return out
