"""Capra's ONNX front end: the digits example, a hand-made graph, the refusals, bad files.

Needs the optional extra ``pip install -e '.[onnx]'`` (the Makefile's install has it); without
it every test here is skipped with that reason.
"""
import json
import os
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX front end needs pip install -e '.[onnx]' (onnx)")
pytest.importorskip("onnxruntime", reason="the ONNX front end needs pip install -e '.[onnx]' (onnxruntime)")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from compiler import execute, interpret  # noqa: E402
from compiler.onnx import OnnxError, import_model, load_model  # noqa: E402
from compiler.onnx import run as onnx_run  # noqa: E402
from ga2_cli.main import main  # noqa: E402
from ga2_hdl import isa  # noqa: E402
from ga2_hdl.config import PRESETS  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ------------------------------------------------------------------------------ models
def _examples():
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    try:
        import onnx_digits
    finally:
        sys.path.pop(0)
    return onnx_digits


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    pytest.importorskip("sklearn", reason="the digits example needs pip install -e '.[onnx]' (scikit-learn)")
    pytest.importorskip("skl2onnx", reason="the digits example needs pip install -e '.[onnx]' (skl2onnx)")
    out = tmp_path_factory.mktemp("digits")
    return _examples().make(str(out))


def _model(nodes, inits, inp_shape, outputs, opset=17, name="handmade"):
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("X", TensorProto.FLOAT, inp_shape)],
                              outputs, [numpy_helper.from_array(np.asarray(v, dtype=np.float32)
                                                                if np.asarray(v).dtype.kind == "f" else np.asarray(v), k)
                                        for k, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def _save(m, path):
    onnx.save(m, str(path))
    return str(path)


def handmade(seed=0):
    """Flatten, Gemm (transB, alpha), Relu, Gemm, a residual Add, Gemm, Softmax, ArgMax: never seen before."""
    rng = np.random.default_rng(seed)
    inits = {"W1": rng.normal(size=(8, 12)) * 0.5, "b1": rng.normal(size=(8,)) * 0.2,
             "W2": rng.normal(size=(8, 8)) * 0.4, "b2": rng.normal(size=(8,)) * 0.2,
             "W3": rng.normal(size=(8, 5)), "b3": rng.normal(size=(1, 5)) * 0.1}
    nodes = [helper.make_node("Flatten", ["X"], ["xf"], name="flat", axis=1),
             helper.make_node("Gemm", ["xf", "W1", "b1"], ["g1"], name="fc1", transB=1, alpha=0.5),
             helper.make_node("Relu", ["g1"], ["h1"], name="relu1"),
             helper.make_node("Gemm", ["h1", "W2", "b2"], ["g2"], name="fc2"),
             helper.make_node("Add", ["g2", "h1"], ["r"], name="residual"),
             helper.make_node("Gemm", ["r", "W3", "b3"], ["logits"], name="fc3"),
             helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
             helper.make_node("ArgMax", ["probs"], ["idx"], name="argmax", axis=1, keepdims=0)]
    outs = [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 5]),
            helper.make_tensor_value_info("idx", TensorProto.INT64, ["N"])]
    return _model(nodes, inits, ["N", 3, 4], outs)


def _rows(n, seed=1):
    return np.random.default_rng(seed).normal(size=(n, 3, 4))


# ------------------------------------------------------------------------------ the digits example
def test_digits_programs_equal_the_interpreter_bit_for_bit(digits):
    imp = import_model(load_model(digits["model"]), config=isa.BOOK)
    rows = np.load(digits["test_x"])[:8].astype(np.float64)
    compiled = onnx_run.compile_batch(imp, 4, np.load(digits["train_x"]).astype(np.float64))
    prog = compiled.program
    for piece in onnx_run.batches_of(rows, 4):
        inputs = {"X": piece}
        out, _ = execute(prog, inputs)
        ints = interpret(prog, inputs)
        for name in prog.output_names:
            assert out[name][0] == ints[prog.ext[name]["node"]], name
    hist = prog.histogram()
    assert hist["MM"] == 8 + 3 and hist["AMAX"] == 4 and hist["SM"] == 4   # (4x64)(64x32): 8 tiles; (4x32)(32x10): 3


