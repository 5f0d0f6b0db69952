"""Running an imported ONNX model's input rows on the chip's golden model, beside onnxruntime.

1. The rows (a ``.npy`` of shape ``(N, *features)``) are checked: shape, finite values.
2. Capra compiles one program per batch size tried (``B`` rows per program, calibrated on the
   calibration rows in batches of ``B``); the batch with the fewest cycles per inference wins
   (:func:`choose_batch`), unless one is asked for.
3. Every batch of rows runs on the golden model of the chip (the last batch padded with copies of
   its first row, whose results are dropped); every program's outputs are checked against Capra's
   integer interpreter, bit for bit; each program is kept (code and external-memory image) for a
   replay in the simulators (``spec/onnx_run.py``).
4. onnxruntime runs the float model on the same rows: the reference predictions and outputs.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ga2_hdl import isa
from ga2_hdl.support.reporter import Reporter, or_quiet

from ..errors import CompileError
from ..interpret import interpret
from ..program import Program, compile_graph, execute, ext_image
from ..scales import calibrate
from .errors import OnnxError, require
from .importer import Imported
from .values import Built

#: batch sizes tried by default: 1, then multiples of the array's rows up to this many rows
MAX_BATCH = 64


# ---------------------------------------------------------------------------------------- inputs
def load_rows(path: str, imp: Imported, what: str = "--inputs") -> np.ndarray:
    """The rows of ``path`` (a .npy) as float64 ``(N, prod(features))``, or one line saying what is wrong."""
    arr = _load_npy(path, what)
    feats = imp.input_features
    shown = f"(N, {', '.join(map(str, feats))})"
    if arr.dtype.kind not in "fiub":
        raise OnnxError(f"{what} {path}: holds {arr.dtype} values, not numbers")
    if arr.ndim == len(feats) and tuple(arr.shape) == feats:
        arr = arr[None]                               # a single row
    if arr.ndim != len(feats) + 1 or tuple(arr.shape[1:]) != feats:
        raise OnnxError(f"{what} {path}: shape {tuple(arr.shape)}, but the model's input "
                        f"{imp.input_name!r} is {shown}")
    if arr.shape[0] == 0:
        raise OnnxError(f"{what} {path}: no rows")
    arr = arr.astype(np.float64).reshape(arr.shape[0], -1)
    bad = ~np.isfinite(arr)
    if bad.any():
        r, c = map(int, np.argwhere(bad)[0])
        raise OnnxError(f"{what} {path}: row {r} holds {arr[r, c]} (column {c}); every value must be finite")
    return arr


def load_labels(path: str, n: int) -> np.ndarray:
    arr = _load_npy(path, "--labels")
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1 or arr.shape[0] != n:
        raise OnnxError(f"--labels {path}: shape {tuple(arr.shape)}, but there are {n} input rows: one label per row")
    return arr


def _load_npy(path: str, what: str) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except OSError as e:
        raise OnnxError(f"{what} {path}: cannot read: {e.strerror or e}") from None
    except ValueError as e:
        raise OnnxError(f"{what} {path}: not a .npy array file: {str(e).splitlines()[0]}") from None
    except Exception as e:                         # a damaged header, a truncated array
        raise OnnxError(f"{what} {path}: not a readable .npy file: {str(e).splitlines()[0] or type(e).__name__}") from None


def batches_of(rows: np.ndarray, batch: int) -> list[np.ndarray]:
    """``rows`` cut into ``batch``-row pieces; the last one padded with copies of its first row."""
    pieces = []
    for start in range(0, rows.shape[0], batch):
        piece = rows[start:start + batch]
        if piece.shape[0] < batch:
            piece = np.concatenate([piece, np.repeat(piece[:1], batch - piece.shape[0], axis=0)])
        pieces.append(piece)
    return pieces


# ---------------------------------------------------------------------------------------- compiling
@dataclass
class Compiled:
    batch: int
    built: Built
    program: Program

    @property
    def cycles_per_inference(self) -> float:
        return self.program.counters().total / self.batch


@dataclass
class BatchTry:
    batch: int
    cycles: int | None = None           #: the program's total cycles (ISA's prediction), None: refused
    error: str | None = None
    programs: int = 0                   #: programs the rows need (the last one padded)
    rows: int = 0

    @property
    def per_inference(self) -> float | None:
        """Cycles per real row: every program's cycles (padded rows cost) over the rows."""
        return None if self.cycles is None else self.cycles * self.programs / self.rows


