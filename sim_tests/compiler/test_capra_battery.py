"""Capra: the slice battery, the views and buffer planning, and every refusal.

The battery (compiler/battery.py) runs random graphs around slices through
four checks (golden model == interpreter; every tensor read back; reuse ==
no reuse; close to float) plus the slice refusals.  The directed tests below
pin down the zero-cost views and the allocator, and each refusal the
compiler promises, with the node named in the message.
"""
from __future__ import annotations

import random
import re

import pytest

import compiler as C
from compiler.battery import ERROR_BOUND, SOURCE_KINDS, run_battery
from ga2_hdl import isa


def _w(rows, cols, seed=0, sd=0.3):
    rng = random.Random(seed)
    return [[rng.gauss(0, sd) for _ in range(cols)] for _ in range(rows)]


def _names_a_node(err: pytest.ExceptionInfo) -> None:
    assert re.search(r"node \d+", str(err.value)), f"the refusal does not name the node: {err.value}"


# ----------------------------------------------------------------------------- the battery

def test_slice_battery():
    report = run_battery(graphs=40, config=isa.BOOK)
    print(f"\n{report.summary()}")
    assert report.passed, "\n".join(report.problems)
    assert report.worst_error <= ERROR_BOUND
    assert set(report.kinds) == set(SOURCE_KINDS) | {"chain"}, f"not every kind was drawn: {report.kinds}"
    assert report.kinds["chain"] == 20 and report.graphs == 60
    assert report.refusals == 5
    # outputs exempt from the float bound must stay rare: a scale bug that blows scales up would hide there
    assert report.unrepresentable <= 2, report.unrepresentable


# ----------------------------------------------------------------------------- views

def _chain_with_slice(start, count):
    g = C.Graph()
    x = g.input("x", (6, 8))
    p = g.matmul(x, g.weight("W", _w(8, 8)))
    s = g.slice_rows(p, start, count)
    out = g.output(g.matmul(s, g.weight("W2", _w(8, 4, 1))), "y")
    return g, p, s, out


def test_slice_is_an_offset_in_words_and_costs_nothing():
    calib = [{"x": _w(6, 8, k, 1.0)} for k in range(3)]
    g, p, s, _ = _chain_with_slice(2, 3)
    prog = C.compile_graph(g, calib, config=isa.BOOK)
    assert prog.address_of(s) == prog.address_of(p) + 2 * 8
    assert prog.buffers.placement[s].buffer == prog.buffers.placement[p].buffer
    assert prog.scale[s] == prog.scale[p]
    # the slice's step emits nothing: the program is the plain chain's, with the second product's A moved
    step_of = dict(prog.steps)
    assert step_of[s] == step_of[s + 1]
    mm2 = [ins for ins in prog.code if ins.mnemonic == "MM"][-1]
    assert mm2.A == prog.address_of(p) + 16 and mm2.M == 3
    assert C.run(prog, calib[0])["y"][0] == C.interpret(prog, calib[0])[prog.ext["y"]["node"]]


def test_concat_parts_are_written_into_one_buffer():
    g = C.Graph()
    x = g.input("x", (1, 4))
    kc = g.input("kc", (3, 4))
    k = g.matmul(x, g.weight("Wk", _w(4, 4)))
    both = g.concat_rows(kc, k)
    g.output(g.matmul(x, both, transpose_b=True), "scores")
    calib = [{"x": _w(1, 4, 1, 1.0), "kc": _w(3, 4, 2, 1.0)}]
    prog = C.compile_graph(g, calib, config=isa.BOOK)
    assert prog.address_of(kc) == prog.address_of(both)
    assert prog.address_of(k) == prog.address_of(both) + 3 * 4
    rq_k = [ins for ins in prog.code if ins.mnemonic == "RQ"][0]
    assert rq_k.dst == prog.address_of(k)             # the product lands in place: no copy
    assert not any(ins.mnemonic == "LD" and ins.dst == prog.address_of(k) for ins in prog.code)
    assert C.run(prog, calib[0])["scores"][0] == C.interpret(prog, calib[0])[prog.ext["scores"]["node"]]


