"""The worked example of docs/onnx.md: a digits MLP (64-32-10) from scikit-learn, through ONNX, on GA2.

    python examples/onnx_digits.py --out out/digits           # train, export, write the .npy files
    ga2 onnx run out/digits/digits_mlp.onnx --inputs out/digits/test_x.npy --labels out/digits/test_y.npy \\
        --calibrate out/digits/train_x.npy --sims golden,verilator --json out/digits/book.json
    python examples/onnx_digits.py --out out/digits --table book,array8,fast   # the docs' table and figure

No network: scikit-learn's digits data (1,797 8x8 images, pixel values 0..16) ships inside its
wheel.  The model is trained by this script, seeded, on the first 1,437 images; the test split is
the last 360.  It is exported with skl2onnx without the ZipMap (``zipmap: False``), so its outputs
are the label and the class probabilities.  Needs ``pip install -e '.[onnx]'``.

``--table``: for each configuration named, the float, onnxruntime int8 (QDQ, static, calibrated on
the training rows) and GA2 accuracies, the agreement and the cycles per inference (golden model),
written to ``table.json`` and ``table.md``, and the confusion matrix of GA2's predictions on the
book's chip to ``confusion.png``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

#: the seed of the MLP's initial weights and of its shuffling
SEED = 1
#: the images at the end of the data set kept for the test
TEST_ROWS = 360
HIDDEN = 32


def digits_split():
    """(train_x, train_y, test_x, test_y): float32 pixels 0..16, int64 labels."""
    from sklearn.datasets import load_digits
    X, y = load_digits(return_X_y=True)
    X = X.astype(np.float32)
    y = y.astype(np.int64)
    return X[:-TEST_ROWS], y[:-TEST_ROWS], X[-TEST_ROWS:], y[-TEST_ROWS:]


def train(train_x, train_y, hidden: int = HIDDEN, seed: int = SEED):
    """The MLP, trained deterministically (adam, L2 alpha 1.0, up to 1,000 epochs)."""
    import warnings
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier
    clf = MLPClassifier(hidden_layer_sizes=(hidden,), random_state=seed, max_iter=1000, alpha=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(train_x, train_y)
    return clf


def export(clf, sample, path: str) -> bytes:
    """The classifier as ONNX (opset 17, no ZipMap), written atomically; returns the bytes."""
    from skl2onnx import to_onnx
    from ga2_hdl.support.safe_io import atomic_write
    model = to_onnx(clf, sample[:1], options={id(clf): {"zipmap": False}}, target_opset=17)
    data = model.SerializeToString()
    atomic_write(path, data)
    return data


def _save_npy(path: str, array: np.ndarray) -> None:
    import io
    from ga2_hdl.support.safe_io import atomic_write
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    atomic_write(path, buf.getvalue())


def make(out: str, hidden: int = HIDDEN) -> dict[str, str]:
    """Train, export and write the example's files into ``out``; returns their paths."""
    os.makedirs(out, exist_ok=True)
    tx, ty, sx, sy = digits_split()
    clf = train(tx, ty, hidden)
    paths = {"model": os.path.join(out, "digits_mlp.onnx"), "train_x": os.path.join(out, "train_x.npy"),
             "train_y": os.path.join(out, "train_y.npy"), "test_x": os.path.join(out, "test_x.npy"),
             "test_y": os.path.join(out, "test_y.npy")}
    export(clf, tx, paths["model"])
    for key, arr in (("train_x", tx), ("train_y", ty), ("test_x", sx), ("test_y", sy)):
        _save_npy(paths[key], arr)
    paths["sklearn_accuracy"] = float(clf.score(sx, sy))
    return paths


def qdq_accuracy(model_path: str, calib: np.ndarray, test_x: np.ndarray, test_y: np.ndarray, work: str) -> float:
    """onnxruntime's own int8 model: static QDQ quantization calibrated on ``calib``, its test accuracy."""
    import onnxruntime as ort
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Rows(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"X": calib[i:i + 1]} for i in range(calib.shape[0])])

        def get_next(self):
            return next(self.it, None)

    q_path = os.path.join(work, "digits_mlp.qdq.onnx")
    quantize_static(model_path, q_path, Rows(), quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8,
                    weight_type=QuantType.QInt8)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(q_path, opts, providers=["CPUExecutionProvider"])
    label = sess.run(["label"], {"X": test_x})[0].reshape(-1)
    return float(np.mean(label == test_y))


