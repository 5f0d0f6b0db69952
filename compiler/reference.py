"""The graph's meaning in floating point: the reference for calibration and error.

Sums run left to right from zero in index order, in IEEE double precision:
calibrated ranges (hence scales, hence every integer the chip computes)
depend on the last bits of these numbers, so the order is part of the
compiler's definition.  Products are vectorized across independent outputs
only, never reassociated (see :func:`_product`).
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from .graph import Graph, Matrix, check_inputs


def _product(a: Matrix, b: Matrix, transpose_b: bool, factor: float) -> Matrix:
    """``factor`` times each (row of a) . (column of b): a left-to-right sum from 0.0 of the rounded
    products.  numpy forms every product first and adds them along K with ``np.add.accumulate``
    (sequential by definition, never pairwise); starting from the first product instead of 0.0
    can only change the sign of a zero sum, which ``+ 0.0`` sets as the scalar sum has it.  So
    every value is bit for bit the scalar loop's on any machine (no BLAS, no fused multiply-add),
    and also on Pythons whose ``sum()`` compensates (3.12 and later)."""
    A = np.asarray(a, dtype=np.float64)
    B = np.asarray(b, dtype=np.float64)
    if transpose_b:
        B = B.T
    if A.shape[1] == 0:
        return [[factor * 0.0] * B.shape[1] for _ in range(A.shape[0])]
    products = A[:, :, None] * B[None, :, :]                     # M x K x N
    return (factor * (np.add.accumulate(products, axis=1)[:, -1, :] + 0.0)).tolist()


def _softmax_rows(a: Matrix) -> Matrix:
    out = []
    for row in a:
        top = max(row)
        e = [math.exp(x - top) for x in row]
        total = sum(e)
        out.append([x / total for x in e])
    return out


def _first_max(row) -> int:
    return row.index(max(row))


def evaluate(graph: Graph, inputs: Mapping[str, Any]) -> dict[int, Matrix]:
    """Every node's value in floating point: ``{node id: 2-D list}`` (argmax gives float indices)."""
    given = check_inputs(graph, inputs, "evaluate")
    value: dict[int, Matrix] = {}
    for n in graph.nodes:
        ops = [value[i] for i in n.inputs]
        if n.op == "input":
            value[n.id] = given[n.name]
        elif n.op == "weight":
            value[n.id] = n.attrs["array"]
        elif n.op == "matmul":
            value[n.id] = _product(ops[0], ops[1], n.attrs["transpose_b"], n.attrs["scale"])
        elif n.op == "softmax":
            value[n.id] = _softmax_rows(ops[0])
        elif n.op == "add":
            value[n.id] = [[x + y for x, y in zip(r, s)] for r, s in zip(ops[0], ops[1])]
        elif n.op == "relu":
            value[n.id] = [[max(0.0, x) for x in r] for r in ops[0]]
        elif n.op == "concat":
            value[n.id] = [list(r) for r in ops[0]] + [list(r) for r in ops[1]]
        elif n.op == "slice":
            first = n.attrs["start"]
            value[n.id] = [list(r) for r in ops[0][first:first + n.attrs["count"]]]
        elif n.op == "argmax":
            value[n.id] = [[float(_first_max(r))] for r in ops[0]]
        elif n.op in ("output", "rescale"):
            value[n.id] = ops[0]
        else:
            raise AssertionError(f"evaluate: no float semantics for {n.label()}")
    return value
