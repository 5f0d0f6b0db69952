"""The instruction set of a configuration (:func:`instruction_set`), the legality check that halts the
machine with an error code, and the timing of whole programs."""
from __future__ import annotations

import functools
from typing import Sequence

from ..config import Config
from .constants import BOOK, EXT_WORDS_DEFAULT, FETCH_ISSUE_CYCLES
from .fields import Counter, Counters, ErrorCode, FIELD, IsaError, UNIT_COUNTER, Unit
from .ops import OpSpec, RESERVED_OP_CODES, Region, _book_ops
from .extensions import Extension, OP_BY_CODE, OP_BY_NAME, _LOADED_OPS, _extension_ops, _layout, config_problems, load_extension
from .instruction import Instruction, _make

class InstructionSet:
    """The operations of one configuration, with that chip's legality rules and busy times.

    Get one with :func:`instruction_set`; the module-level :data:`OPS`,
    :func:`check` and :func:`program_counters` are the book chip's.  The book's
    operations come first, then each extension's (``config.extensions``), in order.
    """

    def __init__(self, config: Config):
        problems = config_problems(config)
        if problems:
            raise IsaError(f"configuration {config.name!r} does not fit the instruction word: "
                           + "; ".join(problems))
        self.config = config
        ops = list(_book_ops(config))
        #: op code -> the extension that defines it (book operations are not in it)
        self.extension_of: dict[int, Extension] = {}
        for module in config.extensions:
            ext = load_extension(module)
            if any(e.module == module for e in self.extension_of.values()):
                raise IsaError(f"configuration {config.name!r}: extension {module} is named twice")
            for spec in _extension_ops(ext, config):
                if _layout(spec) != _layout(_LOADED_OPS[spec.code][1]):
                    raise IsaError(f"extension {module}: {spec.mnemonic}'s op code, mnemonic, unit or operand "
                                   f"bits differ on configuration {config.name!r} from the book's sizes")
                ops.append(spec)
                self.extension_of[spec.code] = ext
        self.ops: tuple[OpSpec, ...] = tuple(ops)
        self.extensions: tuple[Extension, ...] = tuple(dict.fromkeys(self.extension_of.values()))
        self.by_code: dict[int, OpSpec] = {o.code: o for o in self.ops}
        self.by_name: dict[str, OpSpec] = {o.mnemonic: o for o in self.ops}
        if len(self.by_code) != len(self.ops) or len(self.by_name) != len(self.ops):
            raise IsaError(f"configuration {config.name!r}: two operations share an op code or a mnemonic")
        reserved = sorted(set(self.by_code) & set(RESERVED_OP_CODES))
        if reserved:
            raise IsaError(f"op code {reserved[0]} is reserved: no configuration may define it")
        # The verdict is a function of the instruction and the memory size alone, and the same
        # instruction is checked again and again (compiling, decoding, making a bundle's expectations):
        # remembered, a bounded number of them per instruction set.
        self._check = functools.lru_cache(maxsize=CHECK_CACHE_SIZE)(
            lambda ins, ext_words: _check(self, ins, ext_words))

    def __repr__(self):
        return f"InstructionSet({self.config.describe()})"

    def origin(self, code: int) -> str:
        """Who defines op code ``code``: ``the book`` or ``extension MODULE``."""
        ext = self.extension_of.get(code)
        return "the book" if ext is None else f"extension {ext.module}"

    def spec(self, code: int) -> OpSpec:
        """The operation of op code ``code`` (:class:`IsaError` if this chip has none)."""
        try:
            return self.by_code[code]
        except KeyError:
            raise IsaError(f"undefined op code {code}") from None

    def unit_ops(self, unit: "Unit") -> tuple[int, ...]:
        """The op codes a unit executes, in op-code order."""
        return tuple(sorted(o.code for o in self.ops if o.unit == unit))

    def undefined_codes(self) -> tuple[int, ...]:
        """The op codes this chip does not define (BAD_OPCODE), reserved ones included."""
        return tuple(c for c in range(FIELD["op"].mask + 1) if c not in self.by_code)

    def busy(self, ins: "Instruction") -> int:
        """The executing unit's busy time of ``ins`` on this chip (0 for HALT)."""
        return self.spec(ins.op).busy(ins)

    def cycles(self, ins: "Instruction") -> int:
        """Fetch + issue + busy time of ``ins`` on this chip, without overlap: the cycles from its
        issue to the next one's (with ``config.fetch_on_done`` the fetch may be the cycle of its
        ``done``: :func:`fetch_after`).  With overlap, an upper bound."""
        if self.config.overlap:
            return FETCH_ISSUE_CYCLES + self.busy(ins)
        return self.busy(ins) + fetch_after(self.config, self.spec(ins.op).unit) + 1

    def fetch_issue(self, program: Sequence["Instruction"]) -> int:
        """The cycles ``program`` spends in fetch and issue up to its first HALT (included): its
        instructions' :meth:`cycles` less their busy times, and the HALT's fetch and issue.  Without
        overlap, ``total`` less the three units' busy counters."""
        out = 0
        for ins in program:
            if ins.op == 0:
                break
            out += self.cycles(ins) - self.busy(ins)
        return out + FETCH_ISSUE_CYCLES

    def make(self, mnemonic: str, **operands: int) -> "Instruction":
        """:func:`make` with this chip's operations (an extension's included)."""
        try:
            spec = self.by_name[mnemonic.upper()]
        except KeyError:
            raise IsaError(f"unknown operation {mnemonic!r} (operations: {', '.join(self.by_name)})") from None
        return _make(spec, operands)

    def check(self, ins: "Instruction", ext_words: int | None = None) -> tuple["ErrorCode", str]:
        """:func:`check` on this chip (``ext_words`` defaults to the configuration's)."""
        return self._check(ins, self.config.ext_words if ext_words is None else ext_words)

    def counters(self, program: Sequence["Instruction"]) -> "Counters":
        """:func:`program_counters` on this chip (under the overlapped rule if ``config.overlap``)."""
        return _counters(self, program)

    def timer(self) -> "IssueTimer":
        """A fresh :class:`IssueTimer`: this chip's timing rule, one instruction at a time."""
        return IssueTimer(self)


