"""The checks of the work beyond the chapter, as functions that return a list of problems.

Like ``spec.checks`` they take a bundle of the package's modules (``BeyondModules``)
instead of importing them, so that ``spec.mutate`` can run them on a copy of the
package with one line changed.

* ``sampling_exact``: speculative sampling emits the target's distribution exactly.
  For fixed contexts, the target is the chip's own softmax output (the sampling
  verifier of ``block_chip``, integers); every outcome of one block is enumerated
  with its exact probability (``sampling.exact_distribution`` running the real
  ``sample_block``) and ``sampling.exactness_problems`` demands, for every prefix
  the block can emit and go on from, that the next token follow the target's row.
  Drafts of every quality: one-hot (zero mass where the target has some), uniform
  and skewed over three tokens (some of which the target may give no mass), and
  the chip's own bigram draft.
* ``sampling_chi_square``: 20,000 first tokens of a block (k = 3, the skewed draft,
  the random model) drawn with a fixed seed against the target's row: Pearson's
  statistic must lie below the 0.001 critical value (computed here, no scipy).
* ``greedy_is_temperature_zero``: temperature 0 runs the chapter's programs through
  the sampling loop and gives the chapter's tokens and cycles.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType

from ga2_hdl.config import Config


@dataclass
class BeyondModules:
    tiny_lm: ModuleType
    draft: ModuleType
    chip: ModuleType
    sampling: ModuleType
    tree_graphs: ModuleType
    block_chip: ModuleType
    beyond_runs: ModuleType
    beyond_host: ModuleType
    config: Config = field(kw_only=True)  #: the chip the checks compile for and run on


BEYOND_MODULE_NAMES = ("beyond.sampling", "beyond.tree_graphs", "beyond.block_chip", "beyond.runs", "beyond.host")


def installed_beyond_modules(config: Config) -> BeyondModules:
    load = lambda name: importlib.import_module(f"spec.{name}")  # noqa: E731
    return BeyondModules(load("tiny_lm"), load("draft"), load("on_chip"), *(load(n) for n in BEYOND_MODULE_NAMES),
                         config=config)


# ---------------------------------------------------------------- the target, memoised
class ChipTarget:
    """The chip's distributions after a fixed context, for any block of k guesses.

    ``rows(block)`` runs the sampling verifier of (c, k + 1) on the block; ``after(prefix)``
    is the target's distribution after the context plus ``prefix`` (read off any block run
    so far that starts with it, running one padded with token 0 otherwise).  The rows of one
    prefix must be bit-identical whatever follows it (the mask is causal); a difference is
    recorded in ``problems``."""

    def __init__(self, mods: BeyondModules, chip, context: list[int], k: int, temperature: float):
        self.mods, self.chip, self.k, self.temperature = mods, chip, k, temperature
        self.last = context[-1]
        self.keys, self.values = mods.chip.float_prefix_cache(chip.model, context[:-1])
        self.c = len(context) - 1
        self.blocks: dict[tuple[int, ...], list[list[int]]] = {}
        self.prefixes: dict[tuple[int, ...], list[int]] = {}
        self.problems: list[str] = []

    def rows(self, block) -> list[list[int]]:
        block = tuple(block)
        if block not in self.blocks:
            probs, _, _ = self.chip.sample_block(self.c, list(block), self.keys, self.values, self.temperature)
            self.chip.log = []
            self.blocks[block] = probs
            for i, row in enumerate(probs):
                prefix = block[1:i + 1]
                seen = self.prefixes.setdefault(prefix, row)
                if seen != row:
                    self.problems.append(f"after {list(prefix)}: the target's row depends on later tokens "
                                         f"({seen} and {row})")
        return self.blocks[block]

    def after(self, prefix) -> list[int]:
        prefix = tuple(prefix)
        if prefix not in self.prefixes:
            self.rows((self.last,) + prefix + (0,) * (self.k - len(prefix)))
        return self.prefixes[prefix]


def synthetic_drafts(V: int, support: tuple[int, int, int]):
    """Drafts of every quality over three tokens, as functions of the last token."""
    a, b, c = support
    return {
        "one-hot": lambda t: [1 if i == (a, b, c)[t % 3] else 0 for i in range(V)],
        "uniform over 3": lambda t: [1 if i in support else 0 for i in range(V)],
        "skewed": lambda t: [{a: 5, b: 3, c: 1}.get(i, 0) if t % 2 else {a: 1, b: 2, c: 7}.get(i, 0)
                             for i in range(V)],
    }


#: (model kind, seed, context tokens): the contexts of the exactness proof
EXACT_CONTEXTS = (("structured", 1, (0, 3, 2)), ("random", 1, (0, 5, 3, 13)),
                  ("structured", 1, (6, 1, 8, 11, 10)), ("random", 1, (2, 7)))


def sampling_exact(mods: BeyondModules, ks=(1, 2), contexts=EXACT_CONTEXTS[:2], temperature: float = 1.0,
                   chip_draft_k: int = 1) -> list[str]:
    lm, sp = mods.tiny_lm, mods.sampling
    problems = []
    chips = {}
    for kind, seed, context in contexts:
        model = lm.make_model(kind, seed)
        if (kind, seed) not in chips:
            Wd = mods.draft.make_draft(model, 3.0, 1)
            chips[(kind, seed)] = mods.block_chip.BlockChip(model, Wd, len(context) + 1, max(ks) + 1, config=mods.config)
        chip = chips[(kind, seed)]
        for k in ks:
            target = ChipTarget(mods, chip, list(context), k, temperature)
            root = target.after(())
            ranked = sorted(range(lm.V), key=lambda i: (-root[i], i))
            zero = [i for i in range(lm.V) if root[i] == 0]
            support = (ranked[0], ranked[1], zero[0] if zero else ranked[-1])
            drafts = synthetic_drafts(lm.V, support)
            if k <= chip_draft_k:
                chip_q = {t: chip.draft_probs(t, 8.0) for t in range(lm.V)}
                drafts["chip bigram draft (temperature 8)"] = chip_q.__getitem__
            for name, draft in drafts.items():
                def block(chooser, draft=draft):
                    out = sp.sample_block(k, target.last, draft, target.rows, chooser)
                    return tuple(out.emitted)
                outcomes = sp.exact_distribution(block)
                for p in sp.exactness_problems(outcomes, target.after, k + 1)[:3]:
                    problems.append(f"{kind} context {list(context)}, k={k}, draft {name}: {p}")
            chip.log = []
            problems += [f"{kind} context {list(context)}, k={k}: {p}" for p in target.problems]
    return problems


def sampling_chi_square(mods: BeyondModules, draws: int = 20_000, seed: int = 2024, k: int = 3,
                        alpha: float = 0.001) -> list[str]:
    """The first emitted token of ``draws`` blocks, sampled at a fixed seed, against the target's row."""
    lm, sp = mods.tiny_lm, mods.sampling
    model = lm.make_model("random", 1)
    chip = mods.block_chip.BlockChip(model, mods.draft.make_draft(model, 3.0, 1), 5, k + 1, config=mods.config)
    target = ChipTarget(mods, chip, [0, 5, 3, 13], k, 1.0)
    root = target.after(())
    ranked = sorted(range(lm.V), key=lambda i: (-root[i], i))
    draft = synthetic_drafts(lm.V, (ranked[0], ranked[1], ranked[-1]))["skewed"]
    chooser = sp.SeededChooser(seed)
    counts = [0] * lm.V
    for _ in range(draws):
        out = sp.sample_block(k, target.last, draft, target.rows, chooser)
        counts[out.emitted[0]] += 1
    chip.log = []
    stat, df = sp.chi_square(counts, target.after(()))
    critical = sp.chi_square_critical(df, alpha)
    problems = list(target.problems)
    if not stat < critical:
        problems.append(f"chi-square {stat:.2f} with {df} degrees of freedom is above the {alpha} critical value "
                        f"{critical:.2f}: counts {counts}, target {target.after(())}")
    return problems


