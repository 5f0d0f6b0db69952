"""The one test harness for every execution unit (DMA, matrix unit, vector engines): one contract.

:class:`SpadHarness` puts a unit next to the real scratchpad
(:class:`ga2_hdl.rtl.sram.Scratchpad`, with the unit's ``spad`` master port as its
only master) and, for the DMA, the external-memory model of docs/chip.md; it
forwards the unit's ``start``, ``ins`` and ``done``.

:func:`run_jobs` issues instructions one at a time as the sequencer does
(``start`` for one cycle, ``ins`` held until ``done``, idle gaps between, the
instruction word cleared once ``done`` has been seen) and checks the unit
control contract on every cycle:

* ``done`` is high exactly once, in cycle t + W (t = the start cycle), and
  never later than the ISA's busy time ``ins.busy()`` (the run stops there, so a
  unit that never answers fails at once instead of after a long wait);
* the unit writes the scratchpad only in its busy cycles t+1 .. t+W and reads it only
  in those and the start cycle t (a read changes nothing, and the sequencer runs nothing
  else then), and drives rd_en = wr_en = 0 while idle;
* it never reads and writes the same address in the same cycle;
* the scratchpad never sees two masters at once (its ``conflict`` flag);
* ``busy`` (every unit has it, ga2_hdl/rtl/layout.py ``UnitSignature``) is high
  exactly in cycles t+1 .. t+W (the cycle of ``done`` included) and low in the
  start cycle and while idle.

The busy time is the unit's configuration's (``unit.config``, the book's when a
unit has none): ``isa.instruction_set(config).busy(ins)``.  A unit with a wide
scratchpad port (``Config.spad_ports`` or ``ext_port_words`` above 1) gets a
banked scratchpad of its port's width; "the same address" then means any word
the read mask and the write mask both select.

:func:`run_program` is the same for a list of instructions on a preloaded
scratchpad, returning the final scratchpad and the measured W of each;
:class:`UnitBench` is the same with per-instruction ``before``/``after``
callbacks that prepare and check memory from the testbench.
"""

from typing import Callable, Mapping, Sequence

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from ga2_hdl import isa
from ga2_hdl.rtl.layout import INSTRUCTION
from ga2_hdl.rtl.sram import Scratchpad

IDLE_CYCLES_AFTER = 3          # cycles watched after done (the unit must stay quiet)


class SpadHarness(wiring.Component):
    """A unit with the real scratchpad (and, with ``ext_words``, the external-memory model)."""

    start: In(1)
    ins: In(INSTRUCTION)
    done: Out(1)

    def __init__(self, unit: wiring.Component, *, ext_words: int = 0, spad_init=()):
        super().__init__()
        self.unit = unit
        self.config = getattr(unit, "config", isa.BOOK)
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
    pass


def port_words(unit) -> int:
    """Words per access of ``unit``'s scratchpad port (1: the book's port)."""
    return unit.signature.members["spad"].signature.words


def _lanes(ctx, spad, en, addr, mask) -> set[int]:
    """The addresses a port's access selects this cycle (empty when not enabled)."""
    if not ctx.get(en):
        return set()
    base = ctx.get(addr)
    if not hasattr(spad, "rd_mask"):
        return {base}
    bits = ctx.get(mask)
    top = 1 << len(addr)
    return {(base + i) % top for i in range(len(mask)) if bits >> i & 1}


Job = tuple  # (isa.Instruction, before or None, after or None)


def run_jobs(harness: SpadHarness, jobs: Sequence[Job], *, gap: int = 2,
             setup: Callable | None = None, finish: Callable | None = None,
             monitor: Callable | None = None) -> list[int]:
    """Run ``jobs`` = [(instruction, before(ctx, harness), after(ctx, harness, W))] in one simulation,
    checking the contract every cycle; returns the measured W of each instruction.
    ``monitor(ctx, ins, cycle)``, if given, sees every cycle t+0 .. t+W+gap+3 of every instruction."""
    spad = harness.unit.spad
    iset = isa.instruction_set(harness.config)
    wide = hasattr(spad, "rd_mask")
    busy_port = getattr(harness.unit, "busy", None) if "busy" in harness.unit.signature.members else None
    busy_times: list[int] = []

    async def bench(ctx):
        if setup:
            setup(ctx)

        def watch(cycle: int, busy: bool, ins: isa.Instruction, start: bool = False):
            rd_en, wr_en = ctx.get(spad.rd_en), ctx.get(spad.wr_en)
            if not busy and (wr_en or (rd_en and not start)):
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
            for k in range(1, IDLE_CYCLES_AFTER + gap + 1):
                await ctx.tick()
                # once done, the instruction word may change (the chip fetches the next one)
                ctx.set(harness.ins.as_value(), 0)
                if ctx.get(harness.done):
                    raise ContractError(f"{ins}: done high again in cycle t+{cycle + k}")
                watch(cycle + k, False, ins)
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

    ``image`` is the initial scratchpad (a mapping address -> word, or a list
    from address 0).  Returns (final scratchpad as SPAD_WORDS words, [W per
    instruction]).  ``monitor(ctx, harness, ins, cycle)`` sees every cycle (see :func:`run_jobs`).
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

    ``run(jobs)``: jobs are (Instruction, before, after) where before(ctx, bench) prepares memory
    and after(ctx, bench, busy) checks it; returns the list of measured busy times.
    """

    def __init__(self, unit, *, ext_words: int = 0, spad_init=()):
        self.unit = unit
        self.harness = SpadHarness(unit, ext_words=ext_words, spad_init=spad_init)
        self.spad = self.harness.spad
        self.ext = self.harness.ext

    def run(self, jobs, *, gap: int = 2, monitor: Callable | None = None) -> list[int]:
        wrap = [(ins, (lambda ctx, _h, b=before: b(ctx, self)) if before else None,
                 (lambda ctx, _h, w, a=after: a(ctx, self, w)) if after else None) for ins, before, after in jobs]
        return run_jobs(self.harness, wrap, gap=gap, monitor=monitor)

    # memory helpers (testbench side)
    def spad_write(self, ctx, addr: int, words):
        for i, w in enumerate(words):
            ctx.set(self.spad.cell(addr + i), w & isa.WORD_MASK)

    def spad_read(self, ctx, addr: int, n: int) -> list[int]:
        return [ctx.get(self.spad.cell(addr + i)) for i in range(n)]

    def ext_write(self, ctx, addr: int, words):
        for i, w in enumerate(words):
            ctx.set(self.ext.memory.data[addr + i], w & isa.WORD_MASK)

    def ext_read(self, ctx, addr: int, n: int) -> list[int]:
        return [ctx.get(self.ext.memory.data[addr + i]) for i in range(n)]