#: how many (instruction, memory size) verdicts an instruction set remembers
CHECK_CACHE_SIZE = 1 << 16


@functools.lru_cache(maxsize=None)
def instruction_set(config: Config) -> InstructionSet:
    """The instruction set of ``config``; one object per configuration."""
    return InstructionSet(config)




# --------------------------------------------------------------------------
# Legality: what halts the machine with an error code
# --------------------------------------------------------------------------

def check(ins: Instruction, ext_words: int = EXT_WORDS_DEFAULT) -> tuple[ErrorCode, str]:
    """The error the book chip raises at issue for ``ins``, and why (``(OK, "")`` if legal).

    Checked in this order, the first failure wins: op code; operand ranges (MM's
    shape, :attr:`Operand.legal`); zero lengths; memory ranges (in the order of
    the operation's regions); overlap.  Another configuration's:
    ``instruction_set(config).check(ins)``.
    """
    return _BOOK_SET.check(ins, ext_words)


def _check(iset: InstructionSet, ins: Instruction, ext_words: int) -> tuple[ErrorCode, str]:
    spad_words = iset.config.spad_words
    spec = iset.by_code.get(ins.op)
    if spec is None:
        return ErrorCode.BAD_OPCODE, f"undefined op code {ins.op}"
    if any(not o.legal[0] <= getattr(ins, o.name) <= o.legal[1] for o in spec.ranged):
        values = " ".join(f"{o.name}={getattr(ins, o.name)}" for o in spec.ranged)
        return ErrorCode.BAD_SHAPE, f"{spec.mnemonic} shape {values}: must be {spec.ranges_text()}"
    for name in spec.lengths:
        if getattr(ins, name) == 0:
            return ErrorCode.ZERO_LENGTH, f"{spec.mnemonic} {name}=0"
    regions = spec.regions(ins)
    for r in regions:
        size = spad_words if r.memory == "spad" else ext_words
        if r.end > size:
            code = ErrorCode.SPAD_RANGE if r.memory == "spad" else ErrorCode.EXT_RANGE
            return code, (f"{spec.mnemonic} {r.role} words {r.start}..{r.end - 1} lie outside the "
                          f"{'scratchpad' if r.memory == 'spad' else 'external memory'} of {size} words")
    if spec.disjoint_or_same:
        spad = [r for r in regions if r.memory == "spad"]
        for i, p in enumerate(spad):
            for q in spad[i + 1:]:
                if p.start != q.start and p.start < q.end and q.start < p.end:
                    return ErrorCode.OVERLAP, (f"{spec.mnemonic} {p.role} {p.start}..{p.end - 1} and "
                                               f"{q.role} {q.start}..{q.end - 1} overlap without being identical")
    return ErrorCode.OK, ""


