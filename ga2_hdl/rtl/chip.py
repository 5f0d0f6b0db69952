"""GA2Chip: the whole accelerator (sequencer, instruction memory, units, scratchpad, counters).

Block diagram::

      imem_we/addr/wdata                                 ext_addr/re/we/wdata  ext_rdata/rvalid
            |                                                     ^                  |
            v                                                     |                  v
    +----------------+ 128-bit   +--------------+  start/ins  +--------+   spad   +------------+
    | instruction    |---------->| sequencer    |------------>|  DMA   |<-------->|            |
    | memory         |  word     | FETCH/ISSUE/ |------------>| matrix |<-------->| scratchpad |
    | (imem_words)   |           | WAIT         |------------>| vector |<-------->| spad_words |
    +----------------+           | issue check  |<--- done ---|        |          | x 32       |
            ^ pc                 | counters     |             +--------+          | (AND-OR    |
            +--------------------|              |                                 |  port mux) |
                                 +--------------+                                 +------------+
                                   status, status_pc, cnt_*, running, halted

Sequencer.  ``start`` (while not running) clears the counters and status,
sets pc = 0, and the next cycle is the first FETCH.

* FETCH (1 cycle): the word ``pc`` and the first half of its check are ready:
  they were made while the instruction before it ran (there are no branches:
  FETCH reads word pc + 1, ISSUE registers it, WAIT computes the first half of
  its check: :class:`ga2_hdl.rtl.decoder.CheckStages`, exactly
  :func:`ga2_hdl.isa.check`), or, for word 0, when word 0 was written.  FETCH
  does the second half and registers the verdict (see :meth:`GA2Chip._sequencer`
  and docs/fpga.md).
* ISSUE (1 cycle): act on the registered verdict.  HALT: halt with status OK.
  A failing check: halt with its :class:`~ga2_hdl.isa.ErrorCode`; the
  instruction does nothing and is not counted.  Otherwise pulse ``start`` of
  the op's unit, which takes the instruction from a register (``cur``).
* WAIT (the unit's W busy cycles): count them in the unit's counter; on the
  unit's ``done`` (cycle t+W), pc += 1, instructions += 1, next is FETCH.

``cnt_total`` counts every running cycle: from the first FETCH up to and
including the ISSUE of the HALT (or of the faulting instruction).  A pc
beyond the last instruction-memory word (only reachable with stale memory,
never with a loaded program, which ends with HALT) costs a FETCH and an
ISSUE and halts with NO_HALT at status_pc = that pc.

Which unit runs which op, which counter it feeds, the operand bit positions
and the legality rules all come from :mod:`ga2_hdl.isa`; every size (the
instruction memory, the scratchpad, the array, the external memory's default
size) from the chip's configuration (:class:`ga2_hdl.config.Config`, the
book's 1024-word instruction memory and 4096 x 32 scratchpad by default).

Wide ports (docs/chip.md, "Wide ports").  With ``config.spad_ports`` = P or
``config.ext_port_words`` = W above 1, the scratchpad is banked
(:class:`~ga2_hdl.rtl.sram.Scratchpad` with ``max(P, W)``-word ports), the DMA's port
is W words wide on both sides, the matrix and vector units' P words; a unit
whose port is narrower than the scratchpad's uses its low lanes.  The chip's
external-memory port is W words wide (``ext_mask`` selects the lanes).

Overlap (docs/chip.md, "Overlap").  With ``config.overlap`` the sequencer is
:meth:`GA2Chip._overlapped`: the next instruction is fetched the cycle after an
issue and issued as soon as the ISA's rule allows (:class:`ga2_hdl.isa.IssueTimer`);
its words are read ahead and checked over the same two registered stages, in the
cycles between an instruction's FETCH and its issue.
"""
import functools

from amaranth.hdl import Cat, Module, Mux, ResetSignal, Signal
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out

from .. import isa
from ..config import Config
from .decoder import STATUS_BITS, CheckStages
from .dma import DMA
from .layout import INSTRUCTION, ExtPort
from .matrix_unit import MatrixUnit
from .sram import Scratchpad
from .vector_unit import VectorUnit

__all__ = ["GA2Chip", "COUNTER_PORTS", "SPAD_MEMORY_PATH", "MIN_BUSY", "short_busy_times", "check_cycles"]

#: the counter output ports, in the ISA's counter order
COUNTER_PORTS = tuple(f"cnt_{name}" for name in isa.COUNTER_NAMES)
COUNTER_BITS = 32
STATUS_PC_BITS = 16
#: the book sequencer's read-ahead needs every busy time to be at least this (the first half of the
#: next word's check takes two WAIT cycles at least: GA2Chip._sequencer)
MIN_BUSY = 2
#: with every busy time at least this long (the book's instruction set and every preset), the first
#: half takes three WAIT cycles, the factors of its products registered too
DEEP_CHECK_BUSY = 3

