"""Adaptive k against every fixed k over many starts and drafts: an offline replay of the host.

``ga2 beyond`` measures adaptive k on one 32-token run per draft (from token 0),
the runs its constants were chosen on.  A single run's best fixed k is partly
luck: whether a wrong guess is ever drafted depends on where the blocks fall
(with fixed k = 3 a token at a block's last position is never drafted from).
This module measures the rule over every start token and over drafts it was
not tuned on, without running the programs again:

* a greedy linear run's cycles are the sum over its blocks of the compiled
  verifier's cycles for that (cache, rows) shape, plus one draft program per
  guess drafted (a program's cycles depend on its code only);
* which guesses are accepted depends only on the target's greedy tokens (the
  chip's plain decoder; the structured model's closed form f) and the draft
  program's guess after every token.

Besides every fixed k and the rule, each start is decoded a second time by the
same ``AdaptiveK`` (``adaptive_warm``), which then starts with the counts its
first run left: the difference is what learning the acceptance from a
neutral prior costs in a 32-token run.

``replay_run`` drives the real host loop (``beyond_host.speculate_blocks``
with the real ``FixedK`` or ``AdaptiveK``) with a verifier that answers from
the target's tokens and counts the cycles.  It equals the run on the chip
whenever every verifier shape chooses the plain decoder's token after a
committed prefix, which ``ga2 beyond`` checks on every greedy row (and
``sim_tests/spec/test_spec_beyond.py`` compares a replay with a run on the chip).

    python -m spec.studies.adaptive_study structured 0,1,...,15 3:1 4:1     # model, starts, noise:seed ...
"""
from __future__ import annotations

import json
import sys
from typing import Sequence

from ga2_hdl import isa

from ..book import TOKENS
from ..beyond.host import K_MAX, AdaptiveK, FixedK, speculate_blocks
from ..beyond.runs import adaptive_costs
from ..beyond.block_chip import BlockChip
from ..draft import make_draft
from ..tiny_lm import V, TinyLM, make_model, rule_tokens

#: the policies compared: every fixed k = 1 .. 5 and the adaptive rule
POLICIES = ("k=1", "k=2", "k=3", "k=4", "k=5", "adaptive")
#: the adaptive rule's second run from the same start, with the counts its first run left (what learning costs)
WARM = "adaptive_warm"


def target_paths(model: TinyLM, kind: str, starts: Sequence[int], n: int) -> dict[int, list[int]]:
    """The target's greedy tokens from every start (8 beyond n: a last block may verify past n)."""
    if kind == "structured":
        return {s: rule_tokens(s, n + 8) for s in starts}
    from ..on_chip import PlainChip
    plain = PlainChip(model, n + 8, config=isa.BOOK)
    return {s: plain.generate(s, n + 8).tokens for s in starts}


def replay_run(path: Sequence[int], n: int, policy, guess: dict[int, int], verifier_cycles, draft_cycles: int):
    """(tokens, HostStats, cycles) of the greedy linear host from path[0] with ``policy``."""
    spent = [0]

    def verify(c, block, keys, values):
        spent[0] += verifier_cycles(c, len(block))
        rows = [[0.0]] * len(block)
        return [path[c + 1 + i] for i in range(len(block))], rows, rows

    def draft_next(ctx):
        spent[0] += draft_cycles
        return guess[ctx[-1]]

    tokens, st = speculate_blocks(path[0], n, verify, draft_next, policy)
    if tokens != list(path[:n + 1]):
        raise AssertionError(f"the replay left the target's path: {tokens}")
    return tokens, st, spent[0]


def study(kind: str, starts: Sequence[int], drafts: Sequence[tuple[float, int]], n: int = TOKENS,
          chip: BlockChip | None = None) -> list[dict]:
    """One entry per draft: every policy's cycles per start and summed over the starts."""
    model = make_model(kind, 1)
    chip = chip or BlockChip(model, None, n, 8, config=isa.BOOK)
    paths = target_paths(model, kind, starts, n)
    cycles: dict[tuple[int, int], int] = {}

    def verifier_cycles(c, m):
        if (c, m) not in cycles:
            cycles[(c, m)] = chip.linear_program(c, m).counters()[0]
        return cycles[(c, m)]

    out = []
    for noise, seed in drafts:
        chip.use_draft(make_draft(model, noise, seed))
        guess = {t: chip.draft_guess(t)[0] for t in range(V)}
        draft_cycles = chip.draft_program().counters()[0]
        costs = adaptive_costs(chip, draft_cycles, n, K_MAX)
        per_start = {}
        for s in starts:
            per_start[s] = {}
            rule = AdaptiveK(costs)
            for name in POLICIES:
                policy = rule if name == "adaptive" else FixedK(int(name[2:]))
                per_start[s][name] = replay_run(paths[s], n, policy, guess, verifier_cycles, draft_cycles)[2]
            # the cost of learning: the same rule run again from the same start, with the counts of its first run
            per_start[s][WARM] = replay_run(paths[s], n, rule, guess, verifier_cycles, draft_cycles)[2]
        chip.log = []
        total = {name: sum(per_start[s][name] for s in starts) for name in POLICIES + (WARM,)}
        fixed = [total[f"k={k}"] for k in range(1, 6)]
        best = min(fixed)
        out.append({"model": kind, "noise": noise, "seed": seed, "starts": list(starts), "tokens": n, "total": total,
                    "best_fixed_k": fixed.index(best) + 1, "adaptive_vs_best": total["adaptive"] / best,
                    "adaptive_vs_k3": total["adaptive"] / total["k=3"],
                    "warm_vs_best": total[WARM] / best,
                    "per_run_vs_its_best": [per_start[s]["adaptive"] / min(per_start[s][f"k={k}"] for k in range(1, 6))
                                            for s in starts],
                    "per_start": per_start})
    return out


