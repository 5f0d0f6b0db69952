"""The divider's contracts: quotient and remainder correct for every input, by induction over
the steps of the division.

Two specs, both with ``start`` and the operands free in every cycle (a new start may come with
``done``) and the timing (``done`` exactly ``width`` cycles after ``start``, ``busy`` between)
asserted:

* :class:`DividerStepSpec`, at the ISA's 40 bits: after ``j`` steps, the remainder register ``R``
  and the quotient bits found so far times the divisor (a product the spec builds by shift and
  add as the bits appear, never a multiplication) add up to the numerator bits brought down, and
  ``R`` is below the divisor.  Each step's arithmetic is an addition and a compare, and with the
  divider's own divisor register and step counter in the invariant it is inductive: k-induction
  closes it at k = 2 (the depth ``ga2 prove`` gives it) in seconds.  It reads those registers by name from the divider's elaborated
  design (:func:`registers`).
* :class:`DividerSpec`: the solver's own ``div`` and ``mod`` at every step (``H mod D`` and
  ``H div D`` of the bits brought down) and at ``done``: the end claim said directly, which the
  solver proves for the generator at 8 bits (k = 12); at 40 bits a 40-bit division in every step
  gives it no verdict.
"""
from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Assert, Assume, Cat, Const, Cover, Fragment, Module, Mux, Signal
from amaranth.hdl._ast import AnySeq

from .. import isa
from ..rtl.divider import Divider
from .base import Spec

__all__ = ["DividerSpec", "DividerStepSpec", "registers"]


class _DivisionSpec(Spec):
    """What both divider specs share: the divider of ``width`` bits with ``start`` and the operands
    free in every cycle, the running division's operands and steps, and its timing asserted."""

    def __init__(self, width: int, quotient_bits: int | None = None):
        super().__init__()
        self.width = width
        #: a short division (``Divider``'s ``quotient_bits``): its precondition is assumed at each start
        self.quotient_bits = quotient_bits
        self.dut = Divider(width, quotient_bits)

    def division(self, m: Module) -> SimpleNamespace:
        """The running division (``self.dut`` already a submodule): ``start``; ``N`` and ``D``
        latched at it; ``steps`` done (the first one in the start cycle); ``running`` in its cycles
        u+1 .. u+width; ``rest`` = width - steps, the numerator bits not yet brought down; ``brought``
        (H), the top ``steps`` bits of N.  ``done`` and ``busy`` are asserted against them."""
        w, dut, q = self.width, self.dut, self.quotient_bits
        num, den, start = Signal(w), Signal(w), Signal()
        m.d.comb += [num.eq(AnySeq(w)), den.eq(AnySeq(w)), start.eq(AnySeq(1)),
                     dut.numerator.eq(num), dut.denominator.eq(den), dut.start.eq(start)]
        if q is not None:                   # the short division's precondition: the quotient fits in q bits
            with m.If(start):
                m.d.comb += Assume((num >> q) < den)
        N, D = Signal(w), Signal(w)
        steps = Signal(range(w + 1))
        running = Signal()
        with m.If(start):
            # steps done when the registers first show the division: the first one in the start cycle,
            # or for a short division the w - q that find no quotient bit (loaded, not stepped)
            m.d.sync += [N.eq(num), D.eq(den), steps.eq(1 if q is None else w - q), running.eq(1)]
        with m.Elif(running):
            m.d.sync += steps.eq(steps + 1)
            with m.If(steps == w):
                m.d.sync += running.eq(0)
        m.d.comb += [Assert(dut.done == (running & (steps == w))),
                     Assert(dut.busy == (running & (steps < w)))]
        brought, rest = Signal(w), Signal(range(w + 1))
        m.d.comb += [rest.eq(w - steps), brought.eq(N >> rest)]
        return SimpleNamespace(start=start, N=N, D=D, steps=steps, running=running, rest=rest, brought=brought)


class DividerSpec(_DivisionSpec):
    """The divider of ``width`` bits (the ISA's 40 by default) against ``div``/``mod``."""

    name = "quotient_remainder"

    def __init__(self, width: int = isa.DIV_BITS, *, invariant: bool = True, quotient_bits: int | None = None):
        super().__init__(width, quotient_bits)
        self.invariant = invariant

    def contract(self, m: Module) -> None:
        w = self.width
        m.submodules.dut = dut = self.dut
        d = self.division(m)
        N, D, steps, running, brought = d.N, d.D, d.steps, d.running, d.brought
        # the invariant after `steps` steps
        mask = (1 << w) - 1
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
        m.d.comb += Cover(dut.done & (D != 0) & (N > D) & (N % D != 0))
        if self.quotient_bits is None:      # (a short division's precondition excludes D = 0)
            m.d.comb += Cover(dut.done & (D == 0))


