"""The chapter's figures as PNG files (matplotlib, Agg backend: no display needed).

* :func:`mask_figure`: the verifier's causal mask (which keys each block row's
  slices contain), figure 16.2;
* :func:`cycles_by_unit_figure`: where the cycles go, the verifier against four
  single-token steps, by unit, figure 16.4;
* :func:`speedup_figure`: measured speedup against k for each draft quality,
  with the book's cells, figure 16.5;
* :func:`serving_figure`: the derived serving curve, speedup against k for each
  acceptance rate at a given draft cost c, figure 16.6;
* :func:`table_figure`: the seven runs of the table, cycles on the RTL against
  the book's.

Each function returns the path it wrote.
"""
from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import matplotlib.ticker  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from ga2_hdl import isa  # noqa: E402
from ga2_hdl.support.safe_io import write_figure  # noqa: E402

from .verifier import causal_mask  # noqa: E402

UNIT_COLOURS = {"matrix": "#4c72b0", "dma": "#dd8452", "vector": "#55a868", "fetch and issue": "#8c8c8c"}
def _unit_label(what: str, unit: isa.Unit) -> str:
    """``vector unit (RQ, SM, VADD, AMAX)``: the unit and the book chip's operations on it."""
    return f"{what} ({', '.join(s.mnemonic for s in isa.OPS if s.unit is unit)})"


UNIT_LABELS = {"matrix": _unit_label("matrix unit", isa.Unit.MATRIX), "dma": _unit_label("DMA", isa.Unit.DMA),
               "vector": _unit_label("vector unit", isa.Unit.VECTOR),
               "fetch and issue": f"fetch and issue (at most {isa.FETCH_ISSUE_CYCLES} per instruction)"}