def figure(rows: Sequence[dict], path: str) -> str:
    """Every policy's cycles summed over the starts, relative to the draft's best fixed k (PNG)."""
    from ..figures import _save, plt
    fig, ax = plt.subplots(figsize=(11, 0.42 * len(rows) + 1.6))
    colours = ["#c6dbef", "#9ecae1", "#6baed6", "#3182bd", "#08519c", "#e6550d"]
    height = 0.8 / len(POLICIES)
    for i, row in enumerate(rows):
        best = min(row["total"][f"k={k}"] for k in range(1, 6))
        for j, name in enumerate(POLICIES):
            y = len(rows) - 1 - i + 0.4 - (j + 0.5) * height
            ax.barh(y, row["total"][name] / best, height=height, color=colours[j],
                    label=name if i == 0 else None)
        ax.text(row["total"]["adaptive"] / best + 0.01, len(rows) - 1 - i + 0.4 - 5.5 * height,
                f"{row['total']['adaptive'] / best:.3f}", fontsize=7, va="center")
        if WARM in row["total"]:
            ax.plot(row["total"][WARM] / best, len(rows) - 1 - i + 0.4 - 5.5 * height, marker="|", color="black",
                    markersize=7, label="adaptive, second run (warm)" if i == 0 else None)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{r['model']}, noise {r['noise']:g}, seed {r['seed']}" for r in rows][::-1], fontsize=8)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.axvline(1.05, color="#e6550d", linewidth=0.8, linestyle="--")
    ax.set_xlim(0.6, None)
    ax.set_xlabel(f"cycles over {len(rows[0]['starts'])} starts / the best fixed k's (dashed: 5 % above it)")
    ax.set_title(f"adaptive k against every fixed k, {rows[0].get('tokens', 32)} tokens per start")
    ax.legend(loc="lower right", fontsize=8)
    return _save(fig, path)


#: the drafts whose start-0 run the rule was designed with (``ga2 beyond``'s adaptive rows)
CHAPTER_DRAFTS = {("structured", 0.0, 1), ("structured", 3.0, 1), ("structured", 4.0, 1), ("random", 0.0, 1)}


def markdown(rows: Sequence[dict], tolerance: float = 1.05) -> str:
    """The rows as the table of docs/spec.md: every policy's cycles summed over the starts."""
    out = ["| model | draft noise, seed | the chapter's? | fixed k = 1 .. 5 (cycles, all starts) | adaptive "
           "| against the best fixed k | against k = 3 | second run (warm) against the best | runs within "
           f"{round(100 * (tolerance - 1))} % of their own best k |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        fixed = ", ".join(f"{r['total'][f'k={k}']:,}" for k in range(1, 6))
        per = r["per_run_vs_its_best"]
        warm = f"{r['warm_vs_best']:.3f}x" if "warm_vs_best" in r else "-"
        out.append(f"| {r['model']} | {r['noise']:g}, {r['seed']} | "
                   f"{'yes' if (r['model'], r['noise'], r['seed']) in CHAPTER_DRAFTS else 'no'} | {fixed} | "
                   f"{r['total']['adaptive']:,} | {r['adaptive_vs_best']:.3f}x (k = {r['best_fixed_k']}) | "
                   f"{r['adaptive_vs_k3']:.3f}x | {warm} | {sum(x <= tolerance for x in per)}/{len(per)} "
                   f"(worst {max(per):.3f}x) |")
    return "\n".join(out)


def main(argv: Sequence[str]) -> int:
    """``structured|random STARTS NOISE:SEED ... [--json FILE]``: print (and write) one JSON line a draft;
    ``figure OUT.png FILE ...``: draw the rows of JSON-lines files; ``table FILE ...``: print them as
    docs/spec.md's table."""
    if len(argv) >= 3 and argv[0] == "figure":
        rows = [json.loads(line) for name in argv[2:] for line in open(name) if line.startswith("{")]
        print(figure(rows, argv[1]))
        return 0
    if len(argv) >= 2 and argv[0] == "table":
        print(markdown([json.loads(line) for name in argv[1:] for line in open(name) if line.startswith("{")]))
        return 0
    out = None
    if "--json" in argv:
        at = argv.index("--json")
        out, argv = argv[at + 1], argv[:at] + argv[at + 2:]
    if len(argv) < 3 or argv[0] not in ("structured", "random"):
        print("usage: python -m spec.studies.adaptive_study structured|random START,START,... NOISE:SEED ... "
              "[--json FILE]  |  figure OUT.png FILE ...  |  table FILE ...", file=sys.stderr)
        return 2
    starts = [int(s) for s in argv[1].split(",")]
    drafts = [(float(d.split(":")[0]), int(d.split(":")[1])) for d in argv[2:]]
    lines = []
    for row in study(argv[0], starts, drafts):
        lines.append(json.dumps(row))
        print(lines[-1], flush=True)
    if out:
        from ga2_hdl.support.safe_io import atomic_write
        atomic_write(out, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
