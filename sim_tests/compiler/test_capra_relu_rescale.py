"""Capra's relu of an add (one RQ of the sum in place) and rescale node (a copy at its own scale)."""
import numpy as np
import pytest

from compiler import CompileError, Graph, compile_graph, evaluate, interpret, run
from ga2_hdl import isa
from ga2_hdl.config import PRESETS


def _graph(rng, rows=4):
    g = Graph()
    x = g.input("x", (rows, 8))
    h = g.relu(g.add(g.matmul(x, g.weight("w", rng.normal(size=(8, 6)))), g.weight("b", rng.normal(size=(rows, 6)))))
    z = g.matmul(h, g.weight("w2", rng.normal(size=(6, 5))))
    g.output(g.argmax(z), "tok")
    g.output(g.softmax(g.rescale(z)), "p")
    g.output(z, "z")
    g.output(h, "h")
    return g


@pytest.mark.parametrize("config", [isa.BOOK, PRESETS["array8"], PRESETS["overlap"]], ids=lambda c: c.name)
def test_golden_equals_interpreter(config):
    rng = np.random.default_rng(3)
    g = _graph(rng)
    prog = compile_graph(g, [{"x": rng.normal(size=(4, 8))} for _ in range(12)], config=config)
    for _ in range(4):
        inputs = {"x": rng.normal(size=(4, 8))}
        out, ints = run(prog, inputs), interpret(prog, inputs)
        for name in prog.output_names:
            assert out[name][0] == ints[prog.ext[name]["node"]], name
        h = np.array(out["h"][0])
        assert (h >= 0).all()
        # the relu really clamps: the sum (float) has negative values the chip sets to zero
        floats = evaluate(g, inputs)
        assert (np.array(floats[4]) < 0).any()


def test_the_relu_of_an_add_is_one_rq_in_place_and_rescale_is_one_rq():
    rng = np.random.default_rng(4)
    g = _graph(rng)
    prog = compile_graph(g, [{"x": rng.normal(size=(4, 8))} for _ in range(12)], config=isa.BOOK)
    relu_rq = [ins for ins in prog.code if ins.mnemonic == "RQ" and ins.relu and ins.dst == ins.src]
    assert len(relu_rq) == 1 and (relu_rq[0].m, relu_rq[0].s) == (1 << 23, 23)
    # the argmax reads the logits at their own scale, the softmax a copy at 1/16
    z, copy = 7, 10
    assert prog.graph.nodes[copy].op == "rescale"
    assert prog.scale[copy] == 1 / 16 and prog.scale[z] != prog.scale[copy]
    # the logits exceed the softmax's input range; the argmax still sees them unclamped
    assert prog.plan.ranges[z] > 127 / 16


def test_relu_still_refused_where_it_cannot_be_fused():
    g = Graph()
    x = g.input("x", (2, 4))
    s = g.add(x, x)
    g.relu(s)
    g.output(s, "s")                   # the sum has a second reader
    with pytest.raises(CompileError, match="read by nothing else"):
        compile_graph(g, [{"x": np.ones((2, 4))}], config=isa.BOOK)
    with pytest.raises(CompileError, match="must be a matmul or an add"):
        g2 = Graph()
        g2.relu(g2.softmax(g2.input("x", (1, 4))))
