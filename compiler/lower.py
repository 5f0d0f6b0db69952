"""Lowering: the planned graph to GA-2 instructions, one node at a time in node order.

What each step emits (A, B are operand addresses; every tensor is row-major):

* leaves (input, weight) emit nothing by themselves: a leaf is loaded (one LD
  of the whole tensor) the first time a step needs it;
* views emit nothing either, but a slice, a concatenation or a relu makes sure
  its operands are in place (loading leaves) when its step comes;
* matmul ``(m x k) @ (k x n)``: a temporary int32 accumulator of ``m * n``
  words, one MM per output tile of the configuration's array (``config.array``
  rows and columns: 4 x 4 on the book's chip; row tiles outer, column tiles
  inner, edge tiles smaller), one RQ of the whole accumulator into the result
  (relu fused), then the temporary is freed; ``k`` must be at most the
  configuration's ``max_k`` (the matrix unit sums all of K in one MM);
* softmax: a temporary of Q0.16 probabilities, one SM per row, one RQ into the
  result (a ``q16`` softmax: one SM per row straight into the result, no RQ);
* add: for each operand at a different scale, an RQ into a temporary at the
  sum's scale; one VADD; the temporaries are freed; a relu of the sum: one RQ
  of the sum in place (ratio 1, clamped at 0);
* rescale: one RQ of the operand into the copy;
* argmax: one AMAX per row; output: one ST of the whole tensor.

After each computing step (not after views and leaves) the buffers whose last
use it was are released, unless reuse is off.  The program ends with HALT.

With ``config.coalesce_transfers`` a load brings the leaves that follow the one
needed in external memory with it (:meth:`_Emitter._load_run`), and the STs that
end the program are merged where their sources are neighbours
(:func:`coalesce_stores`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ga2_hdl import isa
from ga2_hdl.config import Config

from .errors import CompileError
from .graph import EXTERNAL_OPS, Graph, Node
from .planner import AllocationError, Allocator, BufferPlan
from .scales import ScalePlan


@dataclass
class Lowered:
    code: list[isa.Instruction]
    buffer_addr: dict[int, int]                  # buffer -> the address it was given (kept after release)
    released: set[int]                           # buffers released by the end of the program
    spad_high: int
    steps: list[tuple[int, int]] = field(default_factory=list)   # (node id, first instruction index)


class _Emitter:
    def __init__(self, graph: Graph, scales: ScalePlan, buffers: BufferPlan, external: dict[str, dict],
                 reuse: bool, config: Config):
        self.graph, self.scales, self.plan, self.external, self.reuse = graph, scales, buffers, external, reuse
        self.config = config
        self.alloc = Allocator(config.spad_words)
        self.code: list[isa.Instruction] = []
        self.addr: dict[int, int] = {}           # buffer -> current address (live buffers only)
        self.given: dict[int, int] = {}          # buffer -> address ever given
        self.released: set[int] = set()
        self.loaded: set[int] = set()
        self.due = buffers.release_after()
        self.loads_in: dict[int, int] = {}      # partition -> when it was last given a loaded buffer
        self.step: Node | None = None
        #: external address -> the leaf there (the runs of coalesced loads walk it)
        self.leaf_at = {external[n.name]["addr"]: n for n in graph.nodes if n.op in EXTERNAL_OPS}

    # -- memory
    def _alloc(self, words: int, loaded: bool) -> int:
        """``words`` from the allocator where :meth:`_partitions` prefers them, the partition of a
        loaded buffer noted; :class:`AllocationError` when no free run is long enough."""
        start = self.alloc.alloc(words, self._partitions(loaded))
        if loaded:
            self.loads_in[start // self.config.spad_partition_words] = len(self.given)
        return start

    def _take(self, words: int, what: str, loaded: bool = False) -> int:
        try:
            return self._alloc(words, loaded)
        except AllocationError as e:
            raise CompileError(f"{self.step.label()}: cannot place {what}: {e}") from None

    def _partitions(self, loaded: bool) -> list[tuple[int, int]]:
        """Where a buffer should go first (planner.py, "Allocation"): none without partitions; a
        buffer holding a loaded tensor in the partition other than the first that was given one least
        recently; any other buffer in the first partition."""
        n, size = self.config.spad_partitions, self.config.spad_partition_words
        if n == 1:
            return []
        if not loaded:
            return [(0, size)]
        order = sorted(range(1, n), key=lambda p: (self.loads_in.get(p, -1), p))
        return [(p * size, (p + 1) * size) for p in order]

    def place(self, nid: int) -> int:
        """The scratchpad address of tensor ``nid``, giving its buffer an address on first use."""
        p = self.plan.placement[nid]
        if p.buffer not in self.addr:
            buffer = self.plan.buffers[p.buffer]
            loaded = any(self.graph.nodes[m].op in EXTERNAL_OPS for m in buffer.members)
            self.addr[p.buffer] = self.given[p.buffer] = self._take(
                buffer.size, f"the {buffer.size}-word buffer of {self.graph.nodes[nid].label()}", loaded)
        return self.addr[p.buffer] + p.offset

    def operand(self, nid: int) -> int:
        """The address of an operand, loading it from external memory first if it is a leaf not yet loaded."""
        node = self.graph.nodes[nid]
        if node.op in EXTERNAL_OPS and nid not in self.loaded:
            run = self._load_run(nid) if self.config.coalesce_transfers else [nid]
            dst = self._place_run(run)
            last = self.graph.nodes[run[-1]]     # the run's external words: the leaves and their gaps
            words = self.external[last.name]["addr"] + last.size - self.external[node.name]["addr"]
            self.emit("LD", dst=dst, src=self.external[node.name]["addr"], len=words)
            self.loaded.update(run)
        return self.place(nid)

    def _load_run(self, nid: int) -> list[int]:
        """``config.coalesce_transfers``: the leaf ``nid`` and the leaves not yet loaded that follow it in
        external memory, as far as one LD can bring them into one block of the scratchpad: each at
        offset 0 of a buffer not yet given an address, the next leaf's external address being this one's
        plus its buffer's size (the buffer's words after the leaf are the layout's gap,
        :func:`~compiler.planner.leaf_gap`), so each leaf's words keep in the scratchpad their
        distance in external memory; a buffer not yet placed has nothing written in it, so the gap's
        words land where nothing is yet."""
        run, node = [], self.graph.nodes[nid]
        while True:
            p = self.plan.placement[node.id]
            if node.id in self.loaded or p.offset != 0 or p.buffer in self.addr:
                break
            run.append(node.id)
            node = self.leaf_at.get(self.external[node.name]["addr"] + self.plan.buffers[p.buffer].size)
            if node is None:
                break
        return run or [nid]

    def _place_run(self, run: list[int]) -> int:
        """The scratchpad address of the first leaf of ``run``, the run's buffers given consecutive
        addresses in one free block; a run too long for the free space is shortened from its end
        (``run`` is cut in place), down to the first leaf alone, placed as any tensor."""
        while len(run) > 1:
            buffers = [self.plan.placement[m].buffer for m in run]
            try:
                start = self._alloc(sum(self.plan.buffers[b].size for b in buffers), loaded=True)
            except AllocationError:
                del run[-1]
                continue
            for b in buffers:
                self.addr[b] = self.given[b] = start
                start += self.plan.buffers[b].size
            break
        return self.place(run[0])

    def temporary(self, words: int, what: str) -> int:
        return self._take(words, what)

    def emit(self, mnemonic: str, **operands) -> None:
        try:
            self.code.append(isa.make(mnemonic, **operands))
        except isa.IsaError as e:
            raise CompileError(f"{self.step.label()}: {e}") from None

    # -- steps
    def lower(self, node: Node) -> None:
        self.step = node
        if node.op in EXTERNAL_OPS:
            return
        if node.op == "slice":
            self.operand(node.inputs[0])
            self.place(node.id)
            return
        if node.op in ("concat", "relu"):
            for i in node.inputs:
                self.operand(i)
            self.place(node.id)
            return
        srcs = [self.operand(i) for i in node.inputs]
        getattr(self, f"_{node.op}")(node, srcs)
        if self.reuse:
            for b in self.due.get(node.id, ()):
                if b in self.addr:
                    self.alloc.release(self.addr.pop(b), self.plan.buffers[b].size)
                    self.released.add(b)

    def _matmul(self, node: Node, srcs: list[int]) -> None:
        a, b = (self.graph.nodes[i] for i in node.inputs)
        m, k = a.shape
        n = node.cols
        transposed = node.attrs["transpose_b"]
        if k > self.config.max_k:
            raise CompileError(f"{node.label()}: inner dimension {k} exceeds the matrix unit's limit of "
                               f"{self.config.max_k}")
        out = self.place(node.id)
        acc = self.temporary(m * n, f"the {m * n}-word accumulator")
        tile = self.config.array
        for r0 in range(0, m, tile):
            for c0 in range(0, n, tile):
                self.emit("MM", dst=acc + r0 * n + c0, A=srcs[0] + r0 * k,
                          B=srcs[1] + (c0 * k if transposed else c0),
                          M=min(tile, m - r0), K=k, N=min(tile, n - c0), tb=int(transposed),
                          lda=k, ldb=k if transposed else n, ldc=n)
        rq = self.scales.matmul[node.id]
        self.emit("RQ", dst=out, src=acc, len=m * n, m=rq.mantissa, s=rq.shift, relu=int(rq.relu))
        self.alloc.release(acc, m * n)

    def _softmax(self, node: Node, srcs: list[int]) -> None:
        rows, cols = node.shape
        out = self.place(node.id)
        if node.attrs.get("q16"):                # the unit's Q0.16 words are the result
            for r in range(rows):
                self.emit("SM", dst=out + r * cols, src=srcs[0] + r * cols, len=cols)
            return
        probs = self.temporary(node.size, f"the {node.size}-word probability buffer")
        for r in range(rows):
            self.emit("SM", dst=probs + r * cols, src=srcs[0] + r * cols, len=cols)
        rq = self.scales.softmax[node.id]
        self.emit("RQ", dst=out, src=probs, len=node.size, m=rq.mantissa, s=rq.shift)
        self.alloc.release(probs, node.size)

    def _add(self, node: Node, srcs: list[int]) -> None:
        operands, temps = [], []
        for k, src in enumerate(srcs):
            rq = self.scales.add_rescale.get((node.id, k))
            if rq is None:
                operands.append(src)
                continue
            t = self.temporary(node.size, f"operand {k} rescaled")
            temps.append(t)
            self.emit("RQ", dst=t, src=src, len=node.size, m=rq.mantissa, s=rq.shift)
            operands.append(t)
        out = self.place(node.id)
        self.emit("VADD", dst=out, src1=operands[0], src2=operands[1], len=node.size)
        for t in temps:
            self.alloc.release(t, node.size)
        rq = self.scales.add_relu.get(node.id)
        if rq is not None:                       # a relu of the sum, in place
            self.emit("RQ", dst=out, src=out, len=node.size, m=rq.mantissa, s=rq.shift, relu=1)

    def _rescale(self, node: Node, srcs: list[int]) -> None:
        rq = self.scales.rescale[node.id]
        self.emit("RQ", dst=self.place(node.id), src=srcs[0], len=node.size, m=rq.mantissa, s=rq.shift)

    def _argmax(self, node: Node, srcs: list[int]) -> None:
        out = self.place(node.id)
        width = self.graph.nodes[node.inputs[0]].cols
        for r in range(node.rows):
            self.emit("AMAX", dst=out + r, src=srcs[0] + r * width, len=width)

    def _output(self, node: Node, srcs: list[int]) -> None:
        self.emit("ST", src=srcs[0], dst=self.external[node.name]["addr"], len=node.size)


def lower(graph: Graph, scales: ScalePlan, buffers: BufferPlan, external: dict[str, dict],
          reuse: bool = True, *, config: Config) -> Lowered:
    """Emit the program for ``graph`` (ending in HALT) with the given plans, for the chip ``config``
    (its array size tiles the products, its ``max_k`` bounds their inner dimension, its scratchpad
    is what the allocator hands out)."""
    e = _Emitter(graph, scales, buffers, external, reuse, config)
    steps = []
    for node in graph.nodes:
        steps.append((node.id, len(e.code)))
        e.lower(node)
    code = e.code
    if config.coalesce_transfers:
        code, steps = coalesce_stores(code, steps, external)
    code.append(isa.HALT)
    return Lowered(code, dict(e.given), e.released, e.alloc.high, steps)


def coalesce_stores(code: list[isa.Instruction], steps: list[tuple[int, int]], external: dict[str, dict]):
    """``config.coalesce_transfers``: the STs that end the program (the outputs), merged where their
    scratchpad sources lie one after another and their external places fill one span: one ST of the
    whole run, the outputs' external addresses laid out again inside that span in the scratchpad's
    order (``external`` is updated; nothing else reads an output's external words).  Returns the
    code and the steps' first instruction indices, renumbered."""
    names = {(v["addr"], v["words"]): name for name, v in external.items() if v["kind"] == "output"}
    first = len(code)
    while first > 0 and code[first - 1].mnemonic == "ST" and (code[first - 1].dst, code[first - 1].len) in names:
        first -= 1
    stores = list(range(first, len(code)))
    by_src = sorted(stores, key=lambda k: code[k].src)
    chains: list[list[int]] = []
    for k in by_src:
        if chains and code[chains[-1][-1]].src + code[chains[-1][-1]].len == code[k].src:
            chains[-1].append(k)
        else:
            chains.append([k])
    groups: list[list[int]] = []
    for chain in chains:
        spans = sorted((code[k].dst, code[k].dst + code[k].len) for k in chain)
        if all(a[1] == b[0] for a, b in zip(spans, spans[1:])):
            groups.append(chain)                 # one external span: one ST
        else:
            groups.extend([k] for k in chain)    # left as they are
    groups.sort(key=min)
    out, where = code[:first], {}
    for group in groups:
        head = code[group[0]]
        base = min(code[k].dst for k in group)
        words = sum(code[k].len for k in group)
        for k in group:
            where[k] = len(out)
            if len(group) > 1:
                external[names[code[k].dst, code[k].len]]["addr"] = base + code[k].src - head.src
        out.append(head if len(group) == 1 else isa.make("ST", src=head.src, dst=base, len=words))
    renumbered = [(nid, where.get(at, at if at < first else len(out))) for nid, at in steps]
    return out, renumbered