def compile_batch(imp: Imported, batch: int, calib: np.ndarray, *, join_scales: bool = True) -> Compiled:
    """The program for ``batch`` rows, calibrated on ``calib`` (rows) in batches of ``batch``.

    ``join_scales``: a constant added to a product (a bias) is stored at the sum's scale, and so is
    the product when the add is its only reader (Capra's ``ranges``: the three tensors get the
    sum's calibrated range, the largest of theirs), so the add is one VADD with no RQ before it and
    the product is rounded once, by its own requantizer, instead of twice."""
    built = imp.build(batch)
    calib = np.asarray(calib, dtype=np.float64).reshape(len(calib), -1)
    samples = [{built.input_name: piece} for piece in batches_of(calib, batch)]
    ranges = {}
    if join_scales and built.joins:
        measured = calibrate(built.graph, samples)
        users = built.graph.consumers()
        for k, (a, w, total) in enumerate(built.joins):
            tag = f"onnx-join-{k}"
            members = [w, total] + ([a] if users[a] == [total] else [])
            ranges[tag] = max(measured[a], measured[w], measured[total])
            for m in members:
                built.graph.tag(m, tag)
    prog = compile_graph(built.graph, samples, ranges=ranges or None, config=imp.config)
    return Compiled(batch, built, prog)


def candidate_batches(imp: Imported, rows: int) -> list[int]:
    step = imp.config.array
    out = [1] + list(range(step, min(MAX_BATCH, max(rows, 1)) + 1, step))
    if imp.input_batch is not None:             # a model of a fixed batch: only that
        return [imp.input_batch]
    return sorted(set(b for b in out if b <= max(rows, 1)) | {1})


def choose_batch(imp: Imported, calib: np.ndarray, rows: int, batches: Sequence[int] | None = None,
                 reporter: Reporter | None = None) -> tuple[Compiled, list[BatchTry]]:
    """Compile for every batch size in ``batches`` (default :func:`candidate_batches`); keep the one with
    the fewest cycles per inference (ties: the smaller batch).  Batches that do not compile (the
    scratchpad, the external or the instruction memory is full) are listed with Capra's reason;
    the cost of a batch is its program's cycles times the programs ``rows`` need, over ``rows``;
    trying stops after the first batch that does not fit past one that did.  ``reporter`` gets a note
    per batch tried."""
    say = or_quiet(reporter).note
    tries: list[BatchTry] = []
    best: Compiled | None = None
    best_cost = math.inf
    for b in (batches or candidate_batches(imp, rows)):
        try:
            c = compile_batch(imp, b, calib)
        except OnnxError:
            raise
        except CompileError as e:
            tries.append(BatchTry(b, error=str(e).splitlines()[0]))
            say(f"  batch {b:3d}: refused: {tries[-1].error}")
            if best is not None and not batches:
                break
            continue
        tries.append(BatchTry(b, c.program.counters().total, programs=math.ceil(rows / b), rows=rows))
        say(f"  batch {b:3d}: {c.program.counters().total:,} cycles per program, {tries[-1].per_inference:,.1f} "
            f"per inference over {rows} rows in {tries[-1].programs} programs")
        if best is None or tries[-1].per_inference < best_cost - 1e-9:
            best, best_cost = c, tries[-1].per_inference
    if best is None:
        raise OnnxError(f"no batch size compiles for the {imp.config.name} chip: "
                        + "; ".join(f"batch {t.batch}: {t.error}" for t in tries[:2]))
    return best, tries


# ---------------------------------------------------------------------------------------- running
@dataclass
class ChipRun:
    """Every row through the chip's golden model."""
    compiled: Compiled
    rows: int
    programs: list[tuple[str, list, list[int]]]        #: (name, code, external image) per program
    counters: list[isa.Counters]                       #: the golden model's, per program
    outputs: dict[str, np.ndarray]                     #: ONNX output name -> values, N rows
    chip_outputs: dict[str, np.ndarray]                #: Capra output name -> the chip's values (floats)
    interpreter_mismatches: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def totals(self) -> dict[str, int]:
        keys = ("total", "matrix", "dma", "vector", "instructions")
        return {k: int(sum(getattr(c, k) for c in self.counters)) for k in keys}

    def per_inference(self) -> dict[str, float]:
        """Cycles per inference split by unit (the golden model's counters over all programs, divided
        by the real rows: padded rows cost without counting): total, matrix, dma, vector, and
        fetch/issue (the sequencer's cycles of the instructions, the HALTs' aside: two per instruction,
        one after an instruction whose next fetch is the cycle of its done,
        :meth:`ga2_hdl.isa.InstructionSet.fetch_issue`)."""
        t = self.totals()
        out = {k: t[k] / self.rows for k in ("total", "matrix", "dma", "vector")}
        iset = isa.instruction_set(self.compiled.program.config)
        out["fetch_issue"] = sum(iset.fetch_issue(code) - isa.FETCH_ISSUE_CYCLES
                                 for _, code, _ in self.programs) / self.rows
        out["instructions"] = t["instructions"] / self.rows
        return out


