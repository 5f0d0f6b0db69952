"""Greedy host loops beyond the chapter: trees of guesses, drafts without weights, k that picks itself.

Everything here is host logic, independent of where the target runs (the
``verify`` callables are the float target or programs on the chip).

**Tree of guesses.**  ``two_leg_tree(l0, l1)`` is the parent list of a root
(the last committed token) with two chains of guesses of lengths l0 and l1:
the draft's best first guess followed by its greedy continuation, and its
second-best first guess followed by its own.  The target verifies every node in
one pass and returns its greedy choice after each; ``accept_path`` walks from
the root, each time into the child whose token is the target's choice, so it
accepts the longest path the target agrees with, and the choice after the last
node of that path comes free.  As in the linear block, every emitted token is
a choice the target made from committed tokens only, so the output is the
target's greedy output whatever the tree.

**Drafts without a draft model.**  ``ngram_propose`` (prompt lookup): the
longest suffix of the tokens so far (up to ``NGRAM_MAX`` tokens) that occurred
earlier, and the token that followed its most recent earlier occurrence;
repeated on its own guesses, up to k; it stops early when nothing matches (a
shorter block).  ``TrigramDraft``: a table of the target's own float greedy
successor of every pair of tokens (counted like the chapter's bigram, over 24
tokens from every start), falling back to the bigram table for a pair never
seen; 256 entries, no weights, looked up on the host.

**Adaptive k** (``AdaptiveK``), the rule.  The host drafts the guesses one at a
time and after each decides whether to draft another.  It keeps counts of the
guesses the target examined (a block with a of k guesses accepted examines
a + 1 of them when a < k, all k when a = k) and accepted: overall, and per
token the guess was drafted from.

* Acceptance, a Beta posterior that starts neutral: any guess is accepted
  with the posterior mean of a uniform prior Beta(1, 1), (accepted + 1) /
  (examined + 2) (Laplace's rule: one success and one failure before any
  block, so an untried draft is neither trusted nor distrusted); a guess
  drafted from token t with (accepted after t + a) / (examined after t + 1),
  its own counts with the overall rate a counting as one more observation
  (an unseen token gets the overall rate, and its own evidence takes over
  from its first guess).
* Cost, read from the compiled programs: cost(c, k) is the cycles of the
  verifier of k + 1 rows after a cache of c rows plus k draft programs, every
  figure from the ISA's counters of the programs the host will run
  (``beyond_runs.adaptive_costs``), nothing written out by hand.
* Choice: with c tokens committed and r = n - c still wanted, the k that
  minimises the expected cycles to finish,

      cost(c, k) + sum over a of P(a of k accepted) F(r - a - 1),

  where P uses the per-token estimates for the guesses whose input is known
  (the last token and the guesses drafted so far) and the overall one beyond,
  and F(r), the expected cycles to emit the last r tokens, is computed by
  dynamic programming with the overall rate and the cost at the cache each
  of those blocks will have (n - r).  k runs over 0 .. min(K_MAX, r - 1);
  k = 0 is a plain step (the verifier of the last token alone, no draft).  A
  plain step examines no guess, so it teaches the rule nothing: it is
  considered only when the guesses drafted from the last token have been
  judged at least once (otherwise a draft that starts badly would never be
  tried again).

It drafts another guess while the best k is larger than the guesses drafted
(a draft with nothing to say ends the block early).  The only constants are
the uniform prior, the one observation the overall rate counts for, and
K_MAX (the deepest block the costs are read for); docs/spec.md says how the
rule was arrived at and what it measures, on the runs it was designed with
and on others.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

#: the longest suffix the n-gram draft looks up
NGRAM_MAX = 3
#: the largest k the adaptive rule considers
K_MAX = 5
#: the adaptive rule's prior on the acceptance of any guess, (successes, failures) before any block:
#: the uniform Beta(1, 1), neutral
GLOBAL_PRIOR = (1.0, 1.0)
#: how many observations the overall rate counts for in the rate of the guesses drafted from one token
TOKEN_PRIOR_WEIGHT = 1.0


# ---------------------------------------------------------------------------
# Trees
# ---------------------------------------------------------------------------

def two_leg_tree(l0: int, l1: int) -> tuple[int, ...]:
    """Parents of a root with chains of l0 (nodes 1..l0) and l1 (nodes l0+1..l0+l1) guesses."""
    if l0 < 1 or l1 < 0:
        raise ValueError(f"two_leg_tree: need l0 >= 1 and l1 >= 0, got {l0}, {l1}")
    parents = [-1] + [i - 1 for i in range(1, l0 + 1)]
    if l1:
        parents += [0] + [l0 + j for j in range(1, l1)]
    return tuple(parents)


def accept_path(parents: Sequence[int], tokens: Sequence[int], choices: Sequence[int]) -> list[int]:
    """The longest path from the root whose every node's token is the target's choice after
    its parent: the accepted nodes, in order (the root excluded)."""
    path, node = [], 0
    while True:
        nxt = [c for c in range(1, len(parents)) if parents[c] == node and tokens[c] == choices[node]]
        if not nxt:
            return path
        node = nxt[0]
        path.append(node)


@dataclass
class HostStats:
    blocks: int = 0
    proposed: int = 0
    accepted: int = 0
    rows: int = 0
    ks: list[int] = field(default_factory=list)


def speculate_tree(start: int, n: int, parents: Sequence[int], verify_tree, propose_tree):
    """Greedy decoding with a tree of guesses per block.

    ``propose_tree(last)`` -> the tokens of every node (node 0 = last);
    ``verify_tree(parents, c, tokens, keys, values)`` -> (choice after every node, key rows,
    value rows) in node order.  Returns (tokens, HostStats)."""
    tokens, keys, values, st = [start], [], [], HostStats()
    while len(tokens) - 1 < n:
        node_tokens = list(propose_tree(tokens[-1]))
        choices, nk, nv = verify_tree(parents, len(keys), node_tokens, list(keys), list(values))
        path = accept_path(parents, node_tokens, choices)
        last = path[-1] if path else 0
        tokens += [node_tokens[i] for i in path] + [choices[last]]
        keys += [list(nk[i]) for i in [0] + path]
        values += [list(nv[i]) for i in [0] + path]
        st.blocks += 1
        st.proposed += len(parents) - 1
        st.accepted += len(path)
        st.rows += len(parents)
    return tokens[:n + 1], st


# ---------------------------------------------------------------------------
# Linear blocks whose k may change from block to block, any draft
# ---------------------------------------------------------------------------

class FixedK:
    """k guesses per block (fewer only when the draft has no more to say)."""

    def __init__(self, k: int):
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        self.k = k

    def more(self, inputs: Sequence[int], done: int, n: int) -> bool:
        return len(inputs) - 1 < self.k

    def update(self, inputs: Sequence[int], accepted: int, k: int) -> None:
        pass


def speculate_blocks(start: int, n: int, verify, draft_next: Callable[[list[int]], int | None], policy):
    """Greedy linear blocks, the guesses drafted one at a time.

    ``draft_next(tokens + guesses so far)`` -> the next guess, or None (no guess: the block
    ends); ``policy.more(inputs, done, n)`` -> draft another guess?  (``inputs`` = [last
    committed token] + the guesses so far, so inputs[-1] is the next guess's input);
    ``verify(c, block, keys, values)`` -> (choices, key rows, value rows); after the block
    ``policy.update(inputs, accepted, k)``."""
    tokens, keys, values, st = [start], [], [], HostStats()
    while len(tokens) - 1 < n:
        inputs = [tokens[-1]]
        while policy.more(inputs, len(tokens) - 1, n):
            guess = draft_next(tokens + inputs[1:])
            if guess is None:
                break
            inputs.append(guess)
        guesses = inputs[1:]
        choices, nk, nv = verify(len(keys), inputs, list(keys), list(values))
        agreed = 0
        while agreed < len(guesses) and guesses[agreed] == choices[agreed]:
            agreed += 1
        tokens += guesses[:agreed] + [choices[agreed]]
        keys += [list(r) for r in nk[:agreed + 1]]
        values += [list(r) for r in nv[:agreed + 1]]
        st.blocks += 1
        st.proposed += len(guesses)
        st.accepted += agreed
        st.rows += len(inputs)
        st.ks.append(len(guesses))
        policy.update(inputs, agreed, len(guesses))
    return tokens[:n + 1], st


# ---------------------------------------------------------------------------
# Drafts without weights
# ---------------------------------------------------------------------------

def ngram_next(tokens: Sequence[int], max_n: int = NGRAM_MAX) -> int | None:
    """The token after the most recent earlier occurrence of the longest matching suffix."""
    L = len(tokens)
    for size in range(min(max_n, L - 1), 0, -1):
        suffix = list(tokens[L - size:])
        for j in range(L - size - 1, -1, -1):
            if list(tokens[j:j + size]) == suffix:
                return tokens[j + size]
    return None




class TrigramDraft:
    """The target's own greedy successor of every pair (see the module note)."""

    def __init__(self, runs: Sequence[Sequence[int]], bigram_next: Callable[[int], int]):
        counts: dict[tuple[int, int], dict[int, int]] = {}
        for seq in runs:
            for a, b, c in zip(seq, seq[1:], seq[2:]):
                row = counts.setdefault((a, b), {})
                row[c] = row.get(c, 0) + 1
        self.table = {pair: min(row, key=lambda c: (-row[c], c)) for pair, row in counts.items()}
        self.bigram_next = bigram_next

    def __call__(self, tokens: Sequence[int]) -> int:
        """The guess after ``tokens`` (the last two; the bigram for a lone token or an unseen pair)."""
        pair = tuple(tokens[-2:])
        if len(pair) == 2 and pair in self.table:
            return self.table[pair]
        return self.bigram_next(tokens[-1])


# ---------------------------------------------------------------------------
# Adaptive k
# ---------------------------------------------------------------------------

class AdaptiveK:
    """Chooses each block's k from the acceptance seen so far (the rule in the module note).

    ``cost[c][k]``: the cycles of a block of k guesses after a cache of c rows (the verifier
    of k + 1 rows plus k draft programs), for c = 0 .. n - 1 and k = 0 .. k_max."""

    def __init__(self, cost: Sequence[Sequence[int]], k_max: int = K_MAX, prior: tuple[float, float] = GLOBAL_PRIOR,
                 token_weight: float = TOKEN_PRIOR_WEIGHT):
        if not cost or any(len(row) < k_max + 1 for row in cost):
            raise ValueError(f"AdaptiveK: need the cost of k = 0 .. {k_max} at every cache length")
        self.cost, self.k_max, self.prior, self.token_weight = [list(row) for row in cost], k_max, prior, token_weight
        self.successes = self.trials = 0
        self.token_successes: dict[int, int] = {}
        self.token_trials: dict[int, int] = {}

    @property
    def acceptance(self) -> float:
        """Of any guess: the posterior mean (successes + s0) / (trials + s0 + f0)."""
        return (self.successes + self.prior[0]) / (self.trials + self.prior[0] + self.prior[1])

    def acceptance_after(self, token: int) -> float:
        """Of a guess drafted from ``token``: its own counts, shrunk towards ``acceptance``."""
        w = self.token_weight
        return ((self.token_successes.get(token, 0) + w * self.acceptance)
                / (self.token_trials.get(token, 0) + w))

    def _cost_at(self, c: int) -> list[int]:
        if not 0 <= c < len(self.cost):
            raise ValueError(f"AdaptiveK: no costs for a cache of {c} rows (given for 0 .. {len(self.cost) - 1})")
        return self.cost[c]

    def _finish_costs(self, n: int, remaining: int) -> list[float]:
        """F[r]: the expected cycles to emit the last r of n tokens (the cache then n - r rows),
        every guess accepted with ``acceptance``."""
        a = self.acceptance
        F = [0.0] * (remaining + 1)
        for r in range(1, remaining + 1):
            cost = self._cost_at(n - r)
            F[r] = min(self._block_cost(cost[k], [a] * k, F, r) for k in range(0, min(self.k_max, r - 1) + 1))
        return F

    @staticmethod
    def _block_cost(cost: float, accept: Sequence[float], F: Sequence[float], r: int) -> float:
        """``cost`` + the expected F of what is left after a block whose guesses are accepted with
        probabilities ``accept`` (each given the previous ones)."""
        k = len(accept)
        total, reach = float(cost), 1.0
        for a in range(k + 1):
            stop = reach * ((1 - accept[a]) if a < k else 1.0)
            total += stop * F[max(0, r - a - 1)]
            if a < k:
                reach *= accept[a]
        return total

    def best_k(self, inputs: Sequence[int], done: int, n: int) -> int:
        r = n - done
        limit = min(self.k_max, r - 1)
        lowest = 0 if self.token_trials.get(inputs[0], 0) else 1
        if limit < lowest:              # the last token wanted (r = 1): a plain step
            return limit
        cost = self._cost_at(done)
        F = self._finish_costs(n, r)
        best, best_cost = lowest, None
        for k in range(lowest, limit + 1):
            accept = [self.acceptance_after(inputs[j]) if j < len(inputs) else self.acceptance for j in range(k)]
            c = self._block_cost(cost[k], accept, F, r)
            if best_cost is None or c < best_cost - 1e-9:
                best, best_cost = k, c
        return best

    def more(self, inputs: Sequence[int], done: int, n: int) -> bool:
        return len(inputs) - 1 < self.best_k(inputs, done, n)

    def update(self, inputs: Sequence[int], accepted: int, k: int) -> None:
        """Guess j (drafted from inputs[j]) was examined when j <= accepted, accepted when j < accepted."""
        for j in range(min(k, accepted + 1)):
            token, ok = inputs[j], j < accepted
            self.trials += 1
            self.successes += ok
            self.token_trials[token] = self.token_trials.get(token, 0) + 1
            self.token_successes[token] = self.token_successes.get(token, 0) + ok
