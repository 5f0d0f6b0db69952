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
from . import synth
from .synth import SynthError, ToolsMissing

#: the part ``ga2 explore --synth`` uses by default: the largest of gen.fpga.synth.TARGETS, so that the
#: chips with an 8 x 8 array (64 multipliers in the array alone) can fit where the 25k's 28 cannot
DEFAULT_TARGET = "ecp5-85k"


def check_tools(target: str) -> dict:
    """The tool versions (before any work); :class:`~gen.fpga.synth.ToolsMissing` naming what to
    install, or :class:`~gen.fpga.synth.SynthError` naming the bad target."""
    if target not in synth.TARGETS:
        raise SynthError(f"--synth-target {target}: choose from {', '.join(synth.TARGETS)}")
    try:
        return synth.tool_versions()
    except ToolsMissing as e:
        raise ToolsMissing(f"--synth: {e}") from None


def synthesize_configs(report: dict, target: str, *, use_cache: bool = True, cached_only: bool = False,
                       reporter: Reporter | None = None, runner=None, placer=None,
                       pnr_limit: float | None = None) -> list[str]:
    """Add ``"synth"`` to every entry of ``report["configs"]``; return the problems (tool failures).

    ``cached_only``: take only cached results and verdicts; a chip without one gets
    ``{"fits": None, "not_synthesised": why}`` (a row that says so) and no tool runs.
    ``runner``: where the chips' syntheses run (:mod:`gen.support.runner`; default one at a time
    in this process).  ``reporter`` gets a note as the work starts, each chip's
    ``step(chips done, chips, its verdict)`` and (one at a time in this process) the tools' notes.
    ``placer``: nextpnr's placer (:data:`gen.fpga.synth.PLACERS`; default the flow's, ``heap``), or
    several in the order to try them (a list, or names separated by commas): a chip with no result
    from one placer (no cached one with ``cached_only``, or nextpnr stopped at ``pnr_limit``
    seconds) is tried with the next; its record names the placer of its result (``"placer"``) and
    every placer tried before it (``"tried"``, each with why it gave nothing).  A misfit or a
    failure is the chip's answer, not a reason to try another placer."""
    placers = synth.check_placers(placer, "--synth-placer")
    pnr_limit = synth.check_limit(pnr_limit, "--synth-pnr-limit")
    reporter = or_quiet(reporter)
    from gen.verilog import export as verilog
    from ga2_hdl.config import Config

    from .batch import Job, run_jobs

    entries = report["configs"]
    part = synth.TARGETS[target].part
    reporter.note(f"synthesis: {len(entries)} chip(s) on the {target} ({part}), Yosys + nextpnr-ecp5 out of context; "
        f"exporting every chip to Verilog first ...")
    exports = []
    for e in entries:
        config = Config.from_dict(e["config"], source=e["name"])
        try:
            exports.append(verilog.export("chip", config=config))
        except verilog.ExportError as err:
            raise SynthError(f"{e['name']}: {err}") from None
    problems = []
    tried: dict[int, list[dict]] = {i: [] for i in range(len(entries))}
    pending = list(range(len(entries)))
    done = 0
    t0 = time.perf_counter()
    for n, this_placer in enumerate(placers):
        if not pending:
            break
        last = n == len(placers) - 1
        if n:
            reporter.note(f"synthesis: {len(pending)} chip(s) without a result, tried again with the "
                          f"{this_placer} placer")
        jobs = [Job("chip", target, synth.SEED, exports[i], use_cache=use_cache, cached_only=cached_only,
                    tag=str(i), placer=this_placer, pnr_limit=pnr_limit) for i in pending]
        pending = []
        for o in run_jobs(jobs, runner, reporter=Prefixed(reporter, "  ")):
            i = int(o.job.tag)
            e = entries[i]
            if o.kind in ("not_cached", "over_time") and not last:
                tried[i].append({"placer": this_placer, "outcome": o.kind, "message": o.message})
                pending.append(i)
                reporter.note(f"  {e['name']}: nothing from the {this_placer} placer ({o.message}); "
                              f"the {placers[n + 1]} placer next")
                continue
            done += 1
            e["synth"] = _record(o, target, part, e, problems, tried[i])
            so_far = "" if o.kind != "result" or o.result.cached else f" ({time.perf_counter() - t0:.0f} s so far)"
            reporter.step(done, len(entries), f"{e['name']}: {_verdict(o)}{so_far}")
    flow = ("gen/fpga/synth.py: Yosys synth_ecp5, nextpnr-ecp5 out of context, --freq 100 "
            f"--seed {synth.SEED}" + ("" if placers == (synth.PLACER,) else
                                      f" --placer {placers[0]}" if len(placers) == 1 else
                                      "; each chip placed by the first of " + ", ".join(placers) + " with a result")
            + ("" if pnr_limit is None else f", nextpnr stopped after {pnr_limit:g} s")
            + "; Fmax is nextpnr's achieved clk frequency")
    report["synth"] = {"target": target, "part": part, "placer": placers[0] if len(placers) == 1 else list(placers),
                       "pnr_limit_s": pnr_limit, "flow": flow}
    return problems


def _record(o, target: str, part: str, e: dict, problems: list[str], tried: list[dict]) -> dict:
    """One chip's ``"synth"`` record from its job's outcome (a problem added for a failure)."""
    base = {"target": target, "part": part, **({"tried": tried} if tried else {})}
    if o.kind == "not_cached":
        return {**base, "fits": None, "not_synthesised": o.message}
    if o.kind == "over_time":
        problems.append(f"{e['name']}: {o.message}")
        return {**base, "fits": None, "not_synthesised": o.message, "placer": o.job.placer}
    if o.kind == "misfit":
        return {**base, **o.misfit}
    if o.kind == "error":
        problems.append(f"{e['name']}: synthesis failed: {o.message}")
        return {**base, "fits": None, "error": o.message}
    r = o.result
    rec = {**base, "fits": True, "lut": r.lut, "ff": r.ff, "ebr": r.ebr,
           "mult": r.mult, "fmax_mhz": r.fmax_mhz, "utilization": r.utilization,
           "critical_path": r.critical_path, "verilog_digest": r.verilog_digest, "tools": r.tools,
           "synth_seconds": r.synth_seconds, "pnr_seconds": r.pnr_seconds, "cached": r.cached,
           "memories": r.memories,
           "read_during_write": r.read_during_write, "placer": r.placer}
    if r.fmax_mhz:
        rec["plain"] = per_second(r.fmax_mhz, e["plain_cycles_per_token"])
        rec["k3_perfect"] = per_second(r.fmax_mhz, e["k3_perfect_cycles_per_token"])
    else:
        problems.append(f"{e['name']}: nextpnr reported no Fmax for the chip")
    return rec


def _verdict(o) -> str:
    """One chip's outcome in a few words, for the progress line."""
    if o.kind == "not_cached":
        return f"not synthesised: {o.message}"
    if o.kind == "over_time":
        return f"STOPPED: {o.message}"
    if o.kind == "misfit":
        return f"does not fit: {o.misfit['reason']}" + (" (cached verdict)" if o.misfit["cached"] else "")
    if o.kind == "error":
        return f"FAILED: {o.message}"
    r = o.result
    how = "cached" if r.cached else f"yosys {r.synth_seconds:.0f} s, nextpnr {r.pnr_seconds:.0f} s"
    return f"{r.summary()} ({how}{'' if r.placer == synth.PLACER else ', ' + r.placer + ' placer'})"
