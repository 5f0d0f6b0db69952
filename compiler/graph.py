"""The tensor graph that Capra compiles.

A :class:`Graph` is a list of nodes in the order they were added; a node's id
is its index, and every node's operands come before it, so node order is a
valid evaluation order (and the order in which the compiler emits code).
Tensors are 2-D ``(rows, cols)``.

Operations::

    input(name, shape)            a tensor given at run time (loaded from external memory)
    weight(name, array)           a constant matrix (quantized at compile time)
    matmul(a, b, transpose_b, scale)   scale * (a @ b)   or   scale * (a @ b^T)
    softmax(a, q16=False)         per row (q16: the SM unit's Q0.16 words themselves, output only)
    add(a, b)                     elementwise, same shapes
    relu(a)                       only directly after a matmul (fused into its requantizer) or an add
                                  (one RQ of the sum in place, ratio 1, clamped at 0)
    rescale(a)                    a copy of a at a scale of its own (one RQ), e.g. logits that feed
                                  both an argmax and a softmax, whose input is pinned to 1/16
    concat_rows(a, b)             a on top of b: a VIEW (both are written into one buffer)
    slice_rows(a, start, count)   rows start .. start+count-1: a VIEW (an offset into a's buffer)
    argmax(a)                     per row: the index of the first maximum, shape (rows, 1)
    output(a, name)               stored to external memory under ``name``
    tag(a, name)                  names a tensor's range (see ``compile_graph(ranges=...)``)

Shape errors and the view rules that do not depend on the rest of the graph
are refused here, as soon as the offending node is added.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .errors import CompileError

#: operations whose tensors come from external memory
EXTERNAL_OPS = frozenset({"input", "weight"})

Matrix = list[list[float]]
IntMatrix = list[list[int]]


@dataclass
class Node:
    """One node: ``op`` applied to the nodes ``inputs``, giving a ``shape`` tensor."""
    id: int
    op: str
    inputs: tuple[int, ...]
    shape: tuple[int, int]
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return self.shape[0]

    @property
    def cols(self) -> int:
        return self.shape[1]

    @property
    def size(self) -> int:
        """Words the tensor occupies (one value per word)."""
        return self.shape[0] * self.shape[1]

    @property
    def name(self) -> str | None:
        return self.attrs.get("name")

    @property
    def tag(self) -> str | None:
        return self.attrs.get("tag")

    def label(self) -> str:
        """How errors name the node: ``node 7 (matmul, 4x16)`` or ``node 0 (input 'x', 1x16)``."""
        what = f"{self.op} {self.name!r}" if self.name is not None else self.op
        return f"node {self.id} ({what}, {self.rows}x{self.cols})"


def _positive_int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CompileError(f"{what} must be a positive integer, got {value!r}")
    return value


def as_matrix(values, what: str, shape: tuple[int, int] | None = None) -> Matrix:
    """A rectangular 2-D list of finite floats (from lists, tuples or a numpy array)."""
    if hasattr(values, "tolist"):
        values = values.tolist()
    try:
        rows = [[float(x) for x in row] for row in values]
    except (TypeError, ValueError):
        raise CompileError(f"{what}: expected a 2-D array of numbers") from None
    if not rows or not rows[0]:
        raise CompileError(f"{what}: an empty matrix")
    if any(len(r) != len(rows[0]) for r in rows):
        raise CompileError(f"{what}: rows of different lengths")
    if not all(math.isfinite(x) for r in rows for x in r):
        raise CompileError(f"{what}: holds a value that is not finite")
    if shape is not None and (len(rows), len(rows[0])) != tuple(shape):
        raise CompileError(f"{what}: expected shape {shape[0]}x{shape[1]}, got {len(rows)}x{len(rows[0])}")
    return rows


class Graph:
    """A tensor graph under construction; every method returns the new node's id."""

    def __init__(self):
        self.nodes: list[Node] = []
        self._names: dict[str, int] = {}

    # -- helpers
    def _add(self, op: str, inputs: Sequence[int], shape: tuple[int, int], **attrs) -> int:
        node = Node(len(self.nodes), op, tuple(inputs), (int(shape[0]), int(shape[1])), dict(attrs))
        self.nodes.append(node)
        return node.id

    def node(self, nid: int) -> Node:
        return self.nodes[nid]

    def _operand(self, nid, consumer: str) -> Node:
        """The node ``nid`` as an operand of a new ``consumer`` node, or a refusal."""
        if isinstance(nid, bool) or not isinstance(nid, int) or not 0 <= nid < len(self.nodes):
            raise CompileError(f"{consumer}: operand {nid!r} is not a node of this graph "
                               f"(ids are 0..{len(self.nodes) - 1})")
        node = self.nodes[nid]
        if node.op == "output":
            raise CompileError(f"{consumer}: operand {node.label()} is an output; use the tensor it stores "
                               f"(node {node.inputs[0]}) instead")
        if node.op == "argmax" and consumer != "output":
            raise CompileError(f"{consumer}: operand {node.label()} holds int32 indices, which can only be "
                               f"stored as an output")
        if node.attrs.get("q16") and consumer != "output":
            raise CompileError(f"{consumer}: operand {node.label()} holds the softmax unit's Q0.16 "
                               f"probabilities (int32 words, 65536 = 1), which can only be stored as an output")
        return node

    def _claim_name(self, name, kind: str) -> str:
        if not isinstance(name, str) or not name:
            raise CompileError(f"{kind}: a name must be a non-empty string, got {name!r}")
        if name in self._names:
            raise CompileError(f"{kind} {name!r}: the name is already used by "
                               f"{self.nodes[self._names[name]].label()} (external names must be unique)")
        return name

    # -- leaves
    def input(self, name: str, shape: tuple[int, int]) -> int:
        """A tensor supplied at run time, ``shape = (rows, cols)``."""
        self._claim_name(name, "input")
        try:
            rows, cols = shape
        except (TypeError, ValueError):
            raise CompileError(f"input {name!r}: shape must be (rows, cols), got {shape!r}") from None
        shape = (_positive_int(rows, f"input {name!r} rows"), _positive_int(cols, f"input {name!r} cols"))
        nid = self._add("input", (), shape, name=name)
        self._names[name] = nid
        return nid

    def weight(self, name: str, array) -> int:
        """A constant matrix, quantized to int8 with a scale from its own range."""
        self._claim_name(name, "weight")
        values = as_matrix(array, f"weight {name!r}")
        nid = self._add("weight", (), (len(values), len(values[0])), name=name, array=values)
        self._names[name] = nid
        return nid

    # -- arithmetic
    def matmul(self, a: int, b: int, transpose_b: bool = False, scale: float = 1.0) -> int:
        """``scale * (a @ b)``, or ``scale * (a @ b^T)`` when ``transpose_b``."""
        na, nb = self._operand(a, "matmul"), self._operand(b, "matmul")
        b_rows, b_cols = (nb.cols, nb.rows) if transpose_b else nb.shape
        if na.cols != b_rows:
            raise CompileError(f"matmul: {na.label()} x {nb.label()}{'^T' if transpose_b else ''}: "
                               f"inner dimensions {na.cols} and {b_rows} differ")
        if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
            raise CompileError(f"matmul of {na.label()} and {nb.label()}: scale must be a positive number "
                               f"(the requantizer's multiplier is unsigned), got {scale!r}")
        return self._add("matmul", (a, b), (na.rows, b_cols), transpose_b=bool(transpose_b), scale=float(scale))

    def softmax(self, a: int, q16: bool = False) -> int:
        """Softmax of every row (the chip's input format: int8 at 1/16; output at 1/127).

        ``q16=True``: the tensor is the softmax unit's own output, its Q0.16 probabilities
        (int32 words, 65536 = 1, scale 1/65536), not requantized to int8; such a tensor can
        only be stored as an output (like an argmax's indices)."""
        na = self._operand(a, "softmax")
        if not isinstance(q16, bool):
            raise CompileError(f"softmax of {na.label()}: q16 must be True or False, got {q16!r}")
        return self._add("softmax", (a,), na.shape, **({"q16": True} if q16 else {}))

    def add(self, a: int, b: int) -> int:
        na, nb = self._operand(a, "add"), self._operand(b, "add")
        if na.shape != nb.shape:
            raise CompileError(f"add: shapes differ: {na.label()} and {nb.label()}")
        return self._add("add", (a, b), na.shape)

    def relu(self, a: int) -> int:
        """max(0, a); fused into the requantizer of the matmul that computes ``a``, or, after an
        add, one RQ of the sum in place (ratio 1, clamped at 0)."""
        na = self._operand(a, "relu")
        if na.op == "slice":
            raise CompileError(f"relu of {na.label()}: a slice is a view into node {na.inputs[0]}'s buffer; "
                               f"a relu would have to write its own copy, and views are all the compiler can do")
        if na.op not in ("matmul", "add"):
            raise CompileError(f"relu of {na.label()}: a relu is fused into a matmul's requantizer (or "
                               f"follows an add in place), so its operand must be a matmul or an add")
        return self._add("relu", (a,), na.shape)

    def rescale(self, a: int) -> int:
        """A copy of ``a`` at a scale of its own (one RQ): the same numbers, free of ``a``'s scale group.

        For a tensor two consumers want at different scales: logits read by an argmax at their
        own range and by a softmax, whose input is pinned to 1/16 (``g.softmax(g.rescale(z))``)."""
        na = self._operand(a, "rescale")
        return self._add("rescale", (a,), na.shape)

    # -- views
    def concat_rows(self, a: int, b: int) -> int:
        """``a`` on top of ``b``: both are written straight into the concatenation's buffer."""
        na, nb = self._operand(a, "concat_rows"), self._operand(b, "concat_rows")
        for part in (na, nb):
            if part.op == "slice":
                raise CompileError(f"concat_rows: part {part.label()} is a slice, a view into node "
                                   f"{part.inputs[0]}'s buffer; it cannot also live in the concatenation's "
                                   f"buffer without a copy")
        if a == b:
            raise CompileError(f"concat_rows: both parts are {na.label()}; a tensor can be placed in only "
                               f"one concatenation")
        if na.cols != nb.cols:
            raise CompileError(f"concat_rows: widths differ: {na.label()} and {nb.label()}")
        return self._add("concat", (a, b), (na.rows + nb.rows, na.cols))

    def slice_rows(self, a: int, start: int, count: int) -> int:
        """Rows ``start .. start+count-1`` of ``a``: a view (no instruction, no copy), with ``a``'s scale."""
        na = self._operand(a, "slice_rows")
        for value, what in ((start, "start"), (count, "count")):
            if isinstance(value, bool) or not isinstance(value, int):
                raise CompileError(f"slice_rows of {na.label()}: {what} must be an integer, got {value!r}")
        if count < 1:
            raise CompileError(f"slice_rows of {na.label()}: an empty slice (count={count}); a slice "
                               f"has at least one row")
        if start < 0 or start + count > na.rows:
            raise CompileError(f"slice_rows of {na.label()}: rows {start}..{start + count - 1} do not lie "
                               f"inside its {na.rows} rows")
        return self._add("slice", (a,), (count, na.cols), start=start, count=count)

    # -- results
    def argmax(self, a: int) -> int:
        """The index of the first maximum of every row, shape ``(rows, 1)``."""
        return self._add("argmax", (a,), (self._operand(a, "argmax").rows, 1))

    def output(self, a: int, name: str) -> int:
        """Store ``a`` to external memory under ``name``."""
        na = self._operand(a, "output")
        self._claim_name(name, "output")
        nid = self._add("output", (a,), na.shape, name=name)
        self._names[name] = nid
        return nid

    def tag(self, a: int, name: str) -> int:
        """Give tensor ``a`` a range name (``compile_graph(ranges={name: r})`` fixes its range); returns ``a``."""
        node = self._operand(a, "tag")
        if not isinstance(name, str) or not name:
            raise CompileError(f"tag of {node.label()}: a tag must be a non-empty string, got {name!r}")
        node.attrs["tag"] = name
        return a

    # -- queries
    def consumers(self) -> dict[int, list[int]]:
        """node id -> the ids of the nodes that read it, in order."""
        users: dict[int, list[int]] = {n.id: [] for n in self.nodes}
        for n in self.nodes:
            for i in n.inputs:
                users[i].append(n.id)
        return users

    def inputs_by_name(self) -> dict[str, Node]:
        return {n.name: n for n in self.nodes if n.op == "input"}

    def outputs_by_name(self) -> dict[str, Node]:
        return {n.name: n for n in self.nodes if n.op == "output"}

    def __len__(self) -> int:
        return len(self.nodes)


def check_inputs(graph: Graph, inputs: Mapping[str, Any], what: str) -> dict[str, Matrix]:
    """The run-time inputs as float matrices of the declared shapes, or a refusal naming the input."""
    declared = graph.inputs_by_name()
    if not isinstance(inputs, Mapping):
        raise CompileError(f"{what}: inputs must be a mapping from input name to a 2-D array")
    unknown = [k for k in inputs if k not in declared]
    if unknown:
        raise CompileError(f"{what}: {', '.join(map(repr, unknown))} is not an input of the graph "
                           f"(inputs: {', '.join(declared) or 'none'})")
    values = {}
    for name, node in declared.items():
        if name not in inputs:
            raise CompileError(f"{what}: input {name!r} ({node.label()}) was not given")
        values[name] = as_matrix(inputs[name], f"{what}: input {name!r} ({node.label()})", node.shape)
    return values
