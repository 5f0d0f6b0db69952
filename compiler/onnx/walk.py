"""The walk over an ONNX graph: each node, in order, becomes Capra operations, a view, a host-side
step or a refusal naming the node, its op and why (:class:`_Walk`)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ga2_hdl.config import Config

from ..errors import CompileError
from ..graph import Graph
from .errors import OnnxError, require
from .values import (Act, Built, Const, DYNAMIC_OPS, FLOAT, Host, NodeReport, OutputInfo, Unknown, _Refused, _type_name)




class _Walk:
    def __init__(self, model, batch: int, config: Config):
        self.onnx = require("onnx")
        from onnx import numpy_helper
        self.np_of = numpy_helper.to_array
        self.model, self.batch, self.config = model, batch, config
        self.g = Graph()
        self.values: dict[str, Any] = {}
        self.owner: dict[int, int] = {}
        self.names: set[str] = set()
        self.reports: list[NodeReport] = []
        self.joins: list[tuple[int, int, int]] = []
        graph = model.graph
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
        self.readers: dict[str, list[int]] = {}
        for i, node in enumerate(graph.node):
            for name in node.input:
                if name:
                    self.readers.setdefault(name, []).append(i)
        self.graph_outputs = {o.name for o in graph.output}
        self.producer = {out: i for i, node in enumerate(graph.node) for out in node.output}
        self.argmaxed = self._softmaxes_under_argmax()

    # -- helpers
    def unique(self, name: str) -> str:
        base, k = name or "t", 1
        while name in self.names or not name:
            k += 1
            name = f"{base}#{k}"
        self.names.add(name)
        return name

    def made(self, nid: int) -> int:
        self.owner[nid] = self.index
        self.report.capra.append(nid)
        return nid

    def refuse(self, why: str):
        raise _Refused(why)

    def attrs(self, node) -> dict[str, Any]:
        out = {}
        for a in node.attribute:
            v = self.onnx.helper.get_attribute_value(a)
            out[a.name] = v.decode() if isinstance(v, bytes) else v
        return out

    def _resolve(self, name: str) -> str:
        """Follow Identity nodes back to the tensor they alias."""
        seen = 0
        while name in self.producer and self.model.graph.node[self.producer[name]].op_type == "Identity" \
                and seen < len(self.model.graph.node):
            name = self.model.graph.node[self.producer[name]].input[0]
            seen += 1
        return name

    def _softmaxes_under_argmax(self) -> set[str]:
        """The Softmax outputs an ArgMax reads (through Identity nodes): their input will be read too."""
        marked = set()
        for node in self.model.graph.node:
            if node.op_type == "ArgMax" and node.input:
                src = self._resolve(node.input[0])
                if src in self.producer and self.model.graph.node[self.producer[src]].op_type == "Softmax":
                    marked.add(src)
        return marked

    def act(self, name: str, what: str, transposed: bool = False) -> Act:
        v = self.values.get(name)
        if isinstance(v, Act):
            if v.transposed and not transposed:
                self.refuse(f"its {what} {name!r} is a Transpose, which is mapped only as the second operand "
                            f"of a MatMul (the MM's transposed B)")
            return v
        if isinstance(v, Unknown):
            raise _Refused(f"not reached: its {what} {name!r} {v.cause}")
        if isinstance(v, Const):
            self.refuse(f"its {what} {name!r} is a constant; the chip computes on the model's input "
                        f"(fold the constants before exporting)")
        if isinstance(v, Host):
            self.refuse(f"its {what} {name!r} is a label the host computes after an ArgMax")
        self.refuse(f"its {what} {name!r} is not produced by any node")

    def const(self, name: str, what: str) -> np.ndarray:
        v = self.values.get(name)
        if isinstance(v, Const):
            return v.array
        if isinstance(v, Unknown):
            raise _Refused(f"not reached: its {what} {name!r} {v.cause}")
        self.refuse(f"its {what} {name!r} must be a constant (an initializer), the chip has no "
                    f"instruction for a product of two computed tensors in a batch of rows")

    def weight(self, name: str, array: np.ndarray) -> int:
        array = np.asarray(array, dtype=np.float64)
        if not np.all(np.isfinite(array)):
            self.refuse(f"constant {name!r} holds a value that is not finite")
        return self.made(self.g.weight(self.unique(name), array))

    def row_constant(self, c: np.ndarray, features: tuple[int, ...], what: str) -> np.ndarray:
        """A constant broadcast to one row of ``features`` (never along the batch axis), flattened."""
        c = np.asarray(c, dtype=np.float64)
        if c.ndim > len(features) + 1 or (c.ndim == len(features) + 1 and c.shape[0] != 1):
            self.refuse(f"its {what} of shape {tuple(c.shape)} differs from row to row of the batch; only a "
                        f"constant that is the same for every input row can be added")
        try:
            return np.broadcast_to(c, (1, *features)).reshape(-1)
        except ValueError:
            self.refuse(f"its {what} of shape {tuple(c.shape)} does not broadcast to a row of shape "
                        f"{features}")

    def add_row(self, act: Act, row: np.ndarray, name: str) -> Act:
        if not np.any(row):
            return act                                   # adding zeros: nothing to do
        w = self.weight(name, np.tile(row, (self.g.nodes[act.nid].rows, 1)))
        out = Act(self.made(self.g.add(act.nid, w)), act.features)
        self.joins.append((act.nid, w, out.nid))
        return out

    def product(self, act: Act, W: np.ndarray, transposed: bool, name: str) -> Act:
        if len(act.features) != 1:
            self.refuse(f"its input is a (N, {', '.join(map(str, act.features))}) tensor; products are of "
                        f"(rows, features) tensors only (flatten first)")
        if W.ndim != 2:
            self.refuse(f"its weight {name!r} has shape {tuple(W.shape)}; a 2-D matrix is needed")
        k, n = (W.shape[1], W.shape[0]) if transposed else W.shape
        if k != act.width:
            self.refuse(f"inner dimensions {act.width} and {k} differ")
        if k > self.config.max_k:
            self.refuse(f"inner dimension {k} exceeds the matrix unit's {self.config.max_k} on the "
                        f"{self.config.name} chip (config.max_k: one MM sums all of K, and the chip has no "
                        f"int32 add to join partial sums)")
        if W.size > self.config.spad_words:
            self.refuse(f"its weight {name!r} is {W.shape[0]}x{W.shape[1]} = {W.size:,} words; the "
                        f"{self.config.name} chip's scratchpad holds {self.config.spad_words:,} words")
        w = self.weight(name, W)
        return Act(self.made(self.g.matmul(act.nid, w, transpose_b=transposed)), (n,))

    def axis(self, axis: int, rank: int) -> int:
        if not -rank <= axis < rank:
            self.refuse(f"axis {axis} is outside a rank-{rank} tensor")
        return axis % rank

    # -- the model's input
    def take_input(self):
        graph = self.model.graph
        inits = {t.name for t in graph.initializer}
        inputs = [i for i in graph.input if i.name not in inits]
        if len(inputs) != 1:
            raise OnnxError(f"the model has {len(inputs)} inputs ({', '.join(i.name for i in inputs) or 'none'}); "
                            f"ga2 onnx feeds exactly one (the input rows)")
        inp = inputs[0]
        tt = inp.type.tensor_type
        if not inp.type.HasField("tensor_type") or tt.elem_type != FLOAT:
            raise OnnxError(f"input {inp.name!r}: the chip takes float tensors (quantized to int8), not "
                            f"{self.onnx.helper.tensor_dtype_to_string(tt.elem_type) if tt.elem_type else 'a non-tensor'}")
        dims = list(tt.shape.dim)
        if len(dims) < 2:
            raise OnnxError(f"input {inp.name!r}: shape of rank {len(dims)}; the chip takes (N, features...) rows")
        features = []
        for d in dims[1:]:
            if not d.HasField("dim_value") or d.dim_value < 1:
                shown = ", ".join(str(x.dim_value) if x.HasField("dim_value") else (x.dim_param or "?") for x in dims)
                raise OnnxError(f"input {inp.name!r} has a dynamic shape ({shown}): only the first axis (the "
                                f"input rows) may vary; the chip's programs have fixed sizes")
            features.append(int(d.dim_value))
        self.input_name = inp.name
        self.input_features = tuple(features)
        self.input_batch = int(dims[0].dim_value) if dims[0].HasField("dim_value") and dims[0].dim_value > 0 else None
        self.names.add(inp.name)
        nid = self.g.input(inp.name, (self.batch, math.prod(features)))
        self.values[inp.name] = Act(nid, self.input_features)
        for t in graph.initializer:
            self.values[t.name] = Const(self.np_of(t))

    # -- the nodes
    def run(self):
        self.take_input()
        for i, node in enumerate(self.model.graph.node):
            self.index = i
            self.report = NodeReport(i, node.name, node.op_type)
            self.reports.append(self.report)
            try:
                if node.domain not in ("", "ai.onnx", "ai.onnx.ml"):
                    self.refuse(f"an op of the domain {node.domain!r}, which ga2 does not know")
                handler = getattr(self, f"op_{node.op_type}", None)
                if handler is None:
                    self.refuse(self._why_not(node.op_type))
                handler(node, self.attrs(node))
            except _Refused as r:
                self.report.refused = str(r)
                for out in node.output:
                    self.values[out] = Unknown(f"comes from the refused {self.report.label}")
            except CompileError as e:          # Capra's own refusal while building the node
                self.report.refused = str(e)
                for out in node.output:
                    self.values[out] = Unknown(f"comes from the refused {self.report.label}")
        self.check_relus()
        return self.finish()

    def _why_not(self, op: str) -> str:
        if op in ("Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool"):
            return "convolutions and pooling are not supported (the importer maps products of rows; lower it to MatMul)"
        if op in DYNAMIC_OPS:
            return "a dynamic shape: the chip's programs have fixed sizes"
        if op in ("QuantizeLinear", "DequantizeLinear", "QLinearMatMul", "MatMulInteger"):
            return "a quantized (QDQ) model: give ga2 the float model; Capra calibrates its own int8 scales"
        return "an op the importer does not map (see docs/onnx.md for the ops it does)"

    def set(self, node, value, became: str, host: bool = False):
        self.values[node.output[0]] = value
        self.report.became = became
        self.report.host = host

    def op_Identity(self, node, a):
        v = self.values.get(node.input[0])
        if isinstance(v, Unknown):
            self.refuse(f"not reached: its input {node.input[0]!r} {v.cause}")
        if v is None:
            self.refuse(f"its input {node.input[0]!r} is not produced by any node")
        self.set(node, v, "nothing (an alias)" if not isinstance(v, Host) else "host: identity",
                 isinstance(v, Host))

    def op_Constant(self, node, a):
        if "value" in a:
            arr = self.np_of(a["value"])
        elif "value_float" in a or "value_int" in a:
            arr = np.array(a.get("value_float", a.get("value_int")))
        elif "value_floats" in a or "value_ints" in a:
            arr = np.array(a.get("value_floats", a.get("value_ints")))
        else:
            self.refuse("a Constant of a kind the importer does not read (sparse or string)")
        self.set(node, Const(arr), "a constant (folded)")

    def op_Cast(self, node, a):
        to = a.get("to")
        v = self.values.get(node.input[0])
        if isinstance(v, Host):
            dtype = self.onnx.helper.tensor_dtype_to_np_dtype(to)
            self.set(node, v.then("cast", lambda x, t=dtype: np.asarray(x).astype(t)),
                     f"host: cast to {_type_name(self.onnx, to)}", True)
        elif isinstance(v, Const):
            self.set(node, Const(v.array.astype(self.onnx.helper.tensor_dtype_to_np_dtype(to))), "a constant (folded)")
        else:
            act = self.act(node.input[0], "input")
            if to != FLOAT:
                self.refuse(f"a cast of a float tensor to {_type_name(self.onnx, to)}: the "
                            f"chip's tensors are int8 numbers at a scale; only a cast to the type a tensor "
                            f"already has (float) is an alias")
            self.set(node, act, "nothing (a cast to float of a float tensor)")

    def fixed_rows(self, what: str) -> None:
        """Refuse ``what`` in a model whose first axis is a batch of independent rows."""
        if self.input_batch is None:
            self.refuse(f"{what} mixes the input rows of a batch; it is mapped only in a model of a fixed "
                        f"first dimension (whose rows are one input)")

    def op_MatMul(self, node, a):
        act = self.act(node.input[0], "first operand")
        other = self.values.get(node.input[1])
        if isinstance(other, Act):                  # a product of two computed tensors (attention)
            self.fixed_rows("a product of two computed tensors")
            b = self.act(node.input[1], "second operand", transposed=True)
            if len(act.features) != 1 or len(b.features) != 1:
                self.refuse("products are of (rows, features) tensors only")
            k = act.width
            if k > self.config.max_k:
                self.refuse(f"inner dimension {k} exceeds the matrix unit's {self.config.max_k} on the "
                            f"{self.config.name} chip (config.max_k)")
            n = self.g.nodes[b.nid].rows if b.transposed else b.width
            out = Act(self.made(self.g.matmul(act.nid, b.nid, transpose_b=b.transposed)), (n,))
            self.set(node, out, "matmul of two computed tensors" + (" (B transposed in the MM)" if b.transposed
                                                                    else ""))
            return
        W = self.const(node.input[1], "second operand")
        out = self.product(act, np.asarray(W, dtype=np.float64), False, node.input[1])
        self.set(node, out, "matmul")

    def op_Gemm(self, node, a):
        if a.get("transA", 0):
            self.refuse("transA=1: the input rows would become columns; only transA=0 is mapped")
        act = self.act(node.input[0], "A")
        B = np.asarray(self.const(node.input[1], "B"), dtype=np.float64) * float(a.get("alpha", 1.0))
        transposed = bool(a.get("transB", 0))
        out = self.product(act, B, transposed, node.input[1])
        became = "matmul" + (" (B transposed in the MM)" if transposed else "")
        if len(node.input) > 2 and node.input[2]:
            C = np.asarray(self.const(node.input[2], "C"), dtype=np.float64) * float(a.get("beta", 1.0))
            row = self.row_constant(C, out.features, "C")
            out2 = self.add_row(out, row, node.input[2])
            if out2 is not out:
                became += " + add of C"
            out = out2
        self.set(node, out, became)

    def op_Add(self, node, a):
        x, y = (self.values.get(n) for n in node.input)
        if isinstance(x, Const) and isinstance(y, Const):
            self.set(node, Const(x.array + y.array), "a constant (folded)")
            return
        if isinstance(x, Const):
            x, y = y, x
            names = node.input[::-1]
        else:
            names = list(node.input)
        if isinstance(y, Const):
            act = self.act(names[0], "input")
            row = self.row_constant(y.array, act.features, f"constant {names[1]!r}")
            out = self.add_row(act, row, names[1])
            self.set(node, out, "add of a constant row" if out is not act else "nothing (adds zeros)")
            return
        xa, ya = self.act(node.input[0], "first operand"), self.act(node.input[1], "second operand")
        if xa.features != ya.features:
            self.refuse(f"operands of shapes (N, {xa.features}) and (N, {ya.features}); the chip adds tensors "
                        f"of the same shape")
        self.set(node, Act(self.made(self.g.add(xa.nid, ya.nid)), xa.features), "add (residual)")

    def op_Transpose(self, node, a):
        act = self.act(node.input[0], "input")
        if len(act.features) != 1 or a.get("perm", [1, 0]) not in ([1, 0], (1, 0)):
            self.refuse("only the transpose of a (rows, features) tensor is mapped")
        self.fixed_rows("a transpose")
        self.set(node, Act(act.nid, act.features, transposed=True), "nothing (read as the MM's transposed B)")

    def op_Concat(self, node, a):
        vals = [self.values.get(n) for n in node.input]
        if all(isinstance(v, Const) for v in vals):
            self.set(node, Const(np.concatenate([v.array for v in vals], axis=int(a.get("axis", 0)))),
                     "a constant (folded)")
            return
        rank = 2
        axis = self.axis(int(a.get("axis", 0)), rank)
        if axis != 0:
            self.refuse("a concatenation along the features; the chip's views concatenate rows")
        self.fixed_rows("a concatenation of rows")
        parts = []
        for name, v in zip(node.input, vals):
            if isinstance(v, Const):
                arr = np.asarray(v.array, dtype=np.float64)
                if arr.ndim != 2:
                    self.refuse(f"its constant part {name!r} is not 2-D")
                parts.append(Act(self.weight(name, arr), (arr.shape[1],)))
            else:
                parts.append(self.act(name, "part"))
        if any(len(p.features) != 1 or p.features != parts[0].features for p in parts):
            self.refuse("parts of different widths")
        nid = parts[0].nid
        for p in parts[1:]:
            nid = self.made(self.g.concat_rows(nid, p.nid))
        self.set(node, Act(nid, parts[0].features), "concat_rows (a view: the parts are written into one buffer)")

    def op_Mul(self, node, a):
        self._scalar(node, lambda c: c, "Mul")

    def op_Div(self, node, a):
        self._scalar(node, lambda c: 1.0 / c, "Div")

    def _scalar(self, node, factor_of, op: str):
        x, y = (self.values.get(n) for n in node.input)
        if isinstance(x, Const) and isinstance(y, Const):
            self.set(node, Const(x.array * y.array if op == "Mul" else x.array / y.array), "a constant (folded)")
            return
        names = list(node.input)
        if isinstance(x, Const) and op == "Mul":
            x, y, names = y, x, names[::-1]
        act = self.act(names[0], "input")
        c = np.asarray(self.const(names[1], "factor"), dtype=np.float64)
        src = self.g.nodes[act.nid]
        value = float(c.reshape(-1)[0]) if c.size == 1 else None
        if value is None or not np.isfinite(value) or value == 0 or (factor_of(value) <= 0):
            self.refuse(f"a {op} is mapped only by a positive scalar (folded into a MatMul's factor)")
        if src.op != "matmul" or len(self.readers.get(names[0], [])) != 1 or names[0] in self.graph_outputs:
            self.refuse(f"a {op} by a scalar is mapped only on a MatMul read by nothing else (its factor)")
        src.attrs["scale"] *= factor_of(value)
        self.set(node, act, f"folded into the product's factor (x {factor_of(value):g})")

    def op_Relu(self, node, a):
        act = self.act(node.input[0], "input")
        src = self.g.nodes[act.nid]
        if src.op not in ("matmul", "add"):
            what = "the model's input" if src.op == "input" else f"a {src.op}"
            self.refuse(f"its input {node.input[0]!r} is {what}; the chip applies a relu in the "
                        f"requantizer of a MatMul/Gemm, or in place after an Add")
        kind = "fused into the matmul's requantizer" if src.op == "matmul" else "one RQ of the sum in place"
        self.set(node, Act(self.made(self.g.relu(act.nid)), act.features), f"relu ({kind})")

    def op_Softmax(self, node, a):
        act = self.act(node.input[0], "input")
        rank = 1 + len(act.features)
        default = -1 if self.opset >= 13 else 1
        axis = self.axis(int(a.get("axis", default)), rank)
        if axis == 0:
            self.refuse("a softmax along axis 0, across the input rows; the chip's softmax runs along a row")
        if self.opset >= 13 and axis != rank - 1:
            self.refuse(f"a softmax along axis {axis} of a rank-{rank} tensor; the chip's softmax runs along "
                        f"the last axis of (rows, features) tensors")
        if self.opset >= 13 and rank > 2 and math.prod(act.features[:-1]) != 1:
            self.refuse(f"a softmax along the last axis of a (N, {', '.join(map(str, act.features))}) tensor: "
                        f"several softmaxes per row; the chip's softmax runs along a whole row")
        shared = (len(self.readers.get(node.input[0], [])) > 1 or node.input[0] in self.graph_outputs
                  or node.output[0] in self.argmaxed)
        src = act.nid
        if shared:
            src = self.made(self.g.rescale(act.nid))
        out = Act(self.made(self.g.softmax(src)), act.features, softmax_of=act)
        self.set(node, out, "softmax (SM per row, RQ to 1/127)"
                 + ("; its input first rescaled to the unit's 1/16 (one RQ), as other nodes read it" if shared
                    else "; its input's scale pinned to the unit's 1/16"))

    def op_Flatten(self, node, a):
        v = self.values.get(node.input[0])
        if isinstance(v, Host):
            axis = int(a.get("axis", 1))
            self.set(node, v.then("flatten", lambda x, k=axis: x.reshape(
                (int(np.prod(x.shape[:k])), -1))), "host: flatten", True)
            return
        act = self.act(node.input[0], "input")
        rank = 1 + len(act.features)
        axis = int(a.get("axis", 1))
        if not -rank <= axis <= rank:
            self.refuse(f"axis {axis} is outside a rank-{rank} tensor")
        if axis < 0:
            axis += rank
        if axis == 0 or math.prod(act.features[:axis - 1]) != 1:
            self.refuse(f"Flatten(axis={axis}) of a (N, {', '.join(map(str, act.features))}) tensor merges the "
                        f"input rows; only a flatten that keeps the rows is a view")
        self.set(node, Act(act.nid, (act.width,), act.softmax_of), "nothing (a view)")

    def op_Reshape(self, node, a):
        v = self.values.get(node.input[0])
        shape = [int(s) for s in np.asarray(self.const(node.input[1], "shape")).reshape(-1)]
        allowzero = int(a.get("allowzero", 0))
        if isinstance(v, Host):
            def reshape(x, shape=shape):
                target = [x.shape[i] if (s == 0 and not allowzero) else s for i, s in enumerate(shape)]
                return x.reshape(target)
            self.set(node, v.then("reshape", reshape), f"host: reshape to {shape}", True)
            return
        act = self.act(node.input[0], "input")
        dims = [None, *act.features]                   # None: the input rows
        target = []
        for i, s in enumerate(shape):
            if s == 0 and not allowzero:
                if i >= len(dims):
                    self.refuse(f"shape {shape}: a 0 beyond the input's rank")
                target.append(dims[i])
            else:
                target.append(s)
        rows = target[0]
        rest = target[1:]
        if rows is None:
            if rest.count(-1) > 1 or any(s is None for s in rest):
                self.refuse(f"shape {shape} is not a reshape of the features alone")
            if -1 in rest:
                known = math.prod(s for s in rest if s != -1)
                if known == 0 or act.width % known:
                    self.refuse(f"shape {shape} does not divide the {act.width} features of a row")
                rest = [act.width // known if s == -1 else s for s in rest]
        elif rows == -1 and all(isinstance(s, int) and s > 0 for s in rest):
            pass
        elif self.input_batch is not None and rows == self.input_batch and self.input_batch == 1:
            pass
        else:
            self.refuse(f"shape {shape} does not keep the input rows as the first axis; only reshapes of "
                        f"the features of each row are views")
        if not rest or math.prod(rest) != act.width or any(s < 1 for s in rest):
            self.refuse(f"shape {shape} does not hold the {act.width} features of a row")
        self.set(node, Act(act.nid, tuple(rest), act.softmax_of if len(rest) == 1 else None), "nothing (a view)")

    def op_Squeeze(self, node, a):
        v = self.values.get(node.input[0])
        if not isinstance(v, Host):
            self.refuse("a Squeeze on the chip's tensors is not mapped (only in the host's label tail)")
        axes = a.get("axes")
        if axes is None and len(node.input) > 1 and node.input[1]:
            axes = [int(x) for x in np.asarray(self.const(node.input[1], "axes")).reshape(-1)]
        self.set(node, v.then("squeeze", lambda x, ax=axes: np.squeeze(x, axis=None if ax is None else tuple(ax))),
                 "host: squeeze", True)

    def op_Unsqueeze(self, node, a):
        v = self.values.get(node.input[0])
        if not isinstance(v, Host):
            self.refuse("an Unsqueeze on the chip's tensors is not mapped (only in the host's label tail)")
        axes = a.get("axes")
        if axes is None and len(node.input) > 1:
            axes = [int(x) for x in np.asarray(self.const(node.input[1], "axes")).reshape(-1)]
        self.set(node, v.then("unsqueeze", lambda x, ax=tuple(axes): np.expand_dims(x, ax)), "host: unsqueeze",
                 True)

    def op_ArgMax(self, node, a):
        act = self.act(node.input[0], "input")
        if len(act.features) != 1:
            self.refuse(f"an argmax of a (N, {', '.join(map(str, act.features))}) tensor; the chip's AMAX runs "
                        f"along a whole row")
        rank = 2
        axis = self.axis(int(a.get("axis", 0)), rank)
        if axis != 1:
            self.refuse("an argmax along axis 0, across the input rows; the chip's AMAX runs along a row")
        if a.get("select_last_index", 0):
            self.refuse("select_last_index=1; the chip's AMAX gives the first maximum")
        keep = int(a.get("keepdims", 1))
        src, note = act, ""
        if act.softmax_of is not None:
            src = act.softmax_of
            note = " of the Softmax's input (a softmax keeps each row's order)"
        nid = self.made(self.g.argmax(src.nid))
        out_name = self.unique(node.output[0])
        self.made(self.g.output(nid, out_name))
        host = Host(out_name)
        if not keep:
            host = host.then("drop the kept axis", lambda x: x.reshape(-1))
        self.set(node, host, f"argmax (AMAX per row{note}), indices read by the host")

    def op_ArrayFeatureExtractor(self, node, a):
        table = np.asarray(self.const(node.input[0], "table"))
        v = self.values.get(node.input[1])
        if not isinstance(v, Host):
            self.refuse("only a label table indexed by an ArgMax's result (on the host) is mapped")
        flat = table.reshape(-1) if table.ndim <= 1 or table.shape[0] == 1 else None
        if flat is None:
            self.refuse(f"a table of shape {table.shape}; a 1-D label table is mapped")
        self.set(node, v.then("label table", lambda x, t=flat: t[np.asarray(x, dtype=np.int64)]),
                 f"host: label table of {flat.size} entries", True)

    # -- after the walk
    def check_relus(self):
        """A relu's operand must have no other reader (Capra clamps it in place): refused here, by ONNX node."""
        users = self.g.consumers()
        for n in self.g.nodes:
            if n.op != "relu":
                continue
            src = n.inputs[0]
            others = [u for u in users[src] if u != n.id]
            if others:
                rep = self.reports[self.owner[n.id]]
                readers = sorted({self.reports[self.owner[u]].label for u in others if u in self.owner})
                rep.refused = (f"its input is also read by {', '.join(readers) or 'an output'}; the chip clamps "
                               f"the tensor in place, so the Relu must be its only reader")

    def finish(self) -> Built:
        outputs = []
        self.index = len(self.reports)
        self.report = NodeReport(len(self.reports), "", "outputs")
        for o in self.model.graph.output:
            v = self.values.get(o.name)
            et = o.type.tensor_type.elem_type
            if isinstance(v, Act) and v.transposed:
                outputs.append(OutputInfo(o.name, "transposed"))
            elif isinstance(v, Act):
                name = self.unique(o.name)
                nid = self.g.output(v.nid, name)
                self.owner[nid] = self.producer.get(o.name, -1)
                outputs.append(OutputInfo(name, "chip", v.features, elem_type=et))
            elif isinstance(v, Host):
                outputs.append(OutputInfo(o.name, "host", host=v, elem_type=et))
            elif isinstance(v, Unknown):
                outputs.append(OutputInfo(o.name, "unknown"))
            else:
                outputs.append(OutputInfo(o.name, "constant"))
        return Built(self.g, self.batch, self.input_name, outputs, self.reports, self.owner, self.joins)
