"""The unit-contract bench: one execution unit alone on the real scratchpad, the contract checked every cycle.

Every execution unit of the chip (the DMA, the matrix unit, each vector engine) and every engine of a
user's extension (docs/extending.md) is tested on this bench: the project's own unit tests
(sim_tests/rtl/) and a user's engine alike.  It needs nothing but the engine: no chip, no program,
no Verilog.

:class:`SpadHarness` puts a unit next to the real scratchpad
(:class:`ga2_hdl.rtl.sram.Scratchpad`, with the unit's ``spad`` master port as its
only master) and, for the DMA, the external-memory model of docs/chip.md; it
forwards the unit's ``start``, ``ins`` and ``done``.

:func:`run_jobs` issues instructions one at a time as the sequencer does
(``start`` for one cycle, ``ins`` held until ``done``, idle gaps between, the
instruction word cleared once ``done`` has been seen) and checks the unit
control contract (docs/chip.md, "Unit control contract") on every cycle, raising
:class:`ContractError` at the first cycle that breaks it:

* ``done`` is high exactly once, in cycle t + W (t = the start cycle), and
  never later than the ISA's busy time (the run stops there, so a
  unit that never answers fails at once instead of after a long wait);
* the unit writes the scratchpad only in its busy cycles t+1 .. t+W (and, on a chip without
  overlap, in the :func:`ga2_hdl.isa.trailing_write_cycles` after them: the next
  instruction's FETCH, in which the bench, like the sequencer, still holds ``ins`` and starts
  nothing) and reads it only in its busy cycles and the start cycle t (a read changes nothing,
  and the sequencer runs nothing else then), and drives rd_en = wr_en = 0 while idle;
* it never reads and writes the same address in the same cycle;
* the scratchpad never sees two masters at once (its ``conflict`` flag);
* every word it reads lies in one of the instruction's regions, and every word it writes in a
  region the instruction writes, by the operation's declared regions (``OpSpec.regions``): an
  engine that strays outside its operands (an extension's, say) is named with the cycle and the word;
* ``busy`` (every unit has it, ga2_hdl/rtl/layout.py ``UnitSignature``) is high
  exactly in cycles t+1 .. t+W (the cycle of ``done`` included) and low in the
  start cycle and while idle.

The busy time is the unit's configuration's (``unit.config``, the book's when a
unit has none): ``isa.instruction_set(config).busy(ins)``; the bench returns the measured W of
every instruction, so a test compares it with the ISA's exactly.  A unit with a wide
scratchpad port (``Config.spad_ports`` or ``ext_port_words`` above 1) gets a
banked scratchpad of its port's width; "the same address" then means any word
the read mask and the write mask both select.

:func:`run_program` is the same for a list of instructions on a preloaded
scratchpad, returning the final scratchpad and the measured W of each;
:class:`UnitBench` is the same with per-instruction ``before``/``after``
callbacks that prepare and check memory from the testbench.

Example: the engine of an extension module ``my_ext`` (docs/extending.md runs one like it)::

    from ga2_hdl import isa
    from ga2_hdl.config import Config
    from gen.sim.unit_bench import run_program
    from my_ext import MyEngine

    config = Config(name="mine", extensions=("my_ext",))
    iset = isa.instruction_set(config)
    ins = iset.make("MYOP", dst=8, src=0, len=4)
    final, busy = run_program(lambda: MyEngine(config=config), [5, -3, 0, 7], [ins])
    assert busy == [iset.busy(ins)]          # and final[8:12] holds what MYOP computes
"""

from typing import Callable, Mapping, Sequence

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from ga2_hdl import isa
from ga2_hdl.rtl.layout import INSTRUCTION
from ga2_hdl.rtl.sram import Scratchpad

__all__ = ["ContractError", "SpadHarness", "UnitBench", "port_words", "run_jobs", "run_program"]

IDLE_CYCLES_AFTER = 3          # cycles watched after done (the unit must stay quiet)


