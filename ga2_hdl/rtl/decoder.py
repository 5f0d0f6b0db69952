"""The instruction decoder and the issue-time legality check, generated from the ISA.

Nothing here restates an encoding.  Operand bit positions come from
:class:`ga2_hdl.isa.Operand` (:func:`operand`), the unit of each op code from
:data:`ga2_hdl.isa.OPS`, and the legality check is built by *evaluating the
ISA's own rules on hardware values*: :func:`ga2_hdl.isa.check` is written in
terms of operand attributes (``ins.len``, ``ins.M`` ...) and of each op's
``regions`` function, so :class:`IssueCheck` hands those functions an object
whose attributes are Amaranth values and gets back the hardware expressions
for every region's start and end.  Changing a rule in ``isa.py`` changes the
hardware; a unit test compares the two on thousands of instructions.
"""
from __future__ import annotations

import itertools

from amaranth.hdl import Const, Module, Mux, Signal, Value, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .. import isa
from ..config import Config
from .layout import INSTRUCTION

__all__ = ["operand", "unit_ops", "spad_accesses", "CheckStages", "IssueCheck", "STATUS_BITS"]

#: Width of the ``status`` output (holds any :class:`isa.ErrorCode`).
STATUS_BITS = 4
assert max(isa.ErrorCode) < 1 << STATUS_BITS


def operand(ins, op: "str | isa.OpSpec", name: str) -> Value:
    """Operand ``name`` of operation ``op`` (an OpSpec, or the mnemonic of a book operation or of a
    loaded extension's), sliced out of the instruction view ``ins``."""
    spec = op if isinstance(op, isa.OpSpec) else isa.known_spec(op)
    if spec is None:
        raise isa.IsaError(f"operand {name!r} of {op!r}: no such operation (the book's, or a loaded extension's)")
    o = spec.operand(name)
    return getattr(ins, o.field)[o.lsb:o.lsb + o.bits]


def unit_ops(unit: isa.Unit, config: Config) -> tuple[int, ...]:
    """The op codes executed by ``unit`` on the chip ``config``."""
    return isa.instruction_set(config).unit_ops(unit)


class _HardwareOperands:
    """Stands in for :class:`isa.Instruction` inside the ISA's rule functions.

    Every operand of ``spec`` is an attribute holding its Amaranth value,
    except the operands in ``fixed``, which hold Python ints (used for
    one-bit flags the rules branch on, such as MM's ``tb``).  With ``stage``,
    every operand is a :class:`_Staged` value instead, so the rule's products
    are registered (``stage(expr)`` returns the register).
    """

    def __init__(self, ins, spec: isa.OpSpec, fixed: dict[str, int], stage=None):
        ranged = {o.name: o.legal for o in spec.ranged}
        for o in spec.operands:
            value = fixed[o.name] if o.name in fixed else operand(ins, spec, o.name)
            if stage is not None and o.name not in fixed:
                if o.name in ranged:
                    # a shaped operand outside its range fails BAD_SHAPE, which the check puts
                    # before every region rule: its regions may use any value, so its legal bits
                    value = value[:max(1, ranged[o.name][1].bit_length())]
                value = _Staged(value, stage)
            setattr(self, o.name, value)


#: a product whose narrower factor has at most this many bits is built of shifts and adds (logic, not
#: one of the part's few multiplier blocks)
SHIFT_ADD_BITS = 8


def _shift_add(a: Value, b: Value) -> Value:
    """``a * b`` (unsigned or signed), as a sum of shifted copies of the wider factor when the narrower
    has at most SHIFT_ADD_BITS bits; else a multiplier."""
    a, b = Value.cast(a), Value.cast(b)
    if len(a) > len(b):
        a, b = b, a
    if len(a) > SHIFT_ADD_BITS:
        return a * b
    n = len(a)
    total = Const(0, 1)
    for i in range(n):
        if a.shape().signed and i == n - 1:
            total = total - Mux(a[i], b << i, 0)        # a two's-complement factor's top bit weighs -2**(n-1)
        else:
            total = total + Mux(a[i], b << i, 0)
    return total


