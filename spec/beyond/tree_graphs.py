"""Capra graphs beyond the chapter: a block of guesses shaped as a tree, and sampling heads.

**A tree mask made of views.**  A tree of guesses is a parent list: node 0 is
the last committed token (the root), ``parents[i] < i`` for the others.  Row i
may attend to the cache and to its own ancestors and itself, nothing else.
Attention over a set of keys does not depend on their order (the scores, the
exponentials and the sums are integers, so any order gives the same bits), so
it is enough to lay the keys out so that every row's visible set is one
contiguous run; the row's keys and values are then a ``slice_rows`` view, as in
the chapter's linear verifier.  For a tree whose root has at most two children
and whose other nodes have at most one (two chains of guesses from the root;
e.g. the draft's top two first guesses and their greedy continuations) the
layout

    [ leg 0 reversed ..., root ]  [ cache ]  [ leg 1 ... ]

works: the root and leg 0 sit on the left of the cache, leg 1 on its right;
a node of leg 0 sees itself down to the root and the cache, a node of leg 1
the root, the cache and leg 1 up to itself.  The block's input rows are the
tree's nodes in this order (``layout``); the new keys are two products (left
rows, right rows) placed on either side of the cache with ``concat_rows``, so
nothing is copied.  A tree of another shape is refused: its visible sets cannot
all be contiguous in one row order (some node would need two separated runs).

The same builder gives the sampling programs (plain step: a tree of one node;
linear block: one leg), whose head is the chip's softmax of the logits divided
by a temperature: ``softmax(y Wout / T)``, output ``probs``: the softmax unit's own
Q0.16 words (``Graph.softmax(..., q16=True)``: integers, 65536 = 1, not requantized).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from compiler import Graph

from ..graphs import _attend, _weight_maker
from ..tiny_lm import D, Matrix, TinyLM


@dataclass(frozen=True)
class TreeLayout:
    parents: tuple[int, ...]
    order: tuple[int, ...]        #: node ids in row order (the block's input rows)
    left: int                     #: rows placed before the cache (leg 0 reversed, then the root)
    cache_len: int
    visible: tuple[tuple[int, int], ...]   #: per row (in row order): [lo, hi) of the key layout

    @property
    def rows(self) -> int:
        return len(self.order)

    @property
    def right(self) -> int:
        return len(self.order) - self.left


def check_parents(parents: Sequence[int]) -> tuple[int, ...]:
    parents = tuple(parents)
    if not parents or parents[0] != -1:
        raise ValueError(f"a tree's parent list starts with -1 (the root), got {list(parents)}")
    for i, p in enumerate(parents[1:], 1):
        if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < i:
            raise ValueError(f"tree node {i}: its parent must be an earlier node, got {p!r}")
    return parents


def ancestors(parents: Sequence[int], node: int) -> list[int]:
    """``node`` and its ancestors up to the root, nearest first."""
    out = []
    while node != -1:
        out.append(node)
        node = parents[node]
    return out


def tree_layout(parents: Sequence[int], cache_len: int) -> TreeLayout:
    """The row order and every row's visible run of keys (see the module note)."""
    parents = check_parents(parents)
    if cache_len < 0:
        raise ValueError(f"tree_layout: cache length must be >= 0, got {cache_len}")
    children: dict[int, list[int]] = {i: [] for i in range(len(parents))}
    for i, p in enumerate(parents[1:], 1):
        children[p].append(i)
    if len(children[0]) > 2 or any(len(c) > 1 for n, c in children.items() if n):
        raise ValueError(f"tree {list(parents)}: only the root may branch, into at most two chains; this tree's "
                         f"visible sets cannot all be contiguous runs of one key layout")
    legs = []
    for first in children[0]:
        leg, node = [], first
        while True:
            leg.append(node)
            if not children[node]:
                break
            node = children[node][0]
        legs.append(leg)
    leg0 = legs[0] if legs else []
    leg1 = legs[1] if len(legs) > 1 else []
    order = tuple(reversed(leg0)) + (0,) + tuple(leg1)
    left = len(leg0) + 1
    position = {}                     # node -> its key position (cache in between)
    for r, node in enumerate(order):
        position[node] = r if r < left else r + cache_len
    visible = []
    for node in order:
        seen = sorted([position[a] for a in ancestors(parents, node)] + list(range(left, left + cache_len)))
        lo, hi = seen[0], seen[-1] + 1
        if hi - lo != len(seen):
            raise AssertionError(f"tree {list(parents)}: node {node}'s keys are not contiguous")  # pragma: no cover
        visible.append((lo, hi))
    return TreeLayout(parents, order, left, cache_len, tuple(visible))


