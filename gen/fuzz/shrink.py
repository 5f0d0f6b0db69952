"""Shrinking a mismatching program to a minimal one that still mismatches (campaigns keep those).

:func:`shrink` tries, against one simulator and the golden model, programs with fewer
instructions, shorter operands and fewer external-memory words (:func:`_candidates`), keeping
each change that still mismatches, within a time budget; :class:`Shrunk` is the result.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Iterator, Sequence

from ga2_hdl import isa
from ga2_hdl.config import Config
from ga2_hdl.formats.bundle import Bundle
from ga2_hdl.isa import ErrorCode, Instruction

from . import coverage as cov

DEFAULT_SHRINK_SECONDS = 120.0   #: the time a campaign gives each mismatching program to shrink


@dataclass
class Shrunk:
    bundle: Bundle            #: one program, still mismatching
    mismatch: str
    seconds: float
    rounds: int
    complete: bool            #: no smaller candidate mismatches (False: the time ran out)

    @property
    def programs(self):
        return self.bundle.programs


@functools.lru_cache(maxsize=None)
def _sizes(op: int, config: Config) -> tuple[str, ...]:
    """Operands of op ``op`` on the chip ``config`` whose least legal value is 1: lengths and shapes
    (from the ISA's probe)."""
    spec = isa.instruction_set(config).spec(op)
    return tuple(o.name for o in spec.operands
                 if cov.operand_range(spec, o.name, config.ext_words, config=config)[0] == 1)


def _candidates(code: list[Instruction], ext: list[int], ext_words: int, *,
                config: Config) -> Iterator[tuple[list[Instruction], list[int]]]:
    """Smaller variants of a program, most reduced first: halves and single instructions removed,
    lengths and shapes halved or set to 1 (the instruction's verdict under the chip ``config``'s
    check kept), external memory zeroed where no instruction touches it."""
    iset = isa.instruction_set(config)
    body, halt = code[:-1], code[-1:]
    n = len(body)
    size = n // 2
    while size >= 1:                    # halves, quarters, ... single instructions
        for lo in range(0, n, size):
            if size < n:
                yield body[:lo] + body[lo + size:] + halt, ext
        size //= 2
    for i, ins in enumerate(body):
        if ins.op not in iset.by_code:
            continue
        spec = iset.spec(ins.op)
        verdict = iset.check(ins, ext_words)[0]
        values = ins.operands()
        for name in _sizes(ins.op, config):
            for v in (1, values[name] // 2):
                if 1 <= v < values[name]:
                    try:
                        smaller = iset.make(spec.mnemonic, **{**values, name: v})
                    except isa.IsaError:
                        continue
                    smaller = Instruction(**{**{f.name: getattr(smaller, f.name) for f in isa.FIELDS},
                                             **_unused_bits(ins, smaller)})
                    if iset.check(smaller, ext_words)[0] == verdict:
                        yield body[:i] + [smaller] + body[i + 1:] + halt, ext
    used = [False] * ext_words
    for ins in body:
        if ins.op in iset.by_code and iset.check(ins, ext_words)[0] == ErrorCode.OK:
            for r in iset.spec(ins.op).regions(ins):
                if r.memory == "ext":
                    used[r.start:r.end] = [True] * r.length
    zeroed = [w if used[a] else 0 for a, w in enumerate(ext)]
    if zeroed != ext:
        yield code, zeroed


def _unused_bits(old: Instruction, new: Instruction) -> dict:
    """Keep the bits of ``old`` that no operand of its operation uses (junk the hardware ignores)."""
    spec = old.spec
    used = {f.name: 0 for f in isa.FIELDS if f.name != "op"}
    for o in spec.operands:
        used[o.field] |= ((1 << o.bits) - 1) << o.lsb
    return {name: (getattr(new, name) & mask) | (getattr(old, name) & ~mask & isa.FIELD[name].mask)
            for name, mask in used.items()}


def shrink(sim, code: Sequence[Instruction], ext: Sequence[int], ext_words: int, *,
           seconds: float = DEFAULT_SHRINK_SECONDS, batch: int = 8) -> Shrunk:
    """The smallest variant of a mismatching program that ``sim`` still gets wrong.

    Greedy: each round replays candidates ordered from the most reduced (:func:`_candidates`),
    in bundles of ``batch``, then twice as many, ...; the simulator stops at the first one it
    gets wrong, which becomes the program of the next round.  Ends when no candidate
    mismatches (the result is then 1-minimal for these reductions) or after ``seconds``.
    """
    t0 = time.perf_counter()
    config = sim.config                              # the chip the simulator builds
    code, ext = list(code), list(ext)
    current = Bundle.from_programs([("mismatch", code, ext)], ext_words, config=config)
    first = sim.run_bundle(current).mismatch
    if first is None:
        raise ValueError(f"{sim.name} does not mismatch the program to shrink")
    mismatch = str(first).split(": ", 1)[-1]
    rounds, complete = 0, False
    while time.perf_counter() - t0 < seconds:
        rounds += 1
        candidates = _candidates(code, ext, ext_words, config=config)
        size, found = batch, None
        while found is None and time.perf_counter() - t0 < seconds:
            items = [(f"candidate {k}", c, e) for k, (c, e) in zip(range(size), candidates)]
            if not items:
                break
            trial = Bundle.from_programs(items, ext_words, config=config)
            rep = sim.run_bundle(trial)
            if rep.mismatch is not None:
                found = trial.programs[rep.mismatch.program or 0], rep.mismatch
            size *= 2
        if found is None:
            complete = time.perf_counter() - t0 < seconds
            break
        entry, why = found
        code, ext = list(entry.code), list(entry.ext)
        mismatch = str(why).split(": ", 1)[-1]
    name = f"shrunk mismatch in {sim.name}: {len(code) - 1} instructions and HALT"
    return Shrunk(Bundle.from_programs([(name, code, ext)], ext_words, config=config), mismatch,
                  time.perf_counter() - t0, rounds, complete)
