"""Test harness for units with the GA-2 unit control contract.

:class:`SpadHarness` puts a unit next to a real scratchpad (the chip's
:class:`~ga2_hdl.sram.Scratchpad` with one master, connected to the unit's
``spad`` port) and forwards the unit's ``start``, ``ins``, ``done`` and ``busy``.

:func:`run_program` preloads memory from the testbench, issues instructions
one at a time as the sequencer would (start for one cycle, ins held until
done, idle gaps between), and checks the contract on every cycle:

* ``done`` is high exactly once, in cycle t + W (t = the start cycle), and
  ``busy`` exactly in cycles t+1 .. t+W;
* the unit touches the scratchpad only in its busy cycles t+1 .. t+W, and
  drives rd_en = wr_en = 0 in the start cycle and while idle;
* it never reads and writes the same address in the same cycle.

It returns the final memory and the measured W of every instruction.
"""

from typing import Callable, Mapping, Sequence

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from ga2_hdl import isa
from ga2_hdl.layout import INSTRUCTION
from ga2_hdl.sram import Scratchpad

IDLE_CYCLES_AFTER = 3          # cycles watched after done (the unit must stay quiet)
MAX_CYCLES = 200_000


class SpadHarness(wiring.Component):
    """The unit and a scratchpad of its own; the harness's ports are the unit's control members."""
    start: In(1)
    ins: In(INSTRUCTION)
    done: Out(1)
    busy: Out(1)

    def __init__(self, unit: wiring.Component):
        super().__init__()
        self.unit = unit
        self.spad = Scratchpad(1)
        self.mem = self.spad.memory

    def elaborate(self, platform):
        m = Module()
        m.submodules.unit = unit = self.unit
        m.submodules.spad = self.spad
        wiring.connect(m, unit=unit.spad, scratchpad=self.spad.masters[0])
        m.d.comb += [
            unit.start.eq(self.start),
            unit.ins.eq(self.ins),
            self.done.eq(unit.done),
            self.busy.eq(unit.busy),
        ]
        return m


class ContractError(AssertionError):
    pass


def run_program(make_unit: Callable[[], wiring.Component],
                image: Mapping[int, int] | Sequence[int],
                instructions: Sequence[isa.Instruction],
                gap: int = 2) -> tuple[list[int], list[int]]:
    """Run ``instructions`` one after the other on a fresh unit and scratchpad.

    ``image`` is the initial scratchpad (a mapping address -> word, or a list
    from address 0).  Returns (final scratchpad as SPAD_WORDS words, [W per
    instruction]).
    """
    harness = SpadHarness(make_unit())
    spad = harness.unit.spad
    busy_times: list[int] = []
    final: list[int] = []
    items = image.items() if isinstance(image, Mapping) else enumerate(image)

    async def bench(ctx):
        for addr, word in items:
            ctx.set(harness.mem.data[addr], word & isa.WORD_MASK)

        def watch(cycle: int, busy: bool, ins: isa.Instruction):
            if ctx.get(harness.busy) != busy:
                raise ContractError(f"{ins}: busy is {ctx.get(harness.busy)} in cycle t+{cycle}")
            rd_en, wr_en = ctx.get(spad.rd_en), ctx.get(spad.wr_en)
            if not busy and (rd_en or wr_en):
                raise ContractError(f"{ins}: scratchpad {'read' if rd_en else 'write'} in cycle t+{cycle}, "
                                    f"outside the busy cycles")
            if rd_en and wr_en and ctx.get(spad.rd_addr) == ctx.get(spad.wr_addr):
                raise ContractError(f"{ins}: read and write of address {ctx.get(spad.rd_addr)} "
                                    f"in the same cycle t+{cycle}")

        for _ in range(gap):
            await ctx.tick()
        for ins in instructions:
            ctx.set(harness.ins.as_value(), ins.encode())
            ctx.set(harness.start, 1)
            if ctx.get(harness.done):
                raise ContractError(f"{ins}: done in the start cycle")
            watch(0, False, ins)
            await ctx.tick()
            ctx.set(harness.start, 0)
            cycle = 1
            while True:
                watch(cycle, True, ins)
                if ctx.get(harness.done):
                    break
                await ctx.tick()
                cycle += 1
                if cycle > MAX_CYCLES:
                    raise ContractError(f"{ins}: no done after {MAX_CYCLES} cycles")
            busy_times.append(cycle)
            for k in range(1, IDLE_CYCLES_AFTER + gap + 1):
                await ctx.tick()
                # once done, the instruction word may change (the chip fetches the next one)
                ctx.set(harness.ins.as_value(), 0)
                if ctx.get(harness.done):
                    raise ContractError(f"{ins}: done high again in cycle t+{cycle + k}")
                watch(cycle + k, False, ins)
        final.extend(ctx.get(harness.mem.data[a]) for a in range(isa.SPAD_WORDS))

    sim = Simulator(harness)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return final, busy_times
