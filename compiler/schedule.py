"""Instruction scheduling for a chip with overlap: independent instructions reordered so units run together.

On the book's chip instructions run one at a time, so their order only matters
for what they compute: :func:`schedule` leaves such a program exactly as it is.
With ``config.overlap`` the sequencer starts an instruction while other units
are busy when its own unit is free and it conflicts with no instruction in flight
(:class:`ga2_hdl.isa.IssueTimer`), but it issues strictly in program order: a
load placed after a long matrix multiplication waits for it.  This pass moves
such instructions earlier.

Dependencies.  Instruction j must stay after an earlier instruction i when a
memory region of one and a region of the other share a word, in the scratchpad
or in external memory, and at least one of them writes it (read-after-write,
write-after-read, write-after-write; :meth:`ga2_hdl.isa.OpSpec.accesses`,
whole spans from first to last word).  Any order that keeps every such pair
computes the same memory as the original: each word sees the same writes, in
the same order, and each read sees the same last write.  HALT stays last.

Renaming.  Capra reuses scratchpad buffers: every weight matrix of a layer is
loaded into the same buffer, so the load of the next weights must wait
(write-after-read) until the last multiplication has read the previous ones,
and the DMA and the matrix unit take turns again.  Before ordering, each load
that overwrites words an earlier instruction used is given a fresh place in the
scratchpad words the program never touches (:func:`rename_loads`), and every
instruction that reads what that load wrote (up to the next instruction writing
any of its words) reads it there instead.  A load is renamed only when each of
its readers (the instructions reading words that still hold what it wrote) reads
only such words, and while free words remain; what the program computes and stores is unchanged
(the scratchpad's final contents, which no simulator compares, then differ).

Order.  A list scheduler, one instruction at a time: among the instructions all
of whose predecessors are placed, take the one the chip's timing rule would
issue first (:meth:`ga2_hdl.isa.IssueTimer.earliest`), ties to the longest chain
of busy cycles still behind it (the critical path), then to the original order.
Greedy choices can be short-sighted (three long weight loads before the short
input load the first multiplication needs), so a few priorities
(:data:`PRIORITIES`), each with and without renaming, and the original program
are timed with the rule and the fastest is kept: a scheduled program is never
slower than the program it came from.
"""
from __future__ import annotations

from typing import Sequence

from ga2_hdl import isa
from ga2_hdl.config import Config

__all__ = ["schedule", "schedule_program", "rename_loads", "spread_buffers", "dependencies"]


def dependencies(code: Sequence[isa.Instruction], config: Config) -> list[set[int]]:
    """For each instruction (HALT excluded), the earlier instructions it must follow."""
    iset = isa.instruction_set(config)
    accesses = [iset.spec(ins.op).accesses(ins) for ins in code]
    preds: list[set[int]] = []
    for j, mine in enumerate(accesses):
        preds.append({i for i in range(j) if any(p.conflicts(q) for p in mine for q in accesses[i])})
    return preds


def _free_base(code, iset) -> int:
    """One past the highest scratchpad word any instruction of ``code`` touches."""
    return max((r.end for ins in code for r in iset.spec(ins.op).accesses(ins) if r.memory == "spad"),
               default=0)


def _gapless(ins: isa.Instruction, region: isa.Region) -> bool:
    """Whether ``ins`` writes every word of its written ``region`` (regions are spans from first
    to last word; MM's destination rows with ``ldc > N`` leave words between them untouched)."""
    if ins.mnemonic == "MM" and region.role == "dst":
        return ins.M == 1 or ins.ldc <= ins.N
    return True


def _readers(code, acc, w: int, dst: "isa.Region"):
    """The instructions after load ``w`` that read what it wrote into ``dst``, with the regions they
    read it through: [(j, regions)], or None when one of them also reads other words (or a later
    write of unknown words leaves it unclear which words still hold the load's)."""
    spad = lambda regions: [r for r in regions if r.memory == "spad"]
    overlaps = lambda r: r.start < dst.end and dst.start < r.end
    readers = []
    live = set(range(dst.start, dst.end))     # words still holding what the load wrote
    for j in range(w + 1, len(code)):
        if not live:
            break
        touching = [r for r in spad(acc[j]) if overlaps(r)]
        reads = [r for r in touching if not r.write and live.intersection(range(r.start, r.end))]
        for r in reads:
            # re-pointed only if it reads nothing but the load's words (all still holding them)
            if not (dst.start <= r.start and r.end <= dst.end and live.issuperset(range(r.start, r.end))):
                return None
        if reads:
            readers.append((j, reads))
        for r in touching:                     # an instruction reads its operands before it writes
            if r.write:
                if not _gapless(code[j], r) and live.intersection(range(r.start, r.end)):
                    return None                # which of these words it writes is not known here
                live.difference_update(range(r.start, r.end))
    return readers


