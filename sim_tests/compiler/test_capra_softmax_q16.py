"""A softmax kept as the softmax unit's own Q0.16 words (``Graph.softmax(a, q16=True)``): what it
compiles to, what it stores, and what it refuses."""
import random

import pytest

import compiler as C
from ga2_hdl import isa


def _graph(q16: bool):
    g = C.Graph()
    x = g.tag(g.input("x", (3, 8)), "x")
    rng = random.Random(5)
    w = g.weight("W", [[rng.gauss(0, 1) for _ in range(6)] for _ in range(8)])
    scores = g.matmul(x, w, scale=0.5)
    g.output(g.softmax(scores, q16=q16), "p")
    g.output(scores, "scores")
    return g


def _calib():
    rng = random.Random(9)
    return [{"x": [[rng.uniform(-1, 1) for _ in range(8)] for _ in range(3)]} for _ in range(4)]


def test_q16_softmax_stores_the_units_words_and_equals_the_interpreter():
    calib = _calib()
    prog = C.compile_graph(_graph(True), calib, config=isa.BOOK)
    plain = C.compile_graph(_graph(False), calib, config=isa.BOOK)
    # the same program up to the softmax's requantizer: one RQ fewer, no temporary
    assert plain.histogram()["RQ"] - prog.histogram()["RQ"] == 1
    assert prog.histogram()["SM"] == plain.histogram()["SM"] == 3
    node = prog.output("p")["node"]
    assert prog.scale[node] == 1 / isa.Q16_ONE
    for inputs in calib:
        out = C.run(prog, inputs)
        scores = out["scores"][0]
        want = [isa.softmax_q16(row) for row in scores]      # the SM unit on the stored int8 scores
        assert out["p"][0] == want
        assert C.interpret(prog, inputs)[node] == want
        assert out["p"][1] == [[v / isa.Q16_ONE for v in row] for row in want]
        assert all(abs(sum(row) - isa.Q16_ONE) < 64 for row in want)
        # the int8 program's probabilities are these words requantized at 127/65536
        rq = plain.plan.softmax[plain.graph.nodes[plain.output("p")["node"]].inputs[0]]
        assert C.run(plain, inputs)["p"][0] == [[rq(v) for v in row] for row in want]


def test_q16_softmax_can_only_be_stored():
    g = C.Graph()
    x = g.input("x", (1, 4))
    p = g.softmax(x, q16=True)
    for use in (lambda: g.matmul(p, x, transpose_b=True), lambda: g.argmax(p), lambda: g.softmax(p),
                lambda: g.add(p, x), lambda: g.concat_rows(p, x), lambda: g.slice_rows(p, 0, 1)):
        with pytest.raises(C.CompileError, match="Q0.16 probabilities .* can only be stored as an output"):
            use()
    with pytest.raises(C.CompileError, match="q16 must be True or False"):
        g.softmax(x, q16=1)
    g.output(p, "p")