def test_digits_small_run_golden_equals_icarus(digits):
    from spec.onnx_run import replay_programs
    imp = import_model(load_model(digits["model"]), config=isa.BOOK)
    rows = np.load(digits["test_x"])[:8].astype(np.float64)
    labels = np.load(digits["test_y"])[:8]
    run = onnx_run.run_model(imp, rows, labels=labels, calib=np.load(digits["train_x"]).astype(np.float64), batch=4)
    assert len(run.chip.programs) == 2 and not run.chip.interpreter_mismatches
    assert run.agreement >= 7 / 8
    sims = replay_programs(run, ["icarus"], workers=1)
    assert sims["icarus"]["verdict"] == "PASS", sims["icarus"]["line"]
    assert sims["icarus"]["cycles"] == sum(c.total for c in run.chip.counters)


def test_the_examples_table_runs_and_writes_its_files(tmp_path, capsys):
    """``examples/onnx_digits.py --table``, the command docs/onnx.md's table comes from: one row per
    configuration in table.json and table.md, the confusion matrix drawn, the stages printed (the
    reporter the run gets; a call with the run's old keyword failed here)."""
    pytest.importorskip("sklearn", reason="the digits example needs pip install -e '.[onnx]' (scikit-learn)")
    pytest.importorskip("skl2onnx", reason="the digits example needs pip install -e '.[onnx]' (skl2onnx)")
    out = _examples().table(str(tmp_path), ["book"], [])
    assert [r["config"] for r in out["rows"]] == ["book"] and out["rows"][0]["interpreter"] == "PASS"
    per = out["rows"][0]["cycles_per_inference"]       # the book's fetch and issue: two cycles an instruction
    assert per["fetch_issue"] == isa.FETCH_ISSUE_CYCLES * per["instructions"]
    assert json.loads((tmp_path / "table.json").read_text()) == json.loads(json.dumps(out))
    assert (tmp_path / "table.md").read_text().count("\n| book |") == 1 and (tmp_path / "confusion.png").exists()
    assert "compiling for book" in capsys.readouterr().out


def test_digits_cli_json(digits, tmp_path, capsys):
    js = tmp_path / "r.json"
    rc = main(["onnx", "run", digits["model"], "--inputs", digits["test_x"], "--labels", digits["test_y"],
               "--calibrate", digits["train_x"], "--sims", "golden", "--batch", "16", "--json", str(js)])
    out = capsys.readouterr().out
    assert rc == 0, out
    data = json.loads(js.read_text())
    for key in ("predictions", "reference_predictions", "accuracy", "reference_accuracy", "cycles_per_inference",
                "sims"):
        assert key in data
    assert data["sims"] == {"golden": "PASS"} and data["interpreter"] == "PASS"
    assert len(data["predictions"]) == 360 and data["batch"] == 16 and data["programs"] == 23
    assert abs(data["accuracy"] - data["reference_accuracy"]) <= 0.01
    assert data["agreement"] >= 0.98
    assert data["fmax"]["mhz"] is None or data["fmax"]["inferences_per_second"] > 0
    assert "accuracy: chip" in out and "cycles per inference" in out and "inferences per second" in out


def test_batch_choice_is_measured(digits):
    imp = import_model(load_model(digits["model"]), config=isa.BOOK)
    calib = np.load(digits["train_x"]).astype(np.float64)[:64]
    best, tries = onnx_run.choose_batch(imp, calib, 360)
    ok = [t for t in tries if t.cycles is not None]
    assert [t.batch for t in ok][:2] == [1, 4]
    assert best.batch == min(ok, key=lambda t: (t.per_inference, t.batch)).batch
    assert ok[0].per_inference > 2 * min(t.per_inference for t in ok)   # batching pays: weights load once
    assert any(t.error and "scratchpad" in t.error for t in tries)      # the first batch too big says why


def test_info_lists_every_node(digits, capsys):
    assert main(["onnx", "info", digits["model"], "--batch", "4"]) == 0
    out = capsys.readouterr().out
    for what in ("'MatMul' (MatMul): matmul", "relu (one RQ of the sum in place)", "MM 8 RQ 1 (8 tiles of at most 4x4)",
                 "relu (one RQ of the sum in place) [node 5 (relu, 4x32); 128 scratchpad words; RQ 1]",
                 "argmax (AMAX per row of the Softmax's input", "host: label table of 10 entries", "scratchpad words"):
        assert what in out, what