def _move_load(code, acc, iset, w: int, dst: "isa.Region", readers, start: int) -> None:
    """Load ``w`` and its ``readers`` re-pointed so that the load writes from word ``start``."""
    shift = start - dst.start
    for j, touching in [(w, [dst])] + readers:
        operands = code[j].operands()
        for r in touching:
            operands[r.role] += shift
        code[j] = iset.make(iset.spec(code[j].op).mnemonic, **operands)
        acc[j] = iset.spec(code[j].op).accesses(code[j])


def rename_loads(code: Sequence[isa.Instruction], config: Config) -> list[isa.Instruction]:
    """``code`` (HALT excluded) with reused load destinations moved to free scratchpad words."""
    iset = isa.instruction_set(config)
    code = list(code)
    base = _free_base(code, iset)
    acc = [iset.spec(ins.op).accesses(ins) for ins in code]
    spad = lambda regions: [r for r in regions if r.memory == "spad"]
    for w, ins in enumerate(code):
        if iset.spec(ins.op).mnemonic != "LD":
            continue
        dst = next(r for r in spad(acc[w]) if r.write)
        if base + dst.length > config.spad_words:
            break
        if not any(r.start < dst.end and dst.start < r.end for i in range(w) for r in spad(acc[i])):
            continue                                 # a fresh buffer: nothing to wait for
        readers = _readers(code, acc, w, dst)
        if readers is None:
            continue
        _move_load(code, acc, iset, w, dst, readers, base)
        base += dst.length
    return code


def _gap(acc, w: int, lo: int, hi: int, length: int, avoid: "isa.Region") -> int | None:
    """The lowest word ``s`` in ``lo .. hi - length`` such that no instruction after ``w`` touches
    ``s .. s + length - 1`` and the run misses ``avoid``; None if there is none."""
    taken = sorted([(r.start, r.end) for regions in acc[w + 1:] for r in regions
                    if r.memory == "spad" and r.start < hi and lo < r.end] + [(avoid.start, avoid.end)])
    s = lo
    for start, end in taken:
        if start >= s + length:
            break
        s = max(s, end)
    return s if s + length <= hi else None


