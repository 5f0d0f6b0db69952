"""The Capra graphs the host runs on GA-2: a decode step, the block verifier, the draft.

The compiler lays out memory and emits instructions in the order the graph's
nodes were created, so that order is part of the result (cycles, external
memory image): the functions below create nodes in one fixed order, the one
the reference figures were measured with.  Python evaluates call arguments
left to right, so in ``g.add(h, g.matmul(a, weight("Wo")))`` the weight node
is created before the product, and the product before the sum.

Tags name the quantities whose range is given to the compiler explicitly (the
input embedding row ``x``, keys ``k`` and values ``v``): the cache rows come
from earlier programs and must share one scale across all of them.
"""
from __future__ import annotations

import math

from compiler import Graph

from .tiny_lm import D, Matrix, TinyLM

#: attention scores are q.k / sqrt(D)
SCORE_SCALE = 1 / math.sqrt(D)


def _weight_maker(g: Graph, model: TinyLM):
    return lambda name: g.weight(name, model.weight(name))


def _cache_plus_new(g: Graph, cache_name: str, cache_rows: int, new_rows: int, tag: str) -> int:
    """The cache input (``cache_rows`` x D) with the new rows appended below it, as one view."""
    if cache_rows == 0:
        return new_rows
    cache = g.tag(g.input(cache_name, (cache_rows, D)), tag)
    return g.tag(g.concat_rows(cache, new_rows), tag)


def _attend(g: Graph, query: int, keys: int, values: int) -> int:
    """softmax(query keys^T / sqrt(D)) values."""
    return g.matmul(g.softmax(g.matmul(query, keys, transpose_b=True, scale=SCORE_SCALE)), values)


def _after_attention(g: Graph, weight, x: int, attn: int) -> int:
    """h = x + attn Wo;  y = h + relu(h W1) W2;  logits = y Wout.  Returns the logits node."""
    h = g.add(x, g.matmul(attn, weight("Wo")))
    y = g.add(h, g.matmul(g.relu(g.matmul(h, weight("W1"))), weight("W2")))
    return g.matmul(y, weight("Wout"))


def _project(g: Graph, weight, x: int) -> tuple[int, int, int]:
    """Queries, keys and values of the input rows (keys and values tagged for the cache's scale)."""
    q = g.matmul(x, weight("Wq"))
    k = g.tag(g.matmul(x, weight("Wk")), "k")
    v = g.tag(g.matmul(x, weight("Wv")), "v")
    return q, k, v


def _outputs(g: Graph, logits: int, k: int, v: int) -> None:
    g.output(g.argmax(logits), "tok")
    g.output(logits, "logits")
    g.output(k, "k_new")
    g.output(v, "v_new")


def decode_step_graph(model: TinyLM, context_len: int) -> Graph:
    """One plain decode step with ``context_len`` tokens in context (the new one included).

    Inputs: x (1 x D, the new token's embedding row), and for context_len > 1 the
    cache kc, vc ((context_len - 1) x D).  Outputs: tok, logits, k_new, v_new.
    """
    if context_len < 1:
        raise ValueError(f"decode_step_graph: context length must be >= 1, got {context_len}")
    g = Graph()
    weight = _weight_maker(g, model)
    x = g.tag(g.input("x", (1, D)), "x")
    q, k, v = _project(g, weight, x)
    keys = _cache_plus_new(g, "kc", context_len - 1, k, "k")
    values = _cache_plus_new(g, "vc", context_len - 1, v, "v")
    logits = _after_attention(g, weight, x, _attend(g, q, keys, values))
    _outputs(g, logits, k, v)
    return g


def verifier_graph(model: TinyLM, block_len: int, cache_len: int) -> Graph:
    """The target over a block of ``block_len`` rows against ``cache_len`` cached rows.

    The causal mask is made of views, not arithmetic: row i's query is a one-row
    slice of Q, and its keys and values are the first cache_len + i + 1 rows of
    the cache-plus-block tensors.  The rows' attention outputs are stacked back
    with concat_rows (also a view) and the rest of the layer runs once for all rows.
    Outputs: attn (for the tensor-level tests), tok (one per row), logits, k_new, v_new.
    """
    if block_len < 1 or cache_len < 0:
        raise ValueError(f"verifier_graph: need block_len >= 1 and cache_len >= 0, got {block_len}, {cache_len}")
    g = Graph()
    weight = _weight_maker(g, model)
    x = g.tag(g.input("x", (block_len, D)), "x")
    q, k, v = _project(g, weight, x)
    keys = _cache_plus_new(g, "kc", cache_len, k, "k")
    values = _cache_plus_new(g, "vc", cache_len, v, "v")
    stacked = None
    for row in range(block_len):
        visible = cache_len + row + 1
        row_out = _attend(g, g.slice_rows(q, row, 1), g.slice_rows(keys, 0, visible), g.slice_rows(values, 0, visible))
        stacked = row_out if stacked is None else g.concat_rows(stacked, row_out)
    g.output(stacked, "attn")
    logits = _after_attention(g, weight, x, stacked)
    _outputs(g, logits, k, v)
    return g


def draft_graph(Wd: Matrix) -> Graph:
    """The bigram draft: logits = x Wd (one matmul) and their argmax."""
    g = Graph()
    x = g.input("x", (1, D))
    logits = g.matmul(x, g.weight("Wd", Wd))
    g.output(g.argmax(logits), "tok")
    g.output(logits, "logits")
    return g