def run_rows(compiled: Compiled, rows: np.ndarray, *, check_interpreter: bool = True,
             reporter: Reporter | None = None) -> ChipRun:
    """Every batch of ``rows`` run on the golden model (and Capra's interpreter); ``reporter`` gets
    ``step(programs done, programs, "golden")``."""
    reporter = or_quiet(reporter)
    built, prog, B = compiled.built, compiled.program, compiled.batch
    t0 = time.perf_counter()
    pieces = batches_of(rows, B)
    programs, counters, mismatches = [], [], []
    collected: dict[str, list] = {name: [] for name in prog.output_names}
    for k, piece in enumerate(pieces):
        inputs = {built.input_name: piece}
        out, result = execute(prog, inputs)
        programs.append((f"batch {k} rows {k * B}..{min((k + 1) * B, rows.shape[0]) - 1}", prog.code,
                         ext_image(prog, inputs)))
        counters.append(result.counters)
        if check_interpreter:
            ints = interpret(prog, inputs)
            for name in prog.output_names:
                if out[name][0] != ints[prog.ext[name]["node"]] and len(mismatches) < 5:
                    mismatches.append(f"program {k}, output {name!r}: the golden model's integers differ from "
                                      f"Capra's interpreter")
        for name in prog.output_names:
            collected[name].append(np.asarray(out[name][1], dtype=np.float64))
        reporter.step(k + 1, len(pieces), "golden")
    n = rows.shape[0]
    chip = {name: np.concatenate(v)[:n] for name, v in collected.items()}
    outputs = {}
    for o in built.outputs:
        if o.kind == "chip":
            outputs[o.name] = chip[o.name].reshape(n, *o.features)
        else:
            outputs[o.name] = o.host.apply(chip[o.host.source].astype(np.int64))
    return ChipRun(compiled, n, programs, counters, outputs, chip, mismatches, time.perf_counter() - t0)