class SpadHarness(wiring.Component):
    """A unit with the real scratchpad (and, with ``ext_words``, the external-memory model).

    Parameters
    ----------
    unit : wiring.Component
        The unit, on the unit contract (:class:`ga2_hdl.rtl.layout.UnitSignature`); its
        ``config`` attribute (the chip it was built for) sizes the scratchpad: a unit without one
        is refused (:class:`TypeError`), never given the book's chip.
    ext_words : int
        Words of the external-memory model to attach (0: none; the DMA needs one).
    spad_init : sequence of int
        The scratchpad's initial words, from address 0.

    Ports
    -----
    start : In(1)
        The unit's ``start``.
    ins : In(INSTRUCTION)
        The unit's instruction word.
    done : Out(1)
        The unit's ``done``.
    """

    start: In(1)
    ins: In(INSTRUCTION)
    done: Out(1)

    def __new__(cls, unit: wiring.Component, **_kw):
        if getattr(unit, "config", None) is None:       # refused before the harness exists (nothing to warn of)
            raise TypeError(f"unit {type(unit).__name__} has no config attribute: the harness builds the "
                            f"scratchpad of the chip the unit was built for (set self.config = config)")
        return super().__new__(cls, src_loc_at=1)

    def __init__(self, unit: wiring.Component, *, ext_words: int = 0, spad_init=()):
        super().__init__()
        self.unit = unit
        self.config = unit.config
        self.words = port_words(unit)
        self.spad = Scratchpad(1, config=self.config, init=spad_init, words=self.words)
        self.mem = self.spad.memory
        self.ext = None
        if ext_words:
            from gen.sim.extmem import ExternalMemoryModel
            self.ext = ExternalMemoryModel(unit, ext_words, config=self.config)

    def elaborate(self, platform):
        m = Module()
        m.submodules.unit = unit = self.unit
        m.submodules.spad = self.spad
        wiring.connect(m, unit=unit.spad, scratchpad=self.spad.masters[0])
        if self.ext is not None:
            m.submodules.ext = self.ext
        m.d.comb += [
            unit.start.eq(self.start),
            unit.ins.eq(self.ins),
            self.done.eq(unit.done),
        ]
        return m


class ContractError(AssertionError):
    """The unit broke the unit contract: the message names the instruction and the cycle (t+N)."""


def port_words(unit) -> int:
    """Words per access of ``unit``'s scratchpad port (1: the book's port)."""
    return unit.signature.members["spad"].signature.words


def _lanes(ctx, spad, en, addr, mask) -> set[int]:
    """The addresses a port's access selects this cycle (empty when not enabled)."""
    if not ctx.get(en):
        return set()
    base = ctx.get(addr)
    if not spad.signature.wide:
        return {base}
    bits = ctx.get(mask)
    top = 1 << len(addr)
    return {(base + i) % top for i in range(len(mask)) if bits >> i & 1}


#: one job of :func:`run_jobs`: (isa.Instruction, before or None, after or None)
Job = tuple


def _regions_of(iset, ins: isa.Instruction) -> tuple[set[int], set[int]]:
    """The scratchpad words ``ins`` may read (any of its regions: a unit may read back what it wrote,
    as SM reads its exponentials from dst) and may write (its written regions), by its operation's
    declared regions."""
    reads: set[int] = set()
    writes: set[int] = set()
    for r in iset.spec(ins.op).accesses(ins):
        if r.memory == "spad":
            reads.update(range(r.start, r.start + r.length))
            if r.write:
                writes.update(range(r.start, r.start + r.length))
    return reads, writes


def _check_regions(ctx, spad, iset, ins: isa.Instruction, cycle: int, reads: set[int], writes: set[int]) -> None:
    """A ContractError when this cycle's scratchpad access strays outside the instruction's regions."""
    for kind, en, addr, mask, words in (("read", spad.rd_en, spad.rd_addr, getattr(spad, "rd_mask", None), reads),
                                        ("write", spad.wr_en, spad.wr_addr, getattr(spad, "wr_mask", None), writes)):
        outside = sorted(_lanes(ctx, spad, en, addr, mask) - words)
        if outside:
            raise ContractError(f"{ins}: scratchpad {kind} of word {outside[0]} in cycle t+{cycle}, outside "
                                f"the words the instruction's regions let it {kind} (ISA: "
                                f"{_describe_regions(iset, ins, kind == 'write')})")


def _describe_regions(iset, ins: isa.Instruction, write: bool) -> str:
    found = [f"{r.role} {r.start}..{r.start + r.length - 1}" for r in iset.spec(ins.op).accesses(ins)
             if r.memory == "spad" and (r.write or not write)]
    return ", ".join(found) or "none"