def chain_parents(k: int) -> tuple[int, ...]:
    """A linear block: the root and k guesses, each the child of the previous."""
    return (-1,) + tuple(range(k))


def _split_product(g: Graph, x: int, w: int, layout: TreeLayout, tag: str) -> tuple[int, int | None]:
    if layout.right == 0:
        return g.tag(g.matmul(x, w), tag), None
    left = g.tag(g.matmul(g.slice_rows(x, 0, layout.left), w), tag)
    right = g.tag(g.matmul(g.slice_rows(x, layout.left, layout.right), w), tag)
    return left, right


def _keys_layout(g: Graph, left: int, right: int | None, cache_name: str, cache_len: int, tag: str) -> int:
    tail = right
    if cache_len:
        cache = g.tag(g.input(cache_name, (cache_len, D)), tag)
        tail = cache if right is None else g.tag(g.concat_rows(cache, right), tag)
    return left if tail is None else g.tag(g.concat_rows(left, tail), tag)


def tree_graph(model: TinyLM, parents: Sequence[int], cache_len: int, temperature: float | None = None) -> Graph:
    """The target over a tree of guesses against ``cache_len`` cached rows.

    Input ``x``: the nodes' embedding rows in ``tree_layout(parents, cache_len).order``.
    Outputs (rows in that order): greedy (``temperature`` None): ``tok``, ``logits``;
    sampling: ``probs`` = softmax(logits / temperature) as the softmax unit's Q0.16 words; and
    ``k_left``, ``v_left`` (and, for a second leg, ``k_right``, ``v_right``): the new key and value rows."""
    layout = tree_layout(parents, cache_len)
    if temperature is not None and not temperature > 0:
        raise ValueError(f"tree_graph: a sampling head needs a temperature > 0, got {temperature}")
    g = Graph()
    weight = _weight_maker(g, model)
    x = g.tag(g.input("x", (layout.rows, D)), "x")
    q = g.matmul(x, weight("Wq"))
    wk, wv = weight("Wk"), weight("Wv")
    k_left, k_right = _split_product(g, x, wk, layout, "k")
    v_left, v_right = _split_product(g, x, wv, layout, "v")
    keys = _keys_layout(g, k_left, k_right, "kc", cache_len, "k")
    values = _keys_layout(g, v_left, v_right, "vc", cache_len, "v")
    stacked = None
    for row, (lo, hi) in enumerate(layout.visible):
        row_out = _attend(g, g.slice_rows(q, row, 1), g.slice_rows(keys, lo, hi - lo),
                          g.slice_rows(values, lo, hi - lo))
        stacked = row_out if stacked is None else g.concat_rows(stacked, row_out)
    h = g.add(x, g.matmul(stacked, weight("Wo")))
    y = g.add(h, g.matmul(g.relu(g.matmul(h, weight("W1"))), weight("W2")))
    if temperature is None:
        logits = g.matmul(y, weight("Wout"))
        g.output(g.argmax(logits), "tok")
        g.output(logits, "logits")
    else:
        g.output(g.softmax(g.matmul(y, weight("Wout"), scale=1.0 / temperature), q16=True), "probs")
    g.output(k_left, "k_left")
    g.output(v_left, "v_left")
    if k_right is not None:
        g.output(k_right, "k_right")
        g.output(v_right, "v_right")
    return g


def sampling_draft_graph(Wd: Matrix, temperature: float) -> Graph:
    """The bigram draft's distribution: softmax(x Wd / T), output ``probs`` (Q0.16 words)."""
    if not temperature > 0:
        raise ValueError(f"sampling_draft_graph: temperature must be > 0, got {temperature}")
    g = Graph()
    x = g.input("x", (1, D))
    g.output(g.softmax(g.matmul(x, g.weight("Wd", Wd), scale=1.0 / temperature), q16=True), "probs")
    return g