# ------------------------------------------------------------------------------ a model never seen before
@pytest.mark.parametrize("config", [isa.BOOK, PRESETS["array8"]], ids=lambda c: c.name)
def test_handmade_gemm_relu_graph(tmp_path, config):
    m = handmade()
    imp = import_model(m, config=config)
    assert not imp.refusals
    became = {r.name: r.became for r in imp.reports}
    assert "transposed" in became["fc1"] and became["residual"] == "add (residual)"
    assert became["flat"] == "nothing (a view)"
    rows = _rows(40)
    run = onnx_run.run_model(imp, rows, calib=_rows(200, seed=2))
    assert not run.chip.interpreter_mismatches
    assert run.prediction_output == "idx"
    assert run.agreement >= 0.9
    err = run.output_errors["probs"]
    assert err["mean_abs_error"] < 0.03
    assert run.chip.per_inference()["matrix"] > 0


def test_handmade_graph_cli_on_verilator(tmp_path, capsys):
    path = _save(handmade(), tmp_path / "h.onnx")
    np.save(tmp_path / "x.npy", _rows(8))
    rc = main(["onnx", "run", path, "--inputs", str(tmp_path / "x.npy"), "--batch", "4", "--sims", "verilator",
               "--json", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert rc == 0, out
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["sims"] == {"verilator": "PASS"} and data["programs"] == 2
    assert "accuracy" not in data            # no labels given


# ------------------------------------------------------------------------------ refusals, before any work
def _refused(m, config=isa.BOOK):
    imp = import_model(m, config=config)
    assert imp.refusals
    return imp.refusals[0]


def _mlp(nodes, inits, shape=("N", 4), out="y", opset=17):
    return _model(nodes, inits, list(shape), [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["N", "M"])], opset)


def test_refuses_a_conv():
    w = np.ones((2, 1, 3, 3))
    m = _model([helper.make_node("Conv", ["X", "W"], ["y"], name="conv1")], {"W": w}, ["N", 1, 8, 8],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "M"])])
    line = _refused(m, config=isa.BOOK)
    assert line.startswith("node 'conv1' (Conv): convolutions") and "\n" not in line


def test_refuses_a_softmax_on_another_axis():
    line = _refused(_mlp([helper.make_node("Softmax", ["X"], ["y"], name="sm", axis=0)], {}), config=isa.BOOK)
    assert line.startswith("node 'sm' (Softmax): a softmax along axis 0")
    m = _model([helper.make_node("Softmax", ["X"], ["y"], name="sm3", axis=1)], {}, ["N", 4, 3],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "M"])])
    assert _refused(m, config=isa.BOOK).startswith("node 'sm3' (Softmax): a softmax along axis 1 of a rank-3 tensor")


def test_refuses_a_dynamic_shape():
    m = _mlp([helper.make_node("Relu", ["X"], ["y"])], {}, shape=("N", "F"))
    with pytest.raises(OnnxError, match=r"input 'X' has a dynamic shape \(N, F\)"):
        import_model(m, config=isa.BOOK)
    m2 = _mlp([helper.make_node("Shape", ["X"], ["s"], name="shape"),
               helper.make_node("Reshape", ["X", "s"], ["y"], name="rs")], {})
    assert _refused(m2, config=isa.BOOK).startswith("node 'shape' (Shape): a dynamic shape")


def test_refuses_a_weight_larger_than_the_scratchpad():
    m = _mlp([helper.make_node("MatMul", ["X", "W"], ["y"], name="big")], {"W": np.ones((64, 100))},
             shape=("N", 64))
    line = _refused(m, config=isa.BOOK)
    assert line == ("node 'big' (MatMul): its weight 'W' is 64x100 = 6,400 words; the book chip's scratchpad "
                    "holds 4,096 words")
    # the same weight fits the larger scratchpad of another configuration
    assert not import_model(m, config=PRESETS["spad8k_lat4"]).refusals
    m2 = _mlp([helper.make_node("MatMul", ["X", "W"], ["y"], name="deep")], {"W": np.ones((100, 4))},
              shape=("N", 100))
    assert "inner dimension 100 exceeds the matrix unit's 64" in _refused(m2, config=isa.BOOK)


