"""Speculative *sampling*: the rejection rule that keeps the target's distribution exactly.

Distributions are lists of non-negative integers (weights), one per token: the
chip's softmax output read as integers (``probs`` of a compiled program: the
softmax unit's own Q0.16 words, 65536 = 1), or any other integer table.  The
distribution they stand for is ``w / sum(w)``: a row of Q0.16 words, each
rounded on its own, sums to 65536 give or take a few units (measured 65534 ..
65538), and the rule normalises by the row's own sum, never by 65536, so p is
exactly the distribution those integers define (the one the exactness proof
checks against).  Every probability below is a ratio of integers, so the rule
is carried out in exact integer arithmetic and no rounding can bias it.

One block with k guesses (Leviathan et al. 2023; Chen et al. 2023):

1. the draft samples guesses x_0 .. x_{k-1}, each from its distribution q_i
   after the previous guess;
2. the target runs once over [last committed token, x_0, ..., x_{k-1}] and
   gives p_0 .. p_k (p_i: its distribution after row i);
3. for i = 0, 1, ...: accept x_i with probability min(1, p_i(x_i) / q_i(x_i));
   at the first rejection emit a token drawn from the normalised
   max(0, p_i - q_i) and stop; if all k are accepted, emit a token drawn from
   p_k.

Randomness enters only through ``Chooser.choose(weights)``, which returns
index i with probability weights[i] / sum(weights).  ``SeededChooser`` does
that with ``random.Random(seed).randrange`` (exact: one integer draw, no
floats); ``exact_distribution`` runs the same code under a chooser that
explores every branch and returns the exact probability of every outcome as a
``fractions.Fraction``.  The tests prove exactness with the second on the very
functions the host loop runs with the first.

Greedy decoding is the special case of one-hot distributions: a one-hot q
proposes its argmax, a one-hot p accepts it exactly when it is p's argmax,
otherwise the residual is p's argmax, and the bonus token is p's argmax.
``one_hot`` turns a token into such a distribution, so the chapter's greedy
programs run through this same loop (temperature 0).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Callable, Protocol, Sequence

import random

Weights = Sequence[int]


class Chooser(Protocol):
    def choose(self, weights: Weights) -> int:
        """Index i with probability weights[i] / sum(weights)."""


def _check_weights(weights: Weights) -> int:
    total = 0
    for w in weights:
        if not isinstance(w, int) or w < 0:
            raise ValueError(f"a distribution's weights must be non-negative integers, got {list(weights)}")
        total += w
    if total == 0:
        raise ValueError(f"a distribution's weights must not all be zero, got {list(weights)}")
    return total


class SeededChooser:
    """Draws from ``random.Random(seed)``: one ``randrange(sum(weights))`` per draw, then the
    first index whose cumulative weight exceeds it.  A draw with a single non-zero weight
    takes no randomness (so greedy decoding consumes none)."""

    def __init__(self, seed: int):
        self.seed = seed
        self.rng = random.Random(seed)
        self.draws = 0

    def choose(self, weights: Weights) -> int:
        total = _check_weights(weights)
        positive = [i for i, w in enumerate(weights) if w]
        if len(positive) == 1:
            return positive[0]
        self.draws += 1
        r = self.rng.randrange(total)
        for i, w in enumerate(weights):
            if r < w:
                return i
            r -= w
        raise AssertionError("unreachable: r < total")


def one_hot(token: int, size: int) -> list[int]:
    """The distribution that puts all its mass on ``token``."""
    return [1 if i == token else 0 for i in range(size)]


def accept_weights(p: Weights, q: Weights, x: int) -> tuple[int, int]:
    """(accept, reject) weights of guess x: accept with probability min(1, p(x) / q(x)).

    With p(x) = P[x]/SP and q(x) = Q[x]/SQ, p(x)/q(x) = P[x] SQ / (Q[x] SP): accept with
    weight P[x] SQ against Q[x] SP - P[x] SQ, or always when P[x] SQ >= Q[x] SP."""
    sp, sq = _check_weights(p), _check_weights(q)
    if q[x] == 0:
        raise ValueError(f"guess {x} has zero probability under the draft that proposed it")
    a, b = p[x] * sq, q[x] * sp
    return (1, 0) if a >= b else (a, b - a)


def residual(p: Weights, q: Weights) -> list[int]:
    """max(0, p - q) as integer weights over the common denominator SP SQ."""
    sp, sq = _check_weights(p), _check_weights(q)
    return [max(0, pi * sq - qi * sp) for pi, qi in zip(p, q)]


@dataclass
class BlockOutcome:
    guesses: list[int]          #: the draft's k guesses
    accepted: int               #: how many were accepted (a prefix)
    emitted: list[int]          #: guesses[:accepted] + the token drawn after them


def sample_block(k: int, last: int, draft: Callable[[int], Weights],
                 verify: Callable[[list[int]], Sequence[Weights]], chooser: Chooser) -> BlockOutcome:
    """One block of speculative sampling.

    ``draft(token)`` is the draft's distribution after ``token``; ``verify(block)`` the
    target's distributions after each of the k + 1 rows of ``block`` = [last] + guesses."""
    guesses, qs, token = [], [], last
    for _ in range(k):
        q = list(draft(token))
        token = chooser.choose(q)
        guesses.append(token)
        qs.append(q)
    ps = [list(p) for p in verify([last] + guesses)]
    if len(ps) != k + 1:
        raise ValueError(f"the verifier returned {len(ps)} distributions for a block of {k + 1} rows")
    for i, x in enumerate(guesses):
        accept, reject = accept_weights(ps[i], qs[i], x)
        if reject and chooser.choose([accept, reject]) == 1:
            return BlockOutcome(guesses, i, guesses[:i] + [chooser.choose(residual(ps[i], qs[i]))])
    return BlockOutcome(guesses, k, guesses + [chooser.choose(ps[k])])