# ---------------------------------------------------------------------------------------- the reference
def reference(imp: Imported, rows: np.ndarray) -> dict[str, np.ndarray]:
    """onnxruntime's float outputs for ``rows`` (one thread; in pieces of the model's fixed batch, if any)."""
    ort = require("onnxruntime")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    try:
        sess = ort.InferenceSession(imp.model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    except Exception as e:
        raise OnnxError(f"onnxruntime refuses the model: {str(e).splitlines()[0]}") from None
    x = rows.reshape(rows.shape[0], *imp.input_features).astype(np.float32)
    names = [o.name for o in sess.get_outputs()]
    if imp.input_batch is None:
        got = sess.run(names, {imp.input_name: x})
        return dict(zip(names, (np.asarray(g) for g in got)))
    parts = {name: [] for name in names}
    for piece in batches_of(x.reshape(x.shape[0], -1), imp.input_batch):
        got = sess.run(names, {imp.input_name: piece.reshape(imp.input_batch, *imp.input_features).astype(np.float32)})
        for name, g in zip(names, got):
            parts[name].append(np.asarray(g))
    return {name: np.concatenate(v)[:rows.shape[0]] for name, v in parts.items()}


# ---------------------------------------------------------------------------------------- the whole
@dataclass
class OnnxRun:
    imported: Imported
    chip: ChipRun
    tries: list[BatchTry]
    reference: dict[str, np.ndarray]
    prediction_output: str                 #: the ONNX output the predictions are read from
    predictions: np.ndarray
    reference_predictions: np.ndarray
    labels: np.ndarray | None
    output_errors: dict[str, dict]         #: float outputs: mean and max ``|chip - float|``, relative RMS
    prediction_note: str = ""
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return self.chip.rows

    @property
    def agreement(self) -> float:
        return float(np.mean(self.predictions == self.reference_predictions))

    @property
    def accuracy(self) -> float | None:
        return None if self.labels is None else float(np.mean(self.predictions == self.labels))

    @property
    def reference_accuracy(self) -> float | None:
        return None if self.labels is None else float(np.mean(self.reference_predictions == self.labels))


def _rows_of(values: np.ndarray, n: int) -> np.ndarray:
    v = np.asarray(values)
    return v.reshape(n) if v.size == n else v.reshape(n, -1)


def _as_list(values: np.ndarray) -> list:
    return [v.item() if hasattr(v, "item") else v for v in np.asarray(values).reshape(-1)]


def run_model(imp: Imported, rows: np.ndarray, *, labels: np.ndarray | None = None,
              calib: np.ndarray | None = None, batch: int | None = None,
              reporter: Reporter | None = None) -> OnnxRun:
    """Compile (choosing the batch), run every row on the golden model, run onnxruntime, compare;
    ``reporter`` gets the batches tried (notes) and the golden model's programs (steps)."""
    imp.check()
    t0 = time.perf_counter()
    rows = np.asarray(rows, dtype=np.float64).reshape(len(rows), -1)
    calib = rows if calib is None else np.asarray(calib, dtype=np.float64).reshape(len(calib), -1)
    if batch and imp.input_batch is not None and batch != imp.input_batch:
        raise OnnxError(f"--batch {batch}: the model's input {imp.input_name!r} has a fixed first dimension of "
                        f"{imp.input_batch} rows")
    compiled, tries = choose_batch(imp, calib, rows.shape[0], [batch] if batch else None, reporter=reporter)
    t1 = time.perf_counter()
    chip = run_rows(compiled, rows, reporter=reporter)
    t2 = time.perf_counter()
    ref = reference(imp, rows)
    t3 = time.perf_counter()
    n = rows.shape[0]
    host = [o for o in compiled.built.outputs if o.kind == "host"]
    if host:
        steps = [what for what, _ in host[0].host.steps]
        name = host[0].name
        note = f"output {name!r} (the chip's AMAX" + (", the label table on the host)" if "label table" in steps
                                                      else ")")
        preds, refp = _rows_of(chip.outputs[name], n), _rows_of(ref[name], n)
    else:
        first = next(o for o in compiled.built.outputs if o.kind == "chip")
        name = first.name
        note = (f"the argmax of output {name!r} on the host (the model has no ArgMax), "
                f"of the chip's and of onnxruntime's values")
        preds = np.argmax(chip.outputs[name].reshape(n, -1), axis=1)
        refp = np.argmax(np.asarray(ref[name]).reshape(n, -1), axis=1)
    errors = {}
    for o in compiled.built.outputs:
        if o.kind != "chip":
            continue
        got = chip.outputs[o.name].reshape(n, -1)
        want = np.asarray(ref[o.name], dtype=np.float64).reshape(n, -1)
        diff = got - want
        norm = float(np.sqrt(np.mean(want ** 2)))
        errors[o.name] = {"mean_abs_error": float(np.mean(np.abs(diff))), "max_abs_error": float(np.max(np.abs(diff))),
                          "relative_rms_error": float(np.sqrt(np.mean(diff ** 2)) / norm) if norm else None}
    if labels is not None:
        labels = np.asarray(labels).reshape(-1)
        if preds.ndim != 1:
            raise OnnxError(f"--labels: the predictions (output {name!r}) are not one value per row")
        try:
            labels = labels.astype(np.asarray(refp).dtype)
        except (TypeError, ValueError):
            raise OnnxError(f"--labels: values of type {labels.dtype} cannot be compared with the model's "
                            f"{np.asarray(refp).dtype} labels") from None
    return OnnxRun(imp, chip, tries, ref, name, preds, refp, labels, errors, note,
                   {"compile": t1 - t0, "golden": t2 - t1, "onnxruntime": t3 - t2})


def summary_json(run: OnnxRun) -> dict:
    """The run as JSON-ready data (without the simulators' verdicts)."""
    c = run.chip
    prog = c.compiled.program
    data = {
        "model_input": {"name": run.imported.input_name, "features": list(run.imported.input_features)},
        "config": run.imported.config.to_dict(),
        "rows": run.rows,
        "batch": c.compiled.batch,
        "programs": len(c.programs),
        "batch_tries": [{"batch": t.batch, "cycles_per_program": t.cycles,
                         "cycles_per_inference": None if t.per_inference is None else round(t.per_inference, 2),
                         "refused": t.error} for t in run.tries],
        "instructions_per_program": prog.histogram(),
        "prediction_output": run.prediction_output,
        "prediction_note": run.prediction_note,
        "predictions": _as_list(run.predictions),
        "reference_predictions": _as_list(run.reference_predictions),
        "agreement": run.agreement,
        "output_errors": run.output_errors,
        "cycles_per_inference": {k: round(v, 3) for k, v in c.per_inference().items()},
        "cycles_total": c.totals(),
        "interpreter": "PASS" if not c.interpreter_mismatches else c.interpreter_mismatches[0],
        "notes": list(prog.notes),
        "seconds": {k: round(v, 3) for k, v in run.seconds.items()},
    }
    if run.labels is not None:
        data["accuracy"] = run.accuracy
        data["reference_accuracy"] = run.reference_accuracy
    return data
