"""What every contract shares: a spec with its own clock domain, whose clock and reset are ports.

A spec (:class:`Spec`) is an elaboratable holding the unit under test and the
contract's Assert, Assume and Cover statements, in the style of Amaranth's own
``FIFOContractSpec``.  Its ``sync`` domain is a :class:`ClockDomain` it owns, so
the formal runner can name the clock and the reset among the design's ports (left
out, the clock is undriven and every assertion holds vacuously).  The reset is held
low (:meth:`Spec.hold_reset`): every register starts from its initial value, as on
the chip after configuration.
"""
from __future__ import annotations

from amaranth.hdl import Assume, ClockDomain, Elaboratable, Module, Signal
from amaranth.lib import wiring

__all__ = ["Spec", "NotApplicable", "inputs_of"]


class NotApplicable(ValueError):
    """A property that does not apply to the configuration (its spec says why when elaborated):
    ``ga2 prove`` reports it as ``skipped`` with the reason, not as a failure or a crash."""


class Spec(Elaboratable):
    """A contract around one unit.

    Subclasses implement :meth:`contract` (``m`` already has the ``sync`` domain)
    and may list their free inputs in :attr:`free` (the formal platform's ports
    beside the clock and reset).
    """

    #: a short name (for the SBY file and the report)
    name = "spec"

    def __init__(self):
        self.domain = ClockDomain("sync")
        self.free: list[Signal] = []

    def ports(self) -> list:
        return [self.domain.clk, self.domain.rst, *self.free]

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = self.domain
        self.hold_reset(m)
        self.contract(m)
        return m

    def hold_reset(self, m: Module) -> None:
        m.d.comb += Assume(~self.domain.rst)

    def contract(self, m: Module) -> None:      # pragma: no cover - abstract
        raise NotImplementedError


def inputs_of(component: wiring.Component) -> list:
    """The input ports of a component (what a spec drives with free values)."""
    sig = component.signature
    return [value for path, member, value in sig.flatten(component) if member.flow == wiring.In]