#: the execution units, by the ISA's unit kind: their submodule names (and, in this order,
#: their scratchpad master ports)
UNIT_NAMES = {isa.Unit.DMA: "dma", isa.Unit.MATRIX: "matrix", isa.Unit.VECTOR: "vector"}
#: the scratchpad's submodule name
SPAD_NAME = "spad"
#: the hierarchical name of the scratchpad's word array below the chip (submodule names as set here)
SPAD_MEMORY_PATH = (SPAD_NAME, Scratchpad.MEMORY_NAME)


def short_busy_times(config: Config, minimum: int = MIN_BUSY) -> list[tuple[str, int]]:
    """The operations of ``config``'s instruction set whose smallest legal instruction (every
    length 1, every shaped operand at its lower bound, the rest 0) keeps its unit busy fewer than
    ``minimum`` cycles, with that busy time.  Below :data:`MIN_BUSY` the book sequencer's
    read-ahead cannot check the next word behind them (the chip is refused); below
    :data:`DEEP_CHECK_BUSY` it checks in two cycles, not three.  Empty for every preset (a chip
    with overlap has no read-ahead)."""
    iset = isa.instruction_set(config)
    short = []
    for spec in iset.ops:
        if spec.code == isa.HALT.op:
            continue
        ranged = {o.name: o.legal[0] for o in spec.ranged}
        fields = {o.name: ranged.get(o.name, 1 if o.name in spec.lengths else 0) for o in spec.operands}
        try:
            ins = iset.make(spec.mnemonic, **fields)
        except (isa.IsaError, ValueError):
            continue
        if iset.check(ins)[0] == isa.ErrorCode.OK and iset.busy(ins) < minimum:
            short.append((spec.mnemonic, iset.busy(ins)))
    return short


def check_cycles(config: Config) -> int:
    """The WAIT cycles over which the book sequencer computes the first half of the next word's check:
    3 (the products' factors registered too) when every busy time is at least :data:`DEEP_CHECK_BUSY`,
    one more with ``config.fetch_on_done`` (whose last WAIT cycle is the FETCH), else 2."""
    return 3 if not short_busy_times(config, DEEP_CHECK_BUSY + config.fetch_on_done) else 2


