"""The draft model: a bigram table folded into one 16 x 16 matrix.

The draft's logits after token t are ``E[t] Wd`` (one matmul on the chip).  We
choose a table of logits L (row t = the logits after t) and solve
``E Wd = L`` for Wd, so that the draft reproduces the table exactly (E is
invertible: Hadamard rows for the structured model, Gaussian rows for a
random one).

The table:

* structured model: 8.0 at the rule's successor f(t), 0 elsewhere (a perfect
  draft when noise = 0);
* random model: 4 log(V p(b | a)) with p the frequency of the target's own
  float greedy successor, counted over 24 tokens from every start token, with
  0.5 added to every count;

plus Gaussian noise of standard deviation ``noise`` drawn from
``random.Random(seed)`` row by row (the draws are made even when noise is 0).

Why not ``numpy.linalg.solve``: the draft's argmax compares logits that tie
exactly in the table (for a random model, every successor never seen has the
same count 0.5), so which of them wins is decided by the last bit of the
solve's rounding.  The reference figures were produced with Gauss-Jordan
elimination with partial pivoting (first row of largest magnitude), whole rows
divided by the pivot and then eliminated from every other row, in plain Python
floats; ``solve_gauss_jordan`` performs exactly those operations, so its result
is the same on every machine.  A LAPACK solve rounds as its BLAS kernel does,
which depends on the CPU (docs/spec.md, "Why not numpy.linalg.solve").
"""
from __future__ import annotations

import math
import random
from typing import Sequence

from .tiny_lm import V, Matrix, TinyLM, argmax, float_generate, next_token_rule, vecmat

#: tokens generated from every start token to count the random model's bigrams
BIGRAM_COUNT_TOKENS = 24
#: the count added to every bigram (so log() never sees a zero)
BIGRAM_PRIOR = 0.5
#: the perfect table's logit for the rule's successor
RULE_LOGIT = 8.0


def solve_gauss_jordan(A: Sequence[Sequence[float]], B: Sequence[Sequence[float]]) -> Matrix:
    """X with A X = B, by Gauss-Jordan elimination with partial pivoting (see the module note)."""
    n = len(A)
    if any(len(row) != n for row in A) or len(B) != n:
        raise ValueError("solve_gauss_jordan: A must be n x n and B must have n rows")
    rows = [list(A[i]) + list(B[i]) for i in range(n)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(rows[r][col]))   # first of the largest
        if rows[pivot][col] == 0.0:
            raise ValueError("solve_gauss_jordan: the matrix is singular")
        rows[col], rows[pivot] = rows[pivot], rows[col]
        head = rows[col][col]
        rows[col] = [x / head for x in rows[col]]
        for r in range(n):
            if r != col:
                factor = rows[r][col]
                rows[r] = [x - factor * y for x, y in zip(rows[r], rows[col])]
    return [row[n:] for row in rows]


def target_logit_table(model: TinyLM) -> Matrix:
    """The table the draft should reproduce, before noise (see the module note)."""
    if model.kind == "structured":
        table = [[0.0] * V for _ in range(V)]
        for t in range(V):
            table[t][next_token_rule(t)] = RULE_LOGIT
        return table
    counts = [[BIGRAM_PRIOR] * V for _ in range(V)]
    for start in range(V):
        tokens = float_generate(model, start, BIGRAM_COUNT_TOKENS)
        for a, b in zip(tokens, tokens[1:]):
            counts[a][b] += 1
    table = []
    for row in counts:
        total = 0.0
        for x in row:
            total += x
        table.append([4 * math.log(x / total * V) for x in row])
    return table


def noisy_table(model: TinyLM, noise: float, seed: int) -> Matrix:
    rng = random.Random(seed)
    return [[x + rng.gauss(0, noise) for x in row] for row in target_logit_table(model)]


def make_draft(model: TinyLM, noise: float = 0.0, seed: int = 0) -> Matrix:
    """The draft matrix Wd (D x V) for ``model`` with logit noise ``noise`` drawn from ``seed``."""
    if noise < 0:
        raise ValueError(f"make_draft: noise must be >= 0, got {noise}")
    return solve_gauss_jordan(model.E, noisy_table(model, noise, seed))


def draft_logits(model: TinyLM, Wd: Matrix, token: int) -> list[float]:
    return vecmat(model.embedding(token), Wd)


def draft_next(model: TinyLM, Wd: Matrix, token: int) -> int:
    """The float draft's guess after ``token``."""
    return argmax(draft_logits(model, Wd, token))
