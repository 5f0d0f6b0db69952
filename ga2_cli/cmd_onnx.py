"""`ga2 onnx run|info`: ONNX models through Capra onto the chip.

    ga2 onnx run MODEL.onnx --inputs X.npy [--labels Y.npy] [--calibrate C.npy] [--config NAME|FILE]
                 [--sims golden,amaranth,icarus,verilator,cxxrtl] [--batch N] [--json FILE]
    ga2 onnx info MODEL.onnx [--config NAME|FILE] [--batch N]
"""
from __future__ import annotations

import json

from ga2_hdl.support.safe_io import atomic_write

from . import options
from .main import CommandError
from .progress import Progress


def register(subparsers) -> None:
    p = subparsers.add_parser("onnx", help="run an ONNX model on the chip (Capra's ONNX front end)",
                              description="ONNX models through Capra: import, compile, run on the chip, replay in "
                                          "the simulators, compare with onnxruntime. Needs pip install -e '.[onnx]'.")
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    r = sub.add_parser("run", help="every input row on the chip, beside onnxruntime's float predictions",
                       description="Compile MODEL for the chip (the batch of rows per program with the fewest cycles "
                                   "per inference), run every row of --inputs on the golden model, replay every "
                                   "program in the simulators named, and compare with onnxruntime.")
    r.add_argument("model", metavar="MODEL.onnx", type=options.input_file)
    r.add_argument("--inputs", required=True, metavar="X.npy", type=options.input_file,
                   help="the input rows: a .npy of shape (N, features...)")
    r.add_argument("--labels", metavar="Y.npy", type=options.input_file, help="the true label of every row")
    r.add_argument("--calibrate", metavar="C.npy", type=options.input_file,
                   help="rows whose float values set the int8 scales (default: the inputs)")
    r.add_argument("--sims", type=options.simulators(allow_none=True), default="golden",
                   help="comma-separated simulators replaying every program against the golden model: golden, "
                        "amaranth, icarus, verilator, cxxrtl (default golden; an empty string replays nothing)")
    r.add_argument("--batch", type=options.positive, default=None,
                   help="rows per program (default: the batch with the fewest cycles per inference)")
    r.add_argument("--profile", metavar="FILE.png", type=options.output_file,
                   help="also print cycles per layer and per unit and the array's utilisation, for the model and "
                        "the tiny language model's decode step, and write their roofline figure to FILE.png")
    options.add_workers(r)
    options.add_json(r)
    options.add_config(r)
    r.set_defaults(func=_run)
    i = sub.add_parser("info", help="what every node of a model becomes on the chip, and what is refused")
    i.add_argument("model", metavar="MODEL.onnx", type=options.input_file)
    i.add_argument("--batch", type=options.positive, default=1, help="rows per program (default 1)")
    options.add_config(i)
    i.set_defaults(func=_info)


def _onnx():
    """The front end, or a CommandError saying in one line what to install."""
    try:
        import compiler.onnx as front
        front.require("onnx", "onnxruntime")
    except Exception as e:
        raise CommandError(str(e)) from None
    return front


def _info(args) -> int:
    front = _onnx()
    from spec.onnx_run import info_lines
    try:
        lines = info_lines(args.model, args.config, args.batch)
    except front.OnnxError as e:
        raise CommandError(str(e)) from None
    print("\n".join(lines))
    return 0


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def _run(args) -> int:
    front = _onnx()
    from compiler.errors import CompileError
    from spec.onnx_run import run_onnx

    progress = Progress()
    try:
        result = run_onnx(args.model, args.inputs, labels_path=args.labels, calibrate_path=args.calibrate,
                          config=args.config, sims=args.sims, batch=args.batch, workers=args.workers,
                          reporter=progress)
    except (front.OnnxError, CompileError) as e:
        raise CommandError(str(e).splitlines()[0]) from None
    finally:
        progress.close()
    from gen.fpga.report import cached_fmax
    result.fmax = cached_fmax(args.config)          # the synthesis cache only: no tool is run
    run, chip = result.run, result.run.chip
    per = chip.per_inference()
    print(f"\n{run.rows} rows in {len(chip.programs)} programs of {chip.compiled.batch} rows "
          f"({chip.compiled.program.histogram()})")
    print(f"  predictions: {run.prediction_note}")
    if run.labels is not None:
        print(f"  accuracy: chip {_pct(run.accuracy)}, float model (onnxruntime) {_pct(run.reference_accuracy)}")
    print(f"  agreement with onnxruntime's float predictions: {_pct(run.agreement)} "
          f"({int(round(run.agreement * run.rows))} of {run.rows})")
    for name, e in run.output_errors.items():
        rel = e["relative_rms_error"]
        print(f"  output {name!r}: mean |chip - float| {e['mean_abs_error']:.4f}, max {e['max_abs_error']:.4f}, "
              f"relative RMS {'-' if rel is None else f'{rel:.3f}'}")
    for note in chip.compiled.program.notes:
        print(f"  note: {note}")
    print(f"  cycles per inference: {per['total']:,.1f} (matrix {per['matrix']:,.1f}, DMA {per['dma']:,.1f}, "
          f"vector {per['vector']:,.1f}, fetch/issue {per['fetch_issue']:,.1f}; the golden model's counters)")
    f = result.fmax
    if f and f.mhz:
        print(f"  at {f.mhz:.1f} MHz (Fmax on the {f.target}, cached synthesis): "
              f"{f.mhz * 1e6 / per['total']:,.0f} inferences per second")
    elif f:
        print(f"  inferences per second: {f.why_not}")
    print(f"  golden model = Capra's integer interpreter: "
          + ("PASS (every program, bit for bit)" if not chip.interpreter_mismatches else chip.interpreter_mismatches[0]))
    for name, s in result.sims.items():
        print(f"  {name}: {s['line']}")
    data = result.as_json()
    if args.profile:
        from spec.onnx_run import decode_step_profile, profile_of, roofline_png
        model, lm = profile_of(result), decode_step_profile(args.config)
        print()
        print("\n".join(model.lines()))
        print("\n".join(lm.lines()).replace("profile (", "tiny language model's decode step, context 8 (", 1))
        roofline_png([("this model", model), ("tiny LM decode step", lm)], args.profile)
        data["profile"] = {"model": model.as_json(), "tiny_lm_decode_step": lm.as_json(), "png": args.profile}
        print(f"  wrote {args.profile}")
    if args.json:
        atomic_write(args.json, json.dumps(data, indent=1) + "\n")
        print(f"  wrote {args.json}")
    return 0 if result.ok else 1
