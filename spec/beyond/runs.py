"""Runs beyond the chapter, on the chip: sampling, trees of guesses, drafts without weights, adaptive k.

Each function decodes from a start token and returns a ``BeyondRun``: the
tokens, the counts, and every program executed (``chip.ProgramRun``), ready to
be replayed on the RTL (``runs.bundle_of``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ga2_hdl.config import Config

from .block_chip import BlockChip, top_two
from ..on_chip import PlainChip, ProgramRun, SpeculativeChip, cycles_of
from .sampling import SampleStats, SeededChooser, one_hot, sample_plain, speculate_sampling
from ..tiny_lm import V, Matrix, TinyLM


@dataclass
class BeyondRun:
    tokens: list[int]
    log: list[ProgramRun]
    blocks: int = 0
    proposed: int = 0
    accepted: int = 0
    rows: int = 0                          #: block rows verified in all (0 for plain decoding)
    ks: list[int] = field(default_factory=list)    #: k of every block (adaptive k)
    extra: dict = field(default_factory=dict)

    @property
    def cycles(self) -> int:
        return cycles_of(self.log)

    @property
    def programs(self) -> int:
        return len(self.log)

    @property
    def acceptance(self) -> float | None:
        return self.accepted / self.proposed if self.proposed else None


def _from_sample(run, log, k=0) -> BeyondRun:
    st: SampleStats = run.stats
    return BeyondRun(run.tokens, list(log), st.blocks, st.proposed, st.accepted, st.blocks * (k + 1) if k else 0,
                     [k] * st.blocks if k else [])


# ---------------------------------------------------------------------------
# 1. Sampling (temperature 0: the chapter's greedy programs through the same loop)
# ---------------------------------------------------------------------------

def plain_sampling(model: TinyLM, n: int, temperature: float, seed: int, start: int = 0,
                   chip: BlockChip | None = None, *, config: Config) -> BeyondRun:
    """Plain decoding by sampling from the chip's distribution after every token.

    Temperature 0: the chapter's decode-step programs (``PlainChip``), their greedy token
    taken as a one-hot distribution; temperature > 0: the sampling step (a tree of one node
    with the softmax head)."""
    chooser = SeededChooser(seed)
    if temperature == 0:
        plain = PlainChip(model, n, config=config)
        log: list[ProgramRun] = []

        def step(L, token, keys, values):
            from compiler import execute, ext_image
            from ..on_chip import _cache_inputs
            program = plain.program(L)
            inputs = _cache_inputs({"x": [list(model.embedding(token))]}, keys, values)
            out, golden = execute(program, inputs)
            log.append(ProgramRun("step", program.code, ext_image(program, inputs), (L,), golden.counters, config=config))
            return one_hot(out["tok"][0][0][0], V), out["k_new"][1][0], out["v_new"][1][0]

        return _from_sample(sample_plain(start, n, step, chooser), log)
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    chip = chip or BlockChip(model, None, n, config=config)
    chip.log = []

    def step(L, token, keys, values):
        probs, k, v = chip.sample_block(L - 1, [token], keys, values, temperature)
        return probs[0], k[0], v[0]

    return _from_sample(sample_plain(start, n, step, chooser), chip.log)


def speculative_sampling(model: TinyLM, Wd: Matrix, n: int, k: int, temperature: float, seed: int,
                         start: int = 0, chip: BlockChip | None = None,
                         draft_temperature: float | None = None, *, config: Config) -> BeyondRun:
    """Speculative sampling with k guesses per block (``sampling.speculate_sampling``).

    Temperature 0: the chapter's programs (``SpeculativeChip``: its verifier and draft),
    their greedy choices as one-hot distributions: the chapter's tokens and cycles.
    Temperature > 0: the target's and the draft's softmax on the chip at ``temperature``
    (the draft's at ``draft_temperature`` if given: any draft keeps the output exact)."""
    chooser = SeededChooser(seed)
    if temperature == 0:
        spec = SpeculativeChip(model, Wd, n, k, config=config)
        spec.log = []

        def verify0(c, block, keys, values):
            choices, nk, nv = spec.verify(c, block, keys, values)
            return [one_hot(t, V) for t in choices], nk, nv

        run = speculate_sampling(start, n, k, verify0, lambda t: one_hot(spec.draft(t), V), chooser)
        return _from_sample(run, spec.log, k)
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    chip = chip or BlockChip(model, Wd, n, k + 1, config=config)
    chip.log = []
    td = temperature if draft_temperature is None else draft_temperature

    def verify(c, block, keys, values):
        return chip.sample_block(c, block, keys, values, temperature)

    run = speculate_sampling(start, n, k, verify, lambda t: chip.draft_probs(t, td), chooser)
    return _from_sample(run, chip.log, k)


# ---------------------------------------------------------------------------
# 2. Trees of guesses, and linear blocks of any k, with the chip's bigram draft
# ---------------------------------------------------------------------------

def _chip_for(model: TinyLM, Wd: Matrix | None, n: int, chip: BlockChip | None, depth: int = 8,
              *, config: Config) -> BlockChip:
    chip = chip or BlockChip(model, Wd, n, depth, config=config)
    chip.log = []
    return chip


def tree_run(model: TinyLM, Wd: Matrix, n: int, l0: int, l1: int, start: int = 0,
             chip: BlockChip | None = None, *, config: Config) -> BeyondRun:
    """Greedy decoding with a two-leg tree per block: the draft's top two first guesses
    (one draft program: its logits), each continued greedily (l0 - 1 and l1 - 1 programs)."""
    from .host import speculate_tree, two_leg_tree
    chip = _chip_for(model, Wd, n, chip, l0 + l1 + 2, config=config)
    parents = two_leg_tree(l0, l1)

    def propose(last):
        _, logits = chip.draft_guess(last)
        first, second = top_two(logits)
        legs = []
        for head, length in ((first, l0), (second, l1)):
            leg = [head] if length else []
            while 0 < len(leg) < length:
                leg.append(chip.draft_guess(leg[-1])[0])
            legs.append(leg)
        return [last] + legs[0] + legs[1]

    tokens, st = speculate_tree(start, n, parents, chip.verify_tree, propose)
    return BeyondRun(tokens, list(chip.log), st.blocks, st.proposed, st.accepted, st.rows)


def linear_run(model: TinyLM, Wd: Matrix | None, n: int, policy, draft=None, start: int = 0,
               chip: BlockChip | None = None, *, config: Config) -> BeyondRun:
    """Greedy linear blocks (the chapter's verifier of any shape); ``policy`` a k (fixed) or an
    ``AdaptiveK``; ``draft(tokens)`` the next guess or None (default: the chip's bigram draft)."""
    from .host import FixedK, speculate_blocks
    chip = _chip_for(model, Wd, n, chip, config=config)
    if isinstance(policy, int):
        policy = FixedK(policy)
    draft_next = (lambda ctx: chip.draft_guess(ctx[-1])[0]) if draft is None else draft
    tokens, st = speculate_blocks(start, n, chip.verify_linear, draft_next, policy)
    return BeyondRun(tokens, list(chip.log), st.blocks, st.proposed, st.accepted, st.rows, list(st.ks))


def adaptive_costs(chip: BlockChip, draft_cycles: int, n: int, k_max: int) -> list[list[int]]:
    """cost[c][k] for every cache c = 0 .. n - 1 and k = 0 .. k_max: the cycles of the compiled verifier of
    k + 1 rows after c cached rows (the ISA's counters of the program the host would run) plus k drafts."""
    return [[chip.linear_program(c, k + 1).counters()[0] + k * draft_cycles for k in range(k_max + 1)]
            for c in range(n)]


def trigram_draft(model: TinyLM):
    """``beyond_host.TrigramDraft`` counted on the float target's greedy runs (the chapter's
    bigram counts: 24 tokens from every start), falling back to the bigram table."""
    from .host import TrigramDraft
    from ..draft import BIGRAM_COUNT_TOKENS, target_logit_table
    from ..tiny_lm import argmax, float_generate
    table = target_logit_table(model)
    runs = [float_generate(model, s, BIGRAM_COUNT_TOKENS) for s in range(V)]
    return TrigramDraft(runs, lambda t: argmax(table[t]))
