"""Capra's programs have the book's anatomy: the same instructions, sizes and cycles.

The graphs are built here with seeded random weights (spec/ builds the real
models).  Which instructions a program holds and how long each takes depend
only on the graph's shapes, with one exception: an add operand already at the
sum's scale is not requantized (one RQ fewer).  In the book's programs both
operands of both residual adds are always rescaled; the tests assert that
precondition before comparing figures, so a figure can only differ for a
real reason.

Every figure is measured by running the program on the golden model (and
checked against the interpreter on the way).
"""
from __future__ import annotations

import math
import random

import pytest

import compiler as C

from ga2_hdl import isa

V = D = 16
HID = 32


def _model(seed: int = 1) -> dict:
    rng = random.Random(seed)

    def gauss(rows, cols, sd):
        return [[rng.gauss(0.0, sd) for _ in range(cols)] for _ in range(rows)]

    m = {"E": [[x / 4 for x in row] for row in gauss(V, D, 1.0)]}
    for name in ("Wq", "Wk", "Wv", "Wo"):
        m[name] = gauss(D, D, 1 / 4)
    m["W1"] = gauss(D, HID, 1 / 4)
    m["W2"] = gauss(HID, D, 1 / math.sqrt(HID))
    m["Wout"] = gauss(D, V, 1 / 4)
    return m


def _mv(x, w):
    return [sum(x[i] * w[i][j] for i in range(len(x))) for j in range(len(w[0]))]


def _float_step(m, tok, kc, vc):
    """One decode step in floating point: (next token, k, v)."""
    x = m["E"][tok]
    q, k, v = _mv(x, m["Wq"]), _mv(x, m["Wk"]), _mv(x, m["Wv"])
    keys, values = kc + [k], vc + [v]
    s = [sum(a * b for a, b in zip(q, key)) / math.sqrt(D) for key in keys]
    top = max(s)
    e = [math.exp(t - top) for t in s]
    z = sum(e)
    a = [sum(e[p] / z * values[p][i] for p in range(len(keys))) for i in range(D)]
    h = [p + o for p, o in zip(x, _mv(a, m["Wo"]))]
    y = [p + f for p, f in zip(h, _mv([max(0.0, t) for t in _mv(h, m["W1"])], m["W2"]))]
    logits = _mv(y, m["Wout"])
    return logits.index(max(logits)), k, v


def build_decode_step(m, L):
    """The decode step with L tokens of context (the book's tiny_lm graph, outputs in its order)."""
    g = C.Graph()
    x = g.tag(g.input("x", (1, D)), "x")
    w = lambda name: g.weight(name, m[name])
    q = g.matmul(x, w("Wq"))
    k = g.tag(g.matmul(x, w("Wk")), "k")
    v = g.tag(g.matmul(x, w("Wv")), "v")
    if L > 1:
        keys = g.tag(g.concat_rows(g.tag(g.input("kc", (L - 1, D)), "k"), k), "k")
        values = g.tag(g.concat_rows(g.tag(g.input("vc", (L - 1, D)), "v"), v), "v")
    else:
        keys, values = k, v
    p = g.softmax(g.matmul(q, keys, transpose_b=True, scale=1 / math.sqrt(D)))
    h = g.add(x, g.matmul(g.matmul(p, values), w("Wo")))
    y = g.add(h, g.matmul(g.relu(g.matmul(h, w("W1"))), w("W2")))
    logits = g.matmul(y, w("Wout"))
    g.output(g.argmax(logits), "tok")
    g.output(logits, "logits")
    g.output(k, "k_new")
    g.output(v, "v_new")
    return g


def build_verify(m, rows, cache):
    """The chapter's verifier: ``rows`` block rows against ``cache`` cached rows, causal by prefix slices."""
    g = C.Graph()
    X = g.tag(g.input("x", (rows, D)), "x")
    w = lambda name: g.weight(name, m[name])
    Q = g.matmul(X, w("Wq"))
    Kn = g.tag(g.matmul(X, w("Wk")), "k")
    Vn = g.tag(g.matmul(X, w("Wv")), "v")
    if cache > 0:
        K = g.tag(g.concat_rows(g.tag(g.input("kc", (cache, D)), "k"), Kn), "k")
        Vv = g.tag(g.concat_rows(g.tag(g.input("vc", (cache, D)), "v"), Vn), "v")
    else:
        K, Vv = Kn, Vn
    A = None
    for i in range(rows):
        qi = g.slice_rows(Q, i, 1)
        Ki = g.slice_rows(K, 0, cache + i + 1)
        Vi = g.slice_rows(Vv, 0, cache + i + 1)
        ai = g.matmul(g.softmax(g.matmul(qi, Ki, transpose_b=True, scale=1 / math.sqrt(D))), Vi)
        A = ai if A is None else g.concat_rows(A, ai)
    g.output(A, "attn")
    h = g.add(X, g.matmul(A, w("Wo")))
    y = g.add(h, g.matmul(g.relu(g.matmul(h, w("W1"))), w("W2")))
    lg = g.matmul(y, w("Wout"))
    g.output(g.argmax(lg), "tok")
    g.output(lg, "logits")
    g.output(Kn, "k_new")
    g.output(Vn, "v_new")
    return g