class _Staged:
    """An operand in a rule evaluated over three cycles: sums and differences stay combinational,
    each product's operands are registered (``stage(value, "operand")``, a constant factor
    excepted) and so is the product (``stage(value)``), so a region's end ``start +
    (rows-1)*stride + cols`` is ``rows-1`` in one cycle, a multiplier in the next and the adders
    in the third.  Correct while the operands hold their values for the three cycles (the
    sequencer's read-ahead word does)."""
    __slots__ = ("value", "stage")

    def __init__(self, value, stage):
        self.value, self.stage = value, stage

    @staticmethod
    def _raw(x):
        return x.value if isinstance(x, _Staged) else x

    def __add__(self, other):
        return _Staged(self.value + self._raw(other), self.stage)

    def __radd__(self, other):
        return _Staged(self._raw(other) + self.value, self.stage)

    def __sub__(self, other):
        return _Staged(self.value - self._raw(other), self.stage)

    def __rsub__(self, other):
        return _Staged(self._raw(other) - self.value, self.stage)

    def __mul__(self, other):
        factors = [Value.cast(f) for f in (self.value, self._raw(other))]
        factors = [f if isinstance(f, Const) else self.stage(f, "operand") for f in factors]
        return _Staged(self.stage(_shift_add(*factors)), self.stage)

    __rmul__ = __mul__

    def __bool__(self):
        raise TypeError("a rule branches on an operand")     # as bool(Value): _hardware_roles' cue


def _hardware_regions(ins, spec: isa.OpSpec, stage=None) -> list[tuple[str, Value, Value]]:
    """``spec.regions`` as hardware: [(memory, start, end)] in the ISA's order (``stage``: its
    products registered, see :class:`_Staged`)."""
    if stage is not None:
        try:
            return [(memory, start, end) for memory, _role, start, end in _hardware_roles(ins, spec, stage)]
        except (TypeError, AttributeError):      # a rule with operations _Staged does not carry
            pass
    return [(memory, start, end) for memory, _role, start, end in _hardware_roles(ins, spec)]


def spad_accesses(ins, spec: isa.OpSpec) -> list[tuple[Value, Value, bool]]:
    """``spec.accesses`` as hardware, scratchpad regions only: [(start, end, writes)] in the
    ISA's order (what the overlapped sequencer's hazard check compares)."""
    return [(start, end, role in spec.writes)
            for memory, role, start, end in _hardware_roles(ins, spec) if memory == "spad"]


def _hardware_roles(ins, spec: isa.OpSpec, stage=None) -> list[tuple[str, str, Value, Value]]:
    """``spec.regions`` as hardware: [(memory, role, start, end)] in the ISA's order.

    A rule that branches on an operand (``if i.tb:``) cannot take a hardware
    value; the rule is then evaluated once per value of the one-bit operands
    and the results are multiplexed by those operands.
    """
    raw = _Staged._raw
    try:
        return [(r.memory, r.role, raw(r.start), raw(r.end))
                for r in spec.regions(_HardwareOperands(ins, spec, {}, stage))]
    except TypeError as e:     # Amaranth refuses bool(Value): the rule branches on an operand
        branching = e
    flags = [o for o in spec.operands if o.bits == 1]
    if not flags:
        raise ValueError(f"{spec.mnemonic}: its region rule cannot be built as hardware") from branching
    variants = {}
    for values in itertools.product((0, 1), repeat=len(flags)):
        fixed = {o.name: v for o, v in zip(flags, values)}
        variants[values] = [isa.Region(r.memory, raw(r.start), raw(r.length), r.role)
                            for r in spec.regions(_HardwareOperands(ins, spec, fixed, stage))]
    shapes = {tuple((r.memory, r.role) for r in rs) for rs in variants.values()}
    if len(shapes) != 1:
        raise ValueError(f"{spec.mnemonic}: the regions differ in number or kind between flag values")
    flag_values = [operand(ins, spec, o.name) for o in flags]
    out = []
    for idx, (memory, role) in enumerate(next(iter(shapes))):
        start = end = None
        for values, rs in variants.items():
            match = Const(1)
            for f, v in zip(flag_values, values):
                match = match & (f == v)
            start = rs[idx].start if start is None else Mux(match, rs[idx].start, start)
            end = rs[idx].end if end is None else Mux(match, rs[idx].end, end)
        out.append((memory, role, start, end))
    return out