#: (model, draft noise, k) of the temperature-0 check
TEMPERATURE_ZERO_CASES = (("structured", 3.0, 2), ("random", 0.0, 3))


def greedy_is_temperature_zero(mods: BeyondModules, n: int = 6, cases=TEMPERATURE_ZERO_CASES) -> list[str]:
    """Temperature 0 through the sampling loop == the chapter's greedy programs (tokens, cycles)."""
    lm, br, ch = mods.tiny_lm, mods.beyond_runs, mods.chip
    problems = []
    for kind, noise, k in cases:
        model = lm.make_model(kind, 1)
        Wd = mods.draft.make_draft(model, noise, 1)
        got = br.speculative_sampling(model, Wd, n, k, 0.0, seed=7, config=mods.config)
        want = ch.SpeculativeChip(model, Wd, n, k, config=mods.config).generate(0, n)
        if got.tokens != want.tokens or got.cycles != ch.cycles_of(want.log) or got.accepted != want.stats.accepted:
            problems.append(f"{kind} k={k}: temperature 0 gives {got.tokens}, {got.cycles} cycles, "
                            f"{got.accepted} accepted; the chapter's loop {want.tokens}, "
                            f"{ch.cycles_of(want.log)} cycles, {want.stats.accepted} accepted")
        plain = br.plain_sampling(model, n, 0.0, seed=7, config=mods.config)
        ref = ch.PlainChip(model, n, config=mods.config).generate(0, n)
        if plain.tokens != ref.tokens or plain.cycles != ch.cycles_of(ref.log):
            problems.append(f"{kind}: plain sampling at temperature 0 gives {plain.tokens} in {plain.cycles} "
                            f"cycles; plain greedy {ref.tokens} in {ch.cycles_of(ref.log)}")
    return problems