def registers(fragment, names) -> dict:
    """The divider's registers, found by name among the signals its elaborated ``fragment`` assigns."""
    found = {}
    for statements in fragment.statements.values():
        for statement in statements:
            for signal in statement._lhs_signals():
                if signal.name in names:
                    found.setdefault(signal.name, signal)
    missing = [n for n in names if n not in found]
    if missing:
        raise LookupError(f"the divider assigns no signal named {', '.join(missing)}: the step invariant "
                          f"reads the divider's registers by name")
    return found


class DividerStepSpec(_DivisionSpec):
    """The divider of ``width`` bits, its quotient and remainder at every step, without a division or a
    multiplication in the spec.

    The spec keeps the operands ``N`` and ``D`` latched at ``start`` and the number ``j`` of steps done,
    and records the quotient bits as the divider produces them (its register's bit 0 after each step),
    building from them ``P_j``, the quotient so far times ``D``, by shift and add
    (``P_j = 2 P_(j-1) + q_j D``: the quotient bits ``Q_j = 2 Q_(j-1) + q_j``, so ``P_j = Q_j D`` by the
    distributive law, which the spec's construction carries and the solver is not asked to prove).
    In every cycle of a division it asserts, after ``j`` steps, with ``H`` the top ``j`` bits of ``N``:

    * the remainder register ``R`` and ``P_j`` add up to ``H``, and ``R < D`` (``D = 0``: every
      quotient bit is 1, so ``P_j = 0`` and ``R = H``, :func:`ga2_hdl.isa.divide_u40`'s definition);
    * the quotient register's low ``j`` bits are the bits recorded (no bit changes once found), its
      other bits the numerator's ``w - j`` bits not yet brought down;
    * the divisor register holds ``D`` and the step counter ``w - j``; ``busy`` and ``done`` as the
      timing says.

    At ``done`` (``j = w``): ``P_w + R = N``, ``R < D``, and the quotient is ``Q_w``, so the quotient
    is ``N div D`` and the remainder ``N mod D`` (the only such pair). Each step's arithmetic is a
    ``w + 2``-bit addition and compare, so the invariant is inductive at any width: k-induction closes it
    for the ISA's 40 bits. ``check_product`` also asserts ``P_j = Q_j D`` itself (a multiplication:
    for narrow widths, to show the spec's construction right by the solver too).
    """

    name = "quotient_remainder_steps"

    #: the divider's registers the invariant reads (they hold the division's state)
    REGISTERS = ("rem", "num_quot", "divisor", "steps_left")

    def __init__(self, width: int = isa.DIV_BITS, *, check_product: bool = False, quotient_bits: int | None = None):
        super().__init__(width, quotient_bits)
        self.check_product = check_product
        self.platform = None

    def elaborate(self, platform):
        self.platform = platform              # the divider elaborated for the same platform, here
        return super().elaborate(platform)

    def contract(self, m: Module) -> None:
        w = self.width
        fragment = Fragment.get(self.dut, self.platform)
        regs = registers(fragment, self.REGISTERS)
        m.submodules.dut = fragment
        dut = self.dut
        d = self.division(m)                      # steps: j
        N, D, steps, running, rest, brought = d.N, d.D, d.steps, d.running, d.rest, d.brought
        q_before = Signal(w)                      # Q_(j-1): the quotient bits recorded before this step
        p_before = Signal(w + 2)                  # P_(j-1) = Q_(j-1) * D, by shift and add
        bit = dut.quotient[0]                     # q_j: the bit the last step found
        q_now = Signal(w)
        p_now = Signal(w + 2)
        m.d.comb += [q_now.eq(Cat(bit, q_before)), p_now.eq((p_before << 1) + Mux(bit, D, 0))]
        with m.If(d.start):
            m.d.sync += [q_before.eq(0), p_before.eq(0)]
        with m.Elif(running):
            m.d.sync += [q_before.eq(q_now), p_before.eq(p_now)]
        mask = (1 << w) - 1
        low = Signal(w)                           # the mask of the quotient bits found: 2**j - 1
        m.d.comb += low.eq((1 << steps) - 1)
        with m.If(running):
            m.d.comb += [
                Assert((steps >= 1) & (steps <= w)),
                Assert(regs["divisor"] == D),
                Assert((Cat(Const(0, 1), q_before) >> steps) == 0),
                Assert((dut.quotient & low) == q_now),
                Assert((dut.quotient >> steps) == (N & (mask >> steps))),
                Assert(p_now + dut.remainder == brought),
                Assert(Mux(D == 0, q_now == low, dut.remainder < D)),
            ]
            with m.If(steps < w):
                m.d.comb += Assert(regs["steps_left"] == rest)
            if self.check_product:
                m.d.comb += Assert(p_now == q_now * D)
        with m.If(dut.done):
            m.d.comb += [Assert(p_now + dut.remainder == N),
                         Assert(Mux(D == 0, dut.quotient == mask, dut.remainder < D)),
                         Assert(dut.quotient == q_now)]
        m.d.comb += Cover(dut.done & (D != 0) & (N > D) & (dut.remainder != 0))
        if self.quotient_bits is None:      # (a short division's precondition excludes D = 0)
            m.d.comb += Cover(dut.done & (D == 0))
