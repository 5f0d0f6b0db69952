"""The unit contract of :class:`ga2_hdl.rtl.layout.UnitSignature`, for any execution unit.

:class:`UnitContract` wraps one unit (the DMA, the matrix unit, the vector unit or
one of its engines) and plays the sequencer and the memories with free values:

Assumed (the sequencer's side of the contract)
    ``start`` only while the unit is idle (from the cycle after ``done``), only with
    an op the unit executes and an instruction the ISA accepts (the decoder's
    :class:`~ga2_hdl.rtl.decoder.IssueCheck`, built from the ISA's rules, says OK),
    with the sizes bounded (``bounds``, so that whole instructions fit in a bounded
    check); ``ins`` held from the start cycle until ``done``; the scratchpad's read
    data and the external memory's answers free values (the external memory answers
    each request exactly ``config.lat`` cycles later, in order).

Asserted (the unit's side)
    * ``done`` is high exactly in cycle t+W of a start in cycle t, W the ISA's busy
      time of the instruction (:attr:`ga2_hdl.isa.OpSpec.busy`, evaluated on the
      instruction's fields as hardware values): once per start, never else;
    * ``busy`` is high in cycles t+1 .. t+W exactly;
    * the unit writes the scratchpad only in t+1 .. t+W (and, without overlap, in the cycle
      t+W+1 of a trailing write, :func:`ga2_hdl.isa.trailing_write_cycles`, in which the
      sequencer starts nothing and holds ``ins``: both assumed) and reads it only in t+1 .. t+W and in the
      start cycle t (nothing else runs then, and a read changes nothing: how RQ, VADD and SM
      take a register after the scratchpad's output at the book's busy times); idle, the port
      is quiet;
    * no cycle reads and writes one address (every lane of a wide port);
    * every word read lies in one of the instruction's regions (SM reads back what it
      wrote to its destination), every word written in a region it writes (:func:`ga2_hdl.rtl.decoder.spad_accesses`, the ISA's regions).

Covered (no proof is vacuous): every op the unit executes completes.
"""
from __future__ import annotations

import itertools

from amaranth.hdl import Assert, Assume, Const, Cover, Module, Mux, Signal, Value
from amaranth.hdl._ast import AnyConst, AnySeq

from .. import isa
from ..config import Config
from ..rtl import decoder
from ..rtl.decoder import IssueCheck, spad_accesses
from ..rtl.layout import INSTRUCTION
from .base import Spec

__all__ = ["UnitContract", "hardware_busy", "lanes"]


