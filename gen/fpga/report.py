"""Time per token from area and clock: a chip's Fmax joined with its cycles per token.

``ga2 synth --report`` and ``ga2 explore --synth`` read their arithmetic from here: cycles per
token come from the chip's golden model (Capra's programs for that chip, :mod:`spec.runs`), the
clock from nextpnr (:mod:`gen.fpga.synth`) (the command joins the two: the workload is above this
layer), and microseconds and tokens per second are the one
division between them (:func:`throughput`). The figure of area against tokens per second is
drawn here and written atomically.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ga2_hdl.config import Config
from ga2_hdl.support.safe_io import write_figure

from .synth import SynthError


class ReportError(SynthError):
    """A report that cannot be made honestly (no Fmax, tokens that are not the reference's)."""


def throughput(fmax_mhz: float, cycles: int, tokens: int) -> dict:
    """Cycles, microseconds and tokens per second of ``tokens`` decoded in ``cycles`` at ``fmax_mhz``."""
    per_token = cycles / tokens
    return {"cycles": cycles, "tokens": tokens, "cycles_per_token": round(per_token, 2),
            **per_second(fmax_mhz, per_token, places=2)}


def per_second(fmax_mhz: float, cycles_per_token: float, *, places: int = 3) -> dict:
    """Microseconds and tokens per second of ``cycles_per_token`` at ``fmax_mhz``."""
    us = cycles_per_token / fmax_mhz
    return {"us_per_token": round(us, places), "tokens_per_s": round(1e6 / us, 1)}


def median_run(runs: list) -> tuple:
    """The run of median Fmax among ``runs`` (one per seed; the lower middle of an even count), and
    the spread ``{"by_seed", "median_mhz", "min_mhz", "max_mhz"}`` (None for a single run)."""
    if len(runs) == 1:
        return runs[0], None
    timed = sorted(runs, key=lambda r: (r.fmax_mhz or 0.0, r.seed))
    mid = timed[(len(timed) - 1) // 2]
    values = [r.fmax_mhz or 0.0 for r in timed]
    return mid, {"by_seed": {str(r.seed): r.fmax_mhz for r in runs}, "median_mhz": mid.fmax_mhz or 0.0,
                 "min_mhz": values[0], "max_mhz": values[-1]}


def rows(results: dict, cycles: dict[str, int], tokens: int, label: str, config) -> list[dict]:
    """One row per target and decoding mode: the chip's area and Fmax (``results``: target ->
    :class:`~gen.fpga.synth.SynthResult`) with the time per token of ``cycles``."""
    out = []
    for target, r in results.items():
        if not r.fmax_mhz:
            raise ReportError(f"{target}: nextpnr reported no Fmax for the chip")
        for mode, c in cycles.items():
            out.append({"design": label, "config": config.name, "target": target, "mode": mode,
                        "lut": r.lut, "ff": r.ff, "ebr": r.ebr, "mult": r.mult, "fmax_mhz": r.fmax_mhz,
                        "verilog_digest": r.verilog_digest, **throughput(r.fmax_mhz, c, tokens)})
    return out


def table(rows: list[dict]) -> list[str]:
    """The rows as the lines of a Markdown table."""
    lines = ["| design | target | decoding | LUT4 | FF | EBR | MULT18X18D | Fmax (MHz) | cycles / token | "
             "us / token | tokens / s |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row.get('design', '')} | {row['target']} | {row['mode']} | {row['lut']:,} | {row['ff']:,} | "
                     f"{row['ebr']} | {row['mult']} | {row['fmax_mhz']:.1f} | {row['cycles_per_token']:,.1f} | "
                     f"{row['us_per_token']:,.1f} | {row['tokens_per_s']:,.0f} |")
    return lines


def plot(rows: list[dict], png: str | Path) -> None:
    """Area against tokens per second, one point per row, written atomically to ``png``."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    markers = {"plain": "o", "k=3 perfect draft": "^"}
    designs = list(dict.fromkeys(r.get("design", "") for r in rows))
    for d, design in enumerate(designs):
        for mode, marker in markers.items():
            pts = [r for r in rows if r["mode"] == mode and r.get("design", "") == design]
            if not pts:
                continue
            ax.scatter([r["lut"] for r in pts], [r["tokens_per_s"] for r in pts], marker=marker, s=60,
                       color=f"C{d}", label=f"{design}: {mode}" if design else mode)
            for r in pts:
                ax.annotate(f"{r['target']}, {r['fmax_mhz']:.1f} MHz", (r["lut"], r["tokens_per_s"]),
                            textcoords="offset points", xytext=(6, 4), fontsize=7)
    configs = sorted({r.get("config", "book") for r in rows})
    _save_area_figure(plt, fig, ax, f"GA2 ({', '.join(configs)}) on ECP5: area against tokens per second", png)


def _pyplot():
    """matplotlib's pyplot on the Agg back end (no display)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save_area_figure(plt, fig, ax, title: str, png: str | Path, *, fontsize: int | None = None) -> None:
    """The axes of an area-against-tokens figure, its title and legend (``fontsize``: smaller than
    the default), and the PNG written atomically to ``png``."""
    ax.set_xlabel("area (LUT4 used after place and route)")
    ax.set_ylabel("tokens per second at Fmax")
    ax.set_title(title, **({"fontsize": fontsize} if fontsize else {}))
    ax.grid(True, alpha=0.3)
    ax.legend(**({"fontsize": fontsize - 2} if fontsize else {}))
    ax.set_ylim(bottom=0)
    fig.tight_layout()
    write_figure(fig, png, format="png", dpi=110)


_TIMING = re.compile(r"Max frequency for clock\s+'([^']+)':\s+([\d.]+) MHz \((PASS|FAIL) at ([\d.]+) MHz\)")


def timing_verdicts(log_text: str) -> list[tuple[str, float, bool, float]]:
    """(clock, achieved MHz, met, constraint MHz) of the final timing report in a nextpnr log."""
    final: dict[str, tuple[str, float, bool, float]] = {}
    for clock, mhz, verdict, want in _TIMING.findall(log_text):     # the last report (after routing) wins
        final[clock] = (clock, float(mhz), verdict == "PASS", float(want))
    return list(final.values())


@dataclass
class CachedFmax:
    """The configuration's maximum clock from a cached synthesis result, or why there is none."""
    mhz: float | None
    target: str | None = None
    why_not: str | None = None


def cached_fmax(config: Config) -> CachedFmax:
    """The chip's Fmax on the first ECP5 target with a cached result (no tool is run)."""
    from gen.verilog import export as verilog
    from . import synth
    try:
        synth.tool_versions()
    except synth.ToolsMissing:
        return CachedFmax(None, why_not="no synthesis result cached (the FPGA tools are not installed: "
                                  f"{synth.FPGA_INSTALL_HINT}, then ga2 synth --config {config.name})")
    try:
        exported = verilog.export("chip", config=config)
    except verilog.ExportError as e:
        return CachedFmax(None, why_not=f"the chip's Verilog could not be exported: {e}")
    reasons = []
    for target in ("ecp5-85k", "ecp5-25k"):
        try:
            r = synth.synthesize("chip", target, exported=exported, cached_only=True)
        except synth.NotCached:
            continue
        except synth.DoesNotFit as e:
            reasons.append(f"{target}: does not fit ({e.reason})")
            continue
        except synth.SynthError as e:
            reasons.append(f"{target}: {str(e).splitlines()[0]}")
            continue
        if r.fmax_mhz:
            return CachedFmax(r.fmax_mhz, target)
    return CachedFmax(None, why_not="no synthesis result cached for this chip"
                + (f" ({'; '.join(reasons)})" if reasons else "")
                + f": run ga2 synth --config {config.name} (or ga2 explore --synth) first")


def pareto_front(points: list[tuple[str, float, float]]) -> list[str]:
    """The names on the area / tokens-per-second Pareto front of ``points`` (name, area, tokens/s):
    a point is on it when no other point has at most its area and more tokens per second, or less
    area and at least its tokens per second. In order of area."""
    front = []
    for name, area, tps in sorted(points, key=lambda p: (p[1], -p[2])):
        dominated = any((a <= area and t > tps) or (a < area and t >= tps)
                        for n, a, t in points if n != name)
        if not dominated:
            front.append(name)
    return front


def explore_points(report: dict, mode: str = "plain") -> list[tuple[str, float, float]]:
    """(configuration, LUT4, tokens per second) of every configuration of a ``ga2 explore --synth``
    report whose chip fits and has an Fmax; ``mode``: ``plain`` or ``k3_perfect``."""
    out = []
    for e in report["configs"]:
        r = e.get("synth") or {}
        if r.get("fits") and r.get("fmax_mhz") and mode in r:
            out.append((e["name"], float(r["lut"]), float(r[mode]["tokens_per_s"])))
    return out


#: label offsets (points, from the point to the label's lower left corner) tried in turn, the first
#: whose label covers no label placed before it taken
_LABEL_OFFSETS = ((5, -11), (5, 4), (5, -22), (5, 15), (-5, 4), (5, -33), (5, 26), (5, -44), (5, 37))
_CHAR_POINTS, _LABEL_POINTS = 3.9, 8.0      # a 7-point label's character width and line height


def _label_offsets(ax, points, labels) -> list[tuple[int, int]]:
    """Each point's label offset: the first of :data:`_LABEL_OFFSETS` whose label box (estimated from
    its length) overlaps no box chosen before, so that close points' labels stack instead of
    overwriting each other (the book's chip, spad8k_lat4, array8 and overlap lie within a few percent
    of each other); the last offset when every one overlaps. Boxes in display points, from the axes'
    limits as they are when called."""
    ax.autoscale_view()
    scale = 72.0 / ax.figure.dpi
    placed, chosen = [], []
    for (_, x, y), text in zip(points, labels):
        px, py = (v * scale for v in ax.transData.transform((x, y)))
        width = _CHAR_POINTS * len(text)
        for dx, dy in _LABEL_OFFSETS:
            left = px + dx if dx >= 0 else px + dx - width
            box = (left, py + dy, left + width, py + dy + _LABEL_POINTS)
            if not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed):
                break
        placed.append(box)
        chosen.append((dx, dy))
    return chosen


def plot_explore(report: dict, png: str | Path) -> list[str]:
    """Area against tokens per second of every synthesised configuration of a ``ga2 explore --synth``
    report (plain decoding and k=3 with the perfect draft), the plain Pareto front drawn and the
    book's chip marked; written atomically to ``png``. Returns the plain Pareto front's names."""
    plain, k3 = explore_points(report, "plain"), explore_points(report, "k3_perfect")
    if not plain:
        raise ReportError("no configuration has a synthesised chip with an Fmax: nothing to draw")
    front = pareto_front(plain)
    synth = report.get("synth", {})
    fmax = {e["name"]: e["synth"]["fmax_mhz"] for e in report["configs"]
            if (e.get("synth") or {}).get("fmax_mhz")}
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.2, 4.8))
    for pts, marker, label in ((plain, "o", "plain decoding"), (k3, "^", "k=3, perfect draft")):
        ax.scatter([p[1] for p in pts], [p[2] for p in pts], marker=marker, s=50, label=label, alpha=0.8)
    on_front = sorted((p for p in plain if p[0] in front), key=lambda p: p[1])
    ax.plot([p[1] for p in on_front], [p[2] for p in on_front], "--", color="C0", lw=1,
            label="Pareto front (plain)")
    labels = [f"{name} ({fmax[name]:.1f} MHz)" for name, _, _ in plain]
    for (_, area, tps), text, (dx, dy) in zip(plain, labels, _label_offsets(ax, plain, labels)):
        ax.annotate(text, (area, tps), textcoords="offset points", xytext=(dx, dy), fontsize=7,
                    ha="left" if dx >= 0 else "right")
    book = [p for p in plain if p[0] == "book"]
    if book:
        ax.scatter([book[0][1]], [book[0][2]], s=220, facecolors="none", edgecolors="red", lw=1.5,
                   label="the book's chip")
    _save_area_figure(plt, fig, ax, f"GA2 configurations on the {synth.get('part', '?')}: area against tokens "
                      "per second", png, fontsize=10)
    return front