class _Notes:
    """A reporter (``ga2_hdl.support.reporter.Reporter``) that prints the notes, not the steps."""

    def step(self, done: int, total: int, what: str = "") -> None:
        pass

    def note(self, message: str) -> None:
        print(message, flush=True)


def table(out: str, configs: list[str], sims: list[str]) -> dict:
    """The docs' table: every configuration's figures, and the confusion matrix on the first."""
    from ga2_hdl.config import load as load_config
    from ga2_hdl.support.safe_io import atomic_write
    from spec.onnx_run import run_onnx

    paths = make(out)
    tx, ty, sx, sy = digits_split()
    rows, first = [], None
    qdq = qdq_accuracy(paths["model"], tx, sx, sy, out)
    for name in configs:
        config = load_config(name)
        res = run_onnx(paths["model"], paths["test_x"], labels_path=paths["test_y"],
                       calibrate_path=paths["train_x"], config=config, sims=sims, reporter=_Notes())
        run = res.run
        per = run.chip.per_inference()
        rows.append({"config": config.name, "describe": config.describe(), "float_accuracy": run.reference_accuracy,
                     "qdq_int8_accuracy": qdq, "ga2_accuracy": run.accuracy, "agreement": run.agreement,
                     "batch": run.chip.compiled.batch, "programs": len(run.chip.programs),
                     "cycles_per_inference": per, "output_errors": run.output_errors,
                     "interpreter": "PASS" if not run.chip.interpreter_mismatches else run.chip.interpreter_mismatches[0],
                     "sims": {k: v["line"] for k, v in res.sims.items()}})
        if first is None:
            first = run
    atomic_write(os.path.join(out, "table.json"), json.dumps({"rows": rows}, indent=1) + "\n")
    md = ["| configuration | float | onnxruntime int8 (QDQ) | GA2 | agreement | batch | cycles per inference "
          "(matrix / DMA / vector) |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        c = r["cycles_per_inference"]
        md.append(f"| {r['config']} | {100 * r['float_accuracy']:.2f}% | {100 * r['qdq_int8_accuracy']:.2f}% | "
                  f"{100 * r['ga2_accuracy']:.2f}% | {100 * r['agreement']:.2f}% | {r['batch']} | "
                  f"{c['total']:,.1f} ({c['matrix']:,.1f} / {c['dma']:,.1f} / {c['vector']:,.1f}) |")
    atomic_write(os.path.join(out, "table.md"), "\n".join(md) + "\n")
    confusion_png(first.labels, first.predictions, os.path.join(out, "confusion.png"),
                  f"GA2 ({configs[0]} chip) on the digits test split: {100 * first.accuracy:.1f}% correct")
    print("\n".join(md))
    return {"rows": rows}


def confusion_png(truth: np.ndarray, predicted: np.ndarray, path: str, title: str) -> str:
    """The confusion matrix (rows: true digit, columns: predicted), written atomically."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from ga2_hdl.support.safe_io import write_figure
    k = int(max(truth.max(), predicted.max())) + 1
    m = np.zeros((k, k), dtype=int)
    for t, p in zip(truth, predicted):
        m[int(t), int(p)] += 1
    fig, ax = plt.subplots(figsize=(5.2, 4.6), dpi=120)
    ax.imshow(m, cmap="Blues")
    for i in range(k):
        for j in range(k):
            if m[i, j]:
                ax.text(j, i, str(m[i, j]), ha="center", va="center", fontsize=8,
                        color="white" if m[i, j] > m.max() / 2 else "black")
    ax.set_xticks(range(k))
    ax.set_yticks(range(k))
    ax.set_xlabel("predicted digit")
    ax.set_ylabel("true digit")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return write_figure(fig, path, format="png")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="out/digits", help="directory for the model and the .npy files")
    p.add_argument("--table", metavar="CONFIGS", help="comma-separated configurations: run each, write the table")
    p.add_argument("--sims", default="", help="simulators replaying every program (with --table)")
    args = p.parse_args(argv)
    try:
        import onnx, onnxruntime, skl2onnx, sklearn  # noqa: F401
    except ImportError as e:
        print(f"onnx_digits: error: {e.name} is not installed: run pip install -e '.[onnx]'", file=sys.stderr)
        return 1
    if args.table:
        table(args.out, [c for c in args.table.split(",") if c], [s for s in args.sims.split(",") if s])
        return 0
    paths = make(args.out)
    print(f"scikit-learn's accuracy on the last {TEST_ROWS} images: {100 * paths['sklearn_accuracy']:.2f}%")
    for key in ("model", "train_x", "train_y", "test_x", "test_y"):
        print(f"  wrote {paths[key]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
