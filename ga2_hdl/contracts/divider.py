"""The divider's contract: quotient and remainder correct for every input, by induction over
the steps of the division.

The spec keeps the operands of the running division (``N``, ``D``, latched at ``start``) and
the number ``j`` of steps done, and asserts in every busy cycle the invariant of restoring
division after ``j`` steps: with ``H = N >> (width - j)`` (the numerator bits brought
down so far) the partial remainder is ``H mod D`` and the register of quotient bits holds
``H div D`` below the unconsumed numerator bits (for ``D = 0``: all ones and ``H``, what
:func:`ga2_hdl.isa.divide_u40` defines), and at ``done`` (``j = width``) the outputs are
``N div D`` and ``N mod D``.  Asserted in every cycle of every division, with ``start``
and the operands free (a new start may come with ``done``), this is an inductive
invariant: ``mode prove`` closes it for the full 40 bits.  The timing (``done`` exactly
``width`` cycles after ``start``, ``busy`` between) is asserted too.
"""
from __future__ import annotations

from amaranth.hdl import Assert, Cover, Module, Mux, Signal
from amaranth.hdl._ast import AnySeq

from .. import isa
from ..rtl.divider import Divider
from .base import Spec

__all__ = ["DividerSpec"]


class DividerSpec(Spec):
    """The divider of ``width`` bits (the ISA's 40 by default) against ``div``/``mod``."""

    name = "quotient_remainder"

    def __init__(self, width: int = isa.DIV_BITS, *, invariant: bool = True):
        super().__init__()
        self.width = width
        self.invariant = invariant
        self.dut = Divider(width)

    def contract(self, m: Module) -> None:
        w = self.width
        m.submodules.dut = dut = self.dut
        num, den, start = Signal(w), Signal(w), Signal()
        m.d.comb += [num.eq(AnySeq(w)), den.eq(AnySeq(w)), start.eq(AnySeq(1)),
                     dut.numerator.eq(num), dut.denominator.eq(den), dut.start.eq(start)]
        N, D = Signal(w), Signal(w)
        steps = Signal(range(w + 1))              # steps done (the first one in the start cycle)
        running = Signal()                        # a division is in its cycles u+1 .. u+width
        with m.If(start):
            m.d.sync += [N.eq(num), D.eq(den), steps.eq(1), running.eq(1)]
        with m.Elif(running):
            m.d.sync += steps.eq(steps + 1)
            with m.If(steps == w):
                m.d.sync += running.eq(0)
        # timing
        m.d.comb += [Assert(dut.done == (running & (steps == w))),
                     Assert(dut.busy == (running & (steps < w)))]
        # the invariant after `steps` steps
        mask = (1 << w) - 1
        brought = Signal(w)                       # H: the top `steps` bits of N
        consumed_not = Signal(range(w + 1))          # width - steps
        m.d.comb += [consumed_not.eq(w - steps), brought.eq(N >> consumed_not)]
        q_part = Signal(w)
        r_part = Signal(w)
        m.d.comb += [q_part.eq(Mux(D == 0, (1 << steps) - 1, brought // D)),
                     r_part.eq(Mux(D == 0, brought, brought % D))]
        with m.If(running & self.invariant):
            m.d.comb += [Assert(dut.remainder == r_part),
                         Assert(dut.quotient == (((N << steps) & mask) | q_part)[:w])]
        with m.If(dut.done):
            m.d.comb += [Assert(dut.quotient == Mux(D == 0, mask, N // D)),
                         Assert(dut.remainder == Mux(D == 0, N, N % D))]
        m.d.comb += [Cover(dut.done & (D != 0) & (N > D) & (N % D != 0)), Cover(dut.done & (D == 0))]