# ---------------------------------------------------------------------------
# The host loops
# ---------------------------------------------------------------------------

#: verify(cache_len, block, keys, values) -> (distributions per row, new keys, new values)
SampleVerify = Callable[[int, list[int], list, list], tuple[Sequence[Weights], Sequence, Sequence]]
#: step(context_len, token, keys, values) -> (distribution, new key row, new value row)
SampleStep = Callable[[int, int, list, list], tuple[Weights, Sequence[float], Sequence[float]]]


@dataclass
class SampleStats:
    blocks: int = 0
    proposed: int = 0
    accepted: int = 0
    emitted: int = 0
    cache: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    @property
    def acceptance(self) -> float:
        return self.accepted / self.proposed if self.proposed else 0.0


@dataclass
class SampleRun:
    tokens: list[int]                  #: start token and n generated tokens
    stats: SampleStats
    blocks: list[BlockOutcome] = field(default_factory=list)


def sample_plain(start: int, n: int, step: SampleStep, chooser: Chooser) -> SampleRun:
    """Plain sampling: one target step per token, the token drawn from the step's distribution."""
    if n < 0:
        raise ValueError(f"sample_plain: n must be >= 0, got {n}")
    tokens, keys, values = [start], [], []
    for L in range(1, n + 1):
        p, key, value = step(L, tokens[-1], list(keys), list(values))
        keys.append(list(key))
        values.append(list(value))
        tokens.append(chooser.choose(list(p)))
    return SampleRun(tokens, SampleStats(emitted=n, cache=len(keys)))


def speculate_sampling(start: int, n: int, k: int, verify: SampleVerify, draft: Callable[[int], Weights],
                       chooser: Chooser) -> SampleRun:
    """Generate n tokens after ``start`` by speculative sampling with k guesses per block.

    The cache keeps the rows of the committed inputs of each block (rows 0 .. a), as in
    greedy speculative decoding; the token drawn at the end of a block starts the next."""
    if k < 1:
        raise ValueError(f"speculate_sampling: k must be at least 1, got {k}")
    if n < 0:
        raise ValueError(f"speculate_sampling: n must be >= 0, got {n}")
    tokens, keys, values = [start], [], []
    stats, outcomes = SampleStats(), []
    while len(tokens) - 1 < n:
        rows: dict = {}

        def block_verify(block):
            ps, rows["k"], rows["v"] = verify(len(keys), block, list(keys), list(values))
            return ps

        out = sample_block(k, tokens[-1], draft, block_verify, chooser)
        tokens += out.emitted
        keys += [list(r) for r in rows["k"][:out.accepted + 1]]
        values += [list(r) for r in rows["v"][:out.accepted + 1]]
        stats.blocks += 1
        stats.proposed += k
        stats.accepted += out.accepted
        outcomes.append(out)
    stats.emitted = len(tokens) - 1
    stats.cache = len(keys)
    return SampleRun(tokens[:n + 1], stats, outcomes)


# ---------------------------------------------------------------------------
# Exact enumeration: every branch of every choice, with its exact probability
# ---------------------------------------------------------------------------

class _NewChoice(Exception):
    def __init__(self, weights):
        self.weights = list(weights)


class _ScriptedChooser:
    def __init__(self, script: tuple[int, ...]):
        self.script, self.at = script, 0

    def choose(self, weights: Weights) -> int:
        _check_weights(weights)
        if self.at == len(self.script):
            raise _NewChoice(weights)
        i = self.script[self.at]
        self.at += 1
        return i