# ---------------------------------------------------------------- trees
TREE_PREFIX = (3, 8, 1, 12)
TREE_PARENTS = (-1, 0, 1, 0, 3)            # root; leg 0: nodes 1, 2; leg 1: nodes 3, 4
TREE_TOKENS = (1, 2, 3, 9, 4)
#: the same tree numbered level by level: node j here is node RENUMBERED_AS[j] of TREE_PARENTS
RENUMBERED_PARENTS = (-1, 0, 0, 1, 2)
RENUMBERED_AS = (0, 1, 3, 2, 4)


def tree_mask_on_chip(mods: BeyondModules) -> list[str]:
    """Causality of the tree verifier in integers (sharp-attention model, cache of 4): changing
    one node's token changes exactly the rows of that node and its descendants; every other
    row's integer logits stay bit-identical.  The host's answer per node does not depend on how
    the tree's nodes are numbered.  And every row's logits are close to the float target run on
    the node's path alone (its ancestors and itself)."""
    from compiler import run
    lm, tg = mods.tiny_lm, mods.tree_graphs
    model = lm.make_model("random", 2).with_sharp_attention(4.0)
    chip = mods.block_chip.BlockChip(model, None, len(TREE_PREFIX) + 2, len(TREE_PARENTS) + 1,
                                      config=mods.config)
    keys, values = mods.chip.float_prefix_cache(model, TREE_PREFIX)
    c = len(TREE_PREFIX)
    program = chip.tree_program(TREE_PARENTS, c)
    layout = tg.tree_layout(TREE_PARENTS, c)

    def logits(tokens):
        inputs = {"x": [list(model.embedding(tokens[i])) for i in layout.order], "kc": keys, "vc": values}
        out = run(program, inputs)
        rows = [list(r) for r in out["logits"][0]]
        floats = [list(r) for r in out["logits"][1]]
        return ({node: rows[r] for r, node in enumerate(layout.order)},
                {node: floats[r] for r, node in enumerate(layout.order)})

    base, base_float = logits(TREE_TOKENS)
    problems = []
    for node in range(len(TREE_PARENTS)):
        changed = list(TREE_TOKENS)
        changed[node] = (changed[node] + 5) % lm.V
        got, _ = logits(changed)
        below = {i for i in range(len(TREE_PARENTS)) if node in tg.ancestors(TREE_PARENTS, i)}
        for i in range(len(TREE_PARENTS)):
            if i in below and got[i] == base[i]:
                problems.append(f"changing node {node} left node {i}'s row unchanged: it does not see its ancestor")
            if i not in below and got[i] != base[i]:
                problems.append(f"changing node {node} changed node {i}'s row: the mask lets it see a non-ancestor")
    # node numbering: the same tree numbered leg by leg or level by level gives every node the
    # same choice and the same key and value rows (the host maps rows back to nodes)
    tokens = [TREE_TOKENS[i] for i in RENUMBERED_AS]
    a = chip.verify_tree(TREE_PARENTS, c, TREE_TOKENS, keys, values)
    b = chip.verify_tree(RENUMBERED_PARENTS, c, tokens, keys, values)
    chip.log = []
    for j, i in enumerate(RENUMBERED_AS):
        if (b[0][j], b[1][j], b[2][j]) != (a[0][i], a[1][i], a[2][i]):
            problems.append(f"tree {list(RENUMBERED_PARENTS)}: node {j} (node {i} of {list(TREE_PARENTS)}) gets "
                            f"choice {b[0][j]}, the same node numbered leg by leg {a[0][i]} (or other k, v rows)")
    from ..checks import relative_error
    for i in range(len(TREE_PARENTS)):
        path = list(reversed(tg.ancestors(TREE_PARENTS, i)))
        want = mods.chip.float_block(model, [TREE_TOKENS[j] for j in path], keys, values).logits[-1]
        if relative_error(base_float[i], want) > 0.15:
            problems.append(f"node {i}: the chip's logits are {relative_error(base_float[i], want):.3f} away from "
                            f"the float target on its path (bound 0.15)")
    return problems


