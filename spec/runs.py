"""The chapter's runs, as data: the seven-row table and the pieces of running example A.

Each run returns the programs it executed (``ProgramRun`` records), so a caller
can replay them on any simulator; cycles here are the ISA's prediction for the
chip the run was compiled for (``instruction_set(config).counters``), which the
golden model and the RTL must reproduce exactly.  Every run takes the chip as
``config``.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ga2_hdl import isa
from ga2_hdl.config import Config

from .book import TOKENS
from .on_chip import PlainChip, ProgramRun, SpeculativeChip, compile_fixed_verifier, cycles_of, float_prefix_cache
from .draft import draft_next, make_draft
from .tiny_lm import make_model, rule_tokens

#: tokens decoded by every run of the table
TABLE_TOKENS = TOKENS
#: seed of the draft's noise in every run
DRAFT_SEED = 1


@dataclass
class TableRow:
    label: str
    tokens: list[int]
    reference: list[int]          #: the rule (structured) or the chip's plain greedy tokens (random)
    log: list[ProgramRun]
    accepted: int | None = None
    proposed: int | None = None
    blocks: int | None = None

    @property
    def tokens_equal(self) -> bool:
        return self.tokens == self.reference

    @property
    def programs(self) -> int:
        return len(self.log)

    @property
    def cycles(self) -> int:
        return cycles_of(self.log)


def plain_row(label, model, n, reference=None, *, config: Config) -> TableRow:
    run = PlainChip(model, n, config=config).generate(0, n)
    return TableRow(label, run.tokens, run.tokens if reference is None else reference, run.log)


def speculative_row(label, model, n, k, noise, reference, *, config: Config) -> TableRow:
    chip = SpeculativeChip(model, make_draft(model, noise, DRAFT_SEED), n, k, config=config)
    run = chip.generate(0, n)
    st = run.stats
    return TableRow(label, run.tokens, reference, run.log, st.accepted, st.proposed, st.blocks)


@dataclass(frozen=True)
class RunSpec:
    """One run of a table: decode ``n`` tokens of a model, plainly (``k`` None) or with ``k`` guesses
    per block from a draft of noise ``noise``."""
    label: str
    model: str                 #: "structured" or "random" (seed 1)
    k: int | None = None
    noise: float = 0.0

    def row(self, n: int = TABLE_TOKENS, *, config: Config) -> TableRow:
        """The run on the chip ``config``.  Its reference: the rule's tokens for the structured
        model; for the random model its own tokens when plain, and None for a speculative run
        (the plain run's tokens, which the caller fills in: see :func:`random_rows`)."""
        model = make_model("structured") if self.model == "structured" else make_model("random", 1)
        expected = rule_tokens(0, n) if self.model == "structured" else None
        if self.k is None:
            return plain_row(self.label, model, n, expected, config=config)
        return speculative_row(self.label, model, n, self.k, self.noise, expected, config=config)


def structured_specs(noises=(0.0, 3.0, 4.0), k: int = 3) -> list[RunSpec]:
    return [RunSpec("plain greedy decoding", "structured")] + [
        RunSpec(f"k={k}, draft noise {noise:g}", "structured", k, noise) for noise in noises]


def random_specs(ks=(1, 3)) -> list[RunSpec]:
    return [RunSpec("random model: plain decoding", "random")] + [
        RunSpec(f"random model: k={k}", "random", k) for k in ks]


#: the chapter's seven runs, in the table's order
CHAPTER_RUNS: tuple[RunSpec, ...] = tuple(structured_specs() + random_specs())


def structured_rows(n: int = TABLE_TOKENS, noises=(0.0, 3.0, 4.0), k: int = 3,
                    *, config: Config) -> list[TableRow]:
    return [spec.row(n, config=config) for spec in structured_specs(noises, k)]


def random_rows(n: int = TABLE_TOKENS, ks=(1, 3), *, config: Config) -> list[TableRow]:
    plain, *rows = [spec.row(n, config=config) for spec in random_specs(ks)]
    for row in rows:
        row.reference = plain.tokens
    return [plain] + rows


def chapter_table(n: int = TABLE_TOKENS, *, config: Config) -> list[TableRow]:
    """The seven runs of the chapter's table, on the chip ``config``."""
    return structured_rows(n, config=config) + random_rows(n, config=config)


# ---------------------------------------------------------------------------
# Running example A
# ---------------------------------------------------------------------------

@dataclass
class BlockTrace:
    block: list[int]       #: [last committed token, guesses...]
    choices: list[int]     #: the target's (chip's) choice after each row
    accepted: int
    new_tokens: list[int]


def example_a_chip(n: int = 24, k: int = 3, *, config: Config) -> tuple[SpeculativeChip, list[list[float]]]:
    """The random target (seed 1) with its bigram draft (noise 0, seed 1) on the chip ``config``."""
    model = make_model("random", 1)
    Wd = make_draft(model, 0.0, DRAFT_SEED)
    return SpeculativeChip(model, Wd, n, k, config=config), Wd


def trace_blocks(chip: SpeculativeChip, Wd, blocks: int = 3, start: int = 0) -> tuple[list[int], list[BlockTrace]]:
    """Speculative blocks one at a time, with the float draft and the chip's verifier,
    keeping every intermediate the chapter prints."""
    model, k = chip.model, chip.k
    tokens, keys, values, traces = [start], [], [], []
    for _ in range(blocks):
        guesses, guess = [], tokens[-1]
        for _ in range(k):
            guess = draft_next(model, Wd, guess)
            guesses.append(guess)
        block = [tokens[-1]] + guesses
        choices, new_keys, new_values = chip.verify(len(keys), block, keys, values)
        accepted = 0
        while accepted < k and guesses[accepted] == choices[accepted]:
            accepted += 1
        new = guesses[:accepted] + [choices[accepted]]
        traces.append(BlockTrace(block, list(choices), accepted, new))
        tokens += new
        keys += new_keys[:accepted + 1]
        values += new_values[:accepted + 1]
    return tokens, traces


@dataclass
class Anatomy:
    ops: dict[str, int]
    words_loaded: int
    counters: list[int] = field(default_factory=list)   #: total, matrix, dma, vector, instructions


def anatomy(code, *, config: Config) -> Anatomy:
    """Instruction histogram, words loaded from external memory, and counters of a program on ``config``."""
    ops = Counter(ins.mnemonic for ins in code)
    loaded = sum(ins.len for ins in code if ins.mnemonic == "LD")
    return Anatomy(dict(ops), loaded, isa.instruction_set(config).counters(code))


def causality_logits(blocks, prefix=(3, 8, 1, 12), *, config: Config) -> dict[tuple[int, ...], list[list[int]]]:
    """Integer logits of every row of the sharp-attention verifier (random model seed 2,
    Wq and Wk times 4; cache of 4, block of 4) for each block, on the chip ``config``."""
    from compiler import run
    model = make_model("random", 2).with_sharp_attention(4.0)
    program, make_inputs = compile_fixed_verifier(model, 4, 4, config=config)
    keys, values = float_prefix_cache(model, prefix)
    return {tuple(b): [list(r) for r in run(program, make_inputs(b, keys, values))["logits"][0]] for b in blocks}


def bundle_of(log, label: str = "run"):
    """The programs of a run as a GA-2 bundle for the chip they were compiled for (expected results
    from its golden model), ready to replay on any simulator of ``gen.sim.simulator`` built for that chip."""
    from ga2_hdl.formats.bundle import Bundle
    log = list(log)
    chips = {r.config for r in log}
    if len(chips) > 1:
        raise ValueError(f"{label}: programs compiled for {', '.join(sorted(c.name for c in chips))}: a bundle "
                         f"holds the programs of one chip")
    if not chips:                    # no program to say which chip: never the book's by default
        raise ValueError(f"{label}: the run has no programs: a bundle needs them to know its chip")
    config = chips.pop()
    names = (f"{label} #{i} {r.kind}{'' if not r.shape else ' ' + 'x'.join(map(str, r.shape))}"
             for i, r in enumerate(log))
    return Bundle.from_programs(((name, r.code, r.ext) for name, r in zip(names, log)), config=config)


def decoding_cycles(tokens: int, config: Config) -> dict[str, int]:
    """Cycles of plain and k=3 (perfect draft) speculative decoding of ``tokens`` tokens on the chip
    ``config``: Capra's programs for it on its golden model (what time per token is computed from).
    A ValueError if the decoded tokens are not the reference's: then there is no figure."""
    rows = structured_rows(tokens, noises=(0.0,), config=config)
    out = {}
    for row, name in zip(rows, ("plain", "k=3 perfect draft")):
        if not row.tokens_equal:
            raise ValueError(f"{row.label}: the decoded tokens differ from the reference; no figure")
        out[name] = row.cycles
    return out
