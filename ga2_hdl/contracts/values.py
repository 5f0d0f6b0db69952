"""What the value properties share: a unit contract whose scratchpad holds free words.

:class:`FreeWords` is a :class:`~ga2_hdl.contracts.unit.UnitContract` (the same sequencer, the
same bounded instructions) whose scratchpad holds, at each element the instruction reads (a
subclass lists them, :meth:`FreeWords.inputs`: an address and whether the instruction's sizes use
it), a free 32-bit word, drawn anew at each start (so the second of two instructions back to back
computes on words of its own).  The scratchpad answers a read of lane ``j`` one cycle later with
the word at ``rd_addr + j``: the word of the first element at that address (two elements at one
address, MM's A and B overlapping, VADD's identical sources, read one word), any value elsewhere
and on a lane not read.  Asserted, besides the unit contract:

* every write to an element the instruction writes (:meth:`FreeWords.outputs`) carries what the
  ISA says (:meth:`FreeWords.check`, the subclass's, on :meth:`FreeWords.word_at`);
* every such element written by the end of the instruction (the cycle after its last possible
  write: ``done``, or the trailing cycle after it);
* no element the instruction wrote read again by it: the memory model's writes do not change the
  words read, which is faithful exactly when nothing is read after it is written (an engine that
  read back its own result fails here rather than passing on the old word).

Only the solver's form exists (``formal=True``).
"""
from __future__ import annotations

from amaranth.hdl import Assert, Cat, Const, Module, Mux, Signal, Value
from amaranth.hdl._ast import AnySeq

from .. import isa
from .unit import UnitContract, lanes

__all__ = ["FreeWords", "wide_lane"]


def wide_lane(port, name: str, off: int):
    """Lane ``off`` of a scratchpad port's data ``name`` (``rd_data``/``wr_data``; a one-word port's word)."""
    data = getattr(port, name)
    return data[off] if getattr(port, "rd_mask", None) is not None else data


class FreeWords(UnitContract):
    """A unit contract on free words; subclasses say what is read, what is written and what it must be.

    Parameters
    ----------
    unit : wiring.Component
        The unit (or engine) under test, built for ``config``.
    config : Config
        Its chip.
    op : str
        The mnemonic started.
    bounds : dict
        The bounded sizes (operand -> largest value).
    name : str
        The report's name.
    """

    def __init__(self, unit, config, op: str, *, bounds, name="values", formal: bool = True):
        if not formal:
            raise ValueError("the value properties exist for the solver only (formal=True)")
        super().__init__(unit, config, [op], bounds=bounds, name=name, formal=formal)
        self.op = op
        self.spec = self.iset.by_name[op]

    # ------------------------------------------------------------------ the subclass's part
    def inputs(self, ins) -> list[tuple[Value, Value]]:     # pragma: no cover - abstract
        """(address, in use) of every element the instruction ``ins`` reads (bounded sizes)."""
        raise NotImplementedError

    def outputs(self, ins) -> list[tuple[Value, Value]]:    # pragma: no cover - abstract
        """(address, in use) of every element the instruction ``ins`` writes."""
        raise NotImplementedError

    def check(self, m: Module, j: int, data) -> Value:      # pragma: no cover - abstract
        """True when ``data``, written to output element ``j``, is what the ISA says."""
        raise NotImplementedError

    def covers(self, m: Module) -> None:
        """The subclass's covers (each op completes with data the assertions are about)."""

    # ------------------------------------------------------------------ the memory
    def word_at(self, addr) -> Value:
        """The word at ``addr`` during the held instruction: the free word of the first element in
        use at that address (0 elsewhere: never asked for by a unit that keeps to its regions,
        which the unit contract asserts)."""
        value = Const(0, isa.WORD_BITS)
        for word, (at, used) in reversed(list(zip(self.words, self.inputs(self.held)))):
            value = Mux(used & (addr == at), word, value)
        return value

    def environment(self, m: Module) -> None:
        u = self.unit
        self.words = [Signal(isa.WORD_BITS, name=f"word{j}") for j in range(len(self.inputs(self.fresh)))]
        with m.If(self.start):
            m.d.sync += [w.eq(AnySeq(isa.WORD_BITS)) for w in self.words]
        rd_addr = Signal.like(u.spad.rd_addr)
        m.d.sync += rd_addr.eq(u.spad.rd_addr)
        for en, off in lanes(u.spad, "rd"):
            was_read = Signal(name=f"rd_lane{off}")
            m.d.sync += was_read.eq(en)
            m.d.comb += wide_lane(u.spad, "rd_data", off).eq(
                Mux(was_read, self.word_at(rd_addr + off), AnySeq(isa.WORD_BITS)))

    # ------------------------------------------------------------------ the properties
    def properties(self, m: Module) -> None:
        super().properties(m)                          # the unit contract, on the same environment
        p = self.unit.spad
        outs = self.outputs(self.held)
        written = Signal(len(outs), name="written")    # output elements written so far
        hits = [Const(0)] * len(outs)
        for en, off in lanes(p, "wr"):
            data = wide_lane(p, "wr_data", off)
            for j, (at, used) in enumerate(outs):
                here = Signal(name=f"wr_lane{off}_at{j}")
                m.d.comb += here.eq(en & used & (p.wr_addr + off == at))
                hits[j] = hits[j] | here
                with m.If(here):
                    m.d.comb += Assert(self.check(m, j, data))
        with m.If(self.start):
            m.d.sync += written.eq(0)
        with m.Else():
            m.d.sync += written.eq(written | Cat(*hits))
        # nothing the instruction wrote read again by it
        for en, off in lanes(p, "rd"):
            for j, (at, used) in enumerate(outs):
                with m.If(self.running & en & used & (p.rd_addr + off == at)):
                    m.d.comb += Assert(~written[j])
        # by the end (the cycle after the last possible write), every output element written
        end = self.trailing_now if self.trailing else (self.unit.done & self.running)
        after = Signal()
        m.d.sync += after.eq(end)
        for j, (at, used) in enumerate(outs):
            with m.If(after & used):
                m.d.comb += Assert(written[j])
        self.covers(m)