# --------------------------------------------------------------------------
# Timing of whole programs
# --------------------------------------------------------------------------

def program_counters(program: Sequence[Instruction]) -> Counters:
    """The five counters of a legal program on the book chip.

    Instructions run one at a time in order up to the first HALT; each costs
    fetch + issue + its unit's busy time; HALT costs fetch + issue and is not
    counted as an executed instruction.  Another configuration's:
    ``instruction_set(config).counters(program)``.
    """
    return _counters(_BOOK_SET, program)


def _counters(iset: InstructionSet, program: Sequence[Instruction]) -> Counters:
    timer = iset.timer()
    for ins in program:
        if ins.op == 0:
            return timer.halt()
        timer.issue(ins)
    raise IsaError("program has no HALT")


def trailing_write_cycles(config: Config, unit: Unit) -> int:
    """Cycles after ``unit``'s ``done`` in which it may still write the scratchpad: its last write
    may *trail* its busy time.

    Without overlap the next instruction is fetched in cycle t+W+1 and issued in t+W+2
    (:class:`IssueTimer`): in t+W+1 no unit runs, the scratchpad's port is free and the units'
    instruction still holds the one that finished (the sequencer loads the next at the end of
    FETCH).  A write there is complete before any later instruction can read, and before the
    halting issue, so the memory, the counters and every cycle are those of a write in t+W.
    The book's RQ engine uses that cycle for a deeper pipeline (docs/fpga.md).  With overlap the
    next instruction may issue in t+W+1 itself: no trailing write (0).  With
    ``config.fetch_on_done`` the FETCH is the cycle of ``done`` after the DMA and the matrix unit
    (0), and its own cycle after the vector unit, whose RQ writes there (1).
    """
    if config.overlap or (config.fetch_on_done and unit != Unit.VECTOR):
        return 0
    return FETCH_ISSUE_CYCLES - 1


def fetch_after(config: Config, unit: Unit) -> int:
    """The cycles from an instruction's ``done`` (cycle t+W) to the next instruction's FETCH on a
    chip without overlap: 1, or with ``config.fetch_on_done`` 0 when ``unit`` has no trailing write
    (:func:`trailing_write_cycles`).  The next issue is the cycle after that FETCH."""
    return trailing_write_cycles(config, unit) if config.fetch_on_done else FETCH_ISSUE_CYCLES - 1


