"""ONNX to a Capra graph: every node mapped, or refused in one line before any work.

A model has one input of shape ``(N, *features)``: ``N`` input rows (the batch
axis, symbolic or fixed), each of fixed feature dimensions.  The chip computes
every row alike, so a program takes a batch of ``B`` rows: the Capra tensors are
``(B, features)`` row-major, one input row per tensor row.  :meth:`Imported.build`
makes the Capra graph for a batch; the walk that builds it is also the check, so
``import_model`` (which builds a batch of one) refuses everything that cannot
run before any calibration, compilation or simulation.

What each ONNX node becomes (``B`` rows; ``K``, ``N`` the product's sizes):

============================  ==================================================================
MatMul(x, W)                  ``matmul``: one MM per output tile, one RQ (W a constant ``K x N``)
Gemm(x, W, C)                 ``matmul`` (``transB``: the MM's transposed B), then Add of ``C``;
                              ``alpha`` and ``beta`` are folded into the constants
Add(x, c) / Add(c, x)         ``add`` of a ``B``-row weight holding ``c`` broadcast to a row
Add(x, y)                     ``add`` (a residual): two tensors of the same shape
Relu(x)                       fused into the MatMul's requantizer, or one RQ after an Add
Softmax(x, last axis)         ``softmax`` (SM per row, RQ to 1/127); its input is first rescaled
                              to the unit's 1/16 (one RQ) when something else reads it too
ArgMax(x, last axis)          ``argmax`` (AMAX per row); of a Softmax, it reads the Softmax's
                              input (a softmax keeps each row's order, and the scores at their
                              own scale cannot saturate into ties)
Flatten, Reshape              views, when the batch axis stays the first and the features stay
                              in row-major order
Identity, Cast (same type)    nothing (an alias)
ArrayFeatureExtractor,        on the host, after an ArgMax: a label table, a reshape, a cast of
Cast, Reshape, ... (tail)     the labels
============================  ==================================================================

Everything else is refused, naming the node, its op and why.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any


from ga2_hdl.config import Config

from .errors import OnnxError, require
from .values import Built, NodeReport, OutputInfo, _first_line


from .walk import _Walk


def load_model(path: str | os.PathLike):
    """The ONNX model in ``path``, checked; :class:`OnnxError` (one line) for a file that is not one."""
    onnx = require("onnx")
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise OnnxError(f"{path}: cannot read: {e.strerror or e}") from None
    if not data:
        raise OnnxError(f"{path}: an empty file, not an ONNX model")
    try:
        model = onnx.load_from_string(data)
    except Exception as e:          # protobuf's DecodeError and friends: not a model, or truncated
        raise OnnxError(f"{path}: not an ONNX model (or a truncated one): {_first_line(e)}") from None
    if not model.ir_version or not model.HasField("graph") or not len(model.graph.node):
        raise OnnxError(f"{path}: not an ONNX model (no IR version or no graph nodes)")
    try:
        onnx.checker.check_model(model)
    except Exception as e:
        raise OnnxError(f"{path}: not a valid ONNX model: {_first_line(e)}") from None
    return model


@dataclass
class Imported:
    """A model the importer accepted (or not: :attr:`refusals`), ready to build a graph per batch."""
    model: Any
    config: Config
    input_name: str
    input_features: tuple[int, ...]
    input_batch: int | None              #: the model's fixed first dimension (None: symbolic)
    probe: Built                         #: the graph of a batch of one, and what each node became
    opset: int

    @property
    def reports(self) -> list[NodeReport]:
        return self.probe.reports

    @property
    def refusals(self) -> list[str]:
        """One line per refused node (the first is the cause; later ones may depend on it)."""
        return [r.refusal() for r in self.reports if r.refused]

    @property
    def outputs(self) -> list[OutputInfo]:
        return self.probe.outputs

    def check(self) -> None:
        """:class:`OnnxError` with the first refusal (one line), if any node was refused."""
        if self.refusals:
            raise OnnxError(self.refusals[0])
        why = {"constant": "a constant, which the chip does not compute", "unknown": "not computed",
               "transposed": "a Transpose, which the chip only reads as a product's transposed operand"}
        bad = [o for o in self.outputs if o.kind in why]
        if bad:
            raise OnnxError(f"output {bad[0].name!r} is {why[bad[0].kind]}")

    def build(self, batch: int) -> Built:
        """The Capra graph for ``batch`` input rows per program."""
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise OnnxError(f"a batch must be a positive number of rows, got {batch!r}")
        self.check()
        w = _Walk(self.model, batch, self.config)
        built = w.run()
        if any(r.refused for r in built.reports):          # cannot differ from the probe's; be sure
            raise OnnxError(next(r.refusal() for r in built.reports if r.refused))
        return built


def import_model(model, config: Config) -> Imported:
    """Walk ``model`` once for a batch of one row: what every node becomes, or why it is refused.

    Raises :class:`OnnxError` only for a model whose input cannot be taken; node refusals are in
    :attr:`Imported.refusals` (``Imported.check()`` raises the first)."""
    w = _Walk(model, 1, config)
    probe = w.run()
    return Imported(model, config, w.input_name, w.input_features, w.input_batch, probe, w.opset)