def test_a_slice_keeps_its_source_alive_until_it_is_read():
    """The source's last direct reader comes early; the slice is read only after other buffers churn."""
    g = C.Graph()
    x = g.input("x", (4, 16))
    p = g.matmul(x, g.weight("W", _w(16, 16)))
    s = g.slice_rows(p, 3, 1)
    g.output(p, "p")                                  # the last direct use of p
    h = x
    for k in range(4):                                # later steps that allocate and free buffers
        h = g.matmul(h, g.weight(f"H{k}", _w(16, 16, 10 + k)))
    g.output(g.add(g.matmul(s, g.weight("W2", _w(16, 16, 3))), g.slice_rows(h, 0, 1)), "y")
    calib = [{"x": _w(4, 16, k, 1.0)} for k in range(4)]
    prog = C.compile_graph(g, calib, config=isa.BOOK)
    src = prog.buffers.buffers[prog.buffers.placement[p].buffer]
    assert src.last_step > g.nodes[prog.ext["p"]["node"]].id
    flat = C.compile_graph(g, calib, reuse=False, config=isa.BOOK)
    assert prog.spad_high < flat.spad_high           # reuse really reuses
    out = C.run(prog, calib[1])
    assert out == C.run(flat, calib[1])
    assert out["y"][0] == C.interpret(prog, calib[1])[prog.ext["y"]["node"]]


def test_reuse_false_reads_every_tensor_back():
    g, p, s, out = _chain_with_slice(1, 4)
    calib = [{"x": _w(6, 8, k, 1.0)} for k in range(3)]
    prog = C.compile_graph(g, calib, reuse=False, config=isa.BOOK)
    outs, result = C.execute(prog, calib[2], keep_spad=True)
    ints = C.interpret(prog, calib[2])
    assert not prog.released
    resident = prog.resident_nodes()
    assert {n.id for n in g.nodes if n.op != "output"} <= set(resident)
    for nid in resident:
        assert C.read_tensor(prog, result, nid) == ints[nid], g.nodes[nid].label()


def test_allocator_first_fit_and_coalescing():
    from compiler.planner import AllocationError, Allocator
    a = Allocator(100)
    assert [a.alloc(10), a.alloc(20), a.alloc(30)] == [0, 10, 30]
    a.release(0, 10)
    a.release(30, 30)
    assert a.alloc(15) == 30                          # first run big enough, not the first run
    a.release(10, 20)                                 # 0..29 coalesces with 0..9
    assert a.free[0] == (0, 30)
    assert a.alloc(30) == 0
    with pytest.raises(AllocationError):
        a.alloc(60)
    assert a.high == 60


# ----------------------------------------------------------------------------- refusals

def test_slice_refusals():
    g = C.Graph()
    x = g.input("x", (4, 8))
    p = g.matmul(x, g.weight("W", _w(8, 8)))
    for start, count, why in ((3, 2, "do not lie inside"), (-1, 1, "do not lie inside"), (0, 5, "do not lie"),
                              (2, 0, "empty slice")):
        with pytest.raises(C.CompileError, match=why) as err:
            g.slice_rows(p, start, count)
        _names_a_node(err)
    s = g.slice_rows(p, 1, 2)
    with pytest.raises(C.CompileError, match="slice") as err:
        g.concat_rows(s, x)
    _names_a_node(err)
    with pytest.raises(C.CompileError, match="slice") as err:
        g.concat_rows(x, s)
    _names_a_node(err)
    with pytest.raises(C.CompileError, match="slice") as err:
        g.relu(s)
    _names_a_node(err)


