"""The integer interpreter: what a compiled program must compute, node by node.

It walks the graph, not the instructions: no tiles, no addresses, no buffers.
It shares with the compiler only the plan of scales and requantizers
(:mod:`compiler.scales`) and the hardware's arithmetic primitives from
:mod:`ga2_hdl.isa`; so a compiled program that disagrees with it has a bug in
the lowering or the planning of memory, not in the arithmetic it was meant to do.
"""
from __future__ import annotations

from typing import Any, Mapping

from ga2_hdl import isa

from .graph import Graph, IntMatrix, check_inputs
from .scales import quantize_matrix



def _int_product(a: IntMatrix, b: IntMatrix, transpose_b: bool) -> IntMatrix:
    cols = b if transpose_b else [list(c) for c in zip(*b)]
    return [[sum(x * y for x, y in zip(row, col)) for col in cols] for row in a]


def interpret(program, inputs: Mapping[str, Any]) -> dict[int, IntMatrix]:
    """Every node's integer value under ``program``'s scales: ``{node id: 2-D list of ints}``.

    int8 tensors hold their int8 values; argmax holds indices ``[[i], ...]``; a ``q16``
    softmax its Q0.16 probabilities;
    an output holds the values it stores.
    """
    graph: Graph = program.graph
    plan = program.plan
    given = check_inputs(graph, inputs, "interpret")
    value: dict[int, IntMatrix] = {}
    for n in graph.nodes:
        ops = [value[i] for i in n.inputs]
        if n.op == "input":
            value[n.id] = quantize_matrix(given[n.name], plan.scale[n.id])
        elif n.op == "weight":
            value[n.id] = quantize_matrix(n.attrs["array"], plan.scale[n.id])
        elif n.op == "matmul":
            rq = plan.matmul[n.id]
            value[n.id] = [[rq(acc) for acc in row] for row in _int_product(ops[0], ops[1], n.attrs["transpose_b"])]
        elif n.op == "softmax" and n.attrs.get("q16"):
            value[n.id] = [isa.softmax_q16(row) for row in ops[0]]
        elif n.op == "softmax":
            rq = plan.softmax[n.id]
            value[n.id] = [[rq(p) for p in isa.softmax_q16(row)] for row in ops[0]]
        elif n.op == "add":
            rescaled = []
            for k, operand in enumerate(ops):
                rq = plan.add_rescale.get((n.id, k))
                rescaled.append(operand if rq is None else [[rq(x) for x in row] for row in operand])
            value[n.id] = [[isa.clamp(x + y, isa.INT8_MIN, isa.INT8_MAX) for x, y in zip(r, s)]
                           for r, s in zip(*rescaled)]
            rq = plan.add_relu.get(n.id)
            if rq is not None:                    # a relu of the sum: one RQ in place
                value[n.id] = [[rq(x) for x in row] for row in value[n.id]]
        elif n.op == "rescale":
            rq = plan.rescale[n.id]
            value[n.id] = [[rq(x) for x in row] for row in ops[0]]
        elif n.op in ("relu", "output"):
            value[n.id] = ops[0]                  # a relu is already applied by its matmul's requantizer
        elif n.op == "concat":
            value[n.id] = [list(r) for r in ops[0]] + [list(r) for r in ops[1]]
        elif n.op == "slice":
            first = n.attrs["start"]
            value[n.id] = [list(r) for r in ops[0][first:first + n.attrs["count"]]]
        elif n.op == "argmax":
            value[n.id] = [[row.index(max(row))] for row in ops[0]]
        else:
            raise AssertionError(f"interpret: no integer semantics for {n.label()}")
    return value
