"""The slice_rows battery: random graphs built around slices, and the refusals.

Each random graph takes a slice of one of five kinds of source (a product, a
concatenation, a slice, an input, a weight) and feeds it to two to four uses
(a matmul, a softmax, attention scores with the slice as keys and values, an
argmax, an add, a plain output).  Every graph is checked four ways:

1. the compiled program, run on the golden model, stores exactly the integer
   interpreter's values in every output;
2. compiled without buffer reuse, every tensor still in the scratchpad at
   HALT (inputs, weights, products, views ...) equals the interpreter's value;
3. with and without reuse, the outputs and all five counters are identical;
4. every non-argmax output is within ``bound`` of floating point on an input
   not used for calibration, the error being the relative RMS error
   ``||chip - float|| / ||float||`` of the dequantized output.  An output
   whose float RMS is under two quantization levels of its scale (a relu that
   is almost always zero, sharing the scale of its matmul) cannot be
   represented in int8 and gets no bound; such outputs are counted.

The same checks run on random chains without slices (products, fused relus,
a self-product, softmaxes, adds and concatenations), which exercise the
allocator and the scale rules more broadly.

Then the slice refusals: a range outside the source (past the end, negative
start), an empty slice, a slice feeding a concatenation, a slice feeding a
relu must each raise ``CompileError`` naming the node.

The battery takes the compiler as a parameter (a module with the public API)
so that ``compiler.mutate`` can run it against deliberately broken copies.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from types import ModuleType
from typing import Callable

from ga2_hdl import isa
from ga2_hdl.config import Config

#: the float-error bound (the book's; its worst observed was 0.28, from attention scores whose range
#: the calibration cannot always predict)
ERROR_BOUND = 0.40
SOURCE_KINDS = ("product", "concat", "slice", "input", "weight")
CALIBRATION_SAMPLES = 30
#: an output whose float RMS is below this many quantization levels of its scale is beyond what
#: int8 at that scale can represent (it shares the scale of larger numbers): no accuracy bound
UNREPRESENTABLE_LEVELS = 2
USES = ("matmul", "softmax", "scores", "argmax", "add", "output")


@dataclass
class Case:
    """One random graph, its calibration samples and a fresh test input."""
    index: int
    graph: object
    calib: list[dict]
    test: dict
    about: str
    kind: str


@dataclass
class BatteryReport:
    graphs: int = 0
    refusals: int = 0
    problems: list[str] = field(default_factory=list)
    worst: dict[str, tuple[float, str]] = field(default_factory=dict)   # "slice"/"chain" -> (error, where)
    kinds: dict[str, int] = field(default_factory=dict)
    unrepresentable: int = 0          # outputs too small for int8 at their scale: no accuracy bound

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def worst_error(self) -> float:
        return max((e for e, _ in self.worst.values()), default=0.0)

    def note_error(self, family: str, error: float, where: str) -> None:
        if error > self.worst.get(family, (-1.0, ""))[0]:
            self.worst[family] = (error, where)

    def summary(self) -> str:
        verdict = "PASS" if self.passed else f"FAIL ({len(self.problems)} problems)"
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(self.kinds.items()) if k != "chain")
        return (f"{verdict}: {self.graphs - self.kinds.get('chain', 0)} random slice graphs (sources: {kinds}), "
                f"{self.kinds.get('chain', 0)} random chains, {self.refusals} refusals; "
                + "; ".join(f"worst float error of the {family}s {e:.3f} (bound {ERROR_BOUND}) in {where}"
                            for family, (e, where) in sorted(self.worst.items(), reverse=True))
                + f"; {self.unrepresentable} outputs too small for int8 at their scale (no bound)")


def _gauss(rng: random.Random, rows: int, cols: int, sd: float) -> list[list[float]]:
    return [[rng.gauss(0.0, sd) for _ in range(cols)] for _ in range(rows)]


def random_case(capra: ModuleType, index: int, rng: random.Random) -> Case:
    """A random graph around one slice (see the module's docstring)."""
    width = rng.choice((4, 8, 12, 16))
    rows = rng.randint(2, 6)
    out_width = rng.choice((4, 8))
    g = capra.Graph()
    shapes = {"x": (rows, width)}
    x = g.input("x", (rows, width))
    w_in = g.weight("W1", _gauss(rng, width, width, 1 / math.sqrt(width)))
    w_out = g.weight("W2", _gauss(rng, width, out_width, 1 / math.sqrt(width)))

    kind = rng.choice(SOURCE_KINDS)
    if kind == "product":
        source = g.matmul(x, w_in)
    elif kind == "concat":
        extra = rng.randint(1, 4)
        shapes["y"] = (extra, width)
        y = g.input("y", (extra, width))
        parts = (y, g.matmul(x, w_in)) if rng.random() < 0.5 else (g.matmul(x, w_in), y)
        source = g.concat_rows(*parts)
    elif kind == "slice":                              # a slice of a slice of a product or a concatenation
        if rng.random() < 0.5:
            shapes["y"] = (2, width)
            base = g.concat_rows(g.input("y", (2, width)), g.matmul(x, w_in))
        else:
            base = g.matmul(x, w_in)
        n = g.nodes[base].shape[0]
        first = rng.randrange(n - 1)
        source = g.slice_rows(base, first, rng.randint(2, n - first))
    elif kind == "input":                              # read only through its slices: loaded by the slice step
        shapes["z"] = (rng.randint(2, 6), width)
        source = g.input("z", shapes["z"])
    else:
        source = g.weight("Wz", _gauss(rng, rng.randint(2, 6), width, 0.5))
    src_rows = g.nodes[source].shape[0]
    start = rng.randrange(src_rows)
    count = rng.randint(1, src_rows - start)
    view = g.slice_rows(source, start, count)

    uses = rng.sample(USES, rng.randint(2, 4))
    for use in uses:
        if use == "matmul":
            g.output(g.matmul(view, w_out), "product")
        elif use == "softmax":
            scores = view if rng.random() < 0.3 else g.matmul(view, w_out, scale=2.0)
            g.output(g.softmax(scores), "probabilities")
        elif use == "scores":                          # attention with the slice as keys and values
            q = g.slice_rows(x, rng.randrange(rows), 1) if rng.random() < 0.5 else g.matmul(x, w_in)
            p = g.softmax(g.matmul(q, view, transpose_b=True, scale=1 / math.sqrt(width)))
            g.output(g.matmul(p, view), "attention")
        elif use == "argmax":
            g.output(g.argmax(view if rng.random() < 0.3 else g.matmul(view, w_out)), "choice")
        elif use == "add":
            w_sq = g.weight("W3", _gauss(rng, width, width, 1 / math.sqrt(width)))
            g.output(g.add(view, g.matmul(view, w_sq)), "sum")
        else:
            g.output(view, "view")

    def sample() -> dict:
        return {name: _gauss(rng, r, c, 0.5) for name, (r, c) in shapes.items()}

    about = (f"graph {index}: slice rows {start}..{start + count - 1} of a {src_rows} x {width} {kind}, "
             f"used by {', '.join(uses)}")
    return Case(index, g, [sample() for _ in range(CALIBRATION_SAMPLES)], sample(), about, kind)


def random_chain_case(capra: ModuleType, index: int, rng: random.Random) -> Case:
    """A random chain without slices: products, fused relus, one self-product, softmaxes, adds, concatenations.

    Add and concatenation partners are fresh inputs drawn at the magnitude of the
    tensor they join (measured by evaluating the graph so far), or an earlier
    tensor of the same shape; a tensor that is essentially zero gets none.
    """
    g = capra.Graph()
    shapes: dict[str, tuple[tuple[int, int], float]] = {}

    def new_input(shape, sd=1.0):
        name = f"in{len(shapes)}"
        shapes[name] = (shape, sd)
        return g.input(name, shape)

    def sample() -> dict:
        return {name: _gauss(rng, r, c, sd) for name, ((r, c), sd) in shapes.items()}

    def magnitude(nid) -> float:
        probe = random.Random(0)
        values = capra.evaluate(g, {n: [[probe.gauss(0, sd) for _ in range(c)] for _ in range(r)]
                                    for n, ((r, c), sd) in shapes.items()})[nid]
        flat = [v for row in values for v in row]
        return max(1e-3, math.sqrt(sum(v * v for v in flat) / len(flat)))

    def weight(rows, cols):
        return g.weight(f"w{len(g.nodes)}", _gauss(rng, rows, cols, 1 / math.sqrt(rows)))

    cur = new_input((rng.randint(1, 6), rng.randint(2, 19)))
    pool, in_concat, steps, scored = [cur], set(), [], False
    for _ in range(rng.randint(3, 7)):
        rows, cols = g.nodes[cur].shape
        op = rng.choice(("matmul", "matmul", "relu", "scores", "softmax", "add", "concat"))
        if op in ("matmul", "relu"):
            cur = g.matmul(cur, weight(cols, rng.randint(1, 10)))
            if op == "relu":
                cur = g.relu(cur)
        elif op == "scores" and not scored:          # one self-product: repeated squaring outruns any static scale
            scored = True
            cur = g.matmul(cur, cur, transpose_b=True, scale=1 / math.sqrt(cols))
        elif op == "softmax":
            cur = g.softmax(g.matmul(cur, weight(cols, rng.randint(2, 8)), scale=0.5))
        elif op in ("add", "concat") and magnitude(cur) < 0.05:
            continue                                 # (a relu that is always zero: a partner would be noise only)
        elif op == "add":
            same = [p for p in pool if g.nodes[p].shape == (rows, cols) and p != cur]
            cur = g.add(cur, rng.choice(same) if same else new_input((rows, cols), magnitude(cur)))
        elif op == "concat" and rows <= 9 and cur not in in_concat:
            extra = new_input((rng.randint(1, 3), cols), magnitude(cur))
            in_concat.update((cur, extra))
            cur = g.concat_rows(cur, extra)
        else:
            continue
        steps.append(op)
        pool.append(cur)
    if rng.random() < 0.3:
        g.output(g.argmax(cur), "choice")
    g.output(cur, "out")
    if len(pool) > 2 and pool[1] not in in_concat and rng.random() < 0.3:
        g.output(pool[1], "middle")
    about = f"chain {index}: {' -> '.join(steps) or 'input only'}"
    return Case(index, g, [sample() for _ in range(CALIBRATION_SAMPLES)], sample(), about, "chain")


def float_error(chip: list[list[float]], ref: list[list[float]]) -> float:
    """Relative RMS error ``||chip - ref|| / ||ref||`` (absolute when ``ref`` is all zeros)."""
    diff = math.sqrt(sum((a - b) ** 2 for ra, rb in zip(chip, ref) for a, b in zip(ra, rb)))
    norm = math.sqrt(sum(b * b for rb in ref for b in rb))
    return diff / norm if norm > 0 else diff


def check_case(capra: ModuleType, case: Case, report: BatteryReport, bound: float = ERROR_BOUND,
               *, config: Config) -> None:
    """Run the four checks on one case, compiled for and run on the chip ``config``, adding what fails
    to ``report.problems``."""
    problems = report.problems
    g = case.graph
    prog = capra.compile_graph(g, case.calib, config=config)
    outs, result = capra.execute(prog, case.test, keep_spad=True)
    ints = capra.interpret(prog, case.test)
    outputs = {name: e for name, e in prog.ext.items() if e["kind"] == "output"}
    for name, entry in outputs.items():
        if outs[name][0] != ints[entry["node"]]:
            problems.append(f"{case.about}: output {name!r} differs from the interpreter")

    flat = capra.compile_graph(g, case.calib, reuse=False, config=config)
    flat_outs, flat_result = capra.execute(flat, case.test, keep_spad=True)
    flat_ints = capra.interpret(flat, case.test)
    for nid in flat.resident_nodes():
        if capra.read_tensor(flat, flat_result, nid) != flat_ints[nid]:
            problems.append(f"{case.about}: {g.nodes[nid].label()} read back from the scratchpad differs from "
                            f"the interpreter")

    if {k: v[0] for k, v in outs.items()} != {k: v[0] for k, v in flat_outs.items()}:
        problems.append(f"{case.about}: outputs differ with and without buffer reuse")
    if result.counters != flat_result.counters:
        problems.append(f"{case.about}: counters differ with and without buffer reuse: "
                        f"{list(result.counters)} / {list(flat_result.counters)}")

    floats = capra.evaluate(g, case.test)
    for name, entry in outputs.items():
        source = g.nodes[g.nodes[entry["node"]].inputs[0]]
        if source.op == "argmax":
            continue
        ref = floats[entry["node"]]
        rms = math.sqrt(sum(v * v for row in ref for v in row) / entry["words"])
        if rms < UNREPRESENTABLE_LEVELS * prog.scale[entry["node"]]:
            report.unrepresentable += 1              # e.g. a relu that is almost always zero
            continue
        err = float_error(outs[name][1], ref)
        report.note_error("chain" if case.kind == "chain" else "slice", err, f"{case.about}, output {name!r}")
        if err > bound:
            problems.append(f"{case.about}: output {name!r} is {err:.3f} from floating point (bound {bound})")


def _refusals(capra: ModuleType, config: Config) -> list[tuple[str, Callable[[], object]]]:
    """(what, a builder that must raise CompileError) for every slice refusal."""
    def graph_with_product():
        g = capra.Graph()
        x = g.input("x", (4, 8))
        return g, x, g.matmul(x, g.weight("W", [[0.1 * (i - j) for j in range(8)] for i in range(8)]))

    def compiled(build):
        def attempt():
            g, out = build()
            g.output(out, "out")
            return capra.compile_graph(g, [{"x": [[0.25 * ((i + j) % 5 - 2) for j in range(8)] for i in range(4)]}],
                                       config=config)
        return attempt

    def past_end():
        g, x, p = graph_with_product()
        return g, g.slice_rows(p, 3, 2)

    def negative_start():
        g, x, p = graph_with_product()
        return g, g.slice_rows(p, -1, 2)

    def empty():
        g, x, p = graph_with_product()
        return g, g.slice_rows(p, 1, 0)

    def into_concat():
        g, x, p = graph_with_product()
        return g, g.concat_rows(g.slice_rows(p, 0, 2), x)

    def into_relu():
        g, x, p = graph_with_product()
        return g, g.relu(g.slice_rows(p, 1, 2))

    return [("a slice past the end of its source", compiled(past_end)),
            ("a slice with a negative start", compiled(negative_start)),
            ("an empty slice", compiled(empty)),
            ("a slice feeding a concatenation", compiled(into_concat)),
            ("a slice feeding a relu", compiled(into_relu))]


def check_refusals(capra: ModuleType, report: BatteryReport, config: Config) -> None:
    for what, attempt in _refusals(capra, config):
        report.refusals += 1
        try:
            attempt()
        except capra.CompileError as e:
            if "node" not in str(e):
                report.problems.append(f"refusal of {what}: the message does not name the node: {e}")
            continue
        except Exception as e:                             # refused, but not as a compile error
            report.problems.append(f"refusal of {what}: raised {type(e).__name__} ({e}), not CompileError")
            continue
        report.problems.append(f"refusal of {what}: accepted")


def run_battery(capra: ModuleType | None = None, *, graphs: int = 40, chains: int = 20, seed: int = 16,
                bound: float = ERROR_BOUND, stop_after: int | None = None,
                config: Config) -> BatteryReport:
    """Run the battery against ``capra`` (default: the compiler package itself), every graph compiled
    for the chip ``config`` and run on that chip's golden model.

    ``graphs`` random slice graphs, then ``chains`` random chains without slices
    (see :func:`random_chain_case`), all through the same four checks.

    ``stop_after``: stop once that many problems are found (the mutation
    driver only needs to know whether a copy is caught).
    """
    if capra is None:
        import compiler as capra
    rng = random.Random(seed)
    report = BatteryReport()
    check_refusals(capra, report, config)
    plan = [(random_case, k) for k in range(graphs)] + [(random_chain_case, k) for k in range(chains)]
    for make, k in plan:
        if stop_after is not None and len(report.problems) >= stop_after:
            break
        try:
            case = make(capra, k, rng)
        except Exception as e:
            report.problems.append(f"graph {k}: building it raised {type(e).__name__}: {e}")
            continue
        report.graphs += 1
        report.kinds[case.kind] = report.kinds.get(case.kind, 0) + 1
        try:
            check_case(capra, case, report, bound, config=config)
        except Exception as e:
            report.problems.append(f"{case.about}: {type(e).__name__}: {e}")
    return report


if __name__ == "__main__":
    r = run_battery(config=isa.BOOK)
    print(r.summary())
    for p in r.problems:
        print("  ", p)
