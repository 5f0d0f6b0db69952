"""A bitstream of the board top: Amaranth's platform build, run with the YoWASP tools.

:func:`build` runs the platform's Yosys, nextpnr-ecp5 and ecppack in a build directory (the
build is silent for minutes, so a heartbeat reports the newest log line every 30 s) and reads the
timing verdict from nextpnr's own report; :func:`tool_environment` points the platform at the
YoWASP tools.
"""
from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

from ga2_hdl.support.reporter import Reporter, or_quiet

from .. import synth
from ..report import timing_verdicts


class BuildError(synth.SynthError):
    """The platform build failed or wrote no bitstream (the message has the end of the timing log)."""


def tool_environment() -> dict[str, str]:
    """Environment variables that make Amaranth's platform build use the YoWASP tools
    (:class:`~gen.fpga.synth.ToolsMissing` naming what to install)."""
    env = {}
    for name in ("yosys", "nextpnr-ecp5", "ecppack"):
        env[name.upper().replace("-", "_")] = synth.tool_path(name)
    # The board's platform lists its programmer among the required tools even when nothing is
    # programmed; `ga2 build` never programs, so a missing openFPGALoader stands in as `true`.
    if not os.environ.get("OPENFPGALOADER") and not shutil.which("openFPGALoader"):
        env["OPENFPGALOADER"] = shutil.which("true") or "/bin/true"
    return env


def build(top, platform, out_dir: Path, env: dict[str, str], *,
          reporter: Reporter | None = None) -> tuple[Path, list[tuple[str, float, bool, float]]]:
    """Build ``top`` for ``platform`` in ``out_dir`` with the tools of ``env``; the bitstream's path
    and nextpnr's timing verdicts (:func:`~gen.fpga.report.timing_verdicts`); ``reporter`` gets a
    note every 30 s while the platform's build runs."""
    reporter = or_quiet(reporter)
    os.environ.update(env)
    t0 = time.perf_counter()
    finished = threading.Event()

    def heartbeat():                # the platform's build is silent: say where it is
        while not finished.wait(30):
            logs = [p for p in (out_dir / "top.rpt", out_dir / "top.tim") if p.exists()]
            newest = max(logs, key=lambda p: p.stat().st_mtime) if logs else None
            where = f"{newest.name}: {synth._last_line(newest)}" if newest else "starting"
            reporter.note(f"  {time.perf_counter() - t0:.0f} s, {where}")

    beat = threading.Thread(target=heartbeat, daemon=True)
    beat.start()
    # Yosys 0.70's synth_ecp5 needs hierarchy/proc/splitnets first (see gen/fpga/synth.py);
    # timing is judged from nextpnr's own report, so a miss does not stop the build.
    try:
        platform.build(top, name="top", build_dir=str(out_dir), do_program=False,
                       script_after_read="hierarchy -top top\nproc\nsplitnets",
                       nextpnr_opts="--timing-allow-fail")
    except Exception as e:          # the platform raises its own error types for a failed tool
        tim = out_dir / "top.tim"
        tail = "\n".join(tim.read_text(errors="replace").splitlines()[-15:]) if tim.exists() else ""
        raise BuildError(f"the platform build failed: {type(e).__name__}: {e}\n{tail}") from None
    finally:
        finished.set()
    bit = out_dir / "top.bit"
    if not bit.exists():
        raise BuildError(f"the build finished but wrote no bitstream {bit}")
    return bit, timing_verdicts((out_dir / "top.tim").read_text(errors="replace"))
