"""Decoding on GA-2: the host side of plain and speculative greedy decoding.

The chip has no gather instruction and keeps nothing between programs, so the
host

* picks the embedding row of the token to feed (input ``x``),
* keeps the KV cache between programs, appending the *dequantized* key and
  value rows each program returns (they are fed back as float inputs and
  quantized again with the cache's fixed scale),
* chooses which compiled program to run: one per context length for plain
  decoding, one per (cache length, block length) for the verifier, one for
  the draft.

Calibration.  Every program is compiled with sample inputs recorded from the
float model doing exactly what the chip will do (the same loop from every
start token), and with explicit ranges for the embedding rows, keys and values
(the maxima over all rows seen), so that all programs agree on the cache's
scale.

Every program executed is logged as a ``ProgramRun`` (code and external
memory image, the chip it ran on and the golden model's counters), which is
everything needed to replay the run on the RTL.

The chip is a :class:`~ga2_hdl.config.Config` : every
program is compiled for it and run on its golden model.  The tokens do not
depend on it (the arithmetic of every instruction is the same on every chip;
only the tiling and the cycles change).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from compiler import compile_graph, execute, ext_image
from ga2_hdl import isa
from ga2_hdl.config import Config
from ga2_hdl.isa import Counters, Instruction

from .draft import draft_next
from .graphs import decode_step_graph, draft_graph, verifier_graph
from .speculative import SpecStats, speculate
from .tiny_lm import V, Matrix, TinyLM, argmax, float_step
from .verifier import float_block


@dataclass
class ProgramRun:
    """One program the chip executed: enough to replay it on any simulator."""
    kind: str                       #: "step", "verify" or "draft"
    code: list[Instruction]
    ext: list[int]                  #: external memory image before the run
    shape: tuple[int, ...] = ()     #: (context length,) or (cache length, block length)
    config: Config = field(kw_only=True)  #: the chip it was compiled for and ran on
    measured: Counters | None = None   #: the golden model's counters of the run (None: not recorded)

    @property
    def counters(self) -> Counters:
        """[total, matrix, dma, vector, instructions] cycles/count of the program: the instruction
        set's prediction for its chip."""
        return isa.instruction_set(self.config).counters(self.code)

    @property
    def cycles(self) -> int:
        return self.counters.total


def cycles_of(log: Iterable[ProgramRun]) -> int:
    """Total cycles of a run: the sum over the programs it executed."""
    return sum(r.cycles for r in log)


def _max_abs(rows: Iterable[Sequence[float]]) -> float:
    return max((abs(x) for row in rows for x in row), default=0.0)


def _cache_inputs(inputs: dict, keys: Sequence[Sequence[float]], values: Sequence[Sequence[float]]) -> dict:
    if keys:
        inputs["kc"] = [list(r) for r in keys]
        inputs["vc"] = [list(r) for r in values]
    return inputs


# ---------------------------------------------------------------------------
# Plain decoding: one program per context length
# ---------------------------------------------------------------------------

def calibrate_plain(model: TinyLM, steps: int, starts: Iterable[int] = range(V)):
    """Float greedy runs of ``steps`` tokens from every start: the inputs each context
    length sees, and the ranges of x, k and v over everything seen."""
    samples: dict[int, list[dict]] = {L: [] for L in range(1, steps + 1)}
    rx = rk = rv = 0.0
    for start in starts:
        token, keys, values = start, [], []
        for L in range(1, steps + 1):
            x = model.embedding(token)
            samples[L].append(_cache_inputs({"x": [list(x)]}, keys, values))
            step = float_step(model, token, keys, values)
            rx = max(rx, _max_abs([x]))
            rk = max(rk, _max_abs([step.key]))
            rv = max(rv, _max_abs([step.value]))
            keys, values = keys + [step.key], values + [step.value]
            token = argmax(step.logits)
    return samples, {"x": rx, "k": rk, "v": rv}


@dataclass
class PlainRun:
    tokens: list[int]
    log: list[ProgramRun]
    logits: list[list[float]] = field(default_factory=list)   #: dequantized logits of every step


class PlainChip:
    """Greedy decoding one token per program; programs compiled lazily per context length."""

    def __init__(self, model: TinyLM, steps: int, starts: Iterable[int] = range(V), *,
                 config: Config):
        self.model = model
        self.steps = steps
        self.config = config
        self.samples, self.ranges = calibrate_plain(model, steps, starts)
        self.programs: dict[int, object] = {}

    def program(self, context_len: int):
        if context_len not in self.samples:
            raise ValueError(f"no calibration for context length {context_len} (calibrated 1..{self.steps})")
        if context_len not in self.programs:
            self.programs[context_len] = compile_graph(decode_step_graph(self.model, context_len),
                                                       self.samples[context_len], ranges=self.ranges,
                                                       config=self.config)
        return self.programs[context_len]

    def generate(self, start: int, n: int, force: Sequence[int] | None = None) -> PlainRun:
        """Decode n tokens after ``start``.  ``force``: tokens to feed instead of the chip's
        own choices (teacher forcing; force[L] is fed after step L)."""
        tokens, keys, values = [start], [], []
        result = PlainRun(tokens, [])
        for L in range(1, n + 1):
            program = self.program(L)
            inputs = _cache_inputs({"x": [list(self.model.embedding(tokens[-1]))]}, keys, values)
            out, golden = execute(program, inputs)
            result.log.append(ProgramRun("step", program.code, ext_image(program, inputs), (L,),
                                         golden.counters, config=self.config))
            result.logits.append(list(out["logits"][1][0]))
            keys.append(list(out["k_new"][1][0]))
            values.append(list(out["v_new"][1][0]))
            tokens.append(force[L] if force else out["tok"][0][0][0])
        return result


