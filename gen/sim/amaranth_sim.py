"""Amaranth's simulator on the GA-2 RTL, behind the simulator interface (name ``amaranth``).

One simulation serves a whole bundle: the chip and the external-memory model
(:class:`gen.sim.extmem.ExternalMemoryModel`, the contract's model built as
hardware, so it costs no Python per cycle) are elaborated once, and a single
async testbench runs every program in turn, as the contract's loading
procedure says:

1. write the program through the chip's instruction-memory port (one word per cycle);
2. bring the external memory to the program's image (only the words that differ
   from what the previous program left are written);
3. zero the scratchpad (the golden model starts every program from zeros;
   the chip itself never clears it);
4. pulse ``start`` for one cycle and sleep until ``halted`` rises (no per-cycle
   wake-ups: the testbench waits on the edge of ``halted``, with a watchdog);
5. read ``status``, ``status_pc``, the five counters and the final external memory.

Reading and writing memories from a testbench costs microseconds per word, so
a :class:`gen.sim.extmem.WriteMonitor` watches the external memory's and the
scratchpad's write ports: after a run only the written blocks of external
memory are read back (the rest still holds the image the testbench wrote), and
before the next run only the written blocks of the scratchpad are wiped.  The
image of the next program is written where it differs from the current contents.

The watchdog is every simulator's (:func:`gen.sim.simulator.watchdog_cycles` of the
program's expected cycles), so a chip that never halts fails with a clear error
instead of hanging.
"""
from __future__ import annotations

import time
from typing import Callable, Sequence

from amaranth.hdl import Module
from amaranth.sim import Simulator

from ga2_hdl import golden, isa
from ga2_hdl.rtl.chip import COUNTER_PORTS, GA2Chip
from ga2_hdl.config import Config
from ga2_hdl.isa import ErrorCode, Instruction
from ga2_hdl.formats.memimage import MemoryImage
from ga2_hdl.formats.results import RunResult, first_mismatch
from ga2_hdl.support.reporter import Reporter

from .extmem import AccessMonitor, ExternalMemoryModel, WriteMonitor
from .simulator import (BundleReport, SimulatorError, check_bundle_chip, check_vcd, cycle_bound, external_memory_words, timeout_line, vcd_output)

__all__ = ["AmaranthSimulator", "ChipSimulation"]

CLOCK_PERIOD = 1e-6            # simulated seconds per cycle (any value; only cycles matter)