def test_shape_refusals():
    g = C.Graph()
    x = g.input("x", (2, 8))
    w = g.weight("W", _w(4, 4))
    for build, why in ((lambda: g.matmul(x, w), "inner dimensions 8 and 4"),
                       (lambda: g.matmul(x, w, transpose_b=True), "inner dimensions 8 and 4"),
                       (lambda: g.add(x, w), "shapes differ"),
                       (lambda: g.concat_rows(x, w), "widths differ"),
                       (lambda: g.concat_rows(x, x), "only one concatenation"),
                       (lambda: g.matmul(w, w, scale=0.0), "positive"),
                       (lambda: g.matmul(w, w, scale=-1.0), "positive")):
        with pytest.raises(C.CompileError, match=why) as err:
            build()
        _names_a_node(err)
    with pytest.raises(C.CompileError, match="not a node"):
        g.softmax(99)
    out = g.output(x, "o")
    with pytest.raises(C.CompileError, match="is an output") as err:
        g.softmax(out)
    _names_a_node(err)
    idx = g.argmax(x)
    with pytest.raises(C.CompileError, match="indices") as err:
        g.add(idx, idx)
    _names_a_node(err)
    with pytest.raises(C.CompileError, match="already used") as err:
        g.input("o", (1, 1))
    _names_a_node(err)
    with pytest.raises(C.CompileError, match="rows of different lengths"):
        g.weight("ragged", [[1.0, 2.0], [3.0]])
    with pytest.raises(C.CompileError, match="positive integer"):
        g.input("bad", (0, 4))


def _compile(build, inputs):
    g = build()
    return C.compile_graph(g, [inputs], config=isa.BOOK)


def test_target_refusals():
    rng = random.Random(0)
    mk = lambda r, c: [[rng.gauss(0, 1) for _ in range(c)] for _ in range(r)]

    def inner_65():
        g = C.Graph()
        x = g.input("x", (2, 65))
        g.output(g.matmul(x, g.weight("w", _w(65, 3))), "o")
        return g

    def relu_second_consumer():
        g = C.Graph()
        x = g.input("x", (2, 4))
        y = g.matmul(x, g.weight("w", _w(4, 4)))
        g.output(g.add(g.relu(y), y), "o")
        return g

    def relu_on_input():
        g = C.Graph()
        g.output(g.relu(g.input("x", (2, 4))), "o")
        return g

    def too_big_for_scratchpad():
        g = C.Graph()
        x = g.input("x", (32, 64))                   # 2,048 + 4,096 words: fits external memory, not the scratchpad
        g.output(g.matmul(x, g.weight("w", _w(64, 64))), "o")
        return g

    def two_concats():
        g = C.Graph()
        x, y = g.input("x", (1, 3)), g.input("y", (1, 3))
        g.output(g.add(g.concat_rows(x, y), g.concat_rows(x, y)), "o")
        return g

    cases = ((inner_65, {"x": mk(2, 65)}, "inner dimension 65 exceeds"),
             (relu_second_consumer, {"x": mk(2, 4)}, "read by nothing else"),
             (relu_on_input, {"x": mk(2, 4)}, "must be a matmul"),
             (too_big_for_scratchpad, {"x": mk(32, 64)}, "cannot place"),
             (two_concats, {"x": mk(1, 3), "y": mk(1, 3)}, "two concatenations"))
    for build, inputs, why in cases:
        with pytest.raises(C.CompileError, match=why) as err:
            _compile(build, inputs)
        _names_a_node(err)


def test_external_memory_overflow():
    g = C.Graph()
    x = g.input("x", (64, 64))
    g.output(g.matmul(x, g.weight("w", _w(64, 4))), "o")
    with pytest.raises(C.CompileError, match="external memory is full") as err:
        C.compile_graph(g, [{"x": _w(64, 64)}], ext_words=4096, config=isa.BOOK)
    _names_a_node(err)


def test_run_time_refusals():
    g = C.Graph()
    x = g.input("x", (1, 4))
    g.output(g.matmul(x, g.weight("w", _w(4, 4))), "o")
    prog = C.compile_graph(g, [{"x": _w(1, 4)}], config=isa.BOOK)
    for inputs, why in (({}, "input 'x' .* was not given"),
                        ({"x": _w(1, 4), "y": _w(1, 4)}, "'y' is not an input"),
                        ({"x": _w(2, 4)}, "expected shape 1x4, got 2x4"),
                        ({"x": [[1.0, float("nan"), 0.0, 0.0]]}, "not finite")):
        for call in (C.run, C.interpret, C.ext_image):
            with pytest.raises(C.CompileError, match=why):
                call(prog, inputs)
    with pytest.raises(C.CompileError, match="no output named 'x' \\(outputs: o\\)"):
        prog.output("x")
    assert prog.output_names == ["o"] and prog.output("o")["kind"] == "output"
    with pytest.raises(C.CompileError, match="not given"):
        C.evaluate(g, {})
    with pytest.raises(C.CompileError, match="non-empty list"):
        C.compile_graph(g, [], config=isa.BOOK)
    with pytest.raises(C.CompileError, match="calibration sample 0: .*not given"):
        C.compile_graph(g, [{}], config=isa.BOOK)
    with pytest.raises(C.CompileError, match="needs 24 external words"):
        C.ext_image(prog, {"x": _w(1, 4)}, ext_words=10)