class CheckStages:
    """The legality check of :class:`IssueCheck` in two halves, for a sequencer that registers
    the first half's results (``GA2Chip``: the first half runs while the previous instruction is
    busy, the second in FETCH; docs/fpga.md).

    * :meth:`terms` (first half): from the instruction word, every rule's operands as hardware
      values: per operation whether a shaped operand is out of range, whether each length is 0,
      and every region's start and end (the ISA's region functions on hardware values: the
      products of sizes and strides and their sums).  :attr:`layout` is their record.
    * :meth:`error` (second half): from such a record (registered or not), the compares of the
      ends against the memories' sizes and of the regions against each other, and the priority
      chain in :func:`isa.check`'s order, selected by the op code.

    ``error(m, terms(ins))`` is exactly :meth:`isa.InstructionSet.check`'s code for ``ins``
    (:class:`IssueCheck` is that composition).
    """

    def __init__(self, ext_words: int | None = None, *, config: Config):
        self.config = config
        self.iset = isa.instruction_set(config)
        self.ext_words = isa.check_ext_words(config.ext_words if ext_words is None else ext_words)
        probe = data.View(INSTRUCTION, Signal(INSTRUCTION.size))
        self._memories = {}                     # op code -> the memory of each region, in order
        fields = {"op": unsigned(len(probe.op))}
        for spec in self.iset.ops:
            terms, self._memories[spec.code] = self._op_terms(probe, spec)
            if terms:
                fields[self._key(spec)] = data.StructLayout({n: v.shape() for n, v in terms.items()})
        #: the record of :meth:`terms`: ``op`` and one struct per operation with rules
        self.layout = data.StructLayout(fields)

    @staticmethod
    def _key(spec: isa.OpSpec) -> str:
        return f"op{spec.code}"

    def _op_terms(self, ins, spec: isa.OpSpec, stage=None) -> tuple[dict[str, Value], list[str]]:
        """``spec``'s rule operands as hardware values on ``ins``, and its regions' memories."""
        terms: dict[str, Value] = {}
        if spec.ranged:
            outside = Const(0)
            for o in spec.ranged:
                value = operand(ins, spec, o.name)
                outside = outside | (value < o.legal[0]) | (value > o.legal[1])
            terms["shape"] = outside
        for name in spec.lengths:
            terms[f"zero_{name}"] = operand(ins, spec, name) == 0
        memories = []
        for k, (memory, start, end) in enumerate(_hardware_regions(ins, spec, stage)):
            terms[f"start{k}"], terms[f"end{k}"] = start, end
            memories.append(memory)
        return terms, memories

    def terms(self, ins, stage=None) -> dict:
        """The first half on the instruction view ``ins``: a dict to assign to a record of
        :attr:`layout` (``record.eq(stages.terms(ins))`` through :meth:`assign`).  ``stage``: a
        function that registers a product (``stage(expr)`` returns the register) and, when asked
        (``stage(expr, "operand")``), a product's factor, for a first half over two or three cycles
        on a word that holds still (:class:`_Staged`)."""
        out = {"op": ins.op}
        for spec in self.iset.ops:
            terms, _ = self._op_terms(ins, spec, stage)
            if terms:
                out[self._key(spec)] = terms
        return out

    def assign(self, record, ins, stage=None) -> list:
        """Statements loading ``record`` (a View of :attr:`layout`) with :meth:`terms` of ``ins``."""
        stmts = []
        for key, value in self.terms(ins, stage).items():
            if isinstance(value, dict):
                stmts += [record[key][n].eq(v) for n, v in value.items()]
            else:
                stmts.append(record[key].eq(value))
        return stmts

    def spad_regions(self, record, spec: isa.OpSpec) -> list[tuple[Value, Value]]:
        """``spec``'s scratchpad regions in a record of :attr:`layout`: [(start, end)] in the ISA's
        order, what :func:`spad_accesses` gives on the word (the overlapped sequencer's hazard
        check takes their partitions from the registered record)."""
        key = self._key(spec)
        terms = record[key] if key in self.layout.members else {}
        return [(terms[f"start{k}"], terms[f"end{k}"])
                for k, memory in enumerate(self._memories[spec.code]) if memory == "spad"]

    def _op_error(self, spec: isa.OpSpec, terms) -> Value:
        """The error code of ``spec``'s rules on its terms, as a priority chain in isa.check's order."""
        rules: list[tuple[Value, isa.ErrorCode]] = []
        if spec.ranged:
            rules.append((terms["shape"], isa.ErrorCode.BAD_SHAPE))
        for name in spec.lengths:
            rules.append((terms[f"zero_{name}"], isa.ErrorCode.ZERO_LENGTH))
        regions = [(memory, terms[f"start{k}"], terms[f"end{k}"])
                   for k, memory in enumerate(self._memories[spec.code])]
        for memory, _start, end in regions:
            size = self.config.spad_words if memory == "spad" else self.ext_words
            code = isa.ErrorCode.SPAD_RANGE if memory == "spad" else isa.ErrorCode.EXT_RANGE
            rules.append((end > size, code))
        if spec.disjoint_or_same:
            spad = [(s, e) for memory, s, e in regions if memory == "spad"]
            for i, (ps, pe) in enumerate(spad):
                for qs, qe in spad[i + 1:]:
                    rules.append(((ps != qs) & (ps < qe) & (qs < pe), isa.ErrorCode.OVERLAP))
        error = Const(isa.ErrorCode.OK, STATUS_BITS)
        for cond, code in reversed(rules):     # the first rule in the list wins
            error = Mux(cond, code, error)
        return error

    def error(self, m: Module, record, name: str = "check_error") -> Signal:
        """The second half: the error code (a new signal ``name`` driven in ``m``) of the
        record ``record`` (a View of :attr:`layout`, or the dict of :meth:`terms`)."""
        error = Signal(STATUS_BITS, name=name)
        with m.Switch(record["op"]):
            for spec in self.iset.ops:
                with m.Case(spec.code):
                    terms = record[self._key(spec)] if self._key(spec) in self.layout.members else {}
                    m.d.comb += error.eq(self._op_error(spec, terms))
            with m.Default():
                m.d.comb += error.eq(isa.ErrorCode.BAD_OPCODE)
        return error