class ChipSimulation:
    """The chip ``config`` and its external memory (``ext_words``, by default the configuration's;
    read latency ``config.lat``), elaborated once; runs programs one after another."""

    def __init__(self, ext_words: int | None = None, *, config: Config):
        t0 = time.perf_counter()
        ext_words = config.ext_words if ext_words is None else ext_words
        self.config = config
        self.ext_words = ext_words
        self.chip = GA2Chip(config=config, ext_words=ext_words)
        # attached to the chip's ext_* ports
        self.ext = ExternalMemoryModel(self.chip, ext_words, config=config)
        watched = {"ext": (self.chip.ext_we, self.chip.ext_addr, ext_words),
                   "spad": (self.chip.spad.write_en, self.chip.spad.write_addr, self.chip.spad.depth)}
        if self.ext.port_words > 1:        # a wide write may reach into the next block
            watched["ext_last"] = (self.chip.ext_we, self.ext.write_last, ext_words)
        if self.chip.spad.n_banks > 1:
            watched["spad_last"] = (self.chip.spad.write_en, self.chip.spad.write_last, self.chip.spad.depth)
        self.written = WriteMonitor(watched)
        ports = self._access_ports(ext_words)
        self.outside = AccessMonitor(ports, self.chip.cnt_total) if ports else None
        m = Module()
        m.submodules.chip = self.chip
        m.submodules.ext = self.ext
        m.submodules.written = self.written
        if self.outside is not None:
            m.submodules.outside = self.outside
        self.top = m
        self._ran = False
        self.timed_out: tuple[int, int, str] | None = None    # (program, bound, where it was) if one hung
        self._ext_rows = [self.ext.memory.data[i] for i in range(ext_words)]
        self._spad_rows = [self.chip.spad.cell(i) for i in range(self.chip.spad.depth)]
        self.build_seconds = time.perf_counter() - t0

    def _access_ports(self, ext_words: int) -> list:
        """The ports :class:`AccessMonitor` watches: every scratchpad master's read and write port,
        and the chip's external-memory port, each where its address can reach past the memory (a
        memory of 2**bits words is the whole address space of a ``bits``-bit port: its addresses
        wrap, by the port's contract, so nothing is watched there and the simulation pays nothing)."""
        def reaches_past(addr, words: int) -> bool:
            return (1 << len(addr)) > words

        depth = self.chip.spad.depth
        ports = []
        for master in self.chip.spad.masters:
            for kind, en, addr, mask in (("read", master.rd_en, master.rd_addr, getattr(master, "rd_mask", None)),
                                         ("write", master.wr_en, master.wr_addr, getattr(master, "wr_mask", None))):
                if reaches_past(addr, depth):
                    ports.append(("scratchpad", kind, en, addr, mask, depth))
        mask = getattr(self.chip, "ext_mask", None)
        if reaches_past(self.chip.ext_addr, ext_words):
            ports.append(("external memory", "read", self.chip.ext_re, self.chip.ext_addr, mask, ext_words))
            ports.append(("external memory", "write", self.chip.ext_we, self.chip.ext_addr, mask, ext_words))
        return ports

    def _bitmap(self, ctx, name: str) -> int:
        """The written blocks of memory ``name`` (with a wide port's last-lane blocks)."""
        bits = ctx.get(self.written.blocks[name])
        if f"{name}_last" in self.written.blocks:
            bits |= ctx.get(self.written.blocks[f"{name}_last"])
        return bits

    def run(self, jobs: Sequence[tuple[Sequence[Instruction], Sequence[int]]], *,
            vcd: str | None = None,
            on_result: Callable[[int, RunResult], bool] | None = None) -> list[RunResult]:
        """Run ``jobs`` = [(program, full external image)] in one simulation.

        ``on_result(i, result)`` is called after each program; returning False stops the run.
        A ChipSimulation runs once (its design is elaborated for that run).
        """
        if self._ran:
            raise RuntimeError("a ChipSimulation runs once; make a new one")
        self._ran = True
        chip = self.chip
        results: list[RunResult] = []
        ext_known = [0] * self.ext_words          # the model's memory starts all zero
        written = self.written
        spad_dirty: list[range] = []              # written by the previous program
        block = written.block_words

        async def bench(ctx):
            nonlocal ext_known, spad_dirty
            for i, (program, source) in enumerate(jobs):
                # a bundle's image is sparse (MemoryImage): made dense for this program only
                image = source.tolist() if isinstance(source, MemoryImage) else list(source)
                # 1. the program, through the instruction-memory port
                ctx.set(chip.imem_we, 1)
                for addr, ins in enumerate(program):
                    ctx.set(chip.imem_addr, addr)
                    ctx.set(chip.imem_wdata, ins.encode())
                    await ctx.tick()
                ctx.set(chip.imem_we, 0)
                # 2. external memory: write only what differs from the current contents
                for lo in range(0, self.ext_words, block) if ext_known != image else ():
                    if ext_known[lo:lo + block] != image[lo:lo + block]:
                        for addr in range(lo, min(lo + block, self.ext_words)):
                            if ext_known[addr] != image[addr]:
                                ctx.set(self._ext_rows[addr], image[addr])
                # 3. a zero scratchpad, as the golden model starts with
                for span in spad_dirty:
                    for row in self._spad_rows[span.start:span.stop]:
                        if ctx.get(row):
                            ctx.set(row, 0)
                # 4. start (and forget earlier writes), then sleep until halted rises (or the
                #    watchdog fires)
                ctx.set(chip.start, 1)
                ctx.set(self.written.clear, 1)
                if self.outside is not None:
                    ctx.set(self.outside.clear, 1)
                await ctx.tick()
                ctx.set(chip.start, 0)
                ctx.set(self.written.clear, 0)
                if self.outside is not None:
                    ctx.set(self.outside.clear, 0)
                bound = cycle_bound(program, config=self.config)
                halted_edge, expired = await ctx.posedge(chip.halted).delay(bound * CLOCK_PERIOD)
                if not halted_edge:          # reported as every simulator does: TIMEOUT, then FAIL
                    self.timed_out = (i, bound, f"pc={ctx.get(chip.pc)}, total={ctx.get(chip.cnt_total)}")
                    return
                # 5. the end state
                ext_known = image
                ext_spans = written.written_ranges(self._bitmap(ctx, "ext"), self.ext_words)
                for span in ext_spans:
                    ext_known[span.start:span.stop] = [ctx.get(row) for row in self._ext_rows[span.start:span.stop]]
                if isinstance(source, MemoryImage):     # kept sparse: a bundle's results cost what they touch
                    final = source if not ext_spans else MemoryImage.from_words(ext_known)
                else:
                    final = list(ext_known)
                spad_dirty = written.written_ranges(self._bitmap(ctx, "spad"), self.chip.spad.depth)
                if chip.config.overlap:       # several writes a cycle: the monitor sees one of them
                    spad_dirty = [range(self.chip.spad.depth)]
                result = RunResult(
                    counters=[ctx.get(getattr(chip, port)) for port in COUNTER_PORTS],
                    ext=final,
                    error=ErrorCode(ctx.get(chip.status)),
                    error_pc=ctx.get(chip.status_pc),
                )
                if self.outside is not None and ctx.get(self.outside.seen):
                    result.outside.append(self.outside.describe(ctx.get(self.outside.port),
                                                                ctx.get(self.outside.address),
                                                                ctx.get(self.outside.cycle)))
                results.append(result)
                if on_result is not None and on_result(i, result) is False:
                    return
                await ctx.tick()

        t0 = time.perf_counter()
        sim = Simulator(self.top)
        sim.add_clock(CLOCK_PERIOD)
        sim.add_testbench(bench)
        self.build_seconds += time.perf_counter() - t0      # the simulator compiles the design here
        if vcd:
            with vcd_output(vcd) as target:
                with sim.write_vcd(target.tmp):
                    sim.run()
            if not target.written:
                raise SimulatorError(f"--vcd {vcd}: Amaranth wrote no waveform")
        else:
            sim.run()
        return results