# ---------------------------------------------------------------------------
# Speculative decoding: a verifier per (cache length, block length), one draft program
# ---------------------------------------------------------------------------

@dataclass
class ChipSpecRun:
    tokens: list[int]
    stats: SpecStats
    calls: list[tuple]
    log: list[ProgramRun]


class SpeculativeChip:
    """Speculative decoding with the verifier and the draft running on the chip.

    Calibration runs the same host loop in floating point (float block verifier,
    float draft) for n tokens from every start token, recording every verifier
    input under its (cache length, block length) and every draft input.
    """

    def __init__(self, model: TinyLM, Wd: Matrix, n: int, k: int, starts: Iterable[int] = range(V), *,
                 config: Config):
        self.model, self.Wd, self.n, self.k = model, Wd, n, k
        self.config = config
        self.verifier_samples: dict[tuple[int, int], list[dict]] = {}
        self.draft_samples: list[dict] = []
        self.verifier_programs: dict[tuple[int, int], object] = {}
        self._draft_program = None
        self.log: list[ProgramRun] = []
        rk = rv = 0.0

        def recording_verify(cache_len, block, keys, values):
            nonlocal rk, rv
            result = float_block(model, block, keys, values)
            inputs = _cache_inputs({"x": [list(model.embedding(t)) for t in block]}, keys, values)
            self.verifier_samples.setdefault((cache_len, len(block)), []).append(inputs)
            rk = max(rk, _max_abs(result.keys))
            rv = max(rv, _max_abs(result.values))
            return result.choices(), result.keys, result.values

        def recording_draft(token):
            self.draft_samples.append({"x": [list(model.embedding(token))]})
            return draft_next(model, Wd, token)

        for start in starts:
            speculate(start, n, k, recording_verify, recording_draft)
        self.ranges = {"x": _max_abs(model.E), "k": rk, "v": rv}

    def verifier_program(self, cache_len: int, block_len: int):
        key = (cache_len, block_len)
        if key not in self.verifier_programs:
            if key not in self.verifier_samples:
                raise ValueError(f"the float calibration never verified a block of {block_len} rows against a "
                                 f"cache of {cache_len}: the chip's run left the float run's path")
            self.verifier_programs[key] = compile_graph(verifier_graph(self.model, block_len, cache_len),
                                                        self.verifier_samples[key], ranges=self.ranges,
                                                        config=self.config)
        return self.verifier_programs[key]

    @property
    def draft_program(self):
        if self._draft_program is None:
            self._draft_program = compile_graph(draft_graph(self.Wd), self.draft_samples, config=self.config)
        return self._draft_program

    def verify(self, cache_len, block, keys, values):
        """The host loop's ``verify`` on the chip: choices per row and dequantized new k, v rows."""
        program = self.verifier_program(cache_len, len(block))
        inputs = _cache_inputs({"x": [list(self.model.embedding(t)) for t in block]}, keys, values)
        out, golden = execute(program, inputs)
        self.log.append(ProgramRun("verify", program.code, ext_image(program, inputs), (cache_len, len(block)),
                                   golden.counters, config=self.config))
        return ([row[0] for row in out["tok"][0]], [list(r) for r in out["k_new"][1]],
                [list(r) for r in out["v_new"][1]])

    def draft(self, token: int) -> int:
        """The host loop's ``draft`` on the chip."""
        program = self.draft_program
        inputs = {"x": [list(self.model.embedding(token))]}
        out, golden = execute(program, inputs)
        self.log.append(ProgramRun("draft", program.code, ext_image(program, inputs), (),
                                   golden.counters, config=self.config))
        return out["tok"][0][0][0]

    def generate(self, start: int, n: int) -> ChipSpecRun:
        self.log = []
        spec = speculate(start, n, self.k, self.verify, self.draft)
        return ChipSpecRun(spec.tokens, spec.stats, spec.calls, list(self.log))


# ---------------------------------------------------------------------------
# A verifier compiled for a fixed shape, for the causality and accuracy checks
# ---------------------------------------------------------------------------

def float_prefix_cache(model: TinyLM, tokens: Sequence[int]):
    """Float keys and values of a prefix of tokens fed one at a time."""
    keys, values = [], []
    for t in tokens:
        step = float_step(model, t, keys, values)
        keys.append(step.key)
        values.append(step.value)
    return keys, values


def compile_fixed_verifier(model: TinyLM, cache_len: int, block_len: int, samples: int = 40, seed: int = 9, *,
                           config: Config):
    """A verifier for one (cache, block) shape calibrated on random prefixes and blocks.

    Returns the program and a function (block tokens, keys, values) -> chip inputs.
    The calibration draws, per sample, the prefix tokens then the block tokens
    from ``random.Random(seed).randrange``.
    """
    rng = random.Random(seed)
    calibration = []
    rk = rv = 0.0
    for _ in range(samples):
        prefix = [rng.randrange(V) for _ in range(cache_len)]
        block = [rng.randrange(V) for _ in range(block_len)]
        keys, values = float_prefix_cache(model, prefix)
        result = float_block(model, block, keys, values)
        calibration.append(_cache_inputs({"x": [list(model.embedding(t)) for t in block]}, keys, values))
        rk = max(rk, _max_abs(keys + result.keys))
        rv = max(rv, _max_abs(values + result.values))
    ranges = {"x": _max_abs(model.E), "k": rk, "v": rv}
    program = compile_graph(verifier_graph(model, block_len, cache_len), calibration, ranges=ranges, config=config)

    def make_inputs(block, keys, values):
        return _cache_inputs({"x": [list(model.embedding(t)) for t in block]}, keys, values)

    return program, make_inputs