class IssueCheck(wiring.Component):
    """Combinational legality check of one instruction, exactly the configuration's
    :meth:`isa.InstructionSet.check` (:func:`isa.check` on the book chip): the two halves of
    :class:`CheckStages` without a register between them.

    Parameters
    ----------
    ext_words : int, optional
        Size of the external memory (the EXT_RANGE bound); by default the configuration's.
    config : Config
        The chip (required; ``isa.BOOK`` is the book's): its instruction set gives the operations, their
        legal operand ranges and regions, and its ``spad_words`` the SPAD_RANGE bound.

    Ports
    -----
    ins : In(INSTRUCTION)
        The instruction being issued.
    error : Out(STATUS_BITS)
        The :class:`isa.ErrorCode` of the first rule that fails, in :func:`isa.check`'s
        order (op code, operand ranges, zero lengths, regions in order, overlap), or ``OK``.
    """

    def __new__(cls, ext_words: int | None = None, *, config: Config):
        # refused before the check exists (a configuration the instruction word cannot describe, a bad
        # ext_words): nothing left for Amaranth to warn about
        isa.instruction_set(config)
        isa.check_ext_words(config.ext_words if ext_words is None else ext_words)
        return super().__new__(cls, src_loc_at=1)

    def __init__(self, ext_words: int | None = None, *, config: Config):
        self.stages = CheckStages(ext_words, config=config)
        self.config, self.iset, self.ext_words = config, self.stages.iset, self.stages.ext_words
        super().__init__({"ins": In(INSTRUCTION), "error": Out(STATUS_BITS)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.error.eq(self.stages.error(m, self.stages.terms(self.ins)))
        return m
