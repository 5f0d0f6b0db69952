"""``ga2 explore --synth``: area and clock frequency of each configuration's chip, joined with its cycles.

For every configuration of the design-space report the chip is exported to
Verilog for that configuration (all exports first, so every figure is of the
sources as they were when the command started), then synthesised, placed and
routed out of context on one ECP5 part by :func:`gen.fpga.synth.synthesize` (its
cache, keyed by the Verilog text and therefore by the configuration, makes a
second run cost nothing).  Each entry of ``report["configs"]`` gets a
``"synth"`` record: LUT4, FF, EBR, MULT18X18D, Fmax and the critical path, and
the tokens per second at Fmax of plain decoding and of k=3 with a perfect draft
(cycles per token from the golden model, as in the rest of the report).  A chip
that does not fit the part gets ``{"fits": false, "reason": ...}`` (the resources
it needs more of than the part has): a row that says why, never a dropped one.
"""
from __future__ import annotations

import time

from ga2_hdl.support.reporter import Prefixed, Reporter, or_quiet

from .report import per_second
from .synth import SynthError, ToolsMissing

#: the part ``ga2 explore --synth`` uses by default: the largest of gen.fpga.synth.TARGETS, so that the
#: chips with an 8 x 8 array (64 multipliers in the array alone) can fit where the 25k's 28 cannot
DEFAULT_TARGET = "ecp5-85k"


def check_tools(target: str) -> dict:
    """The tool versions (before any work); :class:`~gen.fpga.synth.ToolsMissing` naming what to
    install, or :class:`~gen.fpga.synth.SynthError` naming the bad target."""
    from gen.fpga import synth
    if target not in synth.TARGETS:
        raise SynthError(f"--synth-target {target}: choose from {', '.join(synth.TARGETS)}")
    try:
        return synth.tool_versions()
    except ToolsMissing as e:
        raise ToolsMissing(f"--synth: {e}") from None


def synthesize_configs(report: dict, target: str, *, use_cache: bool = True, cached_only: bool = False,
                       reporter: Reporter | None = None, runner=None, placer: str | None = None) -> list[str]:
    """Add ``"synth"`` to every entry of ``report["configs"]``; return the problems (tool failures).

    ``cached_only``: take only cached results and verdicts; a chip without one gets
    ``{"fits": None, "not_synthesised": why}`` (a row that says so) and no tool runs.
    ``runner``: where the chips' syntheses run (:mod:`gen.support.runner`; default one at a time
    in this process).  ``reporter`` gets a note as the work starts, each chip's
    ``step(chips done, chips, its verdict)`` and (one at a time in this process) the tools' notes.
    ``placer``: nextpnr's placer (:data:`gen.fpga.synth.PLACERS`; default the flow's, ``heap``)."""
    from gen.fpga import synth
    placer = synth.check_placer(placer, "--synth-placer")
    reporter = or_quiet(reporter)
    from gen.verilog import export as verilog
    from ga2_hdl.config import Config

    from .batch import Job, run_jobs

    entries = report["configs"]
    part = synth.TARGETS[target].part
    reporter.note(f"synthesis: {len(entries)} chip(s) on the {target} ({part}), Yosys + nextpnr-ecp5 out of context; "
        f"exporting every chip to Verilog first ...")
    jobs = []
    for e in entries:
        config = Config.from_dict(e["config"], source=e["name"])
        try:
            exported = verilog.export("chip", config=config)
        except verilog.ExportError as err:
            raise SynthError(f"{e['name']}: {err}") from None
        jobs.append(Job("chip", target, synth.SEED, exported, use_cache=use_cache, cached_only=cached_only,
                        tag=str(len(jobs)), placer=placer))
    problems = []
    t0 = time.perf_counter()
    for i, o in enumerate(run_jobs(jobs, runner, reporter=Prefixed(reporter, "  ")), 1):
        e = entries[int(o.job.tag)]
        if o.kind == "not_cached":
            e["synth"] = {"target": target, "part": part, "fits": None, "not_synthesised": o.message}
            reporter.step(i, len(entries), f"{e['name']}: not synthesised: {o.message}")
            continue
        if o.kind == "misfit":
            e["synth"] = {"target": target, "part": part, **o.misfit}
            reporter.step(i, len(entries), f"{e['name']}: does not fit: {o.misfit['reason']}"
                + (" (cached verdict)" if o.misfit["cached"] else ""))
            continue
        if o.kind == "error":
            e["synth"] = {"target": target, "part": part, "fits": None, "error": o.message}
            problems.append(f"{e['name']}: synthesis failed: {o.message}")
            reporter.step(i, len(entries), f"{e['name']}: FAILED: {o.message}")
            continue
        r = o.result
        rec = {"target": target, "part": part, "fits": True, "lut": r.lut, "ff": r.ff, "ebr": r.ebr,
               "mult": r.mult, "fmax_mhz": r.fmax_mhz, "utilization": r.utilization,
               "critical_path": r.critical_path, "verilog_digest": r.verilog_digest, "tools": r.tools,
               "synth_seconds": r.synth_seconds, "pnr_seconds": r.pnr_seconds, "cached": r.cached,
               "memories": r.memories, "placer": r.placer}
        if r.fmax_mhz:
            rec["plain"] = per_second(r.fmax_mhz, e["plain_cycles_per_token"])
            rec["k3_perfect"] = per_second(r.fmax_mhz, e["k3_perfect_cycles_per_token"])
        else:
            problems.append(f"{e['name']}: nextpnr reported no Fmax for the chip")
        e["synth"] = rec
        how = "cached" if r.cached else f"yosys {r.synth_seconds:.0f} s, nextpnr {r.pnr_seconds:.0f} s"
        reporter.step(i, len(entries), f"{e['name']}: {r.summary()} ({how}; {time.perf_counter() - t0:.0f} s so far)")
    report["synth"] = {"target": target, "part": part, "placer": placer,
                       "flow": "gen/fpga/synth.py: Yosys synth_ecp5, nextpnr-ecp5 out of context, --freq 100 "
                       f"--seed {synth.SEED}" + ("" if placer == synth.PLACER else f" --placer {placer}")
                       + "; Fmax is nextpnr's achieved clk frequency"}
    return problems