def _save(fig, path: str) -> str:
    """Render, then write atomically (a failure leaves the old figure or none)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    return write_figure(fig, path, dpi=130, bbox_inches="tight")


def mask_figure(cache_len: int, block_len: int, path: str) -> str:
    mask = causal_mask(cache_len, block_len)
    keys = cache_len + block_len
    fig, ax = plt.subplots(figsize=(1.0 + 0.62 * keys, 1.4 + 0.62 * block_len))
    for i, row in enumerate(mask):
        for j, visible in enumerate(row):
            colour = "#59a14f" if visible else "#f0f0f0"
            ax.add_patch(plt.Rectangle((j, i), 1, 1, facecolor=colour, edgecolor="white", linewidth=2))
            ax.text(j + 0.5, i + 0.5, "1" if visible else "", ha="center", va="center", color="white",
                    fontsize=10, fontweight="bold")
    ax.axvline(cache_len, color="black", linewidth=1.5, linestyle="--")
    ax.set_xlim(0, keys)
    ax.set_ylim(block_len, 0)
    ax.set_xticks([j + 0.5 for j in range(keys)])
    ax.set_xticklabels([f"c{j}" for j in range(cache_len)] + [f"b{j}" for j in range(block_len)])
    ax.set_yticks([i + 0.5 for i in range(block_len)])
    ax.set_yticklabels([f"row {i}" for i in range(block_len)])
    ax.set_xlabel("keys and values: cache rows (c) | block rows (b)")
    ax.set_ylabel("block row (query)")
    ax.set_title(f"The verifier's causal mask (cache {cache_len}, block {block_len})\n"
                 f"row i's slices are K[0 : {cache_len}+i+1], V[0 : {cache_len}+i+1]: no masking arithmetic",
                 fontsize=10)
    ax.legend(handles=[Patch(facecolor="#59a14f", label="in the row's slice (visible)"),
                       Patch(facecolor="#f0f0f0", label="outside it (later block rows)")],
              loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False, fontsize=9)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    return _save(fig, path)


def _units(anatomy) -> dict[str, int]:
    total, matrix, dma, vector, _ = anatomy.counters
    return {"matrix": matrix, "dma": dma, "vector": vector, "fetch and issue": total - matrix - dma - vector}


def cycles_by_unit_figure(verifier, singles, path: str, contexts=(5, 6, 7, 8)) -> str:
    """Stacked bars: the verifier (cache 4, block 4) and the four single steps one after another."""
    fig, ax = plt.subplots(figsize=(8.5, 3.6))
    bars = [("verifier\n(4 rows, one pass)", [_units(verifier)])]
    bars.append(("four single steps\n(contexts " + ", ".join(map(str, contexts)) + ")",
                 [_units(s) for s in singles]))
    for y, (label, parts) in enumerate(bars):
        left = 0
        for k, part in enumerate(parts):
            for unit, cycles in part.items():
                ax.barh(y, cycles, left=left, color=UNIT_COLOURS[unit], edgecolor="white", linewidth=0.5,
                        height=0.6)
                left += cycles
            if len(parts) > 1:      # a tick between one step and the next
                ax.plot([left, left], [y - 0.33, y + 0.33], color="black", linewidth=1)
        ax.text(left + 250, y, f"{left:,} cycles", va="center", fontsize=9)
    vtotal = verifier.counters.total
    stotal = sum(s.counters.total for s in singles)
    ax.set_yticks(range(len(bars)))
    ax.set_yticklabels([b[0] for b in bars])
    ax.set_xlim(0, stotal * 1.2)
    ax.set_ylim(len(bars) - 0.5, -1.2)       # room above the verifier's bar for the legend
    ax.set_xlabel("cycles")
    ax.set_title(f"Where the cycles go: verifying 4 positions costs {vtotal / stotal:.0%} of 4 single steps "
                 f"({vtotal:,} against {stotal:,})\nthe weights are loaded once "
                 f"({verifier.words_loaded:,} words) instead of four times "
                 f"({sum(s.words_loaded for s in singles):,} words)", fontsize=10)
    ax.legend(handles=[Patch(facecolor=c, label=UNIT_LABELS[u]) for u, c in UNIT_COLOURS.items()],
              loc="upper right", fontsize=8, title="cycles by unit", title_fontsize=8)
    ax.xaxis.set_major_formatter(matplotlib.ticker.StrMethodFormatter("{x:,.0f}"))
    ax.grid(axis="x", alpha=0.3)
    return _save(fig, path)


def speedup_figure(ex, path: str) -> str:
    """Measured speedup against k, one line per draft noise, the book's cells as open markers."""
    from .examples import BOOK_SWEEP

    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    cmap = plt.get_cmap("viridis")
    show_book = ex.n == 32
    for i, noise in enumerate(ex.noises):
        colour = cmap(i / max(1, len(ex.noises) - 1) * 0.9)
        cells = [ex.cells[(noise, k)] for k in ex.ks]
        mean_acc = sum(c.accepted for c in cells) / max(1, sum(c.proposed for c in cells))
        label = f"noise {noise:g}" + (" (perfect)" if noise == 0 else "") + f" ({mean_acc:.0%})"
        ax.plot(ex.ks, [c.speedup for c in cells], marker="o", color=colour, label=label, linewidth=2)
        if show_book:
            book = [(k, BOOK_SWEEP[(noise, k)][1]) for k in ex.ks if (noise, k) in BOOK_SWEEP]
            if book:
                ax.scatter(*zip(*book), s=110, facecolors="none", edgecolors=colour, linewidths=1.2)
    ax.axhline(1.0, color="black", linewidth=1, linestyle="--")
    ax.text(ex.ks[-1], 1.02, "plain decoding", ha="right", va="bottom", fontsize=8)
    ax.set_xticks(ex.ks)
    ax.set_xlabel("k, guesses per block")
    ax.set_ylabel("speedup over plain decoding (cycles)")
    ax.set_title(f"Measured speedup against k for drafts of decreasing quality\n(structured model, {ex.n} tokens; "
                 "every run gives the plain decoder's tokens)" + ("; open circles: the book's cells"
                                                                  if show_book else ""), fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="draft (mean acceptance)",
              title_fontsize=8)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def serving_figure(path: str, acceptances=(0.6, 0.8, 0.9), costs=(0.01, 0.05, 0.15), max_k: int = 24) -> str:
    """Derived speedup E / (1 + k c) against k, one line per acceptance, one panel per draft cost c."""
    from .examples import best_k, serving_speedup

    ks = list(range(1, max_k + 1))
    fig, axes = plt.subplots(1, len(costs), figsize=(4.2 * len(costs), 4.0), sharey=True)
    axes = list(axes) if len(costs) > 1 else [axes]
    colours = ["#e15759", "#4e79a7", "#59a14f", "#b07aa1", "#f28e2b"]
    for ax, c in zip(axes, costs):
        for a, colour in zip(acceptances, colours):
            ys = [serving_speedup(a, k, c) for k in ks]
            best = best_k(a, c)
            top = serving_speedup(a, best, c)
            ax.plot(ks, ys, marker=".", color=colour, linewidth=2, label=f"acceptance a = {a:g} per guess")
            if best <= max_k:
                ax.plot([best], [top], marker="*", markersize=14, color=colour, markeredgecolor="black")
                ax.annotate(f"k={best}: {top:.2f}x", (best, top), textcoords="offset points", xytext=(9, -15),
                            ha="left", fontsize=8, color=colour, fontweight="bold",
                            bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none", alpha=0.85))
            else:
                ax.annotate(f"best k={best} (beyond the axis): {top:.2f}x", (max_k, ys[-1]),
                            textcoords="offset points", xytext=(-4, 9), ha="right", fontsize=8, color=colour)
        ax.axhline(1.0, color="black", linewidth=1, linestyle="--")
        ax.set_title(f"draft cost c = {c:g} of the target per token", fontsize=10)
        ax.set_xlabel("k, guesses per block")
        ax.set_xticks([k for k in ks if k == 1 or k % 2 == 0])
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("derived speedup at batch 1")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(acceptances), fontsize=9, frameon=False,
               bbox_to_anchor=(0.5, -0.06))
    top = max(serving_speedup(a, best_k(a, c), c) for a in acceptances for c in costs)
    for ax in axes:
        ax.set_ylim(0, top * 1.12)
    fig.suptitle("Derived serving curve for a 7B target: speedup = E[tokens per block] / (1 + k c), "
                 "E = (1 - a^(k+1)) / (1 - a)\n(arithmetic, not measurement; stars: the best k for each "
                 "acceptance)", fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


def table_figure(result, path: str) -> str:
    """Cycles of each run on the RTL (every simulator agreed with the golden model), the book's beside."""
    rows = result.rows
    fig, ax = plt.subplots(figsize=(8.5, 4.2))
    ys = list(range(len(rows)))
    colours = ["#4c72b0" if r.accepted is None else "#55a868" for r in rows]
    ax.barh(ys, [r.cycles for r in rows], color=colours, height=0.6)
    for y, r in zip(ys, rows):
        sims = ", ".join(f"{name} {s['verdict']}" for name, s in r.sims.items()) or "not replayed"
        ax.annotate(f"{r.cycles:,}  ({r.speedup:.2f}x; {sims})", (max(r.cycles, r.book.cycles if r.book else 0), y),
                    textcoords="offset points",
                    xytext=(6, 0), va="center", fontsize=8)
        if r.book is not None:
            ax.plot([r.book.cycles] * 2, [y - 0.38, y + 0.38], color="black", linewidth=2)
    ax.set_yticks(ys)
    ax.set_yticklabels([r.display for r in rows], fontsize=9)
    ax.invert_yaxis()
    # room for the labels after the longest bar, and never a reference tick outside the axis
    ax.set_xlim(0, max([r.cycles for r in rows] + [r.book.cycles for r in rows if r.book]) * 1.75)
    ax.xaxis.set_major_formatter(matplotlib.ticker.StrMethodFormatter("{x:,.0f}"))
    ax.set_xlabel("cycles (sum over every program of the run; each simulator counted the same)")
    sims = ", ".join(result.simulator_names) or "no simulator"
    book_chip = result.config.same_chip(isa.BOOK)
    ax.set_title(f"{result.tokens} token{'s' if result.tokens != 1 else ''} per run: every program replayed "
                 f"in {sims}" + ("" if book_chip else f"\non {result.config.describe()}")
                 + (("\nblack ticks: the book's cycles" if book_chip else
                     "; black ticks: the book's cycles, on the book's chip") if any(r.book for r in rows) else ""),
                 fontsize=10)
    ax.legend(handles=[Patch(facecolor="#4c72b0", label="plain greedy decoding"),
                       Patch(facecolor="#55a868", label="speculative decoding")], loc="upper center",
              bbox_to_anchor=(0.5, -0.13), ncol=2, fontsize=8, frameon=False)
    ax.grid(axis="x", alpha=0.3)
    return _save(fig, path)


METHOD_COLOURS = {"greedy": "#4c72b0", "sampling": "#dd8452", "tree": "#55a868", "ngram": "#c44e52",
                  "trigram": "#8172b2", "adaptive_k": "#937860"}


def beyond_figure(result, path: str) -> str:
    """``ga2 beyond``: every run's speedup (bars coloured by method), one panel per model."""
    models = [m for m in ("structured", "random") if any(r.model == m for r in result.rows)]
    heights = [sum(r.model == m for r in result.rows) for m in models]
    fig, axes = plt.subplots(1, len(models), figsize=(7.5 * len(models), 0.24 * max(heights) + 1.6), squeeze=False)
    for ax, model in zip(axes[0], models):
        rows = [r for r in result.rows if r.model == model]
        y = list(range(len(rows)))[::-1]
        ax.barh(y, [r.speedup for r in rows], color=[METHOD_COLOURS.get(r.method, "#999999") for r in rows])
        ax.set_yticks(y)
        ax.set_yticklabels([r.name.split(": ", 1)[1] for r in rows], fontsize=7)
        ax.axvline(1.0, color="black", linewidth=0.8)
        for yy, r in zip(y, rows):
            ax.text(r.speedup + 0.02, yy, f"{r.speedup:.2f}x", va="center", fontsize=6)
        ax.set_xlabel("speedup (greedy rows: against plain greedy; sampled rows: against plain sampling)")
        ax.set_title(f"{model} model, {result.tokens} tokens, cycles replayed on "
                     f"{', '.join(result.replays) or 'the golden model only'}", fontsize=9)
    handles = [Patch(color=c, label=m) for m, c in METHOD_COLOURS.items()]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return _save(fig, path)


#: explore's units -> the colours and labels of the chapter's figures
_EXPLORE_UNITS = {"matrix": "matrix", "dma": "dma", "vector": "vector", "fetch_issue": "fetch and issue"}


def explore_figure(report: dict, path: str) -> str:
    """``ga2 explore``: cycles per token by configuration (the book's chip first), stacked by unit; one
    panel for plain decoding and one for the k = 3 run with a perfect draft.  With overlap the units add
    up to more than the total: a black tick marks the total."""
    entries = report["configs"]
    panels = (("plain", "plain_cycles_per_token", "plain greedy decoding"),
              ("k3_perfect", "k3_perfect_cycles_per_token", "k=3, perfect draft"))
    width = max(7.0, 1.3 * len(entries) + 3.5) * 1.6
    synthesised = any("synth" in e for e in entries)
    if synthesised:        # ga2 explore --synth: a second row, tokens per second at Fmax and area
        fig, grid = plt.subplots(2, 2, figsize=(width, 9.0))
        axes = grid[0]
        axes[1].sharey(axes[0])
    else:
        fig, axes = plt.subplots(1, 2, figsize=(width, 4.4), sharey=True)
    xs = list(range(len(entries)))
    top = max(max(sum(e["per_unit"][key].values()), e[total]) for e in entries for key, total, _ in panels)
    for ax, (key, total_key, title) in zip(axes, panels):
        bottom = [0.0] * len(entries)
        for unit, colour_key in _EXPLORE_UNITS.items():
            heights = [e["per_unit"][key][unit] for e in entries]
            ax.bar(xs, heights, bottom=bottom, color=UNIT_COLOURS[colour_key], edgecolor="white", linewidth=0.5,
                   width=0.62)
            bottom = [b + h for b, h in zip(bottom, heights)]
        for x, e, stacked in zip(xs, entries, bottom):
            total = e[total_key]
            if abs(stacked - total) > 1e-9:     # overlapped units: the stack exceeds the total
                ax.plot([x - 0.36, x + 0.36], [total, total], color="black", linewidth=2)
            label = f"{total:,.0f}"
            if key != "plain":
                label += f"\n{e['speedup']['k3_perfect']:.2f}x"
            ax.text(x, max(stacked, total) + top * 0.015, label, ha="center", va="bottom", fontsize=8)
        ax.set_xticks(xs)
        ax.set_xticklabels([e["name"] for e in entries], rotation=20 if len(entries) > 4 else 0, fontsize=8)
        ax.set_title(title + (" (speedup over plain on the same chip below the total)" if key != "plain" else ""),
                     fontsize=9)
        ax.set_ylim(0, top * 1.18)
        ax.yaxis.set_major_formatter(matplotlib.ticker.StrMethodFormatter("{x:,.0f}"))
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel(f"cycles per token ({report['tokens']} tokens, golden model's counters)")
    handles = [Patch(facecolor=UNIT_COLOURS[c], label=UNIT_LABELS[c]) for c in _EXPLORE_UNITS.values()]
    if any(abs(sum(e["per_unit"][k].values()) - e[t]) > 1e-9 for e in entries for k, t, _ in panels):
        handles.append(plt.Line2D([0], [0], color="black", linewidth=2, label="total (units overlapped)"))
    if synthesised:
        _explore_silicon(report, grid[1])
        fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.965), ncol=len(handles), fontsize=8,
                   frameon=False)
        fig.suptitle("The design space: cycles per token by configuration, by unit; area and clock on "
                     f"the {report.get('synth', {}).get('part', 'ECP5')}", fontsize=10)
        fig.tight_layout(rect=(0, 0, 1, 0.94), h_pad=3.0)
        return _save(fig, path)
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8, frameon=False)
    fig.suptitle("The design space: cycles per token by configuration, by unit", fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 0.96))
    return _save(fig, path)


