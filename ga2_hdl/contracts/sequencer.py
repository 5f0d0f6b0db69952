"""The sequencer's contract: the whole chip (:class:`ga2_hdl.rtl.chip.GA2Chip`) running a program
the solver writes.

:class:`SequencerContract` drives every input of the chip with free values: the instruction
memory's load port (``imem_we``, ``imem_addr``, ``imem_wdata``: words written in any cycle),
``start`` in any cycle, and the external memory's read data.  Assumed: the external-memory protocol
the chip's port documents (:class:`ga2_hdl.rtl.layout.ExtPort`): a request in cycle c is answered
in cycle c + ``config.lat``, in order (the data free); and the program's bound: the load port
writes only words 0 .. ``PROGRAM_WORDS - 1`` (6), any op code (an undefined one too) with every
other field at most ``FIELD_MAX`` (7), so that the check's products stay small for the solver
(gen/formal/prove.py gives the times measured).  Every other word is the memory's initial zeros
(HALT).  The legality check's error code itself is not compared with the ISA's (the decoder's
tests do that): here it would ask the solver to prove two copies of the check's multipliers equal.

The chip's data paths (:data:`DATA_PATHS`: the scratchpad's words, the systolic array, the matrix
unit's operand memories, the requantizer, SM's exponential table) are formal cut points: their
outputs are free values in every cycle.  That is sound for these assertions (every behaviour of the
chip is one of the cut chip's) and keeps the solver on the control.

Asserted, from the chip's documented ports (docs/chip.md) and the ISA's definitions of the
counters (:class:`ga2_hdl.isa.Counters`) and of the issue rule (:class:`ga2_hdl.isa.IssueTimer`);
"started" is a start accepted while not running, s its cycle:

* at most one unit's ``start`` in a cycle; a unit is started only while it is not busy and the chip
  runs; without overlap (the book's sequencer) only while no unit is busy, at most one unit busy at
  a time, and a unit starts only in its issue cycle: cycle s+2 (the first FETCH in s+1), or two cycles
  after a unit's ``done`` (fetched in t+W+1, issued in t+W+2; with ``config.fetch_on_done`` one
  cycle after the ``done`` of a unit whose FETCH is that cycle, :func:`ga2_hdl.isa.fetch_after`); and
  in such a cycle the sequencer either starts a unit or halts (``halted`` the cycle after);
* ``running`` is high exactly from the cycle after a start until ``halted`` rises; after HALT or an
  error nothing starts, no unit is busy or done, and the counters, ``status`` and ``status_pc`` hold
  until the next start;
* the counters equal the spec's own counts since the start: ``total`` the running cycles (every
  cycle from the first FETCH to the halting ISSUE inclusive), each unit's counter the cycles its
  unit is ``busy``, and ``instructions`` between the instructions completed (``done``) and those
  issued (``start``), equal to both once halted (every issued instruction completed);
* the program runs in order from word 0: for one word the solver picks (``watch``, any address, the
  spec keeps its own copy from the load port), the instruction issued as the word's number
  (instructions issued before it) is that word (the unit's ``ins``), on the unit the ISA gives its
  op; when the chip halts at that word (``status_pc``, which equals the instructions issued),
  ``status`` is OK exactly if the word is a HALT.

On a chip with overlap the same assertions hold but those of the book's issue rule (one unit busy
at a time, the issue two cycles after a start or a ``done``, at most one instruction in flight),
which the overlapped sequencer does not keep by design; gen/formal/prove.py bounds it at fewer
cycles than the book's (``OVERLAP_SEQUENCER_DEPTH``).  It found that a start in the very first cycle
ran an undefined word 1 (the overlapped sequencer read word 1 ahead from the instruction memory's
output register, which has no initial value), fixed in :meth:`ga2_hdl.rtl.chip.GA2Chip._overlapped`.

Covered (no proof is vacuous): a program of two instructions on two different units completes and
halts with OK; a HALT reached; an error reached; a restart after a halt.
"""
from __future__ import annotations

from amaranth.hdl import Assert, Assume, Const, Cover, Module, Mux, Signal, Value
from amaranth.hdl._ast import AnyConst, AnySeq