def exact_distribution(fn: Callable[[Chooser], object], limit: int = 1_000_000) -> dict[object, Fraction]:
    """The exact distribution of ``fn(chooser)``'s (hashable) result over all of its choices.

    ``fn`` is run again for every branch (depth first), with the choices made so far
    replayed; it must be deterministic given its choices.  ``limit`` bounds the runs."""
    result: dict[object, Fraction] = {}
    stack: list[tuple[tuple[int, ...], Fraction]] = [((), Fraction(1))]
    runs = 0
    while stack:
        script, prob = stack.pop()
        runs += 1
        if runs > limit:
            raise RuntimeError(f"exact_distribution: more than {limit} runs")
        try:
            out = fn(_ScriptedChooser(script))
        except _NewChoice as branch:
            total = sum(branch.weights)
            for i, w in enumerate(branch.weights):
                if w:
                    stack.append((script + (i,), prob * Fraction(w, total)))
            continue
        result[out] = result.get(out, Fraction(0)) + prob
    return result


def normalised(weights: Weights) -> list[Fraction]:
    total = _check_weights(weights)
    return [Fraction(w, total) for w in weights]


def exactness_problems(outcomes: dict[tuple[int, ...], Fraction], target: Callable[[tuple[int, ...]], Weights],
                       max_len: int) -> list[str]:
    """Check that a block's emitted tokens follow the target exactly.

    ``outcomes``: the exact probability of every emitted sequence (1 .. max_len tokens);
    ``target(prefix)``: the target's distribution after the context plus ``prefix``.
    For every prefix h the block can emit with more tokens to come, the next emitted
    token must be distributed as target(h), given h and that the block goes on:
    P(out starts with h + y) = P(out starts with h, len(out) > len(h)) * p(y | h).
    (A block that stops after h hands over to the next block, which starts from h.)
    At h = () the block always goes on, so its first token is exactly p."""
    problems = []
    if sum(outcomes.values()) != 1:
        problems.append(f"the outcomes' probabilities sum to {sum(outcomes.values())}, not 1")
    if any(not 1 <= len(seq) <= max_len for seq in outcomes):
        problems.append(f"an outcome has a length outside 1..{max_len}")
    going_on: dict[tuple[int, ...], Fraction] = {}
    starts: dict[tuple[int, ...], Fraction] = {}
    for seq, pr in outcomes.items():
        for j in range(len(seq)):
            going_on[seq[:j]] = going_on.get(seq[:j], Fraction(0)) + pr
            starts[seq[:j + 1]] = starts.get(seq[:j + 1], Fraction(0)) + pr
    for h in sorted(going_on):
        p = normalised(target(h))
        for y in range(len(p)):
            got = starts.get(h + (y,), Fraction(0))
            if got != going_on[h] * p[y]:
                problems.append(f"after {list(h)}: token {y} emitted with probability {got / going_on[h]} "
                                f"given the block goes on, the target's is {p[y]}")
    return problems


# ---------------------------------------------------------------------------
# A chi-square test without scipy
# ---------------------------------------------------------------------------

def chi_square(counts: Sequence[int], weights: Weights) -> tuple[float, int]:
    """Pearson's statistic of observed ``counts`` against the distribution ``weights``, and its
    degrees of freedom (cells of non-zero expectation minus one).  A count in a cell of zero
    expectation makes the statistic infinite."""
    n = sum(counts)
    probs = normalised(weights)
    stat, cells = 0.0, 0
    for c, p in zip(counts, probs):
        if p == 0:
            if c:
                return float("inf"), max(0, sum(1 for x in probs if x) - 1)
            continue
        e = n * float(p)
        stat += (c - e) ** 2 / e
        cells += 1
    return stat, cells - 1


def _regularized_lower_gamma(s: float, x: float) -> float:
    """P(s, x) by its series (converges for every x; 2000 terms are ample for x < 200)."""
    import math
    if x <= 0:
        return 0.0
    term = total = 1.0 / s
    for n in range(1, 5000):
        term *= x / (s + n)
        total += term
        if term < total * 1e-16:
            break
    return total * math.exp(-x + s * math.log(x) - math.lgamma(s))


def chi_square_cdf(x: float, df: int) -> float:
    return _regularized_lower_gamma(df / 2.0, x / 2.0)


def chi_square_critical(df: int, alpha: float) -> float:
    """The value the statistic exceeds with probability ``alpha`` under the null (bisection)."""
    if df < 1 or not 0 < alpha < 1:
        raise ValueError("chi_square_critical: need df >= 1 and 0 < alpha < 1")
    lo, hi = 0.0, 10.0 * df + 100.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if chi_square_cdf(mid, df) < 1 - alpha:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2