#: (model, draft noise) of the greedy-drafts check
GREEDY_DRAFT_CASES = (("structured", 3.0), ("random", 0.0))


def greedy_drafts_are_exact(mods: BeyondModules, n: int = 8, cases=GREEDY_DRAFT_CASES) -> list[str]:
    """The tree, n-gram, trigram and adaptive-k runs give the chip's plain greedy tokens, with
    consistent counts (structured model, draft noise 3; random model, noise 0)."""
    lm, br, host = mods.tiny_lm, mods.beyond_runs, mods.beyond_host
    problems = []
    for kind, noise in cases:
        model = lm.make_model(kind, 1)
        Wd = mods.draft.make_draft(model, noise, 1)
        plain = mods.chip.PlainChip(model, n, config=mods.config).generate(0, n).tokens
        chip = mods.block_chip.BlockChip(model, Wd, n, 8, config=mods.config)
        costs = br.adaptive_costs(chip, chip.draft_program().counters()[0], n, host.K_MAX)
        for c, row in enumerate(costs):     # adaptive k's tie rule relies on it (see spec/mutate.py)
            if row != sorted(row):
                problems.append(f"{kind}: adaptive k's costs {row} after a cache of {c} decrease somewhere: "
                                f"a larger k costs less")
        runs = {"tree 2+2": br.tree_run(model, Wd, n, 2, 2, chip=chip, config=mods.config),
                "tree 3+1": br.tree_run(model, Wd, n, 3, 1, chip=chip, config=mods.config),
                "n-gram k=3": br.linear_run(model, Wd, n, 3, draft=host.ngram_next, chip=chip, config=mods.config),
                "trigram k=2": br.linear_run(model, Wd, n, 2, draft=br.trigram_draft(model), chip=chip, config=mods.config),
                "adaptive k": br.linear_run(model, Wd, n, host.AdaptiveK(costs), chip=chip, config=mods.config)}
        for name, r in runs.items():
            if r.tokens != plain:
                problems.append(f"{kind} {name}: tokens {r.tokens} differ from the plain decoder's {plain}")
            if not (r.accepted <= r.proposed and r.blocks >= 1 and r.programs == len(r.log)
                    and n <= r.accepted + r.blocks <= n + 5):
                problems.append(f"{kind} {name}: inconsistent counts: {r.accepted}/{r.proposed} accepted, "
                                f"{r.blocks} blocks")
    return problems


# ---------------------------------------------------------------- host functions, in isolation
class _CountingRng:
    """Stands in for random.Random: randrange(total) returns 0, 1, 2, ... in turn."""

    def __init__(self):
        self.next = 0

    def randrange(self, total):
        r = self.next % total
        self.next += 1
        return r