class GA2Chip(wiring.Component):
    """The GA-2 chip (exported Verilog module ``ga2_chip``).

    Parameters
    ----------
    config : Config
        The chip (required; ``isa.BOOK`` is the book's): the instruction memory's ``imem_words``, the
        scratchpad's ``spad_words``, the array's size, the legality rules of its instruction set.
        With ``config.overlap`` the sequencer issues under the overlapped timing rule
        (:meth:`GA2Chip._overlapped`, :class:`ga2_hdl.isa.IssueTimer`, docs/chip.md "Overlap").
    ext_words : int, optional
        External memory size in words (1 .. ``isa.EXT_WORDS_MAX``): the EXT_RANGE legality
        bound; by default the configuration's ``ext_words``.

    Ports
    -----
    start : In(1)
    running, halted : Out(1)
    status : Out(STATUS_BITS)
        The :class:`~ga2_hdl.isa.ErrorCode` of the halt.
    status_pc : Out(16)
    cnt_total, cnt_matrix, cnt_dma, cnt_vector, cnt_instructions : Out(32)
        The counters, in the ISA's counter order.
    imem_we : In(1)
    imem_addr : In(config.imem_addr_bits)
    imem_wdata : In(128)
        The instruction memory's write port (writes are ignored while running).
    ext_addr ... ext_rvalid
        The members of :class:`~ga2_hdl.rtl.layout.ExtPort` (the DMA's port).

    Attributes
    ----------
    imem, spad.memory : amaranth.lib.memory.Memory
        The memories (for testbenches).
    units : dict
        Unit kind -> component, every one on :class:`~ga2_hdl.rtl.layout.UnitSignature`.
    pc : Signal
    """

    def __new__(cls, *, config: Config, ext_words: int | None = None):
        # Everything that can refuse the configuration runs before the chip exists, so that a refusal
        # leaves no elaboratable behind (no UnusedElaboratable warning on top of the error): the
        # checks, then the vector unit (an engine off the unit contract shows only once built).
        cls.check(config=config, ext_words=ext_words)
        vector = VectorUnit(config=config)
        self = super().__new__(cls, src_loc_at=1)     # (Amaranth's notes name the caller's line)
        self._vector = vector
        return self

    @classmethod
    def check(cls, *, config: Config, ext_words: int | None = None) -> None:
        """Raise what the chip ``config`` with ``ext_words`` words of external memory would be
        refused with, before anything is built: a configuration the instruction word cannot
        describe, ``ext_words`` or ``imem_words`` out of range, a vector operation without an
        engine (:meth:`VectorUnit.check`)."""
        isa.instruction_set(config)          # refuses a configuration the instruction word cannot describe
        isa.check_ext_words(config.ext_words if ext_words is None else ext_words)
        if not 1 <= config.imem_words < 1 << STATUS_PC_BITS:
            raise ValueError(f"configuration {config.name!r}: imem_words={config.imem_words}: "
                             f"1 .. {(1 << STATUS_PC_BITS) - 1} words")
        minimum = MIN_BUSY + config.fetch_on_done
        short = [] if config.overlap else short_busy_times(config, minimum)
        if short:
            raise ValueError(f"configuration {config.name!r}: the sequencer checks the next instruction "
                             f"over {MIN_BUSY} cycles of the one before"
                             + (", the last of them the FETCH of fetch_on_done" if config.fetch_on_done else "")
                             + ", but "
                             + ", ".join(f"{name} can be busy {busy}" for name, busy in short))
        VectorUnit.check(config)

    def __init__(self, *, config: Config, ext_words: int | None = None):
        ext_words = config.ext_words if ext_words is None else ext_words
        imem_words = config.imem_words
        self.config = config
        vector = self._vector                  # built first, by __new__
        self.ext_words = ext_words
        self.imem_words = imem_words
        self.imem = memory.Memory(shape=isa.INSTR_BITS, depth=imem_words, init=[])
        self.units = {isa.Unit.DMA: DMA(config=config), isa.Unit.MATRIX: MatrixUnit(config=config),
                      isa.Unit.VECTOR: vector}
        assert list(self.units) == list(UNIT_NAMES)
        self.spad_words_per_access = config.spad_banks
        # without overlap: the scratchpad takes address and data (banked: its read address) from
        # the unit of the instruction the sequencer runs (a register), so a unit's start reaches
        # only its enables
        self.spad = Scratchpad(len(self.units), config=config, words=self.spad_words_per_access,
                               owned=not config.overlap)
        self.pc = Signal(config.pc_bits, name="pc")
        super().__init__({
            "start": In(1),
            "running": Out(1),
            "halted": Out(1),
            "status": Out(STATUS_BITS),
            "status_pc": Out(STATUS_PC_BITS),
            **{name: Out(COUNTER_BITS) for name in COUNTER_PORTS},
            "imem_we": In(1),
            "imem_addr": In(config.imem_addr_bits),
            "imem_wdata": In(isa.INSTR_BITS),
            **ExtPort(words=config.ext_port_words).members,
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.imem = self.imem
        m.submodules[SPAD_NAME] = self.spad
        for kind, unit in self.units.items():
            m.submodules[UNIT_NAMES[kind]] = unit

        # Pure wiring lives in small submodules of its own.  The hardware is the same; in
        # Amaranth's simulator each module's combinational logic is one process that re-runs
        # whenever any of its inputs changes, so wiring that changes every cycle (the external
        # port during LD/ST) is kept apart from wiring that changes once per instruction (the
        # instruction word's fan-out) and from the sequencer's own logic.
        for master, (kind, unit) in zip(self.spad.masters, self.units.items()):
            m.submodules[f"spad_{UNIT_NAMES[kind]}"] = link = Module()
            if unit.signature.members["spad"].signature.words == self.spad_words_per_access:
                wiring.connect(link, unit=unit.spad, scratchpad=master)
            else:
                _connect_narrow(link, unit.spad, master)

        m.submodules.ext_port = ext_port = Module()
        dma = self.units[isa.Unit.DMA]
        for name, member in ExtPort(words=self.config.ext_port_words).members.items():  # the DMA's port is the chip's
            outward, inward = getattr(self, name), getattr(dma, name)
            if member.flow == wiring.In:
                outward, inward = inward, outward
            ext_port.d.comb += outward.eq(inward)

        # ---- instruction memory: loaded through the port while idle.  The overlapped sequencer
        # reads a word in the cycle before its FETCH (transparent, so a word written in the start
        # cycle is read); the book's reads ahead into a register (see _sequencer)
        imem_wr = self.imem.write_port()
        imem_rd = self.imem.read_port(transparent_for=(imem_wr,) if self.config.overlap else ())
        m.d.comb += [
            imem_wr.en.eq(self.imem_we & ~self.running),
            imem_wr.addr.eq(self.imem_addr),
            imem_wr.data.eq(self.imem_wdata),
            imem_rd.en.eq(0),          # (a read port's enable is 1 unless driven): only when told
        ]
        m.submodules.ins_fanout = fanout = Module()
        if self.config.overlap:
            return self._overlapped(m, imem_wr, imem_rd, fanout)
        return self._sequencer(m, imem_wr, imem_rd, fanout)

    def _sequencer(self, m, imem_wr, imem_rd, fanout):
        """The book's sequencer: FETCH, ISSUE, WAIT, one instruction at a time.

        The word of the next FETCH and the first half of its check are ready before it: there
        are no branches, so in FETCH the instruction memory reads word pc + 1; ISSUE registers
        it (``nxt``), and every WAIT cycle computes the first half of its check
        (:meth:`CheckStages.terms <ga2_hdl.rtl.decoder.CheckStages.terms>`: the regions' starts
        and ends) into ``terms_next``, over three cycles: the factors of the products of sizes and
        strides into registers (``check_operand*``), the products (``check_product*``), then the
        sums.  So WAIT must last at least 3 cycles: every busy time of the book's instruction set
        and of every preset is at least 3 (``DEEP_CHECK_BUSY``).  An extension's operation may be
        busy 2 cycles: the factors are then not registered and the first half takes two cycles;
        a busy time of 1 is refused (``MIN_BUSY``, :func:`short_busy_times`).  FETCH then only
        does the second half (the compares and the priority of the rules) and registers the
        verdict; ISSUE acts on it.  Word 0 has no instruction before it: a write to word 0
        loads a copy of it (``word0``) and its first half (``terms_word0``), and every IDLE cycle
        loads ``terms_next`` with that first half (with the written one in a write's own cycle),
        so a word 0 written in the start cycle is the one that runs, and FETCH always checks
        ``terms_next``: one second half, from registers (``first`` picks ``word0`` or ``nxt``).
        The memory cannot change while running (writes are ignored), so the word read ahead is
        the word FETCH would have read.  Every cycle is the same as with the check all in FETCH.

        With ``config.fetch_on_done`` the cycle of the DMA's or the matrix unit's ``done`` is also the
        next FETCH (:func:`ga2_hdl.isa.fetch_after`): WAIT does FETCH's work and goes to ISSUE, every
        WAIT cycle reading word pc + 2 ahead; the check's first half ends a WAIT cycle earlier
        (:func:`check_cycles`).  After the vector unit (RQ's trailing write) FETCH keeps its cycle.
        """
        stages = CheckStages(self.ext_words, config=self.config)
        counters, unit_counter, instructions, total = self._counters()

        word0 = Signal(isa.INSTR_BITS, name="word0")
        nxt = Signal(isa.INSTR_BITS, name="nxt")
        cur = Signal(INSTRUCTION, name="cur")            # the instruction the units run
        terms_word0 = Signal(stages.layout, name="terms_word0")
        terms_next = Signal(stages.layout, name="terms_next")
        first = Signal(name="first")                     # the next FETCH is of word 0
        products = []                                    # the first half's operands and products, registered
        # three WAIT cycles for the first half when every busy time allows it, else two (the
        # products' factors then combinational)
        deep = check_cycles(self.config) == 3

        stage = _check_stage(products, factors=deep)

        for unit in self.units.values():
            fanout.d.comb += unit.ins.eq(cur)

        written0 = imem_wr.en & (imem_wr.addr == 0)
        terms_written = Signal(stages.layout, name="terms_written")    # word 0's, as it is written
        m.d.comb += stages.assign(terms_written, data.View(INSTRUCTION, imem_wr.data))
        with m.If(written0):
            m.d.sync += [word0.eq(imem_wr.data), terms_word0.eq(terms_written)]

        # sequencer flags, one register: which unit the WAIT state waits for (one-hot), and
        # whether the last FETCH was beyond the instruction memory
        flags = Signal(data.StructLayout({**{UNIT_NAMES[kind]: 1 for kind in self.units},
                                          "fetched_past_end": 1}), name="flags")
        current = {kind: flags[UNIT_NAMES[kind]] for kind in self.units}
        fetched_past_end = flags.fetched_past_end

        verdict = self._verdict()
        if self.spad.owned:
            # the scratchpad's owner (without overlap) is the verdict's unit, loaded with
            # cur in FETCH: in ISSUE the unit starting, in WAIT the one running, in FETCH the one
            # that finished (its trailing write)
            m.d.comb += self.spad.owner.eq(Cat(*(verdict[UNIT_NAMES[kind]] for kind in self.units)))
        halt = functools.partial(self._halt, m)
        error_next = stages.error(m, terms_next, name="error_next")
        iset = isa.instruction_set(self.config)

        def fetch(pc, word, op, error):
            """FETCH's registers: the word at ``pc`` (its op and check's error) into cur and the verdict."""
            m.d.sync += [fetched_past_end.eq(pc >= self.imem_words), cur.eq(word),
                         verdict.halt.eq(op == isa.HALT.op), verdict.error.eq(error)]
            m.d.sync += [verdict[UNIT_NAMES[kind]].eq(op.matches(*iset.unit_ops(kind))) for kind in self.units]

        with m.FSM(name="sequencer"):
            with m.State("IDLE"):       # the next FETCH, if any, is of word 0: its first half
                m.d.sync += terms_next.eq(Mux(written0, terms_written, terms_word0))
                self._start(m, first, counters)

            with m.State("FETCH"):
                m.d.comb += [self.running.eq(1), imem_rd.addr.eq(self.pc + 1), imem_rd.en.eq(1)]
                m.d.sync += [total.eq(total + 1), first.eq(0)]
                fetch(self.pc, Mux(first, word0, nxt), terms_next.op, error_next)
                m.next = "ISSUE"

            with m.State("ISSUE"):
                m.d.comb += self.running.eq(1)
                m.d.sync += [total.eq(total + 1), nxt.eq(imem_rd.data)]
                with m.If(fetched_past_end):
                    halt(isa.ErrorCode.NO_HALT)
                with m.Elif(verdict.halt):
                    halt(isa.ErrorCode.OK)
                with m.Elif(verdict.error != isa.ErrorCode.OK):
                    halt(verdict.error)
                with m.Else():
                    for kind, unit in self.units.items():
                        selected = verdict[UNIT_NAMES[kind]]
                        m.d.comb += unit.start.eq(selected)
                        m.d.sync += current[kind].eq(selected)
                    m.next = "WAIT"

            with m.State("WAIT"):
                m.d.comb += self.running.eq(1)
                m.d.sync += [total.eq(total + 1), *stages.assign(terms_next, data.View(INSTRUCTION, nxt), stage)]
                m.d.sync += [r.eq(e) for r, e in products]
                if self.config.fetch_on_done:
                    m.d.comb += [imem_rd.addr.eq(self.pc + 2), imem_rd.en.eq(1)]
                for kind, unit in self.units.items():
                    with m.If(current[kind]):
                        m.d.sync += unit_counter[kind].eq(unit_counter[kind] + 1)
                        with m.If(unit.done):
                            m.d.sync += [self.pc.eq(self.pc + 1), instructions.eq(instructions + 1)]
                            if isa.fetch_after(self.config, kind) == 0:
                                # the merged FETCH, of the next word: nxt (first is 0 here)
                                fetch(self.pc + 1, nxt, terms_next.op, error_next)
                                m.next = "ISSUE"
                            else:
                                m.next = "FETCH"
        return m

    # ------------------------------------------------------------------ shared by both sequencers
    def _counters(self):
        """The counter ports: all by the ISA's name, each unit's, ``instructions`` and ``total``."""
        counters = {name: getattr(self, port) for name, port in zip(isa.COUNTER_NAMES, COUNTER_PORTS)}
        unit_counter = {kind: counters[isa.COUNTER_NAMES[isa.UNIT_COUNTER[kind]]] for kind in self.units}
        return (counters, unit_counter, counters[isa.COUNTER_NAMES[isa.Counter.INSTRUCTIONS]],
                counters[isa.COUNTER_NAMES[isa.Counter.TOTAL]])

    def _start(self, m: Module, first, counters: dict) -> None:
        """In the IDLE state of either sequencer: a start runs the program from word 0 (``first``: the
        next FETCH takes word 0's decoded terms), with status, halt and counters cleared."""
        with m.If(self.start):
            m.d.sync += [self.pc.eq(0), self.halted.eq(0), self.status.eq(0), self.status_pc.eq(0),
                         first.eq(1)]
            m.d.sync += [c.eq(0) for c in counters.values()]
            m.next = "FETCH"

    def _verdict(self, **extra):
        """The verdict on the fetched word, made in FETCH and registered for ISSUE: HALT, the
        check's error code, ``extra`` fields, and the unit to start (one-hot)."""
        return Signal(data.StructLayout({"halt": 1, "error": STATUS_BITS, **extra,
                                         **{UNIT_NAMES[kind]: 1 for kind in self.units}}), name="verdict")

    def _halt(self, m, code):
        """Halt with status ``code`` at the current pc (from ISSUE)."""
        m.d.sync += [self.status.eq(code), self.status_pc.eq(self.pc), self.halted.eq(1)]
        m.next = "IDLE"

    # ------------------------------------------------------------------ overlap

    def _overlapped(self, m, imem_wr, imem_rd, fanout):
        """The sequencer of a chip with overlap: FETCH, then ISSUE as soon as the rule allows.

        FETCH (1 cycle) registers the verdict on the word (HALT, the check's error code, the unit
        to start) and the scratchpad partitions each region it reads or writes touches
        (``incoming``: the ISA's :func:`~ga2_hdl.isa.partition_span` of the region's bounds).
        ISSUE waits, cycle by cycle, while the op's unit is busy or one of its regions shares a
        partition with a region held for a busy unit (:func:`~ga2_hdl.isa.spans_meet`; ``held``:
        the regions of the instruction each unit runs, loaded when it starts); then it starts the
        unit, and the next cycle is FETCH.  HALT, a failing check and a fetch past the end wait
        until no unit is busy, then halt.

        The check is made ahead, at no cycle's cost (docs/chip.md, "Overlap"; docs/fpga.md):
        there are no branches, so the issuing ISSUE cycle of instruction i reads word i + 3 and
        moves the words read before it along, i + 2 from the instruction memory's output into
        ``nxt`` and i + 1 from ``nxt`` into ``cur``, the instruction the next ISSUE starts.  Word
        i + 2 holds still in ``nxt`` from the FETCH of i + 1 to its issue, at least 2 cycles (an
        instruction issues at the earliest the cycle after its FETCH); in those cycles the first
        half of its check (:meth:`CheckStages.terms <ga2_hdl.rtl.decoder.CheckStages.terms>`:
        every region's start and end) is computed over two registered stages, the products of
        sizes and strides (``check_product*``) and then the sums (``terms_next``), so FETCH of
        i + 2 only does the second half (the compares and the priority of the rules,
        :meth:`CheckStages.error <ga2_hdl.rtl.decoder.CheckStages.error>`) and the partitions of
        the regions' bounds.  Words 0 to 2 have no issue before them: as on the book's sequencer,
        a write to word 0 loads its copy (``word0``) and its first half (``terms_word0``) in the
        write's own cycle; ``nxt`` follows word 1 while idle (the memory reads it in every idle
        cycle and in the halting cycle before, transparent to the write port, and a write to word
        1 goes straight in); the start cycle reads word 2.  So words written in the start cycle
        itself are the ones that run.  The memory cannot change while running (writes are
        ignored), so a word read ahead is the word a later read would give.

        The memory's output register has no initial value and no reset (the Verilog's, the
        solver's): ``nxt`` takes it only when it holds word 1 (``imem_word1``: the cycle before
        read word 1), else keeps its own value.  That is false only in the first cycle after power
        on, when ``nxt`` still has its initial value, the memory's initial word 1 (zero); a reset
        cycle reads word 1 (``imem_word1`` is not reset), so a start in the first cycle after
        power on or after a reset runs word 1 as the memory holds it.

        Each unit keeps its own copy of the instruction it runs (``unit.ins`` is ``cur`` in the
        start cycle, the copy while busy), since ``cur`` moves on to the next instruction.
        """
        iset = isa.instruction_set(self.config)
        stages = CheckStages(self.ext_words, config=self.config)
        counters, unit_counter, instructions, total = self._counters()

        word0 = Signal(isa.INSTR_BITS, name="word0")
        nxt = Signal(isa.INSTR_BITS, name="nxt")         # the word after cur, read ahead
        cur = Signal(INSTRUCTION, name="cur")            # the instruction ISSUE starts
        terms_word0 = Signal(stages.layout, name="terms_word0")
        terms_next = Signal(stages.layout, name="terms_next")
        first = Signal(name="first")                     # the next FETCH is of word 0
        products = []                                    # the first half's products, registered
        # the memory's output register holds word 1: it was read the cycle before (not at power on,
        # when nxt holds the memory's initial word 1 itself); not reset, as that register is not
        word1_out = Signal(name="imem_word1", reset_less=True)
        reads_word1 = Signal(name="imem_reads_word1")
        m.d.sync += word1_out.eq(reads_word1)

        stage = _check_stage(products, factors=False)     # two stages: a product's factors stay combinational

        with m.If(imem_wr.en & (imem_wr.addr == 0)):
            m.d.sync += [word0.eq(imem_wr.data),
                         *stages.assign(terms_word0, data.View(INSTRUCTION, imem_wr.data))]
        # the word read ahead, every cycle: it holds still in nxt for the two cycles before its
        # FETCH, which is all the two stages need
        m.d.sync += stages.assign(terms_next, data.View(INSTRUCTION, nxt), stage)
        m.d.sync += [r.eq(e) for r, e in products]

        incoming, held = self._region_registers(stages, terms_next, iset)
        copies = {kind: Signal(INSTRUCTION, name=f"ins_{UNIT_NAMES[kind]}") for kind in self.units}
        for kind, unit in self.units.items():
            fanout.d.comb += unit.ins.eq(Mux(unit.busy, copies[kind], cur))

        verdict = self._verdict(past_end=1)

        for kind, unit in self.units.items():
            m.d.sync += unit_counter[kind].eq(unit_counter[kind] + unit.busy)

        any_busy, blocked = self._blocked(verdict, incoming, held)

        error_word0 = stages.error(m, terms_word0, name="error_word0")
        error_next = stages.error(m, terms_next, name="error_next")

        with m.FSM(name="sequencer"):
            with m.State("IDLE"):
                self._overlapped_idle(m, imem_wr, imem_rd, nxt, (word1_out, reads_word1))
                self._start(m, first, counters)

            with m.State("FETCH"):
                self._overlapped_fetch(m, stages, total, first, (word0, cur), (terms_word0, terms_next),
                                       (error_word0, error_next), verdict, incoming)
                m.next = "ISSUE"

            with m.State("ISSUE"):
                m.d.comb += self.running.eq(1)
                m.d.sync += total.eq(total + 1)
                with m.If(verdict.past_end | verdict.halt | (verdict.error != isa.ErrorCode.OK)):
                    with m.If(~any_busy):
                        m.d.comb += [imem_rd.addr.eq(1), imem_rd.en.eq(1),     # word 1, for the next start
                                     reads_word1.eq(1)]
                        self._overlapped_stop(m, verdict)
                with m.Elif(~blocked):
                    for kind, unit in self.units.items():
                        selected = verdict[UNIT_NAMES[kind]]
                        m.d.comb += unit.start.eq(selected)
                        with m.If(selected):
                            m.d.sync += [copies[kind].eq(cur)]
                            m.d.sync += [h.eq(r) for h, r in zip(held[kind], incoming)]
                    # the words move on: pc + 1 from nxt into cur, pc + 2 from the memory's output
                    # into nxt, and the memory reads pc + 3
                    m.d.comb += [imem_rd.addr.eq(self.pc + 3), imem_rd.en.eq(1)]
                    m.d.sync += [cur.eq(nxt), nxt.eq(imem_rd.data), self.pc.eq(self.pc + 1),
                                 instructions.eq(instructions + 1)]
                    m.next = "FETCH"
        # a reset cycle reads word 1 too, whatever the state: the first cycle after it may start
        with m.If(ResetSignal(allow_reset_less=True)):
            m.d.comb += [imem_rd.addr.eq(1), imem_rd.en.eq(1), reads_word1.eq(1)]
        return m

    def _overlapped_idle(self, m, imem_wr, imem_rd, nxt, word1):
        """The overlapped sequencer's IDLE cycle: ``nxt`` follows word 1.  The memory reads it in
        every idle cycle (and in the halting cycle before, and in a reset cycle), transparent to the
        write port, and a write to word 1 in this very cycle goes straight in; ``nxt`` takes the
        memory's output only when it holds word 1 (``word1``: that flag and the signal setting it
        for the next cycle).  The start cycle reads word 2 (transparent too)."""
        word1_out, reads_word1 = word1
        wr1 = imem_wr.en & (imem_wr.addr == 1)
        m.d.comb += [imem_rd.addr.eq(Mux(self.start, 2, 1)), imem_rd.en.eq(1),
                     reads_word1.eq(~self.start)]
        m.d.sync += nxt.eq(Mux(wr1, imem_wr.data, Mux(word1_out, imem_rd.data, nxt)))

    def _overlapped_stop(self, m, verdict):
        """The overlapped sequencer halts on the registered verdict once no unit is busy: past the
        end (NO_HALT), a HALT (OK) or the check's error code."""
        with m.If(verdict.past_end):
            self._halt(m, isa.ErrorCode.NO_HALT)
        with m.Elif(verdict.halt):
            self._halt(m, isa.ErrorCode.OK)
        with m.Else():
            self._halt(m, verdict.error)

    def _region_registers(self, stages, terms, iset):
        """The overlapped sequencer's region registers: ``incoming`` (the regions of the word in
        ISSUE) and ``held`` (per unit, the regions of the instruction it runs), each slot the
        first and last scratchpad partition a region touches (:func:`~ga2_hdl.isa.partition_span`);
        slot k of an op is its k-th scratchpad region."""
        slots = max(len(stages.spad_regions(terms, spec)) for spec in iset.ops)
        part_bits = max(1, self.config.spad_partitions.bit_length() - 1)
        region = data.StructLayout({"valid": 1, "first": part_bits, "last": part_bits})
        incoming = [Signal(region, name=f"incoming{k}") for k in range(slots)]
        held = {kind: [Signal(region, name=f"held_{UNIT_NAMES[kind]}{k}") for k in range(slots)]
                for kind in self.units}
        return incoming, held

    def _blocked(self, verdict, incoming, held):
        """Whether any unit is busy, and whether ISSUE must wait: the op's unit is busy, or a busy
        unit holds a partition one of the incoming regions touches (the ISA's rule,
        :func:`~ga2_hdl.isa.spans_meet`, on the registered spans)."""
        any_busy = 0
        for unit in self.units.values():
            any_busy = any_busy | unit.busy
        blocked = 0
        for kind, unit in self.units.items():
            hazard = 0
            for p in incoming:
                for q in held[kind]:
                    hazard = hazard | (p.valid & q.valid & isa.spans_meet((p.first, p.last), (q.first, q.last)))
            blocked = blocked | (unit.busy & (verdict[UNIT_NAMES[kind]] | hazard))
        return any_busy, blocked

    def _overlapped_fetch(self, m, stages, total, first, words, terms, errors, verdict, incoming):
        """The overlapped sequencer's FETCH: the check's second half and the verdict registered,
        and the partitions of the word's regions into ``incoming`` (word 0's from its own
        registers while ``first``, when ``cur`` also takes ``word0``)."""
        iset = isa.instruction_set(self.config)
        (word0, cur), (terms_word0, terms_next), (error_word0, error_next) = words, terms, errors
        op = Mux(first, terms_word0.op, terms_next.op)
        m.d.comb += self.running.eq(1)
        m.d.sync += [total.eq(total + 1), verdict.past_end.eq(self.pc >= self.imem_words),
                     first.eq(0), verdict.halt.eq(op == isa.HALT.op),
                     verdict.error.eq(Mux(first, error_word0, error_next))]
        m.d.sync += [verdict[UNIT_NAMES[kind]].eq(op.matches(*iset.unit_ops(kind))) for kind in self.units]
        with m.If(first):
            m.d.sync += cur.eq(word0)
        m.d.sync += [r.valid.eq(0) for r in incoming]
        with m.Switch(op):
            for spec in iset.ops:
                with m.Case(spec.code):
                    spans = zip(stages.spad_regions(terms_word0, spec), stages.spad_regions(terms_next, spec))
                    for r, ((start0, end0), (start, end)) in zip(incoming, spans):
                        first0, last0 = isa.partition_span(start0, end0, self.config)
                        first1, last1 = isa.partition_span(start, end, self.config)
                        m.d.sync += [r.valid.eq(1), r.first.eq(Mux(first, first0, first1)),
                                     r.last.eq(Mux(first, last0, last1))]


def _check_stage(registers: list, *, factors: bool):
    """The ``stage`` function of :meth:`CheckStages.terms <ga2_hdl.rtl.decoder.CheckStages.terms>`
    for a sequencer that registers the first half of the next word's check: each product (and,
    with ``factors``, each product's factor) becomes a register ``check_KINDn``, appended with its
    expression to ``registers`` for the sequencer to load."""
    def stage(expr, kind="product"):
        if kind == "operand" and not factors:
            return expr
        register = Signal(expr.shape(), name=f"check_{kind}{len(registers)}")
        registers.append((register, expr))
        return register
    return stage


def _connect_narrow(m, port, master):
    """A unit's scratchpad port of w words on the low w lanes of a wider master port."""
    lanes = lambda value: value.as_value() if hasattr(value, "as_value") else value   # a word or a View
    wide = port.signature.wide
    rd_mask = port.rd_mask if wide else port.rd_en
    wr_mask = port.wr_mask if wide else port.wr_en
    m.d.comb += [
        master.rd_en.eq(port.rd_en), master.rd_addr.eq(port.rd_addr), master.rd_mask.eq(rd_mask),
        master.wr_en.eq(port.wr_en), master.wr_addr.eq(port.wr_addr), master.wr_mask.eq(wr_mask),
        master.wr_data.as_value().eq(lanes(port.wr_data)),
        lanes(port.rd_data).eq(master.rd_data.as_value()[:len(lanes(port.rd_data))]),
    ]
