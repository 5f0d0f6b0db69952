"""What the importer's walk knows of each ONNX value (a chip tensor, a constant, a host-side value,
or a value it refused), what it reports per node, and the helpers its messages share."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np


from ..graph import Graph


#: ONNX's FLOAT element type (TensorProto.FLOAT)
FLOAT = 1
#: ops evaluated on the host after an ArgMax (the classifier's label tail)
HOST_OPS = frozenset({"Identity", "Cast", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "ArrayFeatureExtractor"})
#: ops that make a value depend on a run-time shape
DYNAMIC_OPS = frozenset({"Shape", "Size", "ConstantOfShape", "NonZero", "Range", "Expand", "Tile"})


def _type_name(onnx, elem_type: int) -> str:
    return onnx.helper.tensor_dtype_to_string(elem_type).replace("TensorProto.", "")


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0]


@dataclass
class Act:
    """A tensor on the chip: Capra node ``nid`` of shape (B, prod(features))."""
    nid: int
    features: tuple[int, ...]
    softmax_of: "Act | None" = None      #: this is a Softmax on the last axis of that tensor
    transposed: bool = False             #: a pending Transpose: only a MatMul's second operand

    @property
    def width(self) -> int:
        return math.prod(self.features)


@dataclass
class Const:
    array: np.ndarray


@dataclass
class Host:
    """A value the host computes from a chip output (``source``: a Capra output of AMAX indices)."""
    source: str
    steps: list[tuple[str, Callable[[np.ndarray], np.ndarray]]] = field(default_factory=list)

    def then(self, what: str, fn) -> "Host":
        return Host(self.source, self.steps + [(what, fn)])

    def apply(self, indices: np.ndarray) -> np.ndarray:
        value = indices
        for _what, fn in self.steps:
            value = fn(value)
        return value


@dataclass
class Unknown:
    """The value of a node that was refused (or of one that depends on it)."""
    cause: str


class _Refused(Exception):
    pass


@dataclass
class NodeReport:
    """What one ONNX node became."""
    index: int
    name: str
    op: str
    became: str = ""
    capra: list[int] = field(default_factory=list)       #: the Capra nodes it made
    refused: str | None = None                            #: the refusal's reason
    host: bool = False                                    #: evaluated on the host

    @property
    def label(self) -> str:
        return f"node {self.name!r} ({self.op})" if self.name else f"node #{self.index} ({self.op})"

    def refusal(self) -> str:
        return f"{self.label}: {self.refused}"


@dataclass
class OutputInfo:
    """One graph output: computed on the chip (``kind`` "chip": a Capra output of the same name), or
    by the host from the chip's AMAX indices (``kind`` "host")."""
    name: str
    kind: str
    features: tuple[int, ...] = ()
    host: Host | None = None
    elem_type: int = FLOAT


@dataclass
class Built:
    """One batch's Capra graph and how the ONNX model maps onto it."""
    graph: Graph
    batch: int
    input_name: str                   #: the Capra input (the model's input name)
    outputs: list[OutputInfo]
    reports: list[NodeReport]
    owner: dict[int, int]             #: Capra node id -> index of the ONNX node that made it
    #: (tensor, constant row weight, their add) of every constant added to a computed tensor: the
    #: three can share one scale (see compiler/onnx/run.py's compile_batch)
    joins: list[tuple[int, int, int]] = field(default_factory=list)
