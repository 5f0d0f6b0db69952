"""Where every tensor lives: scratchpad buffers, views, lifetimes, the allocator, external layout.

**Buffers and views.** Each tensor that computes values (matmul, softmax,
add), each input and weight, and each argmax gets a buffer of ``rows * cols``
words, except the views, which live inside another tensor's buffer:

* a relu is fused into its matmul: they share one place;
* a concatenation's parts are placed in the concatenation's buffer, the first
  part at offset 0, the second after it, so producing the parts *is* the
  concatenation (consumers are planned before producers: nodes are visited
  last to first);
* a slice is an offset into its source's place: ``start * cols`` words further.

A placement is ``(buffer, offset in words)``; every tensor is stored row-major
with a row stride equal to its width, views included.

**Lifetimes.** Node order is the emission order.  A buffer is live from the
first step that writes or reads any of its members to the last such step;
the view rule follows: a source stays alive while any of its slices is read,
because the slice is a member of the source's buffer.  With reuse, a buffer
is released after the last computing step that touches it (views and leaves
are not steps: a buffer last touched by a view that nobody reads is never
released).

**Allocation** is lazy (a buffer gets an address when a step first needs it)
and first fit over an address-ordered free list that coalesces on release,
within the configuration's scratchpad (``config.spad_words``).  On a chip with
scratchpad partitions (``config.spad_partitions`` above 1, with overlap: two
instructions touching one partition never run at once), a buffer holding a
tensor loaded from external memory is placed first fit in the partition other
than the first that was given a loaded buffer least recently, and every other
buffer in the first partition (each falling back to first fit anywhere), so
loads run beside the computation (``lower._Emitter.place``).

**External memory**: inputs and weights in node order from address 0, then the
outputs in node order, within the external memory the program is compiled for
(``config.ext_words`` unless the caller names another size).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .errors import CompileError
from .graph import EXTERNAL_OPS, Graph


@dataclass
class Buffer:
    """A scratchpad region holding one or more tensors (members) at fixed offsets."""
    id: int
    size: int                                    # words
    members: list[int] = field(default_factory=list)
    first_step: int | None = None                # node ids of the first and last steps touching it
    last_step: int | None = None


@dataclass(frozen=True)
class Placement:
    buffer: int
    offset: int                                  # words from the buffer's start


@dataclass
class BufferPlan:
    buffers: list[Buffer]
    placement: dict[int, Placement]              # node -> where its tensor lives

    def release_after(self) -> dict[int, list[int]]:
        """step (node id) -> the buffers whose last use it is."""
        due: dict[int, list[int]] = {}
        for b in self.buffers:
            if b.last_step is not None:
                due.setdefault(b.last_step, []).append(b.id)
        return due


def plan_buffers(graph: Graph) -> BufferPlan:
    """Give every tensor a place (a buffer and an offset) and every buffer its lifetime."""
    nodes = graph.nodes
    buffers: list[Buffer] = []
    place: dict[int, Placement] = {}

    def new_buffer(size: int) -> int:
        buffers.append(Buffer(len(buffers), size))
        return len(buffers) - 1

    # Consumers before producers, so that a concatenation (or a fused relu) is placed
    # before the tensors that will be written into it.
    for n in reversed(nodes):
        if n.op in ("output", "argmax", "slice"):
            continue
        if n.id not in place:
            place[n.id] = Placement(new_buffer(n.size), 0)
        here = place[n.id]
        if n.op == "relu":
            src = n.inputs[0]
            if src in place:
                raise CompileError(f"{nodes[src].label()} is needed in two places: as the operand of relu "
                                   f"{n.label()} and elsewhere")
            place[src] = here
        elif n.op == "concat":
            offset = here.offset
            for part in n.inputs:
                if part in place:
                    raise CompileError(f"{nodes[part].label()} is a part of two concatenations (or already has "
                                       f"a place of its own); {n.label()} would need a copy of it")
                place[part] = Placement(here.buffer, offset)
                offset += nodes[part].size

    # A slice is an offset into its source's place.
    # (Graph.concat_rows and Graph.relu refuse a slice operand: a view cannot be written into
    # another buffer without a copy.)
    for n in nodes:
        if n.op == "slice":
            src = place[n.inputs[0]]
            place[n.id] = Placement(src.buffer, src.offset + n.attrs["start"] * n.cols)

    for n in nodes:
        if n.op == "argmax":
            place[n.id] = Placement(new_buffer(n.size), 0)

    for nid, p in place.items():
        buffers[p.buffer].members.append(nid)

    # Lifetimes: every step that writes or reads a member (leaves are not steps).
    for n in nodes:
        if n.op in EXTERNAL_OPS:
            continue
        touched = ([n.id] if n.id in place else []) + [i for i in n.inputs if i in place]
        for nid in touched:
            b = buffers[place[nid].buffer]
            if b.first_step is None:
                b.first_step = n.id
            b.last_step = n.id if b.last_step is None else max(b.last_step, n.id)
    return BufferPlan(buffers, place)


class AllocationError(Exception):
    """The scratchpad has no free run of the requested size."""


class Allocator:
    """First fit over the free runs of the scratchpad (``size`` words: the chip's ``spad_words``), kept
    in address order and coalesced."""

    def __init__(self, size: int):
        self.size = size
        self.free: list[tuple[int, int]] = [(0, size)]   # (start, length), sorted, no two adjacent
        self.high = 0                                     # one past the highest word ever handed out

    def alloc(self, words: int, prefer: Sequence[tuple[int, int]] = ()) -> int:
        """The first free run of ``words`` words: within the first range ``(lo, hi)`` of ``prefer``
        that has one, else anywhere."""
        for lo, hi in [*prefer, (0, self.size)]:
            for k, (start, length) in enumerate(self.free):
                s, e = max(start, lo), min(start + length, hi)
                if e - s >= words:
                    pieces = [(start, s - start), (s + words, start + length - s - words)]
                    self.free[k:k + 1] = [(a, n) for a, n in pieces if n > 0]
                    self.high = max(self.high, s + words)
                    return s
        raise AllocationError(f"the scratchpad has no free run of {words} words (free: "
                              f"{sum(n for _, n in self.free)} words in {len(self.free)} pieces)")

    def release(self, start: int, words: int) -> None:
        runs = sorted(self.free + [(start, words)])
        merged: list[tuple[int, int]] = []
        for s, n in runs:
            if merged and merged[-1][0] + merged[-1][1] == s:
                merged[-1] = (merged[-1][0], merged[-1][1] + n)
            else:
                merged.append((s, n))
        self.free = merged


def leaf_gap(graph: Graph, buffers: BufferPlan, nid: int) -> int:
    """Words of the leaf ``nid``'s buffer after the leaf, when the leaf is at its start and every other
    member of the buffer is computed (a concatenation's later parts: the new key after the cached
    ones); else 0.  With coalesced loads the external layout leaves that many words free after the
    leaf, so that one LD can bring the leaves on both sides of such a buffer (the gap's words land in
    the computed parts' places before anything is written there)."""
    p = buffers.placement[nid]
    buffer = buffers.buffers[p.buffer]
    others = [m for m in buffer.members if m != nid]
    if p.offset != 0 or any(graph.nodes[m].op in EXTERNAL_OPS for m in others):
        return 0
    return buffer.size - graph.nodes[nid].size


def plan_external(graph: Graph, ext_words: int, gaps: BufferPlan | None = None) -> tuple[dict[str, dict], int]:
    """External memory: ``{name: {"addr", "shape", "node", "kind", "words"}}`` and the words used.
    ``gaps`` (the buffer plan, with coalesced loads): after each leaf the words of :func:`leaf_gap`."""
    layout: dict[str, dict] = {}
    top = 0
    leaves = [n for n in graph.nodes if n.op in EXTERNAL_OPS]
    outputs = [n for n in graph.nodes if n.op == "output"]
    for n in leaves + outputs:
        kind = "output" if n.op == "output" else n.op
        layout[n.name] = {"addr": top, "shape": n.shape, "node": n.id, "kind": kind, "words": n.size}
        top += n.size
        if gaps is not None and n.op in EXTERNAL_OPS:
            top += leaf_gap(graph, gaps, n.id)
    if top > ext_words:
        biggest = max(leaves + outputs, key=lambda n: n.size)
        raise CompileError(f"external memory is full: the inputs, weights and outputs need {top} words, the "
                           f"memory has {ext_words} (the largest is {biggest.label()})")
    return layout, top