class _Arith:
    """An Amaranth value standing in for an int inside the ISA's busy functions: the same
    arithmetic, with floor division by a power of two (``ceil_div`` by a port width) made an
    arithmetic shift, exactly equal for every signed value, instead of a divider circuit."""

    def __init__(self, value):
        self.value = Value.cast(value)

    @staticmethod
    def _v(other):
        return other.value if isinstance(other, _Arith) else other

    def __add__(self, other): return _Arith(self.value + self._v(other))
    def __radd__(self, other): return _Arith(self._v(other) + self.value)
    def __sub__(self, other): return _Arith(self.value - self._v(other))
    def __rsub__(self, other): return _Arith(self._v(other) - self.value)
    def __mul__(self, other): return _Arith(self.value * self._v(other))
    def __rmul__(self, other): return _Arith(self._v(other) * self.value)
    def __neg__(self): return _Arith(-self.value)

    def __floordiv__(self, other):
        if isinstance(other, int) and other > 0 and other & (other - 1) == 0:
            return _Arith(self.value.as_signed() >> (other.bit_length() - 1))
        return _Arith(self.value // self._v(other))

    def __bool__(self):
        raise TypeError("a hardware value has no truth value")


class _Operands:
    """The instruction's operands as :class:`_Arith` values (flags in ``fixed`` as ints)."""

    def __init__(self, ins, spec: isa.OpSpec, fixed):
        for o in spec.operands:
            setattr(self, o.name, fixed[o.name] if o.name in fixed else _Arith(decoder.operand(ins, spec, o.name)))


def _busy(spec, ins, fixed) -> Value:
    out = spec.busy(_Operands(ins, spec, fixed))
    return out.value if isinstance(out, _Arith) else Const(out)


def hardware_busy(ins, spec: isa.OpSpec) -> Value:
    """The ISA's busy time of ``spec`` (:attr:`ga2_hdl.isa.OpSpec.busy`) as a hardware value of the
    instruction view ``ins``: the ISA's own function, evaluated on the operands as Amaranth values
    (a function that branches on a one-bit operand is evaluated per value of it and multiplexed)."""
    try:
        return _busy(spec, ins, {})
    except TypeError:
        pass
    flags = [o for o in spec.operands if o.bits == 1]
    out = None
    for values in itertools.product((0, 1), repeat=len(flags)):
        fixed = {o.name: v for o, v in zip(flags, values)}
        w = _busy(spec, ins, fixed)
        match = Const(1)
        for o, v in zip(flags, values):
            match = match & (decoder.operand(ins, spec, o.name) == v)
        out = w if out is None else Mux(match, w, out)
    return out


def lanes(port, direction: str):
    """[(enable, address offset)] of every lane of a scratchpad port's read (``"rd"``) or write
    (``"wr"``) side: one lane on a one-word port, ``words`` lanes (the mask's bits) on a wide one."""
    en = getattr(port, f"{direction}_en")
    mask = getattr(port, f"{direction}_mask", None)
    if mask is None:
        return [(en, 0)]
    return [(en & mask[i], i) for i in range(len(mask))]


class UnitContract(Spec):
    """The unit contract around ``unit``.

    Parameters
    ----------
    unit : wiring.Component
        A unit on :class:`~ga2_hdl.rtl.layout.UnitSignature` (built for ``config``).
    config : Config
        Its chip.
    ops : sequence of str
        The mnemonics started (default: every op of the unit's kind that ``unit`` is given).
    bounds : dict
        Operand name -> largest value assumed (``{"len": 3, "K": 2}``): sizes are bounded so
        that whole instructions fit in a bounded check.
    name : str
        The report's name.
    """

    def __init__(self, unit, config: Config, ops, *, bounds=None, name="contract", formal: bool = True):
        super().__init__()
        #: False: the same assertions in Amaranth's simulator, with ``start``, ``fresh`` and
        #: ``rd_data`` driven by a testbench instead of the solver's free values
        self.formal = formal
        #: the domain of the assertions: comb for the solver (checked in every step); sync in
        #: the simulator (checked at the clock edge, on settled values: a comb assertion there
        #: would also see the delta cycles between one register's update and the logic after it)
        self.checks = "comb" if formal else "sync"
        self.rd_data = None
        self.unit = unit
        self.config = config
        self.iset = isa.instruction_set(config)
        self.specs = [self.iset.by_name[o] for o in ops]
        self.bounds = dict(bounds or {})
        self.name = name
        self.fresh = Signal(INSTRUCTION)        # the instruction offered in a start cycle
        self.start = Signal()
        self.running = Signal()                 # cycles t+1 .. t+W of a start in cycle t
        self.elapsed = Signal(16)               # cycles since the start (1 in t+1)
        self.held = Signal(INSTRUCTION)         # the instruction, from the start until done
        #: the cycles after done in which the unit may still write (the next instruction's FETCH)
        self.trailing = isa.trailing_write_cycles(config, self.specs[0].unit)
        self.trailing_now = Signal()            # one of those cycles (no start then)

    # ------------------------------------------------------------------ the environment
    def environment(self, m: Module) -> None:
        """Drive the unit's other inputs (the scratchpad's read data, the external memory)."""
        u = self.unit
        width = len(Value.cast(u.spad.rd_data))
        self.rd_data = Signal(width)
        if self.formal:
            m.d.comb += self.rd_data.eq(AnySeq(width))
        else:
            self.tb_rd_data = Signal(width)
            m.d.sync += self.rd_data.eq(self.tb_rd_data)
        m.d.comb += u.spad.rd_data.eq(self.rd_data)

    def unit_design(self):
        """What the spec holds as its submodule ``unit``: the unit itself (a subclass that looks
        inside the unit holds the fragment it elaborated instead)."""
        return self.unit

    def ins(self):
        """The instruction the unit sees this cycle: the fresh one in the start cycle, else the held one
        (held through the cycles of a trailing write too)."""
        return Mux(self.running | self.trailing_now, self.held.as_value(), self.fresh.as_value())

    def contract(self, m: Module) -> None:
        u = self.unit
        m.submodules.unit = self.unit_design()
        m.submodules.check = check = IssueCheck(config=self.config)
        ins_now = self.ins_now = Signal(INSTRUCTION)
        if self.formal:
            m.d.comb += [self.fresh.eq(AnySeq(INSTRUCTION.size)), self.start.eq(AnySeq(1))]
        else:
            # a testbench sets these before a clock edge; registered, they change with the unit's
            # registers, so no comb assertion sees a mixed state between the edge and the testbench
            self.tb_start, self.tb_fresh = Signal(), Signal(INSTRUCTION)
            m.d.sync += [self.start.eq(self.tb_start), self.fresh.eq(self.tb_fresh)]
        m.d.comb += [
            ins_now.eq(self.ins()),
            u.ins.eq(ins_now),
            u.start.eq(self.start),
            check.ins.eq(self.fresh),
        ]
        self.environment(m)

        # ---- the sequencer's side
        legal_op = Const(0)
        for spec in self.specs:
            ok = self.fresh.op == spec.code
            for o in spec.operands:
                if o.name in self.bounds:
                    ok = ok & (decoder.operand(self.fresh, spec, o.name) <= self.bounds[o.name])
            legal_op = legal_op | ok
        with m.If(self.start):
            m.d[self.checks] += Assume(~self.running & ~self.trailing_now & legal_op
                                       & (check.error == isa.ErrorCode.OK))
        if self.trailing:
            assert self.trailing == 1, "the contract follows one trailing cycle"
            m.d.sync += self.trailing_now.eq(u.done)
        with m.If(self.start):
            m.d.sync += [self.running.eq(1), self.elapsed.eq(1), self.held.eq(self.fresh)]
        with m.Elif(self.running):
            m.d.sync += self.elapsed.eq(self.elapsed + 1)
        with m.If(u.done):
            m.d.sync += self.running.eq(0)

        self.properties(m)

    def properties(self, m: Module) -> None:
        """The unit's side of the contract (a subclass checks other properties on the same environment)."""
        u = self.unit
        busy_time = Signal(16)
        m.d.comb += busy_time.eq(0)
        with m.Switch(self.held.op):
            for spec in self.specs:
                with m.Case(spec.code):
                    m.d.comb += busy_time.eq(hardware_busy(self.held, spec))
        finishing = self.running & (self.elapsed == busy_time)
        m.d[self.checks] += [
            Assert(u.done == finishing),                 # done in t+W exactly, once per start
            Assert(u.busy == self.running),              # busy t+1 .. t+W
        ]
        p = u.spad
        with m.If(~self.running & ~self.trailing_now):   # no write in the start cycle or when idle
            m.d[self.checks] += Assert(~p.wr_en)
        with m.If(~self.running & ~self.start):          # a read in the start cycle, never when idle
            m.d[self.checks] += Assert(~p.rd_en)
        for (r_en, r_off), (w_en, w_off) in itertools.product(lanes(p, "rd"), lanes(p, "wr")):
            with m.If(r_en & w_en):
                m.d[self.checks] += Assert((p.rd_addr + r_off)[:len(p.rd_addr)] != (p.wr_addr + w_off)[:len(p.wr_addr)])
        self.inside_regions(m, p)

        # ---- covers: every op completes (the assumptions leave each one possible)
        for spec in self.specs:
            m.d.comb += Cover(u.done & (self.held.op == spec.code))

    def inside_regions(self, m: Module, p) -> None:
        """Every word read in one of the instruction's regions (SM reads back its destination),
        every word written in a region it writes: the regions of the instruction the unit sees
        (the started one in the start cycle, the held one after)."""
        for direction, writes in (("rd", False), ("wr", True)):
            addr = getattr(p, f"{direction}_addr")
            for en, off in lanes(p, direction):
                word = addr + off                         # no wrap: a region never wraps either
                with m.If(en):
                    with m.Switch(self.ins_now.op):
                        for spec in self.specs:
                            with m.Case(spec.code):
                                inside = Const(0)
                                for start, end, w in spad_accesses(self.ins_now, spec):
                                    if w or not writes:     # a read may be of any region
                                        inside = inside | ((word >= start) & (word < end))
                                m.d[self.checks] += Assert(inside)