def host_units(mods: BeyondModules) -> list[str]:
    """The pieces whose mistakes would not change a greedy token (they only cost speed) or that
    no enumeration exercises: the seeded chooser's mapping, the n-gram and trigram lookups, the
    tree's top two and its path, adaptive k's counts and choices."""
    sp, host, bc = mods.sampling, mods.beyond_host, mods.block_chip
    problems = []
    chooser = sp.SeededChooser(0)
    chooser.rng = _CountingRng()
    weights = [3, 0, 5, 1]
    counts = [0] * 4
    for _ in range(sum(weights)):
        counts[chooser.choose(weights)] += 1
    if counts != weights:
        problems.append(f"the seeded chooser maps the {sum(weights)} values of randrange to {counts}, not {weights}")
    cases = (([1, 2, 3, 1, 2], 3), ([4, 1, 9, 2, 1], 9), ([1, 2, 3], None), ([1, 5, 2, 3, 1, 6, 2, 3], 1),
             ([1, 2, 5, 9, 2, 7, 1, 2], 5), ([3, 1, 2, 8, 4, 1, 2, 6, 3, 1, 2], 8))
    for tokens, want in cases:
        if host.ngram_next(tokens) != want:
            problems.append(f"n-gram draft after {tokens}: {host.ngram_next(tokens)}, expected {want}")
    tri = host.TrigramDraft([[1, 2, 3, 1, 2, 3], [1, 2, 4, 1, 2, 4, 1, 2, 4]], lambda t: 15)
    for tokens, want in (([0, 1, 2], 4), ([2, 3], 1), ([5, 6], 15), ([3], 15)):
        if tri(tokens) != want:
            problems.append(f"trigram draft after {tokens}: {tri(tokens)}, expected {want}")
    if bc.top_two([3, 9, 9, 1]) != (1, 2) or bc.top_two([5, 1, 7, 6]) != (2, 3):
        problems.append("top_two does not return the two largest logits' indices (ties to the lower index)")
    parents, tokens = host.two_leg_tree(2, 2), [5, 7, 8, 9, 10]
    if parents != (-1, 0, 1, 0, 3):
        problems.append(f"two_leg_tree(2, 2) = {parents}")
    for choices, want in (([9, 0, 0, 10, 0], [3, 4]), ([7, 8, 0, 0, 0], [1, 2]), ([7, 1, 0, 10, 0], [1]),
                          ([3, 8, 0, 10, 0], [])):
        if host.accept_path(parents, tokens, choices) != want:
            problems.append(f"accept_path with choices {choices}: {host.accept_path(parents, tokens, choices)}, "
                            f"expected {want}")
    calls = []

    def verify_tree(parents, c, tokens, keys, values):
        calls.append([list(k) for k in keys])
        rows = [[float(100 * len(calls) + i)] for i in range(len(parents))]
        return [tokens[3], 0, 0, tokens[4], 7], rows, rows

    out, st = host.speculate_tree(0, 6, parents, verify_tree, lambda last: [last, 1, 2, 3, 4])
    if out[:4] != [0, 3, 4, 7] or calls[1] != [[100.0], [103.0], [104.0]] or st.accepted != 2 * st.blocks:
        problems.append(f"a tree block accepting the second leg: tokens {out}, the next block's cache {calls[1]}; "
                        f"expected [0, 3, 4, 7, ...] and the rows of the root and nodes 3, 4")
    cost = [[8000, 11000, 14000, 17000, 24000, 27000]] * 32
    good, poor = host.AdaptiveK(cost), host.AdaptiveK(cost)
    for _ in range(10):
        good.update([1, 2, 3, 4], 3, 3)
        poor.update([1, 2, 3, 4], 0, 3)
    if (good.trials, good.successes, poor.trials, poor.successes) != (30, 30, 10, 0):
        problems.append(f"adaptive k counts: {good.trials}/{good.successes} and {poor.trials}/{poor.successes} "
                        f"trials/successes, expected 30/30 and 10/0")
    fresh = host.AdaptiveK(cost)
    if fresh.acceptance != 0.5 or fresh.acceptance_after(3) != 0.5:
        problems.append(f"adaptive k before any block: acceptance {fresh.acceptance}, after token 3 "
                        f"{fresh.acceptance_after(3)}; the neutral prior gives 0.5")
    per_token = host.AdaptiveK(cost)
    for _ in range(6):
        per_token.update([5, 6], 0, 1)
    if not per_token.acceptance_after(5) < per_token.acceptance <= per_token.acceptance_after(7):
        problems.append(f"adaptive k: after six rejections of guesses drafted from token 5, its rate "
                        f"{per_token.acceptance_after(5):.3f} is not below the overall {per_token.acceptance:.3f}")
    picks = (good.best_k([1], 0, 32), good.best_k([1], 29, 32), poor.best_k([1], 0, 32), poor.best_k([7], 0, 32),
             fresh.best_k([1], 0, 32), fresh.best_k([1], 31, 32))
    if picks != (3, 2, 0, 1, 1, 0):
        problems.append(f"adaptive k picks {picks}, expected 3 and 2 (three tokens left) for a good draft, 0 (a plain "
                        f"step) after a token whose guesses fail and 1 after one not yet tried, 1 before any block "
                        f"and 0 for the last token")
    once = host.AdaptiveK(cost)
    once.update([5, 6], 0, 1)
    if (once.acceptance, once.acceptance_after(5)) != (1 / 3, 1 / 6):
        problems.append(f"adaptive k after one rejected guess drafted from 5: acceptance {once.acceptance}, after 5 "
                        f"{once.acceptance_after(5)}; expected (0 + 1) / (1 + 2) = 1/3 and (0 + 1/3) / (1 + 1) = 1/6")
    steep = [[8000, 11000, 14000, 17000, 24000, 27000]] * 16 + [[9000, 10000, 20000, 30000, 40000, 50000]] * 16
    late = host.AdaptiveK(steep)
    for _ in range(10):
        late.update([1, 2, 3, 4], 3, 3)
    if (late.best_k([1], 0, 32), late.best_k([1], 20, 32)) != (3, 1):
        problems.append(f"adaptive k with costs that change at a cache of 16 picks {late.best_k([1], 0, 32)} "
                        f"and {late.best_k([1], 20, 32)}, expected 3 (cheap rows) and 1 (the second row cheap, the others dear)")
    F = late._finish_costs(32, 32)
    if F[1] != 9000 or F[16] < 16 * 5000:        # every dear block costs at least 5000 a token it can emit
        problems.append(f"adaptive k's expected cycles to finish read the costs at the wrong cache: the last token "
                        f"{F[1]} (a plain step after 31 rows: 9000), the last 16 {F[16]:.0f} (all after 16 rows or "
                        f"more, at least 5000 a token: 80000)")
    return problems