def test_refuses_other_things_in_one_line():
    cases = [
        (_mlp([helper.make_node("Cast", ["X"], ["y"], name="c", to=TensorProto.INT64)], {}), "a cast of a float tensor to INT64"),
        (_mlp([helper.make_node("Relu", ["X"], ["y"], name="r")], {}), "the chip applies a relu in the requantizer"),
        (_mlp([helper.make_node("Gemm", ["X", "W"], ["y"], name="g", transA=1)], {"W": np.ones((4, 4))}), "transA=1"),
        (_mlp([helper.make_node("ArgMax", ["X"], ["y"], name="a", axis=1, select_last_index=1)], {}),
         "select_last_index=1"),
        (_mlp([helper.make_node("Add", ["X", "C"], ["y"], name="a")], {"C": np.ones((3, 4))}), "differs from row to row"),
        (_mlp([helper.make_node("Sin", ["X"], ["y"], name="m")], {}), "an op the importer does not map"),
        (_mlp([helper.make_node("Mul", ["X", "C"], ["y"], name="m")], {"C": np.full((1,), 0.5)}),
         "a Mul by a scalar is mapped only on a MatMul read by nothing else"),
        (_mlp([helper.make_node("MatMul", ["X", "X"], ["y"], name="mm")], {}),
         "a product of two computed tensors mixes the input rows of a batch"),
        (_mlp([helper.make_node("Concat", ["X", "X"], ["y"], name="cat", axis=0)], {}),
         "a concatenation of rows mixes the input rows of a batch"),
    ]
    for m, why in cases:
        line = _refused(m, config=isa.BOOK)
        assert why in line and "\n" not in line, line


