"""Calibration and the int8 scale plan: one scale per tensor, one requantizer per rescaling.

The rules (each tensor ``t`` stores ``q`` with ``t ~ q * scale``, ``|q| <= 127``):

* **Ranges.** Every calibration sample is evaluated in floating point; a
  node's range is the largest magnitude it takes.  A tagged node's range is
  replaced by ``ranges[tag]`` when given (so that, e.g., a KV cache keeps one
  scale from program to program).
* **Groups.** Tensors that are the same numbers in memory must share a scale:
  a concatenation and its two parts, a relu and its matmul, a slice and its
  source, an output and the tensor it stores.  A group's range is the largest
  range of its members; an add's group also covers both add operands (large
  operands may cancel, and each operand is rescaled to the sum's scale).
* **Pins.** The softmax unit reads int8 scores as real x/16, so a softmax
  input's group is pinned to 1/16; its probabilities are requantized to
  1/127 (a ``q16`` softmax keeps the unit's Q0.16 words: scale 1/65536, no
  requantizer).  Pins are applied in node order (a later pin wins).
* **Scale.** ``group range / 127`` (``1/127`` for a group that is all zeros),
  or the pin.  Argmax results are indices and have no scale.

Requantizers (a 24-bit mantissa ``m`` and a shift ``s``, ``ratio ~ m / 2**s``):

* matmul: ``factor * scale(a) * scale(b) / scale(result)``; a relu that is the
  matmul's only consumer is fused into it (the requantizer clamps at 0);
* softmax: Q0.16 probabilities to the output scale, ratio ``127 / 65536``;
* add: an operand whose scale differs from the sum's (by more than 1e-9
  relatively) is first requantized to the sum's scale, ratio
  ``scale(operand) / scale(sum)``; an operand already at that scale is used as is;
  a relu of the sum is one more RQ in place, ratio 1, clamped at 0;
* rescale: ``scale(operand) / scale(copy)`` (the copy has a group of its own).

This module is shared by the lowering (which emits these requantizers) and the
integer interpreter (which applies them), and by nothing else.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ga2_hdl import isa

from .errors import CompileError
from .graph import Graph, IntMatrix, Matrix
from .reference import evaluate

#: the softmax unit's input format: an int8 score x is the real x / isa.SM_SCORE_DIVISOR (16)
SOFTMAX_INPUT_SCALE = 1 / isa.SM_SCORE_DIVISOR
#: the scale softmax probabilities are requantized to
SOFTMAX_OUTPUT_SCALE = 1 / isa.INT8_MAX
#: the scale of a softmax kept as the unit's Q0.16 words (``Graph.softmax(a, q16=True)``)
SOFTMAX_Q16_SCALE = 1 / isa.Q16_ONE
#: Q0.16 probability -> int8 at SOFTMAX_OUTPUT_SCALE
SOFTMAX_RATIO = isa.INT8_MAX / isa.Q16_ONE
#: an add operand whose scale is within this relative distance of the sum's is not rescaled
SAME_SCALE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Requantizer:
    """One RQ's parameters: ``out = clamp(round(acc * mantissa / 2**shift))`` (relu: clamped at 0)."""
    mantissa: int
    shift: int
    relu: bool = False
    ratio: float = 0.0          # the real multiplier it approximates (for reports)

    def __call__(self, acc: int) -> int:
        return isa.requantize(acc, self.mantissa, self.shift, self.relu)


@dataclass
class ScalePlan:
    """The scales and requantizers of one compiled graph."""
    ranges: dict[int, float]                     # node -> calibrated range (tags applied)
    group: dict[int, int]                        # node -> its group's representative node
    scale: dict[int, float]                      # node -> int8 scale (no entry for argmax)
    matmul: dict[int, Requantizer] = field(default_factory=dict)
    softmax: dict[int, Requantizer] = field(default_factory=dict)
    add_rescale: dict[tuple[int, int], Requantizer] = field(default_factory=dict)  # (add, operand index)
    fused_relu: set[int] = field(default_factory=set)                               # matmuls with a relu
    add_relu: dict[int, Requantizer] = field(default_factory=dict)                  # add -> its relu's RQ
    rescale: dict[int, Requantizer] = field(default_factory=dict)                   # rescale nodes
    notes: list[str] = field(default_factory=list)


def quantize(x: float, scale: float) -> int:
    """A real number as int8 at ``scale``: round half away from zero, clamped to [-127, 127]."""
    v = x / scale
    q = int(abs(v) + 0.5)                         # floor(|v| + 1/2): ties away from zero
    return isa.clamp(q if v >= 0 else -q, isa.INT8_MIN, isa.INT8_MAX)


def quantize_matrix(values: Matrix, scale: float) -> IntMatrix:
    return [[quantize(x, scale) for x in row] for row in values]


def calibrate(graph: Graph, samples: Sequence[Mapping[str, Any]]) -> dict[int, float]:
    """The largest magnitude every node takes over the calibration samples."""
    if isinstance(samples, Mapping) or not len(samples):
        raise CompileError("calibration needs a non-empty list of input dicts (one per sample)")
    ranges: dict[int, float] = {}
    for k, sample in enumerate(samples):
        try:
            values = evaluate(graph, sample)
        except CompileError as e:
            raise CompileError(f"calibration sample {k}: {e}") from None
        for nid, matrix in values.items():
            ranges[nid] = max(ranges.get(nid, 0.0), max(map(abs, itertools.chain.from_iterable(matrix))))
    return ranges