#: a row of the softmax unit's Q0.16 words sums to 65536 give or take the rounding of its 16 words
#: (measured: 65534 .. 65538); an int8 row requantized at 1/127 sums to about 127
Q16_SUM_SLACK = 16


def sampling_head_follows_temperature(mods: BeyondModules, temperatures=(0.5, 2.0), bound: float = 0.06) -> list[str]:
    """The chip's distributions at two temperatures against the float target's softmax(logits / T):
    total variation distance below ``bound`` on every row (random model, a block of 4 after 3 tokens).
    The rows, and the draft's at the same temperatures, are the softmax unit's Q0.16 words: each
    sums to 65536 within ``Q16_SUM_SLACK``."""
    import math
    lm = mods.tiny_lm
    from ga2_hdl.isa import Q16_ONE
    model = lm.make_model("random", 1)
    chip = mods.block_chip.BlockChip(model, mods.draft.make_draft(model, 3.0, 1), 4, 4, config=mods.config)
    keys, values = mods.chip.float_prefix_cache(model, [0, 5, 3])
    block = [13, 9, 1, 11]
    ref = mods.chip.float_block(model, block, keys, values)
    problems = []
    for T in temperatures:
        probs, _, _ = chip.sample_block(3, block, keys, values, T)
        for what, row in [(f"target row {i}", r) for i, r in enumerate(probs)] + \
                [(f"draft after {t}", chip.draft_probs(t, T)) for t in block]:
            if abs(sum(row) - Q16_ONE) > Q16_SUM_SLACK:
                problems.append(f"temperature {T:g}, {what}: its words sum to {sum(row)}, not 65536 within "
                                f"{Q16_SUM_SLACK}: not the softmax unit's Q0.16 output")
        chip.log = []
        for i, (row, logits) in enumerate(zip(probs, ref.logits)):
            e = [math.exp((x - max(logits)) / T) for x in logits]
            want = [x / sum(e) for x in e]
            got = [x / sum(row) for x in row]
            tv = sum(abs(a - b) for a, b in zip(got, want)) / 2
            if tv > bound:
                problems.append(f"temperature {T:g}, row {i}: the chip's distribution is {tv:.3f} (total variation) "
                                f"from the float target's (bound {bound})")
    return problems


#: every check of the work beyond the chapter, cheapest first
BEYOND_CHECKS = (host_units, tree_mask_on_chip, sampling_head_follows_temperature, sampling_exact,
                 greedy_is_temperature_zero, sampling_chi_square, greedy_drafts_are_exact)
