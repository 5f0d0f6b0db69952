"""Beyond a classifier: the chapter's transformer block as an ONNX graph, imported and run on GA2.

    python examples/onnx_transformer.py [--context 8] [--config NAME] [--save DIR]

The tiny model's decode step (spec/tiny_lm.py: one layer, one head, D = 16, HID = 32), written
with ``onnx.helper`` for one query row over a fixed context: the cache of the earlier tokens'
keys and values is a constant of the graph, the new token's embedding row the one input (shape
``(1, 16)``, a fixed first dimension, so its rows are one input, not a batch)::

    q, k, v = x Wq, x Wk, x Wv
    K = Concat(Kc, k), V = Concat(Vc, v)                 (rows: views in one buffer)
    p = Softmax(MatMul(q, Transpose(K)) * 1/sqrt(16))    (the MM's transposed B; the scale folded)
    h = x + MatMul(p, V) Wo
    logits = (h + Relu(h W1) W2) Wout,   token = ArgMax(logits)

For every start token of the structured model, the context is the rule's tokens before it (their
keys and values from the float model), and the token the ONNX graph picks on the chip is compared
with the one Capra's own decode-step graph (spec/graphs.py, compiled as ``ga2 ch16`` compiles it)
picks on the chip, with onnxruntime's, and with the rule f(t) = 5t + 3 mod 16.
"""
from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np


def block_model(model, keys, values):
    """The decode step over the cache ``keys``, ``values`` (rows) as an ONNX model (opset 17)."""
    from onnx import TensorProto, helper, numpy_helper
    from spec.tiny_lm import D
    inits = {name: np.asarray(model.array(name), dtype=np.float32)
             for name in ("Wq", "Wk", "Wv", "Wo", "W1", "W2", "Wout")}
    inits["Kc"] = np.asarray(keys, dtype=np.float32).reshape(-1, D)
    inits["Vc"] = np.asarray(values, dtype=np.float32).reshape(-1, D)
    inits["scale"] = np.array([1 / math.sqrt(D)], dtype=np.float32)
    n = helper.make_node
    nodes = [n("MatMul", ["x", "Wq"], ["q"], name="q"), n("MatMul", ["x", "Wk"], ["k"], name="k"),
             n("MatMul", ["x", "Wv"], ["v"], name="v"),
             n("Concat", ["Kc", "k"], ["K"], name="keys", axis=0), n("Concat", ["Vc", "v"], ["V"], name="values", axis=0),
             n("Transpose", ["K"], ["Kt"], name="keys_t", perm=[1, 0]),
             n("MatMul", ["q", "Kt"], ["s"], name="scores"), n("Mul", ["s", "scale"], ["ss"], name="scaled"),
             n("Softmax", ["ss"], ["p"], name="softmax", axis=-1), n("MatMul", ["p", "V"], ["a"], name="attend"),
             n("MatMul", ["a", "Wo"], ["o"], name="out_proj"), n("Add", ["x", "o"], ["h"], name="residual1"),
             n("MatMul", ["h", "W1"], ["f1"], name="ff1"), n("Relu", ["f1"], ["r"], name="relu"),
             n("MatMul", ["r", "W2"], ["f2"], name="ff2"), n("Add", ["h", "f2"], ["y"], name="residual2"),
             n("MatMul", ["y", "Wout"], ["logits"], name="unembed"),
             n("ArgMax", ["logits"], ["token"], name="next_token", axis=1, keepdims=1)]
    graph = helper.make_graph(nodes, "tiny_lm_decode_step",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, D])],
                              [helper.make_tensor_value_info("token", TensorProto.INT64, [1, 1]),
                               helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 16])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def compare(context: int = 8, config=None, save: str | None = None) -> list[dict]:
    """Every start token: the ONNX block's token on the chip against Capra's decode step's, onnxruntime's
    and the rule's."""
    from compiler import execute
    from compiler.onnx import import_model
    from compiler.onnx.run import run_model
    from ga2_hdl import isa
    from spec.on_chip import PlainChip, float_prefix_cache
    from spec.tiny_lm import V, make_model, next_token_rule, rule_tokens

    config = config or isa.BOOK
    model = make_model("structured")
    chip = PlainChip(model, context, config=config)
    capra = chip.program(context)
    rows = []
    for start in range(V):
        seq = rule_tokens(start, context - 1)             # context tokens; the last is fed now
        keys, values = float_prefix_cache(model, seq[:-1])
        x = np.array([model.embedding(seq[-1])])
        m = block_model(model, keys, values)
        if save:
            import onnx
            onnx.save(m, os.path.join(save, f"tiny_lm_block_start{start}.onnx"))
        run = run_model(import_model(m, config=config), x)
        inputs = {"x": x.tolist()}
        if keys:
            inputs.update(kc=[list(r) for r in keys], vc=[list(r) for r in values])
        out, _ = execute(capra, inputs)
        rows.append({"start": start, "fed": seq[-1], "onnx_on_chip": int(run.predictions[0]),
                     "onnxruntime": int(run.reference_predictions[0]), "capra_decode_step": out["tok"][0][0][0],
                     "rule": next_token_rule(seq[-1]), "cycles": run.chip.totals()["total"],
                     "capra_cycles": capra.counters().total,
                     "interpreter": not run.chip.interpreter_mismatches})
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--context", type=int, default=8, help="tokens in context, the new one included (default 8)")
    p.add_argument("--config", default="book", help="chip configuration (preset name or file)")
    p.add_argument("--save", metavar="DIR", help="also save each ONNX model there")
    args = p.parse_args(argv)
    try:
        import onnx, onnxruntime  # noqa: F401
    except ImportError as e:
        print(f"onnx_transformer: error: {e.name} is not installed: run pip install -e '.[onnx]'", file=sys.stderr)
        return 1
    from ga2_hdl.config import load
    if args.save:
        os.makedirs(args.save, exist_ok=True)
    rows = compare(args.context, load(args.config), args.save)
    print(f"{'start':>5} {'fed':>4} {'ONNX on chip':>12} {'onnxruntime':>11} {'Capra step':>10} {'rule':>4} "
          f"{'cycles':>7} {'Capra cycles':>12}")
    for r in rows:
        print(f"{r['start']:>5} {r['fed']:>4} {r['onnx_on_chip']:>12} {r['onnxruntime']:>11} "
              f"{r['capra_decode_step']:>10} {r['rule']:>4} {r['cycles']:>7,} {r['capra_cycles']:>12,}")
    same = sum(r["onnx_on_chip"] == r["capra_decode_step"] == r["rule"] == r["onnxruntime"] for r in rows)
    print(f"{same} of {len(rows)} start tokens: the same token from the ONNX graph on the chip, Capra's decode "
          f"step on the chip, onnxruntime and the rule; golden = interpreter in every program: "
          f"{all(r['interpreter'] for r in rows)}")
    return 0 if same == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