def build_draft(wd):
    g = C.Graph()
    x = g.input("x", (1, D))
    lg = g.matmul(x, g.weight("Wd", wd))
    g.output(g.argmax(lg), "tok")
    g.output(lg, "logits")
    return g


@pytest.fixture(scope="module")
def model():
    return _model(1)


@pytest.fixture(scope="module")
def decode_calibration(model):
    """As the book's host does: float decoding from every start token; per-context samples and ranges."""
    steps = 32
    calib = {L: [] for L in range(1, steps + 1)}
    rk = rv = 0.0
    for start in range(V):
        tok, kc, vc = start, [], []
        for L in range(1, steps + 1):
            sample = {"x": [list(model["E"][tok])]}
            if L > 1:
                sample["kc"] = [list(r) for r in kc]
                sample["vc"] = [list(r) for r in vc]
            calib[L].append(sample)
            tok, k, v = _float_step(model, tok, kc, vc)
            kc.append(k)
            vc.append(v)
            rk, rv = max(rk, max(map(abs, k))), max(rv, max(map(abs, v)))
    ranges = {"x": max(abs(a) for row in model["E"] for a in row), "k": rk, "v": rv}
    return calib, ranges


def _measured(prog, inputs):
    """Counters from the golden model (and the run must equal the interpreter)."""
    outs, result = C.execute(prog, inputs)
    ints = C.interpret(prog, inputs)
    for name, entry in prog.ext.items():
        if entry["kind"] == "output":
            assert outs[name][0] == ints[entry["node"]], f"output {name} differs from the interpreter"
    assert result.counters == prog.counters()
    return result.counters


def _assert_book_rescaling(prog, what):
    assert len(prog.plan.add_rescale) == 4, (
        f"{what}: precondition: the book's programs rescale both operands of both adds; here "
        f"{len(prog.plan.add_rescale)} of 4 are rescaled (an operand at the sum's scale saves one RQ), so "
        f"the figures would not be comparable")


def test_decode_steps_L1_to_32(model, decode_calibration):
    calib, ranges = decode_calibration
    cycles, loads = {}, {}
    for L in range(1, 33):
        prog = C.compile_graph(build_decode_step(model, L), calib[L], ranges=ranges, config=isa.BOOK)
        _assert_book_rescaling(prog, f"context {L}")
        cycles[L] = _measured(prog, calib[L][0])[0]
        loads[L] = prog.words_loaded()
    assert [cycles[L] for L in (5, 6, 7, 8)] == [7378, 7457, 7536, 7615]
    assert [loads[L] for L in (5, 6, 7, 8)] == [2448, 2480, 2512, 2544]
    assert sum(cycles.values()) == 268_346


def _verify_calibration(model, rows, cache, n, rng):
    samples = []
    for _ in range(n):
        toks = [rng.randrange(V) for _ in range(cache + rows)]
        kc, vc = [], []
        for t in toks[:cache]:
            _, k, v = _float_step(model, t, kc, vc)
            kc.append(k)
            vc.append(v)
        sample = {"x": [list(model["E"][t]) for t in toks[cache:]]}
        if cache:
            sample["kc"], sample["vc"] = kc, vc
        samples.append(sample)
    return samples


@pytest.mark.parametrize("cache, cycles", [(4, 12_330), (12, 14_410), (24, 17_530)])
def test_verifier(model, decode_calibration, cache, cycles):
    _, ranges = decode_calibration
    samples = _verify_calibration(model, 4, cache, 8, random.Random(cache))
    prog = C.compile_graph(build_verify(model, 4, cache), samples, ranges=ranges, config=isa.BOOK)
    _assert_book_rescaling(prog, f"verifier cache {cache}")
    counters = _measured(prog, samples[0])
    assert counters.total == cycles
    if cache == 4:
        assert prog.histogram() == {"LD": 10, "MM": 56, "RQ": 23, "SM": 4, "ST": 5, "VADD": 2, "AMAX": 4,
                                    "HALT": 1}
        assert prog.words_loaded() == 2496
        assert (counters.matrix, counters.dma, counters.vector) == (7732, 2856, 1532)


def test_draft_step(model):
    wd = [[random.Random(7).gauss(0, 1) for _ in range(D)] for _ in range(D)]
    prog = C.compile_graph(build_draft(wd), [{"x": [row]} for row in model["E"]], config=isa.BOOK)
    assert _measured(prog, {"x": [model["E"][3]]})[0] == 810


def test_verifier_program_is_legal_in_the_smallest_external_memory_it_fits(model, decode_calibration):
    """The layout is packed from address 0: the verifier fits an external memory of exactly its size."""
    _, ranges = decode_calibration
    samples = _verify_calibration(model, 4, 4, 2, random.Random(0))
    prog = C.compile_graph(build_verify(model, 4, 4), samples, ranges=ranges, config=isa.BOOK)
    tight = C.compile_graph(build_verify(model, 4, 4), samples, ranges=ranges, ext_words=prog.ext_used, config=isa.BOOK)
    assert C.run(tight, samples[1], ext_words=prog.ext_used)["logits"] == C.run(prog, samples[1])["logits"]
    with pytest.raises(C.CompileError, match="external memory is full"):
        C.compile_graph(build_verify(model, 4, 4), samples, ranges=ranges, ext_words=prog.ext_used - 1, config=isa.BOOK)