def test_a_refusal_comes_before_any_work(tmp_path, monkeypatch, capsys):
    called = []
    monkeypatch.setattr(onnx_run, "compile_graph", lambda *a, **k: called.append(1))
    m = _mlp([helper.make_node("MatMul", ["X", "W"], ["h"], name="mm"),
              helper.make_node("Conv", ["h", "W"], ["y"], name="conv")], {"W": np.ones((4, 4))})
    path = _save(m, tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", np.ones((3, 4)))
    assert main(["onnx", "run", path, "--inputs", str(tmp_path / "x.npy")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "node 'conv' (Conv)" in err and not called
    assert main(["onnx", "info", path]) == 0
    out = capsys.readouterr().out
    assert "REFUSED" in out and "refused: node 'conv' (Conv)" in out


# ------------------------------------------------------------------------------ bad files and inputs
def _one_line_error(argv, capsys, *expected):
    rc = main(argv)
    captured = capsys.readouterr()
    assert rc == 1
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err, captured.err
    for e in expected:
        assert e in captured.err, captured.err
    return captured.err


def test_bad_model_files(tmp_path, capsys):
    good = _save(handmade(), tmp_path / "good.onnx")
    np.save(tmp_path / "x.npy", _rows(3))
    x = str(tmp_path / "x.npy")
    text = tmp_path / "notes.onnx"
    text.write_text("this is not a model\n")
    _one_line_error(["onnx", "run", str(text), "--inputs", x], capsys, "not an ONNX model")
    data = open(good, "rb").read()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(data[: len(data) // 2])
    _one_line_error(["onnx", "run", str(cut), "--inputs", x], capsys, "cut.onnx")
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    _one_line_error(["onnx", "info", str(empty)], capsys, "an empty file")


def test_bad_inputs(tmp_path, capsys):
    good = _save(handmade(), tmp_path / "good.onnx")
    np.save(tmp_path / "wrong.npy", np.ones((3, 12)))
    _one_line_error(["onnx", "run", good, "--inputs", str(tmp_path / "wrong.npy")], capsys,
                    "shape (3, 12), but the model's input 'X' is (N, 3, 4)")
    bad = _rows(3)
    bad[2, 1, 1] = np.nan
    np.save(tmp_path / "nan.npy", bad)
    _one_line_error(["onnx", "run", good, "--inputs", str(tmp_path / "nan.npy")], capsys, "row 2 holds nan")
    (tmp_path / "junk.npy").write_bytes(b"\x93NUMPY garbage")
    _one_line_error(["onnx", "run", good, "--inputs", str(tmp_path / "junk.npy")], capsys, "junk.npy")
    np.save(tmp_path / "x.npy", _rows(3))
    np.save(tmp_path / "y.npy", np.zeros(5, dtype=np.int64))
    _one_line_error(["onnx", "run", good, "--inputs", str(tmp_path / "x.npy"), "--labels", str(tmp_path / "y.npy")],
                    capsys, "one label per row")


# ------------------------------------------------------------------------------ the whole split
@pytest.mark.slow
def test_digits_whole_test_split_meets_the_targets(digits):
    from spec.onnx_run import run_onnx
    res = run_onnx(digits["model"], digits["test_x"], labels_path=digits["test_y"], calibrate_path=digits["train_x"],
                   sims=["icarus", "verilator"], config=isa.BOOK)
    run = res.run
    assert run.rows == 360
    assert abs(run.accuracy - run.reference_accuracy) <= 0.01
    assert run.agreement >= 0.98
    assert not run.chip.interpreter_mismatches
    assert all(s["verdict"] == "PASS" for s in res.sims.values()), res.sims


def test_profile_adds_up_and_draws(tmp_path, capsys):
    from compiler.onnx.profile import profile_program
    imp = import_model(handmade(), config=isa.BOOK)
    compiled = onnx_run.compile_batch(imp, 4, _rows(40).reshape(40, -1))
    prof = profile_program(compiled.program, batch=4)
    c = compiled.program.counters()
    assert sum(l.cycles for l in prof.layers) == c.total             # no overlap: the layers add up
    assert sum(l.units["matrix"] for l in prof.layers) == c.matrix
    assert prof.macs == 4 * (12 * 8 + 8 * 8 + 8 * 5)
    assert 0 < prof.utilisation()["during_mm"] <= 1
    path = _save(handmade(), tmp_path / "h.onnx")
    np.save(tmp_path / "x.npy", _rows(8))
    png = tmp_path / "roof.png"
    assert main(["onnx", "run", path, "--inputs", str(tmp_path / "x.npy"), "--sims", "", "--profile", str(png)]) == 0
    out = capsys.readouterr().out
    assert "array utilisation" in out and "tiny language model's decode step, context 8 (book" in out
    assert "7,615 cycles" in out                                      # the book's decode step at context 8
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------------------------ beyond a classifier
def test_transformer_block_as_onnx_gives_capras_tokens():
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    try:
        import onnx_transformer
    finally:
        sys.path.pop(0)
    rows = onnx_transformer.compare(context=8)
    assert len(rows) == 16
    for r in rows:
        assert r["onnx_on_chip"] == r["capra_decode_step"] == r["onnxruntime"] == r["rule"], r
        assert r["interpreter"]
        # the same program as Capra's decode step but for the two stores of k_new and v_new (16 words each)
        assert r["capra_cycles"] == 7615 and r["cycles"] == 7615 - 2 * (2 + 16 + 2)


def test_transformer_block_replays_in_icarus():
    from spec.on_chip import float_prefix_cache
    from spec.onnx_run import replay_programs
    from spec.tiny_lm import make_model, rule_tokens
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    try:
        import onnx_transformer
    finally:
        sys.path.pop(0)
    model = make_model("structured")
    seq = rule_tokens(5, 3)
    keys, values = float_prefix_cache(model, seq[:-1])
    imp = import_model(onnx_transformer.block_model(model, keys, values), config=isa.BOOK)
    became = {r.name: r.became for r in imp.reports}
    assert became["keys"].startswith("concat_rows") and became["scaled"].startswith("folded into the product's factor")
    assert became["scores"] == "matmul of two computed tensors (B transposed in the MM)"
    run = onnx_run.run_model(imp, np.array([model.embedding(seq[-1])]))
    assert run.predictions[0] == model_rule(seq[-1])
    sims = replay_programs(run, ["icarus"], workers=1)
    assert sims["icarus"]["verdict"] == "PASS", sims["icarus"]["line"]


def model_rule(t):
    from spec.tiny_lm import next_token_rule
    return next_token_rule(t)


def test_without_the_extra_the_command_says_what_to_install(tmp_path, monkeypatch, capsys):
    import importlib
    from compiler.onnx import errors
    real = importlib.import_module

    def missing(name, *a, **k):
        if name == "onnxruntime":
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(errors.importlib, "import_module", missing)
    path = _save(handmade(), tmp_path / "h.onnx")
    err = _one_line_error(["onnx", "info", path], capsys, "'onnxruntime' is not installed", "pip install -e '.[onnx]'")
    assert err.startswith("ga2 onnx info: error:")


def test_outputs_the_chip_cannot_give_are_refused():
    m = _model([helper.make_node("Identity", ["C"], ["y"], name="i")], {"C": np.ones((2, 2))}, ["N", 2],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])])
    with pytest.raises(OnnxError, match="output 'y' is a constant"):
        import_model(m, config=isa.BOOK).check()
    m2 = _model([helper.make_node("MatMul", ["X", "W"], ["h"], name="mm"),
                 helper.make_node("Transpose", ["h"], ["y"], name="t", perm=[1, 0])], {"W": np.ones((2, 2))}, [1, 2],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 1])])
    with pytest.raises(OnnxError, match="output 'y' is a Transpose"):
        import_model(m2, config=isa.BOOK).check()
