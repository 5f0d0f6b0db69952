"""Compiling a graph to a :class:`Program`, and running one.

``compile_graph`` is the pipeline: calibrate and plan scales
(:mod:`.scales`), plan buffers, views and external memory (:mod:`.planner`),
emit instructions (:mod:`.lower`), check every instruction is legal for the
machine.  The machine is a :class:`~ga2_hdl.config.Config` (the book's chip by
default): its array size tiles the products, its scratchpad, external and
instruction memories bound the plans, and its instruction set
(:func:`ga2_hdl.isa.instruction_set`) judges every instruction and predicts the
counters; a program remembers the configuration it was compiled for and runs on
the golden model of that chip.  ``ext_image`` builds the initial external memory (weights and
inputs quantized with the program's scales); ``run`` executes on the golden
model and reads the outputs back.
"""
from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ga2_hdl import golden, isa
from ga2_hdl.config import Config
from ga2_hdl.formats.results import RunResult

from .errors import CompileError
from .graph import Graph, check_inputs
from .lower import lower
from .planner import BufferPlan, plan_buffers, plan_external
from .scales import ScalePlan, plan_scales, quantize_matrix


@dataclass
class Program:
    """A compiled graph: the code, where everything lives, and the scales it was compiled with."""
    graph: Graph
    code: list[isa.Instruction]                  # ends with HALT
    ext: dict[str, dict]                         # name -> {"addr", "shape", "node", "kind", "words"}
    plan: ScalePlan
    buffers: BufferPlan
    buffer_addr: dict[int, int]                  # buffer -> scratchpad address it was given
    released: set[int]                           # buffers released (their words reused) during the program
    spad_high: int                               # one past the highest scratchpad word used
    ext_used: int                                # external words used by the layout
    ext_words: int                               # the external memory it was compiled for
    reuse: bool
    steps: list[tuple[int, int]]                 # (node id, index of its first instruction)
    config: Config = field(kw_only=True)         # the chip it was compiled for

    @property
    def scale(self) -> dict[int, float]:
        """node id -> int8 scale (argmax nodes have none)."""
        return self.plan.scale

    @property
    def notes(self) -> list[str]:
        return self.plan.notes

    @property
    def output_names(self) -> list[str]:
        return [name for name, e in self.ext.items() if e["kind"] == "output"]

    def output(self, name: str) -> dict:
        """The external-memory entry of output ``name``, or a refusal listing the outputs there are."""
        entry = self.ext.get(name)
        if entry is None or entry["kind"] != "output":
            raise CompileError(f"the program has no output named {name!r} (outputs: "
                               f"{', '.join(self.output_names) or 'none'})")
        return entry

    def counters(self) -> isa.Counters:
        """The five counters the program will end with on its chip: total, matrix, DMA, vector,
        instructions (the instruction set's prediction)."""
        return isa.instruction_set(self.config).counters(self.code)

    def histogram(self) -> dict[str, int]:
        """Instructions per mnemonic, HALT included."""
        return dict(Counter(ins.mnemonic for ins in self.code))

    def words_loaded(self) -> int:
        return sum(ins.len for ins in self.code if ins.mnemonic == "LD")

    def node_at(self, pc: int) -> int:
        """The node whose step emitted instruction ``pc``."""
        owner = self.steps[0][0]
        for nid, first in self.steps:
            if first > pc:
                break
            owner = nid
        return owner

    def address_of(self, nid: int) -> int:
        """The scratchpad address of tensor ``nid`` (its buffer's address plus its offset)."""
        p = self.buffers.placement.get(nid)
        if p is None or p.buffer not in self.buffer_addr:
            raise CompileError(f"{self.graph.nodes[nid].label()} has no place in the scratchpad")
        return self.buffer_addr[p.buffer] + p.offset

    def resident_nodes(self) -> list[int]:
        """The tensors whose words are still in the scratchpad at HALT (their buffers never released)."""
        return [nid for nid, p in self.buffers.placement.items()
                if p.buffer in self.buffer_addr and p.buffer not in self.released]

    def listing(self) -> str:
        """The program, one instruction a line, each step headed by its node."""
        starts = {first: nid for nid, first in self.steps}   # the last node starting at pc emitted it
        lines = []
        for pc, ins in enumerate(self.code):
            if pc in starts:
                lines.append(f"; {self.graph.nodes[starts[pc]].label()}")
            lines.append(f"{pc:4d}  {ins}")
        return "\n".join(lines)


def compile_graph(graph: Graph, calib: Sequence[Mapping[str, Any]], ranges: Mapping[str, float] | None = None,
                  reuse: bool = True, *, ext_words: int | None = None, config: Config) -> Program:
    """Compile ``graph`` to a GA-2 program for the chip ``config`` .

    ``calib``: a list of input dicts (name -> 2-D array) whose float evaluation
    sets every tensor's range; ``ranges``: ``{tag: range}`` fixing the range of
    tagged tensors; ``reuse=False`` keeps every buffer alive to the end (for
    reading every tensor back, and for testing the allocator); ``ext_words``:
    the external memory to lay out (default: the configuration's).
    """
    if not isinstance(graph, Graph):
        raise CompileError(f"compile_graph: expected a Graph, got {type(graph).__name__}")
    if not isinstance(config, Config):
        raise CompileError(f"compile_graph: expected a Config, got {type(config).__name__}")
    try:
        iset = isa.instruction_set(config)
    except isa.IsaError as e:
        raise CompileError(f"compile_graph: {e}") from None
    if ext_words is None:
        ext_words = config.ext_words
    if not any(n.op == "output" for n in graph.nodes):
        raise CompileError("compile_graph: the graph has no output, so its program would compute nothing")
    scales = plan_scales(graph, calib, ranges)
    buffers = plan_buffers(graph)
    external, used = plan_external(graph, ext_words, buffers if config.coalesce_transfers else None)
    low = lower(graph, scales, buffers, external, reuse, config=config)
    prog = Program(graph, low.code, external, scales, buffers, low.buffer_addr, low.released, low.spad_high,
                   used, ext_words, reuse, low.steps, config=config)
    if len(prog.code) > config.imem_words:
        raise CompileError(f"the program has {len(prog.code)} instructions; the instruction memory holds "
                           f"{config.imem_words}")
    for pc, ins in enumerate(prog.code):
        code, why = iset.check(ins, ext_words)
        if code != isa.ErrorCode.OK:     # a compiler bug, not the user's: say where it came from
            raise CompileError(f"internal error: instruction {pc} ({ins}) of "
                               f"{graph.nodes[prog.node_at(pc)].label()} is illegal: {why}")
    if config.overlap:               # units run at once: order the code for it (compiler/schedule.py)
        from .schedule import schedule_program
        prog = schedule_program(prog, config)
    return prog