def _prepare(program, ext, ext_words: int, config: Config) -> tuple[list[Instruction], list[int]]:
    code = golden.as_instructions(program)
    golden.check_program(code, config)           # the loader's rules: ends with HALT, fits imem
    return code, golden.ext_image(ext, ext_words).tolist()


class AmaranthSimulator:
    """The RTL in Amaranth's Python simulator."""

    name = "amaranth"

    def __init__(self, ext_words: int | None = None, *, config: Config):
        self.ext_words = ext_words
        self.config = config

    def run_program(self, program: Sequence[Instruction], ext: Sequence[int], *,
                    ext_words: int | None = None, vcd: str | None = None) -> RunResult:
        words = external_memory_words(ext_words, self.ext_words, config=self.config)
        if vcd:
            check_vcd(vcd)
        job = _prepare(program, ext, words, self.config)
        session = ChipSimulation(words, config=self.config)
        results = session.run([job], vcd=vcd)
        if session.timed_out:
            i, bound, where = session.timed_out
            raise SimulatorError(f"{self.name}: the program did not halt within {bound} cycles ({where})")
        return results[0]

    def run_bundle(self, bundle, *, vcd: str | None = None, vcd_program: int | None = None,
                   reporter: Reporter | None = None) -> BundleReport:
        check_bundle_chip(self, bundle)
        n = len(bundle.programs)
        if vcd and vcd_program is not None and not 0 <= vcd_program < n:
            raise SimulatorError(f"--program {vcd_program}: the bundle has programs 0..{n - 1}")
        if vcd:
            check_vcd(vcd)                 # before any work: a waveform that cannot be written is refused
        t0 = time.perf_counter()
        session = ChipSimulation(bundle.ext_words, config=self.config)
        jobs = [(entry.code, entry.ext) for entry in bundle.programs]
        mismatch = None

        def on_result(i: int, result: RunResult) -> bool:
            nonlocal mismatch
            mismatch = first_mismatch(bundle.programs[i].expected, result, program=i)
            if reporter:
                reporter.step(i + 1, n, self.name)
            return mismatch is None

        results = session.run(jobs, on_result=on_result)
        wall = time.perf_counter() - t0
        notes = []
        if session.timed_out:
            i, bound, _where = session.timed_out
            notes.append(timeout_line(i, bound, bundle.programs[i].expected.counters.total))
        if vcd:
            # the waveform comes from a separate run of that one program, so that tracing does not
            # slow down (or get measured with) the replay of the whole bundle
            which = 0 if vcd_program is None else vcd_program
            v0 = time.perf_counter()
            traced = ChipSimulation(bundle.ext_words, config=self.config).run([jobs[which]], vcd=vcd)
            again = (first_mismatch(bundle.programs[which].expected, traced[0], program=which) if traced
                     else f"program {which} did not halt")
            notes.append(f"waveform of program {which} written to {vcd} in {time.perf_counter() - v0:.1f} s"
                         + (f" (that run: {again})" if again else ""))
            if again and mismatch is None and not isinstance(again, str):
                mismatch = again
        return BundleReport(self.name, n, results, mismatch, wall,
                            build_seconds=session.build_seconds, notes=notes)