def spread_buffers(code: Sequence[isa.Instruction], config: Config, loads_only: bool = False
                   ) -> list[isa.Instruction]:
    """``code`` (HALT excluded) with the buffers its instructions write spread over the scratchpad's
    partitions.

    With ``config.spad_partitions`` above 1, two instructions touching one partition never run at
    once (:func:`ga2_hdl.isa.partitions_meet`), and a compiled program keeps its buffers in the
    lowest words, so every instruction would wait for the ones before it.  In program order, each
    instruction's written region (every load's, or with ``loads_only`` False every instruction's
    whose region it writes whole and does not also read), whose readers read only its words (as
    for :func:`rename_loads`), is moved with its readers into the partition touched least recently
    (its last instruction so far, moved readers included, comes first; its own other regions' partitions
    last), at the lowest words no later instruction touches: what every instruction reads is then
    what it read before, and the dependencies order the reuse of words used earlier.
    """
    n, size = config.spad_partitions, config.spad_partition_words
    iset = isa.instruction_set(config)
    code = list(code)
    if n == 1:
        return code
    acc = [iset.spec(ins.op).accesses(ins) for ins in code]
    parts = lambda r: range(r.start // size, (r.end - 1) // size + 1)
    last = [-1] * n                           # partition -> the last instruction touching it so far
    for w, ins in enumerate(code):
        regions = [r for r in acc[w] if r.memory == "spad"]
        written = [r for r in regions if r.write]
        movable = (len(written) == 1 and written[0].length <= size
                   and (iset.spec(ins.op).mnemonic == "LD" or not loads_only)
                   and _gapless(ins, written[0])
                   and not any(r.start < written[0].end and written[0].start < r.end for r in regions if not r.write))
        readers = _readers(code, acc, w, written[0]) if movable else None
        if readers is not None:
            dst = written[0]
            own = {p for r in regions if not r.write for p in parts(r)}
            for p in sorted(range(n), key=lambda q: (q in own, last[q], q)):
                start = _gap(acc, w, p * size, (p + 1) * size, dst.length, dst)
                if start is not None:
                    _move_load(code, acc, iset, w, dst, readers, start)
                    break
        for j in [w] + [j for j, _ in (readers or [])]:
            for r in acc[j]:
                if r.memory == "spad":
                    for p in parts(r):
                        last[p] = max(last[p], j)
    return code


def _critical(code, preds, iset) -> list[int]:
    """Busy cycles on the longest chain from each instruction to the end."""
    succs: list[list[int]] = [[] for _ in code]
    for j, ps in enumerate(preds):
        for i in ps:
            succs[i].append(j)
    cp = [0] * len(code)
    for i in reversed(range(len(code))):
        cp[i] = iset.busy(code[i]) + max((cp[j] for j in succs[i]), default=0)
    return cp


#: the priorities tried, each a key on (issue cycle, critical path, busy time, index); the smallest goes first
PRIORITIES = {
    "issue time, then critical path": lambda t, cp, busy, i: (t, -cp, i),
    "critical path, then issue time": lambda t, cp, busy, i: (-cp, t, i),
    "issue time, then program order": lambda t, cp, busy, i: (t, i),
    "issue time, then shortest": lambda t, cp, busy, i: (t, busy, i),
}


def _list_schedule(code, preds, cp, iset, priority) -> list[int]:
    timer = iset.timer()
    spad = [timer.spad_accesses(iset.spec(ins.op), ins) for ins in code]
    busy = [iset.busy(ins) for ins in code]
    left = [len(p) for p in preds]
    succs: list[list[int]] = [[] for _ in code]
    for j, ps in enumerate(preds):
        for i in ps:
            succs[i].append(j)
    ready = {i for i, n in enumerate(left) if n == 0}
    order = []
    while ready:
        best = min(ready, key=lambda i: priority(timer.earliest(code[i], spad[i]), cp[i], busy[i], i))
        ready.remove(best)
        timer.issue(code[best], spad[best])
        order.append(best)
        for j in succs[best]:
            left[j] -= 1
            if left[j] == 0:
                ready.add(j)
    return order, timer.halt().total


def schedule(code: Sequence[isa.Instruction], config: Config,
             ext_words: int | None = None) -> list[isa.Instruction]:
    """``code`` as it should run on the chip ``config``: loads renamed, instructions reordered.

    Without overlap, or for a program that does not end with its only HALT or holds an
    instruction the chip refuses (with an external memory of ``ext_words``, by default the
    configuration's), the program is returned as it is.
    """
    return _schedule(code, config, ext_words)[0]


def _schedule(code, config, ext_words):
    """(the scheduled code, for each of its instructions the index of the one it came from)."""
    code = list(code)
    identity = list(range(len(code)))
    if not config.overlap or not code or code[-1].op != isa.HALT.op:
        return code, identity
    iset = isa.instruction_set(config)
    body = code[:-1]
    if any(ins.op == isa.HALT.op or iset.check(ins, ext_words)[0] != isa.ErrorCode.OK for ins in body):
        return code, identity
    best, best_total = (code, identity), iset.counters(code).total
    variants = [body, rename_loads(body, config)]
    if config.spad_partitions > 1:
        variants += [spread_buffers(body, config, loads_only=True), spread_buffers(body, config)]
    for renamed in variants:
        preds = dependencies(renamed, config)
        cp = _critical(renamed, preds, iset)
        for priority in PRIORITIES.values():
            order, total = _list_schedule(renamed, preds, cp, iset, priority)
            if total < best_total:
                best, best_total = ([renamed[i] for i in order] + [code[-1]], order + [len(body)]), total
    return best


def schedule_program(prog, config: Config):
    """A compiled :class:`~compiler.program.Program` with its code scheduled for ``config``
    (the same program object's fields, a new code list; ``steps`` re-made so that
    ``node_at`` still names the node each instruction came from)."""
    import dataclasses
    code, order = _schedule(prog.code, config, prog.ext_words)
    if order == list(range(len(prog.code))) and code == prog.code:
        return prog
    steps: list[tuple[int, int]] = []
    for pc, old in enumerate(order):
        nid = prog.node_at(old)
        if not steps or steps[-1][0] != nid:
            steps.append((nid, pc))
    return dataclasses.replace(prog, code=code, steps=steps)