from .. import isa
from ..config import Config
from ..rtl.layout import INSTRUCTION
from .base import Spec

__all__ = ["SequencerContract", "DATA_PATHS"]

#: the program's bound (the solver's time grows fast with free 128-bit words): words 0 .. 5 may be
#: written (any op code, every other field at most FIELD_MAX), every other word stays HALT
PROGRAM_WORDS = 6
FIELD_MAX = 7

#: the chip's pure data paths (RTLIL module names below the chip, or a module's memory cells): none
#: of their outputs reaches a unit's control, so the contract makes them formal cut points (outputs
#: free in every cycle), a sound abstraction for its assertions
DATA_PATHS = (
    "spad/t:$memrd_v2",                    # the scratchpad's words (its read ports)
    "matrix.array",                        # the systolic array's multiply-accumulate
    "matrix.a_mem", "matrix.b_mem",        # the matrix unit's operand memories
    "vector.rq.requantizer*",              # RQ's multiply, round, saturate (one per lane)
    "vector.sm.exp_table",                 # SM's exponential table
)


class SequencerContract(Spec):
    """The sequencer's contract around a whole chip.

    Parameters
    ----------
    config : Config
        The chip.
    chip : GA2Chip, optional
        The chip under test (default: ``GA2Chip(config=config)``).
    program_words : int
        Words the load port may write (addresses below it; the rest stay HALT).
    field_max : int
        The largest value of every instruction field but the op code in a word written.
    name : str
        The report's name.
    """

    def __init__(self, config: Config, chip=None, *, program_words: int = PROGRAM_WORDS,
                 field_max: int = FIELD_MAX, name: str = "sequencer"):
        super().__init__()
        self.program_words, self.field_max = program_words, field_max
        from ..rtl.chip import GA2Chip
        self.config = config
        self.chip = GA2Chip(config=config) if chip is None else chip
        self.iset = isa.instruction_set(config)
        self.name = name
        #: the data paths, cut (:func:`gen.formal.sby.check`): their outputs free values
        self.cutpoints = [f"top.chip.{path}" for path in DATA_PATHS]

    # ------------------------------------------------------------------ the environment
    def environment(self, m: Module) -> None:
        """Free inputs: the load port, ``start``, the external memory's data; the external memory
        answers each read request ``config.lat`` cycles later, in order (:class:`ExtPort`)."""
        chip = self.chip
        m.d.comb += [
            chip.start.eq(AnySeq(1)),
            chip.imem_we.eq(AnySeq(1)),
            chip.imem_addr.eq(AnySeq(len(chip.imem_addr))),
            chip.imem_wdata.eq(AnySeq(len(chip.imem_wdata))),
            chip.ext_rdata.eq(AnySeq(len(Value.cast(chip.ext_rdata)))),
        ]
        lat = self.config.lat
        valid = [Signal(name=f"ext_req_{k}") for k in range(lat)]
        m.d.sync += valid[0].eq(chip.ext_re)
        m.d.sync += [valid[k].eq(valid[k - 1]) for k in range(1, lat)]
        m.d.comb += chip.ext_rvalid.eq(valid[-1])
        # the program's bound: a few words, small fields (any op code)
        with m.If(chip.imem_we & ~chip.running):
            m.d.comb += Assume(chip.imem_addr < self.program_words)
            for name, field in INSTRUCTION:
                if name != "op":
                    value = chip.imem_wdata[field.offset:field.offset + field.width]
                    m.d.comb += Assume(value <= self.field_max)

    def contract(self, m: Module) -> None:
        chip = self.chip
        m.submodules.chip = chip
        self.environment(m)
        units = list(chip.units.values())
        kinds = list(chip.units)

        self.started = started = Signal()      # a start accepted in this cycle
        ever = Signal()                        # a start accepted before this cycle
        m.d.comb += started.eq(chip.start & ~chip.running)
        with m.If(started):
            m.d.sync += ever.eq(1)

        starts = [u.start for u in units]
        any_start = _any(starts)
        any_busy = _any(u.busy for u in units)
        any_done = _any(u.done for u in units)

        # ---- the spec's own counts since the last accepted start (cleared by it, as the counters are)
        issued = Signal(32)                    # unit starts
        completed = Signal(32)                 # unit dones
        total = Signal(32)                     # running cycles
        busy = {kind: Signal(32, name=f"busy_{isa.COUNTER_NAMES[isa.UNIT_COUNTER[kind]]}") for kind in kinds}
        with m.If(started):
            m.d.sync += [c.eq(0) for c in (issued, completed, total, *busy.values())]
        with m.Else():
            m.d.sync += [issued.eq(issued + any_start), completed.eq(completed + any_done),
                         total.eq(total + chip.running)]
            m.d.sync += [busy[k].eq(busy[k] + u.busy) for k, u in chip.units.items()]

        self.one_at_a_time(m, starts, any_start, any_busy)
        self.halting(m, ever, any_start, any_busy, any_done)
        self.counters(m, issued, completed, total, busy)
        self.program(m, issued)
        self.issue_timing(m, started, any_start, any_done)
        self.covers(m, ever, started, completed)

    # ------------------------------------------------------------------ the properties
    def one_at_a_time(self, m: Module, starts, any_start, any_busy) -> None:
        """At most one start per cycle, only while running, a unit only while it is idle; without
        overlap only while no unit is busy, and never two units busy."""
        chip = self.chip
        for i, a in enumerate(starts):
            for b in starts[i + 1:]:
                m.d.comb += Assert(~(a & b))
        with m.If(any_start):
            m.d.comb += Assert(chip.running)
        for u in chip.units.values():
            with m.If(u.start):
                m.d.comb += Assert(~u.busy)
        if not self.config.overlap:
            with m.If(any_start):
                m.d.comb += Assert(~any_busy)
            units = list(chip.units.values())
            for i, a in enumerate(units):
                for b in units[i + 1:]:
                    m.d.comb += Assert(~(a.busy & b.busy))

    def halting(self, m: Module, ever, any_start, any_busy, any_done) -> None:
        """``running`` from the cycle after a start until ``halted`` rises; halted, nothing runs and
        the outputs hold until the next start."""
        chip = self.chip
        m.d.comb += Assert(chip.running == (ever & ~chip.halted))
        with m.If(~chip.running):
            m.d.comb += [Assert(~any_start), Assert(~any_busy), Assert(~any_done)]
        held = [chip.status, chip.status_pc, *(getattr(chip, p) for p in _counter_ports())]
        past = [Signal.like(v, name=f"past_{v.name}") for v in held]
        was_halted = Signal()
        m.d.sync += [p.eq(v) for p, v in zip(past, held)]
        m.d.sync += was_halted.eq(chip.halted & ~chip.start)
        with m.If(was_halted):
            m.d.comb += [Assert(chip.halted)] + [Assert(v == p) for v, p in zip(held, past)]

    def counters(self, m: Module, issued, completed, total, busy) -> None:
        """The five counters against the spec's counts (the ISA's definitions)."""
        chip = self.chip
        cnt = {name: getattr(chip, port) for name, port in zip(isa.COUNTER_NAMES, _counter_ports())}
        names = isa.COUNTER_NAMES
        m.d.comb += Assert(cnt[names[isa.Counter.TOTAL]] == total)
        for kind, count in busy.items():
            m.d.comb += Assert(cnt[names[isa.UNIT_COUNTER[kind]]] == count)
        instructions = cnt[names[isa.Counter.INSTRUCTIONS]]
        m.d.comb += [Assert(completed <= instructions), Assert(instructions <= issued)]
        if not self.config.overlap:                       # one instruction in flight at most
            m.d.comb += Assert(issued <= completed + 1)
        with m.If(chip.halted):
            m.d.comb += [Assert(instructions == issued), Assert(completed == issued),
                         Assert(chip.status_pc == issued)]

    def program(self, m: Module, issued) -> None:
        """The word at address ``watch`` (the spec's copy, kept from the load port): issued as
        instruction number ``watch`` on its op's unit, as the unit's ``ins``; a halt there reports
        HALT as OK and anything else as an error (the error code is the decoder's check, whose
        agreement with :func:`ga2_hdl.isa.check` its own tests show: compared here it would ask the
        solver to prove two copies of the check's multipliers equal)."""
        chip, iset = self.chip, self.iset
        watch = Signal(len(chip.imem_addr), name="watch")
        m.d.comb += watch.eq(AnyConst(len(watch)))
        m.d.comb += Assume(watch < self.program_words)
        word = Signal(INSTRUCTION, name="watched_word")     # the memory's initial zeros: HALT
        written = chip.imem_we & ~chip.running & (chip.imem_addr == watch)
        with m.If(written):
            m.d.sync += word.eq(chip.imem_wdata)
        # the word the run since the last start executes (a word written in the start cycle runs;
        # the load port may rewrite the memory once the chip has halted)
        ran = Signal(INSTRUCTION, name="watched_ran")
        with m.If(self.started):
            m.d.sync += ran.eq(Mux(written, chip.imem_wdata, word.as_value()))
        for kind, unit in chip.units.items():
            ours = ran.op.matches(*iset.unit_ops(kind)) if iset.unit_ops(kind) else Const(0)
            with m.If(unit.start & (issued == watch)):
                m.d.comb += [Assert(ours), Assert(unit.ins.as_value() == ran.as_value())]
        with m.If(chip.halted & (chip.status_pc == watch)):
            m.d.comb += Assert((chip.status == isa.ErrorCode.OK) == (ran.op == isa.HALT.op))
        self.watch, self.watched = watch, ran

    def issue_timing(self, m: Module, started, any_start, any_done) -> None:
        """Without overlap (the ISA's issue rule, :class:`ga2_hdl.isa.IssueTimer`): an instruction
        issues two cycles after the start or after the ``done`` of the one before (one cycle after the
        ``done`` of a unit whose next FETCH is that cycle: :func:`ga2_hdl.isa.fetch_after`), never
        else, and in such a cycle the chip starts a unit or halts."""
        if self.config.overlap:
            return
        chip = self.chip
        # the dones followed by a FETCH of its own, and those that are the FETCH
        later = _any(u.done for k, u in chip.units.items() if isa.fetch_after(self.config, k))
        sooner = _any(u.done for k, u in chip.units.items() if not isa.fetch_after(self.config, k))
        ago1, ago2 = Signal(), Signal()                    # a start or a later done 1 and 2 cycles ago
        sooner1 = Signal()                                 # a sooner done 1 cycle ago
        m.d.sync += [ago1.eq(started | later), ago2.eq(ago1), sooner1.eq(sooner)]
        due = ago2 | sooner1                               # an issue cycle
        with m.If(any_start):
            m.d.comb += Assert(due)
        halting = Signal()                                 # last cycle was an issue that did not start
        m.d.sync += halting.eq(due & ~any_start)
        with m.If(halting):
            m.d.comb += Assert(chip.halted)
        was = Signal()                                     # halted last cycle
        m.d.sync += was.eq(chip.halted)
        with m.If(chip.halted & ~was):
            m.d.comb += Assert(halting)

    def covers(self, m: Module, ever, started, completed) -> None:
        """Two instructions of two units complete and the chip halts with OK; a HALT; an error;
        a second run after a halt."""
        chip = self.chip
        kinds = list(chip.units)
        ran = {k: Signal(name=f"ran_{isa.COUNTER_NAMES[isa.UNIT_COUNTER[k]]}") for k in kinds}
        runs = Signal(2)
        for k, u in chip.units.items():
            with m.If(started):
                m.d.sync += ran[k].eq(0)
            with m.Elif(u.done):
                m.d.sync += ran[k].eq(1)
        with m.If(started & (runs != 3)):
            m.d.sync += runs.eq(runs + 1)
        two_units = Const(0)
        for i, a in enumerate(kinds):
            for b in kinds[i + 1:]:
                two_units = two_units | (ran[a] & ran[b])
        ok = chip.halted & (chip.status == isa.ErrorCode.OK)
        m.d.comb += [
            Cover(ok & two_units & (completed == 2)),
            Cover(ok),
            Cover(chip.halted & (chip.status != isa.ErrorCode.OK)),
            Cover(chip.halted & (runs == 2)),
        ]


def _any(values):
    out = Const(0)
    for v in values:
        out = out | v
    return out


def _counter_ports():
    from ..rtl.chip import COUNTER_PORTS
    return COUNTER_PORTS
