"""``ga2 onnx run``: an ONNX model's rows on the chip, every program replayed in the simulators.

The model is imported and compiled by Capra's front end (:mod:`compiler.onnx`), its rows run on
the golden model beside onnxruntime (:func:`compiler.onnx.run.run_model`); here the programs
become one bundle for the chip (expected results from its golden model) and are replayed through
the one simulator interface (:func:`gen.sim.replay.replay`), as ``ga2 ch16`` does; a clock read
by the command from the synthesis cache (:func:`gen.fpga.report.cached_fmax`: nothing is
synthesised) turns cycles into inferences per second.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from compiler.onnx import import_model, load_model
from compiler.onnx.run import OnnxRun, load_labels, load_rows, run_model, summary_json
from ga2_hdl.config import Config
from ga2_hdl.support.reporter import Reporter, or_quiet


@dataclass
class OnnxResult:
    run: OnnxRun
    sims: dict[str, dict] = field(default_factory=dict)       #: name -> {"verdict", "line", "cycles", ...}
    fmax: object | None = None       #: a gen.fpga.report.CachedFmax (mhz, target, why_not), or None
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.run.chip.interpreter_mismatches and all(s["verdict"] == "PASS" for s in self.sims.values())

    def as_json(self) -> dict:
        data = summary_json(self.run)
        data["sims"] = {name: s["verdict"] if s["verdict"] == "PASS" else s["line"] for name, s in self.sims.items()}
        data["sim_details"] = self.sims
        per = self.run.chip.per_inference()["total"]
        if self.fmax and self.fmax.mhz:
            data["fmax"] = {"mhz": self.fmax.mhz, "target": self.fmax.target,
                            "inferences_per_second": round(self.fmax.mhz * 1e6 / per, 1)}
        else:
            data["fmax"] = {"mhz": None, "why_not": self.fmax.why_not if self.fmax else "not asked"}
        data["seconds"].update({k: round(v, 3) for k, v in self.seconds.items()})
        data["ok"] = self.ok
        return data


def replay_programs(run: OnnxRun, simulators: Sequence[str], *, workers: int | None = None,
                    reporter: Reporter | None = None) -> dict[str, dict]:
    """Every program of the run as one bundle, replayed in each simulator against the golden model
    (``reporter``: each simulator's steps)."""
    if not simulators:
        return {}
    from ga2_hdl.formats.bundle import Bundle
    from gen.sim.replay import replay

    config = run.imported.config
    bundle = Bundle.from_programs(run.chip.programs, config=config)
    reps = replay(bundle, list(simulators), workers=workers, reporter=reporter)
    golden = bundle.total_cycles
    out = {}
    for name, rep in reps.items():
        v = rep.span(0, rep.programs)
        cycles_ok = v.cycles == golden
        verdict = "PASS" if v.passed and cycles_ok else ("ERROR" if v.verdict == "ERROR" else "MISMATCH")
        line = v.line() if (cycles_ok or not v.passed) else f"MISMATCH: {v.cycles} cycles, golden {golden}"
        out[name] = {"verdict": verdict, "line": line, "programs": rep.programs, "cycles": v.cycles,
                     "golden_cycles": golden, "run_seconds": round(rep.run_seconds, 3),
                     "setup_seconds": round(rep.setup_seconds, 3)}
    return out


def run_onnx(model_path: str, inputs_path: str, *, labels_path: str | None = None,
             calibrate_path: str | None = None, config: Config, sims: Sequence[str] = (),
             batch: int | None = None, workers: int | None = None, fmax=None,
             reporter: Reporter | None = None) -> OnnxResult:
    """The whole of ``ga2 onnx run``; every refusal (:class:`compiler.onnx.OnnxError`) comes before any work.

    ``fmax``: the chip's clock from a cached synthesis (:func:`gen.fpga.report.cached_fmax`, which
    the command looks up: the synthesis flow is not below the workload), or None.  ``reporter``
    gets the stages (notes) and the programs run and replayed (steps)."""
    reporter = or_quiet(reporter)
    say = reporter.note
    t0 = time.perf_counter()
    imp = import_model(load_model(model_path), config=config)
    imp.check()
    rows = load_rows(inputs_path, imp)
    labels = load_labels(labels_path, rows.shape[0]) if labels_path else None
    calib = load_rows(calibrate_path, imp, "--calibrate") if calibrate_path else None
    say(f"compiling for {config.describe()}: trying batches of rows per program")
    run = run_model(imp, rows, labels=labels, calib=calib, batch=batch, reporter=reporter)
    t1 = time.perf_counter()
    say(f"replaying {len(run.chip.programs)} programs in {', '.join(sims) or 'no simulator'}")
    verdicts = replay_programs(run, sims, workers=workers, reporter=reporter)
    t2 = time.perf_counter()
    return OnnxResult(run, verdicts, fmax, {"replay": t2 - t1, "total": time.perf_counter() - t0})


def info_lines(model_path: str, config: Config, batch: int = 1) -> list[str]:
    """``ga2 onnx info``: what every node became (Capra ops, instructions, MM tiles, scratchpad words)."""
    from compiler.onnx.run import compile_batch
    imp = import_model(load_model(model_path), config=config)
    lines = [f"model: input {imp.input_name!r} (N, {', '.join(map(str, imp.input_features))}), opset {imp.opset}, "
             f"{len(imp.reports)} nodes; chip {config.describe()}"]
    prog = None
    if not imp.refusals:
        rng = np.random.default_rng(0)
        calib = rng.normal(size=(4, int(np.prod(imp.input_features))))   # shapes only: the scales do not matter here
        try:
            compiled = compile_batch(imp, batch, calib)
            prog, built = compiled.program, compiled.built
        except Exception as e:                      # Capra's refusal of the whole program (memory full)
            lines.append(f"  (batch {batch} does not compile: {str(e).splitlines()[0]})")
            built = imp.probe
    else:
        built = imp.probe
    per_node = _instructions_by_node(prog) if prog else {}
    for rep, rep_b in zip(imp.reports, built.reports):
        head = f"  {rep.label}: "
        if rep.refused:
            lines.append(head + "REFUSED: " + rep.refused)
            continue
        capra = [built.graph.nodes[i] for i in rep_b.capra]
        ops = ", ".join(n.label() for n in capra if n.op != "output") or "-"
        ins: dict[str, int] = {}
        for n in capra:
            for k, v in per_node.get(n.id, {}).items():
                ins[k] = ins.get(k, 0) + v
        words = sum(n.size for n in capra if n.op not in ("output",))
        extra = ""
        if ins:
            extra = "; " + " ".join(f"{k} {v}" for k, v in sorted(ins.items()))
            if "MM" in ins:
                extra += f" ({ins['MM']} tile{'s' if ins['MM'] != 1 else ''} of at most {config.array}x{config.array})"
        lines.append(head + (rep.became or "-") + (f" [{ops}; {words:,} scratchpad words" + extra + "]"
                                                    if capra else ""))
    if prog is not None:
        c = prog.counters()
        lines.append(f"batch {batch}: {len(prog.code)} instructions, {prog.spad_high:,} of {config.spad_words:,} "
                     f"scratchpad words at most, {prog.ext_used:,} external words; {c.total:,} cycles "
                     f"(matrix {c.matrix:,}, DMA {c.dma:,}, vector {c.vector:,})")
    for r in imp.refusals:
        lines.append(f"refused: {r}")
    return lines


def _instructions_by_node(prog) -> dict[int, dict[str, int]]:
    """Capra node -> instructions per mnemonic; the RQ in place that clamps a sum goes to its relu."""
    out: dict[int, dict[str, int]] = {}
    users = prog.graph.consumers()
    for pc, ins in enumerate(prog.code):
        if ins.mnemonic == "HALT":
            continue
        nid = prog.node_at(pc)
        if nid in prog.plan.add_relu and ins.mnemonic == "RQ" and ins.relu and ins.dst == ins.src:
            nid = next(u for u in users[nid] if prog.graph.nodes[u].op == "relu")
        out.setdefault(nid, {})
        out[nid][ins.mnemonic] = out[nid].get(ins.mnemonic, 0) + 1
    return out


# ---------------------------------------------------------------------------------------- profile
def profile_of(result: OnnxResult):
    """The model's program profiled per ONNX node (:mod:`compiler.onnx.profile`)."""
    from compiler.onnx.profile import profile_program
    compiled = result.run.chip.compiled
    reports = compiled.built.reports
    owner = {nid: reports[i].label for nid, i in compiled.built.owner.items() if 0 <= i < len(reports)}
    return profile_program(compiled.program, owner, compiled.batch)


#: the tiny language model's decode step profiled beside the model: this context length
DECODE_CONTEXT = 8


def decode_step_profile(config: Config):
    """The chapter's tiny model (structured) decode step at context :data:`DECODE_CONTEXT`, profiled."""
    from compiler.onnx.profile import profile_program
    from .on_chip import PlainChip
    from .tiny_lm import make_model
    prog = PlainChip(make_model("structured"), DECODE_CONTEXT, config=config).program(DECODE_CONTEXT)
    return profile_program(prog, None, 1)


def roofline_png(profiles: Sequence[tuple[str, object]], path: str) -> str:
    """Operations per cycle against operations per word loaded, with the chip's compute and memory
    roofs; a point per profile (the whole program) and a small one per layer that multiplies."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from ga2_hdl.support.safe_io import write_figure

    first = profiles[0][1]
    peak, port = 2 * first.array ** 2, first.ext_port_words
    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=120)
    xs = np.logspace(-1, 3, 200)
    ax.plot(xs, np.minimum(peak, port * xs), color="black", lw=1.5,
            label=f"roofs: {peak} ops/cycle ({first.array}x{first.array} array), {port} word/cycle loaded")
    markers = iter("osD^v")
    for name, p in profiles:
        m = next(markers)
        ops = 2 * p.macs
        if p.words_loaded and p.total_cycles:
            ax.scatter([ops / p.words_loaded], [ops / p.total_cycles], marker=m, s=60, zorder=3,
                       label=f"{name}: {ops / p.total_cycles:.2f} ops/cycle")
        for l in p.layers:
            if l.macs and l.words_loaded and l.cycles:
                ax.scatter([2 * l.macs / l.words_loaded], [2 * l.macs / l.cycles], marker=m, s=18, alpha=0.5,
                           zorder=2, color="grey")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("operations per word loaded from external memory")
    ax.set_ylabel("operations per cycle")
    ax.set_title(f"roofline on {first.config_name} (small grey: layers with products)", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return write_figure(fig, path, format="png")