def partition_span(start, end, config: Config):
    """``(first, last)``: the scratchpad partitions the non-empty span ``[start, end)`` touches.

    The scratchpad is ``config.spad_partitions`` contiguous partitions of
    ``config.spad_partition_words`` words (a power of two): word ``a`` is in partition
    ``a >> log2(spad_partition_words)``; with one partition every span is ``(0, 0)``.  Plain
    arithmetic, so the same rule takes integers (:class:`IssueTimer`) and hardware values (the
    overlapped sequencer registers each fetched region's span: :meth:`ga2_hdl.rtl.chip.GA2Chip._overlapped`).
    """
    if config.spad_partitions == 1:
        return 0, 0
    s = config.spad_partition_words.bit_length() - 1
    return start >> s, (end - 1) >> s


def spans_meet(p, q):
    """Whether two :func:`partition_span` spans share a partition (integers or hardware values)."""
    return (p[0] <= q[1]) & (q[0] <= p[1])


def partitions_meet(p_start, p_end, q_start, q_end, config: Config):
    """Whether the scratchpad spans ``[p_start, p_end)`` and ``[q_start, q_end)`` (neither empty)
    touch a common partition of ``config``'s scratchpad: :func:`spans_meet` of their
    :func:`partition_span`.  With one partition every two spans meet."""
    return spans_meet(partition_span(p_start, p_end, config), partition_span(q_start, q_end, config))


def spad_hazard(p: Region, q: Region, config: Config) -> bool:
    """The overlapped issue rule's scratchpad clause for two regions of instructions in flight
    together: whether they touch a common partition (:func:`partitions_meet`), read or write.
    A shared word (:meth:`Region.conflicts`) is always in a shared partition."""
    return (p.memory == q.memory == "spad"
            and bool(partitions_meet(p.start, p.end, q.start, q.end, config)))