def ext_image(prog: Program, inputs: Mapping[str, Any], ext_words: int | None = None) -> list[int]:
    """The whole initial external memory: weights and ``inputs`` quantized with the program's scales."""
    size = prog.ext_words if ext_words is None else ext_words
    if prog.ext_used > size:
        raise CompileError(f"ext_image: the program's layout needs {prog.ext_used} external words, the "
                           f"memory has {size}")
    given = check_inputs(prog.graph, inputs, "ext_image")
    image = [0] * size
    for name, entry in prog.ext.items():
        if entry["kind"] == "output":
            continue
        node = prog.graph.nodes[entry["node"]]
        scale = prog.scale[node.id]
        if entry["kind"] == "weight":      # the same weights at the same scale in program after program
            words = _weight_words(tuple(map(tuple, node.attrs["array"])), scale)
        else:
            words = _words(given[name], scale)
        image[entry["addr"]:entry["addr"] + len(words)] = words
    return image


def _words(values, scale: float) -> list[int]:
    """A matrix quantized at ``scale`` as memory words, row after row."""
    return [isa.word_of(q) for row in quantize_matrix(values, scale) for q in row]


@functools.lru_cache(maxsize=256)
def _weight_words(values: tuple[tuple[float, ...], ...], scale: float) -> tuple[int, ...]:
    """:func:`_words` of a weight, remembered by its values and scale."""
    return tuple(_words(values, scale))


def _ints_of(prog: Program, nid: int, words: Sequence[int]) -> list[list[int]]:
    """A tensor's words as ints: int32 for an argmax's indices or a ``q16`` softmax's Q0.16
    probabilities (or an output of one), else int8."""
    node = prog.graph.nodes[nid]
    source = prog.graph.nodes[node.inputs[0]] if node.op == "output" else node
    convert = isa.int32_of if source.op == "argmax" or source.attrs.get("q16") else isa.int8_of
    rows, cols = node.shape
    return [[convert(int(words[r * cols + c])) for c in range(cols)] for r in range(rows)]


def read_outputs(prog: Program, result: RunResult) -> dict[str, tuple[list[list[int]], list[list[float]]]]:
    """``{output name: (ints, floats)}`` from a finished run; argmax outputs are indices (floats equal)."""
    outs = {}
    for name, entry in prog.ext.items():
        if entry["kind"] != "output":
            continue
        nid = entry["node"]
        ints = _ints_of(prog, nid, result.ext[entry["addr"]:entry["addr"] + entry["words"]])
        argmax = prog.graph.nodes[prog.graph.nodes[nid].inputs[0]].op == "argmax"
        scale = 1.0 if argmax else prog.scale[nid]
        outs[name] = (ints, [[v * scale for v in row] for row in ints])
    return outs


def read_tensor(prog: Program, result: RunResult, nid: int) -> list[list[int]]:
    """Tensor ``nid`` read back from the final scratchpad of a run with ``keep_spad``.

    Meaningful for every tensor only when the program was compiled with
    ``reuse=False``; refused for a tensor whose buffer was released.
    """
    if result.spad is None:
        raise CompileError("read_tensor: the run did not keep the scratchpad (run with keep_spad=True)")
    node = prog.graph.nodes[nid]
    p = prog.buffers.placement.get(nid)
    if p is None:
        raise CompileError(f"read_tensor: {node.label()} has no place in the scratchpad")
    if p.buffer in prog.released or p.buffer not in prog.buffer_addr:
        raise CompileError(f"read_tensor: the buffer of {node.label()} was "
                           f"{'released and may have been reused' if p.buffer in prog.released else 'never used'}")
    start = prog.address_of(nid)
    return _ints_of(prog, nid, result.spad[start:start + node.size])


def execute(prog: Program, inputs: Mapping[str, Any], ext_words: int | None = None, *,
            keep_spad: bool = False) -> tuple[dict, RunResult]:
    """Run on the golden model of the program's chip: ``(outputs as in run(), the RunResult)``;
    refuses a run that faults."""
    size = prog.ext_words if ext_words is None else ext_words
    result = golden.run(prog.code, ext_image(prog, inputs, size), ext_words=size, keep_spad=keep_spad,
                        config=prog.config)
    if result.error != isa.ErrorCode.OK:
        raise CompileError(f"the program halted with {result.error.name} at instruction {result.error_pc} "
                           f"({prog.graph.nodes[prog.node_at(result.error_pc)].label()}): {result.message}")
    return read_outputs(prog, result), result


def run(prog: Program, inputs: Mapping[str, Any], ext_words: int | None = None) -> dict:
    """Run on the golden model of the program's chip: ``{output name: (ints 2-D list, floats 2-D list)}``."""
    return execute(prog, inputs, ext_words)[0]