def run_jobs(harness: SpadHarness, jobs: Sequence[Job], *, gap: int = 2,
             setup: Callable | None = None, finish: Callable | None = None,
             monitor: Callable | None = None) -> list[int]:
    """Run ``jobs`` in one simulation of ``harness``, checking the contract every cycle.

    Parameters
    ----------
    harness : SpadHarness
        The unit and its memories.
    jobs : sequence of (Instruction, before, after)
        One instruction each, issued in order; ``before(ctx, harness)`` runs just before its
        start cycle and ``after(ctx, harness, W)`` once the unit has been idle again for a few
        cycles (either may be None).
    gap : int
        Idle cycles before the first instruction and between instructions.
    setup, finish : callable, optional
        ``setup(ctx)`` before anything, ``finish(ctx)`` after the last job.
    monitor : callable, optional
        ``monitor(ctx, ins, cycle)`` sees every cycle t+0 .. t+W+gap+3 of every instruction.

    Returns
    -------
    list of int
        The measured busy time W of each instruction.

    Raises
    ------
    ContractError
        At the first cycle that breaks the contract.
    """
    spad = harness.unit.spad
    iset = isa.instruction_set(harness.config)
    wide = spad.signature.wide
    busy_port = getattr(harness.unit, "busy", None) if "busy" in harness.unit.signature.members else None
    busy_times: list[int] = []
    trailing = max(isa.trailing_write_cycles(harness.config, unit) for unit in isa.Unit)
    if gap < trailing:
        raise ValueError(f"gap={gap}: at least the {trailing} cycle(s) after done in which a unit may still write")
    allowed: dict = {}                   # instruction -> the words its regions let it read, write

    async def bench(ctx):
        if setup:
            setup(ctx)

        def watch(cycle: int, busy: bool, ins: isa.Instruction, start: bool = False, trailing: bool = False):
            rd_en, wr_en = ctx.get(spad.rd_en), ctx.get(spad.wr_en)
            if not busy and ((wr_en and not trailing) or (rd_en and not start)):
                raise ContractError(f"{ins}: scratchpad {'read' if rd_en else 'write'} in cycle t+{cycle}, "
                                    f"outside the busy cycles")
            if rd_en and wr_en and not wide and ctx.get(spad.rd_addr) == ctx.get(spad.wr_addr):
                raise ContractError(f"{ins}: read and write of address {ctx.get(spad.rd_addr)} "
                                    f"in the same cycle t+{cycle}")
            if wide:
                both = (_lanes(ctx, spad, spad.rd_en, spad.rd_addr, spad.rd_mask)
                        & _lanes(ctx, spad, spad.wr_en, spad.wr_addr, spad.wr_mask))
                if both:
                    raise ContractError(f"{ins}: read and write of address {min(both)} "
                                        f"in the same cycle t+{cycle}")
                for name in ("rd", "wr"):
                    if ctx.get(getattr(spad, f"{name}_mask")) and not ctx.get(getattr(spad, f"{name}_en")):
                        raise ContractError(f"{ins}: {name}_mask set without {name}_en in cycle t+{cycle}")
            if ctx.get(harness.spad.conflict):
                raise ContractError(f"{ins}: two scratchpad masters in cycle t+{cycle}")
            if ins not in allowed:
                allowed[ins] = _regions_of(iset, ins)
            _check_regions(ctx, spad, iset, ins, cycle, *allowed[ins])
            if monitor:
                monitor(ctx, ins, cycle)

        def busy_is(cycle: int, want: int, ins: isa.Instruction):
            if busy_port is not None and ctx.get(busy_port) != want:
                raise ContractError(f"{ins}: busy is {1 - want} in cycle t+{cycle}")

        for _ in range(gap):
            await ctx.tick()
        for ins, before, after in jobs:
            if before:
                before(ctx, harness)
            limit = iset.busy(ins)
            ctx.set(harness.ins.as_value(), ins.encode())
            ctx.set(harness.start, 1)
            if ctx.get(harness.done):
                raise ContractError(f"{ins}: done in the start cycle")
            watch(0, False, ins, start=True)
            busy_is(0, 0, ins)
            await ctx.tick()
            ctx.set(harness.start, 0)
            cycle = 1
            while True:
                watch(cycle, True, ins)
                if ctx.get(harness.done):
                    busy_is(cycle, 1, ins)      # busy covers t+1 .. t+W, the cycle of done included
                    break
                busy_is(cycle, 1, ins)
                if cycle >= limit:
                    raise ContractError(f"{ins}: no done by cycle t+{limit} (the ISA's busy time {limit})")
                await ctx.tick()
                cycle += 1
            busy_times.append(cycle)
            trailing = isa.trailing_write_cycles(harness.config, iset.spec(ins.op).unit)
            for k in range(1, IDLE_CYCLES_AFTER + gap + 1):
                await ctx.tick()
                # once done (and the cycles of a trailing write), the instruction word may change
                # (the chip fetches the next one)
                if k > trailing:
                    ctx.set(harness.ins.as_value(), 0)
                if ctx.get(harness.done):
                    raise ContractError(f"{ins}: done high again in cycle t+{cycle + k}")
                watch(cycle + k, False, ins, trailing=k <= trailing)
                busy_is(cycle + k, 0, ins)
            if after:
                after(ctx, harness, cycle)
        if finish:
            finish(ctx)

    sim = Simulator(harness)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return busy_times