class IssueTimer:
    """The timing rule of a chip, applied one instruction at a time, in program order.

    Cycle 0 is the first FETCH.  Every instruction is fetched in one cycle and
    issued, at the earliest, in the next (:data:`FETCH_ISSUE_CYCLES`); an
    instruction issued (its unit started) in cycle t with busy time W keeps its
    unit busy in cycles t+1 .. t+W, and its last scratchpad write is complete at
    the end of cycle t+W.

    Without overlap (the book's chip) the sequencer waits for the unit: the next
    instruction is fetched in cycle t+W+1 and issued in t+W+2.  With
    ``config.fetch_on_done`` the fetch is the cycle t+W itself after an instruction
    of a unit with no trailing write (:func:`fetch_after`), and the next instruction
    issues in t+W+1.

    With overlap (``config.overlap``), the next instruction is fetched in cycle
    t+1, the cycle after the issue, and its issue waits, one cycle at a time, until
    neither of these holds for any instruction j still in flight (issued at t_j,
    W_j, in flight up to and including cycle t_j+W_j):

    * j runs on the new instruction's unit (a unit runs one instruction at a time);
    * a scratchpad region of j and one of the new instruction touch a common partition
      of the scratchpad (:func:`partitions_meet`: ``config.spad_partitions``
      contiguous partitions; :meth:`OpSpec.accesses`, whole spans from first to last
      word), read or write.  This contains the word hazards (a word shared with a
      write: read-after-write, write-after-read, write-after-write), since a shared
      word is in a shared partition, and it gives every partition at most one unit at
      any cycle: each partition is a memory with one read and one write port, routed to
      the unit that addresses it.  With one partition, no two instructions touching the
      scratchpad are in flight together (only fetch and issue overlap the running unit).

    So an instruction i is issued in cycle
    ``max(issue(i-1) + 2, max(t_j + W_j + 1 for every earlier j it conflicts with))``.
    External-memory regions need no check: only the DMA touches the external
    memory, and it runs one instruction at a time, in order.

    HALT, an instruction failing its check (:func:`check`) and a fetch beyond the
    instruction memory are decided at issue like any instruction, and all wait
    until every unit is idle (every in-flight instruction has completed, so the
    memory is final): the halting issue is in cycle
    ``max(issue(i-1) + 2, max(t_j + W_j + 1 for every j))``.  A faulting
    instruction does not execute; everything issued before it completes.

    Counters: TOTAL, every cycle from the first fetch up to and including the
    halting issue; MATRIX, DMA, VECTOR, the busy cycles of each unit (the sum of
    its instructions' busy times, as without overlap); INSTRUCTIONS, the
    instructions issued (not HALT, not a faulting one).  Without overlap the rule
    reduces to the book's: each instruction costs fetch + issue + its busy time
    (:meth:`InstructionSet.cycles`: a cycle less after one whose done is the next
    FETCH, with ``config.fetch_on_done``).
    """

    def __init__(self, iset: InstructionSet):
        self.iset = iset
        self.overlap = iset.config.overlap
        self.counters = [0] * len(Counter)
        self.last_issue = -1                 # with overlap: cycle of the last issue (-1: the first fetch is cycle 0)
        self.next_fetch = 0                  # without overlap: cycle of the next FETCH
        self.free = {}                       # unit -> first cycle it may be started again
        self.in_flight: list[tuple[int, tuple[Region, ...]]] = []   # (first free cycle, spad accesses)

    def _earliest(self, spec: OpSpec, spad: tuple[Region, ...]) -> int:
        t = max(self.last_issue + FETCH_ISSUE_CYCLES, self.free.get(spec.unit, 0))
        config = self.iset.config
        for end, regions in self.in_flight:
            if end > t and any(spad_hazard(p, q, config) for p in spad for q in regions):
                t = max(t, end)
        return t

    @staticmethod
    def spad_accesses(spec: OpSpec, ins: Instruction) -> tuple[Region, ...]:
        """The scratchpad regions the hazard check compares for ``ins``."""
        return tuple(r for r in spec.accesses(ins) if r.memory == "spad")

    def earliest(self, ins: Instruction, spad: tuple[Region, ...] | None = None) -> int:
        """The cycle ``ins`` would issue in if it came next (nothing changes); ``spad``:
        its :meth:`spad_accesses`, if the caller has them."""
        spec = self.iset.spec(ins.op)
        if not self.overlap:
            return self.next_fetch + FETCH_ISSUE_CYCLES - 1
        return self._earliest(spec, self.spad_accesses(spec, ins) if spad is None else spad)

    def issue(self, ins: Instruction, spad: tuple[Region, ...] | None = None) -> int:
        """Issue the legal, non-HALT instruction ``ins``; returns its issue cycle (``spad``: as
        for :meth:`earliest`)."""
        spec = self.iset.spec(ins.op)
        busy = spec.busy(ins)
        if self.overlap:
            spad = self.spad_accesses(spec, ins) if spad is None else spad
            t = self._earliest(spec, spad)
            self.in_flight = [(end, regions) for end, regions in self.in_flight if end > t]
            self.in_flight.append((t + busy + 1, spad))
            self.free[spec.unit] = t + busy + 1
        else:
            t = self.next_fetch + FETCH_ISSUE_CYCLES - 1
            self.next_fetch = t + busy + fetch_after(self.iset.config, spec.unit)
        self.last_issue = t
        self.counters[UNIT_COUNTER[spec.unit]] += busy
        self.counters[Counter.INSTRUCTIONS] += 1
        return t

    def halt(self) -> Counters:
        """Halt (HALT, a faulting instruction or a fetch past the end) after the instructions
        issued so far: the final counters."""
        if self.overlap:
            t = max([self.last_issue + FETCH_ISSUE_CYCLES, *self.free.values()])
        else:
            t = self.next_fetch + FETCH_ISSUE_CYCLES - 1
        self.counters[Counter.TOTAL] = t + 1
        return Counters(*self.counters)




# the book set is built first, then the registry of ga2_hdl.isa.extensions is filled with its operations
_BOOK_SET = instruction_set(BOOK)
OPS: tuple[OpSpec, ...] = _BOOK_SET.ops                  #: the book chip's operations
OP_BY_CODE.update(_BOOK_SET.by_code)
OP_BY_NAME.update(_BOOK_SET.by_name)