def _share_scale_groups(graph: Graph) -> dict[int, int]:
    """node -> representative: the connected components of 'holds the same numbers as'."""
    rep = list(range(len(graph.nodes)))

    def find(x: int) -> int:
        while rep[x] != x:
            rep[x] = rep[rep[x]]
            x = rep[x]
        return x

    for n in graph.nodes:
        if n.op in ("concat", "relu", "slice", "output"):
            for i in n.inputs:
                rep[find(i)] = find(n.id)
    return {n.id: find(n.id) for n in graph.nodes}


def _requantizer(ratio: float, node_label: str, why: str, relu: bool = False) -> Requantizer:
    try:
        m, s = isa.mantissa_shift(ratio)
    except ValueError as e:
        raise CompileError(f"{node_label}: the {why} ratio {ratio:.6g} has no requantizer: {e}") from None
    return Requantizer(m, s, relu, ratio)


def fused_relus(graph: Graph) -> set[int]:
    """The matmuls and adds whose result is clamped at zero (a matmul's requantizer does it, an add
    gets one RQ in place); refuses a relu that cannot be fused."""
    users = graph.consumers()
    fused = set()
    for n in graph.nodes:
        if n.op != "relu":
            continue
        src = graph.nodes[n.inputs[0]]
        if src.op not in ("matmul", "add") or len(users[src.id]) != 1:
            raise CompileError(f"relu {graph.nodes[n.id].label()}: its operand {src.label()} must be a matmul "
                               f"or an add read by nothing else, so that the relu can be fused into its "
                               f"requantizer (it has {len(users[src.id])} consumers)")
        fused.add(src.id)
    return fused


def plan_scales(graph: Graph, samples: Sequence[Mapping[str, Any]],
                ranges: Mapping[str, float] | None = None) -> ScalePlan:
    """Calibrate, group, pin and choose every scale and requantizer of ``graph``."""
    measured = calibrate(graph, samples)
    for n in graph.nodes:
        if ranges and n.tag in ranges:
            r = ranges[n.tag]
            if not isinstance(r, (int, float)) or not r >= 0:
                raise CompileError(f"ranges[{n.tag!r}] = {r!r} (for {n.label()}) must be a number >= 0")
            measured[n.id] = float(r)
    group = _share_scale_groups(graph)

    group_range: dict[int, float] = {}
    for n in graph.nodes:
        g = group[n.id]
        if n.op != "argmax":
            group_range[g] = max(group_range.get(g, 0.0), measured[n.id])
        if n.op == "add":
            for i in n.inputs:
                group_range[g] = max(group_range[g], measured[i])

    notes: list[str] = []
    pinned: dict[int, float] = {}
    for n in graph.nodes:
        if n.op == "softmax":
            g_in = group[n.inputs[0]]
            pinned[g_in] = SOFTMAX_INPUT_SCALE
            limit = isa.INT8_MAX * SOFTMAX_INPUT_SCALE
            if group_range[g_in] > limit:
                notes.append(f"{graph.nodes[n.inputs[0]].label()}: scores reach {group_range[g_in]:.2f}, above the "
                             f"softmax input range of {limit:.2f}: they will saturate")
            pinned[group[n.id]] = SOFTMAX_Q16_SCALE if n.attrs.get("q16") else SOFTMAX_OUTPUT_SCALE

    scale: dict[int, float] = {}
    for n in graph.nodes:
        if n.op == "argmax":
            continue
        g = group[n.id]
        scale[n.id] = pinned.get(g, (group_range[g] if group_range[g] > 0 else 1.0) / isa.INT8_MAX)
        if g in pinned and n.op in ("concat", "relu", "slice", "input", "weight") \
                and measured[n.id] > pinned[g] * isa.INT8_MAX * 1.001:
            notes.append(f"{n.label()} reaches {measured[n.id]:.3f}, above the {pinned[g] * isa.INT8_MAX:.3f} its "
                         f"pinned scale can hold: it will saturate")

    fused = fused_relus(graph)
    plan = ScalePlan(measured, group, scale, fused_relu={i for i in fused if graph.nodes[i].op == "matmul"},
                     notes=notes)
    for n in graph.nodes:
        if n.op == "matmul":
            a, b = n.inputs
            ratio = n.attrs["scale"] * scale[a] * scale[b] / scale[n.id]
            plan.matmul[n.id] = _requantizer(ratio, n.label(), "matmul", relu=n.id in plan.fused_relu)
        elif n.op == "softmax" and not n.attrs.get("q16"):
            plan.softmax[n.id] = _requantizer(SOFTMAX_RATIO, n.label(), "softmax output")
        elif n.op == "add":
            for k, i in enumerate(n.inputs):
                ratio = scale[i] / scale[n.id]
                if abs(ratio - 1) >= SAME_SCALE_TOLERANCE:
                    plan.add_rescale[(n.id, k)] = _requantizer(ratio, n.label(), f"operand {k} rescale")
            if n.id in fused:
                plan.add_relu[n.id] = _requantizer(1.0, n.label(), "relu", relu=True)
        elif n.op == "rescale":
            plan.rescale[n.id] = _requantizer(scale[n.inputs[0]] / scale[n.id], n.label(), "rescale")
    return plan