def run_program(make_unit: Callable[[], wiring.Component],
                image: Mapping[int, int] | Sequence[int],
                instructions: Sequence[isa.Instruction],
                gap: int = 2, monitor: Callable | None = None) -> tuple[list[int], list[int]]:
    """Run ``instructions`` one after the other on a fresh unit and scratchpad.

    Parameters
    ----------
    make_unit : callable
        ``make_unit()`` builds the unit (for instance ``lambda: MyEngine(config=config)``).
    image : mapping or sequence of int
        The initial scratchpad: address -> word, or the words from address 0 (negative
        values are stored as their 32-bit two's complement).
    instructions : sequence of Instruction
        Issued one at a time, as the sequencer does.
    gap : int
        Idle cycles between instructions.
    monitor : callable, optional
        ``monitor(ctx, harness, ins, cycle)`` sees every cycle (see :func:`run_jobs`).

    Returns
    -------
    final : list of int
        The whole scratchpad at the end, as unsigned 32-bit words.
    busy : list of int
        The measured busy time W of each instruction.
    """
    harness = SpadHarness(make_unit())
    final: list[int] = []
    items = image.items() if isinstance(image, Mapping) else enumerate(image)

    def setup(ctx):
        for addr, word in items:
            ctx.set(harness.spad.cell(addr), word & isa.WORD_MASK)

    def finish(ctx):
        final.extend(ctx.get(harness.spad.cell(a)) for a in range(harness.spad.depth))

    busy = run_jobs(harness, [(ins, None, None) for ins in instructions], gap=gap, setup=setup, finish=finish,
                    monitor=(lambda ctx, ins, cycle: monitor(ctx, harness, ins, cycle)) if monitor else None)
    return final, busy


class UnitBench:
    """One unit on the harness, run through jobs with memory callbacks (the DMA's and matrix unit's tests).

    Parameters
    ----------
    unit : wiring.Component
        The unit, on the unit contract.
    ext_words : int
        Words of the external-memory model (0: none).
    spad_init : sequence of int
        The scratchpad's initial words, from address 0.

    Notes
    -----
    :meth:`run` takes jobs ``(Instruction, before, after)``: ``before(ctx, bench)`` prepares
    memory (with :meth:`spad_write`, :meth:`ext_write`) and ``after(ctx, bench, busy)`` checks
    it (:meth:`spad_read`, :meth:`ext_read`) and the measured busy time; ``run`` returns the
    list of measured busy times.  The contract is checked every cycle (:func:`run_jobs`).
    """

    def __init__(self, unit, *, ext_words: int = 0, spad_init=()):
        self.unit = unit
        self.harness = SpadHarness(unit, ext_words=ext_words, spad_init=spad_init)
        self.spad = self.harness.spad
        self.ext = self.harness.ext

    def run(self, jobs, *, gap: int = 2, monitor: Callable | None = None) -> list[int]:
        """Run ``jobs`` (see the class), checking the contract; the measured busy time of each."""
        wrap = [(ins, (lambda ctx, _h, b=before: b(ctx, self)) if before else None,
                 (lambda ctx, _h, w, a=after: a(ctx, self, w)) if after else None) for ins, before, after in jobs]
        return run_jobs(self.harness, wrap, gap=gap, monitor=monitor)

    # memory helpers (testbench side)
    def spad_write(self, ctx, addr: int, words):
        """Store ``words`` in the scratchpad from ``addr`` (from a testbench: ``ctx``)."""
        for i, w in enumerate(words):
            ctx.set(self.spad.cell(addr + i), w & isa.WORD_MASK)

    def spad_read(self, ctx, addr: int, n: int) -> list[int]:
        """The ``n`` scratchpad words from ``addr``, unsigned."""
        return [ctx.get(self.spad.cell(addr + i)) for i in range(n)]

    def ext_write(self, ctx, addr: int, words):
        """Store ``words`` in the external-memory model from ``addr``."""
        for i, w in enumerate(words):
            ctx.set(self.ext.memory.data[addr + i], w & isa.WORD_MASK)

    def ext_read(self, ctx, addr: int, n: int) -> list[int]:
        """The ``n`` external-memory words from ``addr``, unsigned."""
        return [ctx.get(self.ext.memory.data[addr + i]) for i in range(n)]