def test_public_api_shapes():
    """The names and return shapes other packages code against."""
    g = C.Graph()
    x = g.tag(g.input("x", (2, 4)), "x")
    lg = g.matmul(x, g.weight("w", _w(4, 4)))
    assert g.tag(lg, "logits") == lg
    tok = g.output(g.argmax(lg), "tok")
    g.output(lg, "logits")
    inputs = {"x": _w(2, 4, 6, 1.0)}
    top = max(abs(v) for r in inputs["x"] for v in r)
    prog = C.compile_graph(g, [inputs], ranges={"x": top}, config=isa.BOOK)
    assert prog.code[-1] == isa.HALT
    assert {name: e["kind"] for name, e in prog.ext.items()} == {"x": "input", "w": "weight", "tok": "output",
                                                                 "logits": "output"}
    assert set(prog.ext["x"]) >= {"addr", "shape", "node", "kind"}
    assert prog.scale[x] == pytest.approx(top / 127)                 # the tag's range, not the measured one
    assert C.compile_graph(g, [inputs], ranges={"x": 2 * top}, config=isa.BOOK).scale[x] == pytest.approx(2 * top / 127)
    out = C.run(prog, inputs)
    ints, floats = out["tok"]
    assert ints == floats and len(ints) == 2 and all(len(r) == 1 for r in ints)
    assert ints == C.interpret(prog, inputs)[tok]
    image = C.ext_image(prog, inputs)
    assert len(image) == isa.EXT_WORDS_DEFAULT and len(C.ext_image(prog, inputs, 4096)) == 4096
    ref = C.evaluate(g, inputs)                      # calibrated on this input: within a level or two
    assert all(abs(a - b) <= 2 * prog.scale[lg] for r, s in zip(out["logits"][1], ref[lg]) for a, b in zip(r, s))


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning",
                            "ignore:invalid value encountered:RuntimeWarning")     # inf - inf, as in the loop
def test_the_float_reference_matmul_is_the_left_to_right_sum_bit_for_bit():
    """evaluate's matmul: each output factor * (a left-to-right sum from 0.0 of the rounded products),
    compared with that definition written as a loop, with zeros of both signs and overflow."""
    import math

    from compiler.reference import _product

    def scalar(a, b, transpose_b, factor):
        cols = b if transpose_b else [list(c) for c in zip(*b)]
        out = []
        for row in a:
            out_row = []
            for col in cols:
                acc = 0.0
                for x, y in zip(row, col):
                    acc += x * y
                out_row.append(factor * acc)
            out.append(out_row)
        return out

    rng = random.Random(7)
    special = [0.0, -0.0, 1e-300, -1e-300, 1e16, -1e16, 1.0, 3.0e307, -3.0e307]
    for trial in range(300):
        m, k, n = rng.choice([(1, 16, 16), (4, 16, 16), (3, 5, 2), (2, 1, 3), (1, 16, 1)])
        tb = rng.random() < 0.5
        a = [[rng.choice(special + [rng.gauss(0, 1)]) for _ in range(k)] for _ in range(m)]
        b = [[rng.choice(special + [rng.gauss(0, 1)]) for _ in range(k if tb else n)] for _ in range(n if tb else k)]
        factor = rng.choice([1.0, 0.25, -0.5])
        for got_row, want_row in zip(_product(a, b, tb, factor), scalar(a, b, tb, factor)):
            for got, want in zip(got_row, want_row):
                assert ((got == want and math.copysign(1, got) == math.copysign(1, want))
                        or (got != got and want != want)), (m, k, n, tb)
