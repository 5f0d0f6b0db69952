"""The verifier's floating-point reference: a whole block of tokens at once, with an explicit causal mask.

Speculative decoding runs the target over a block of m tokens (the last
committed token and the draft's m - 1 guesses) in one pass.  Row i of the block
may attend to the c cached rows and to block rows 0 .. i, nothing later.

This reference is deliberately written as the *matrix* computation (a full
m x (c + m) score matrix, then a mask) and not by calling the single-token
step, so that checking one against the other means something: the block form
must equal m sequential calls of ``tiny_lm.float_step`` to within rounding
(the test demands 1e-9).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from .tiny_lm import D, Matrix, TinyLM, argmax, dot, feed_forward_and_logits, vecmat


@dataclass
class BlockResult:
    logits: Matrix        #: one row of logits per block row
    keys: Matrix          #: the block's new key rows (one per token)
    values: Matrix        #: the block's new value rows
    attn: Matrix          #: the attention output of every row

    def choices(self) -> list[int]:
        """The target's greedy token after each row."""
        return [argmax(row) for row in self.logits]


def causal_mask(cache_len: int, block_len: int) -> list[list[bool]]:
    """visible[i][j]: may block row i attend to position j of (cache + block)?"""
    return [[j <= cache_len + i for j in range(cache_len + block_len)] for i in range(block_len)]


def float_block(model: TinyLM, tokens: Sequence[int], keys: Sequence[Sequence[float]],
                values: Sequence[Sequence[float]]) -> BlockResult:
    """Run a block of ``tokens`` against a cache of ``keys``/``values`` (c rows each)."""
    if not tokens:
        raise ValueError("float_block: the block is empty")
    if len(keys) != len(values):
        raise ValueError(f"float_block: {len(keys)} cached keys but {len(values)} cached values")
    c, m = len(keys), len(tokens)
    X = [model.embedding(t) for t in tokens]
    Q = [vecmat(x, model.array("Wq")) for x in X]
    K_new = [vecmat(x, model.array("Wk")) for x in X]
    V_new = [vecmat(x, model.array("Wv")) for x in X]
    K = [list(r) for r in keys] + K_new
    Vals = [list(r) for r in values] + V_new
    visible = causal_mask(c, m)
    # Scores of every row against every position; hidden positions get -inf (weight exactly 0).
    scores = [[dot(Q[i], K[j]) / math.sqrt(D) if visible[i][j] else -math.inf for j in range(c + m)]
              for i in range(m)]
    logits, attn = [], []
    for i in range(m):
        top = max(scores[i])
        weights = [math.exp(s - top) for s in scores[i]]
        total = 0.0
        for w in weights:
            total += w
        a = []
        for t in range(D):
            acc = 0.0
            for j, w in enumerate(weights):
                acc += w / total * Vals[j][t]
            a.append(acc)
        attn.append(a)
        logits.append(feed_forward_and_logits(model, X[i], a))
    return BlockResult(logits, K_new, V_new, attn)