def _explore_silicon(report: dict, axes) -> None:
    """``ga2 explore --synth``'s second row: tokens per second at each chip's Fmax (plain and k = 3 with a
    perfect draft), and area (LUT4) against plain cycles per token; a chip that does not fit says so."""
    entries = report["configs"]
    xs = list(range(len(entries)))
    ax = axes[0]
    fitted = [e for e in entries if e.get("synth", {}).get("fits") and "plain" in e["synth"]]
    top = max((e["synth"]["k3_perfect"]["tokens_per_s"] for e in fitted), default=1.0)
    for x, e in zip(xs, entries):
        r = e.get("synth", {})
        if r.get("fits") and "plain" in r:
            plain, k3 = r["plain"]["tokens_per_s"], r["k3_perfect"]["tokens_per_s"]
            ax.bar(x - 0.17, plain, width=0.32, color="#4c72b0")
            ax.bar(x + 0.17, k3, width=0.32, color="#dd8452")
            ax.text(x, max(plain, k3) + top * 0.015, f"{r['fmax_mhz']:.1f} MHz", ha="center", va="bottom",
                    fontsize=8)
        else:
            why = ("does not fit" if r.get("fits") is False else
                   "not synthesised" if not r or "not_synthesised" in r else "failed")
            ax.text(x, top * 0.05, why, ha="center", va="bottom", fontsize=8, rotation=90, color="#a00000")
    ax.set_xticks(xs)
    ax.set_xticklabels([e["name"] for e in entries], rotation=20 if len(entries) > 4 else 0, fontsize=8)
    ax.set_ylim(0, top * 1.15)
    ax.set_ylabel("tokens per second at Fmax")
    ax.yaxis.set_major_formatter(matplotlib.ticker.StrMethodFormatter("{x:,.0f}"))
    ax.grid(axis="y", alpha=0.3)
    ax.legend(handles=[Patch(facecolor="#4c72b0", label="plain greedy decoding"),
                       Patch(facecolor="#dd8452", label="k=3, perfect draft")], fontsize=8, loc="upper right")
    ax.set_title("tokens per second at the chip's Fmax (label: Fmax)", fontsize=9)
    ax = axes[1]
    for e in fitted:
        ax.scatter(e["synth"]["lut"], e["plain_cycles_per_token"], s=40, color="#4c72b0")
        ax.annotate(f"{e['name']} ({e['synth']['mult']} MULT, {e['synth']['ebr']} EBR)",
                    (e["synth"]["lut"], e["plain_cycles_per_token"]), textcoords="offset points", xytext=(5, 4),
                    fontsize=7)
    ax.set_xlabel("area: LUT4 used after place and route")
    ax.set_ylabel("plain decoding, cycles per token")
    ax.set_ylim(bottom=0)
    ax.set_xlim(left=0)
    ax.xaxis.set_major_formatter(matplotlib.ticker.StrMethodFormatter("{x:,.0f}"))
    ax.yaxis.set_major_formatter(matplotlib.ticker.StrMethodFormatter("{x:,.0f}"))
    ax.grid(alpha=0.3)
    ax.set_title("area against cycles per token (chips that fit the part)", fontsize=9)
