"""The five checks of speculative decoding, as functions that return a list of problems.

An empty list means the check passed.  The checks take a ``SpecModules``
bundle (the spec package's modules) rather than importing them, so that the
mutation runner (``spec.mutate``) can hand them a freshly loaded copy of the
package with one line changed and see whether any check notices.

1. ``block_matches_step``: the block form of the float verifier (explicit
   causal mask) equals the one-token-at-a-time float step, to 1e-9.
2. ``exactness``: with the float verifier, speculative decoding returns exactly
   the target's greedy tokens for every draft (random, constant, bigram tables
   with noise 0, 3 and 100) and every k in (1, 2, 3, 5), with consistent
   bookkeeping.
3. ``causality_on_chip``: on the compiled verifier, changing a later token of a
   block leaves every earlier row's integer logits bit-identical, and changing
   an earlier token changes the later rows (sharp-attention model).
4. ``verifier_matches_interpreter_and_float`` (run inside the same function as
   3, sharing its compiled program): compiled == integer interpreter; logits,
   attention output, new keys and values within 15 %, 12 %, 12 % of float.
5. ``rule_through_chip``: the structured model follows its rule through the
   chip's speculative loop (k = 1, 2, 4; draft noise 0, 3, 12), a perfect draft
   is accepted completely, and the draft's chip program picks the float draft's
   token.
"""
from __future__ import annotations

import importlib
import math
import random
from dataclasses import dataclass, field
from types import ModuleType

from ga2_hdl.config import Config


@dataclass
class SpecModules:
    """The spec package's modules that the checks exercise."""
    tiny_lm: ModuleType
    draft: ModuleType
    verifier: ModuleType
    speculative: ModuleType
    chip: ModuleType | None = None      #: needs the compiler; None for the float checks only
    config: Config = field(kw_only=True)  #: the chip the chip checks compile for and run on


def installed_modules(with_chip: bool = True, *, config: Config) -> SpecModules:
    """The modules of the installed ``spec`` package (the chip checks on the chip ``config``)."""
    load = importlib.import_module
    return SpecModules(load("spec.tiny_lm"), load("spec.draft"), load("spec.verifier"),
                       load("spec.speculative"), load("spec.on_chip") if with_chip else None, config=config)


def relative_error(got, want) -> float:
    """||got - want|| / ||want|| (RMS over one row)."""
    num = sum((x - y) ** 2 for x, y in zip(got, want))
    den = sum(y * y for y in want) or 1.0
    return math.sqrt(num / den)


# ---------------------------------------------------------------- (1)
def block_matches_step(mods: SpecModules, seeds=(1, 2, 3), block_sizes=(1, 2, 4, 5), cache_len=4,
                       tolerance=1e-9) -> list[str]:
    lm, vf = mods.tiny_lm, mods.verifier
    problems = []
    for seed in seeds:
        model = lm.make_model("random", seed)
        rng = random.Random(seed)
        tokens = [rng.randrange(lm.V) for _ in range(cache_len + max(block_sizes))]
        keys, values = [], []
        for t in tokens[:cache_len]:
            step = lm.float_step(model, t, keys, values)
            keys.append(step.key)
            values.append(step.value)
        for m in block_sizes:
            block = tokens[cache_len:cache_len + m]
            got = vf.float_block(model, block, keys, values)
            seq_keys, seq_values = list(keys), list(values)
            for i, t in enumerate(block):
                step = lm.float_step(model, t, seq_keys, seq_values)
                seq_keys.append(step.key)
                seq_values.append(step.value)
                pairs = ((got.logits[i], step.logits, "logits"), (got.keys[i], step.key, "key"),
                         (got.values[i], step.value, "value"), (got.attn[i], step.attn, "attention"))
                for a, b, what in pairs:
                    err = max(abs(x - y) for x, y in zip(a, b))
                    if err > tolerance:
                        problems.append(f"(1) seed {seed}, block of {m}, row {i}: block {what} differs "
                                        f"from the sequential step by {err:.3g}")
    return problems


# ---------------------------------------------------------------- (2)
def exactness(mods: SpecModules, n=20, start=5, ks=(1, 2, 3, 5), noises=(0.0, 3.0, 100.0)) -> list[str]:
    lm, dr, sp = mods.tiny_lm, mods.draft, mods.speculative
    problems = []
    for seed in (1, 2, 3):
        model = lm.make_model("structured" if seed == 3 else "random", seed)
        reference = lm.float_generate(model, start, n)
        rng = random.Random(seed)
        drafts = {"random": lambda t: rng.randrange(lm.V), "constant": lambda t: 7}
        for noise in noises:
            Wd = dr.make_draft(model, noise, seed)
            drafts[f"bigram noise {noise:g}"] = lambda t, Wd=Wd: dr.draft_next(model, Wd, t)
        for k in ks:
            for name, draft in drafts.items():
                run = sp.speculate(start, n, k, sp.float_verifier(model), draft)
                st = run.stats
                label = f"(2) {model.kind} seed {seed}, k={k}, draft {name}"
                if run.tokens != reference:
                    problems.append(f"{label}: tokens {run.tokens} differ from the target's greedy {reference}")
                consistent = (st.accepted <= st.proposed == st.blocks * k
                              and st.emitted == st.accepted + st.blocks
                              and st.cache == st.emitted
                              and n <= st.emitted <= n + k
                              and math.ceil(n / (k + 1)) <= st.blocks <= n
                              and len(run.calls) == st.blocks * (k + 1))
                if not consistent:
                    problems.append(f"{label}: inconsistent bookkeeping {st.as_dict()} ({len(run.calls)} calls)")
    return problems


# ---------------------------------------------------------------- (3) and (4)
CAUSALITY_PREFIX = (3, 8, 1, 12)
CAUSALITY_BLOCKS = {"base": (1, 2, 3, 4), "row 2 changed": (1, 2, 9, 4),
                    "row 3 changed": (1, 2, 3, 12), "row 0 changed": (5, 2, 3, 4)}


def sharp_model(mods: SpecModules):
    """Random model seed 2 with Wq and Wk times 4: attention that matters."""
    return mods.tiny_lm.make_model("random", 2).with_sharp_attention(4.0)


def causality_verifier(mods: SpecModules, samples: int = 40, seed: int = 9):
    """The compiled verifier (c = 4, m = 4) of the sharp model, calibrated on random
    prefixes and blocks; and the cache of ``CAUSALITY_PREFIX``."""
    return mods.chip.compile_fixed_verifier(sharp_model(mods), cache_len=4, block_len=4, config=mods.config,
                                            samples=samples, seed=seed)


def causality_on_chip(mods: SpecModules) -> list[str]:
    """Checks (3) and (4) on one compiled verifier."""
    from compiler import interpret, run
    vf = mods.verifier
    model = sharp_model(mods)
    program, make_inputs = causality_verifier(mods)
    keys, values = mods.chip.float_prefix_cache(model, CAUSALITY_PREFIX)
    problems = []
    outputs = {}
    for label, block in CAUSALITY_BLOCKS.items():
        inputs = make_inputs(block, keys, values)
        out = run(program, inputs)
        ref = interpret(program, inputs)
        for name, entry in program.ext.items():
            if entry["kind"] == "output" and [list(r) for r in out[name][0]] != [list(r) for r in ref[entry["node"]]]:
                problems.append(f"(4) block {list(block)}: compiled output {name!r} differs from the interpreter")
        outputs[label] = [list(r) for r in out["logits"][0]]
        if label == "base":
            base_out = out
    base = outputs["base"]
    if outputs["row 2 changed"][:2] != base[:2]:
        problems.append("(3) changing row 2 changed rows 0-1: the block is not causal")
    if outputs["row 3 changed"][:3] != base[:3]:
        problems.append("(3) changing row 3 changed rows 0-2: the block is not causal")
    if outputs["row 2 changed"][2] == base[2] or outputs["row 2 changed"][3] == base[3]:
        problems.append("(3) changing row 2 left row 2 or row 3 unchanged: rows do not see the block")
    if any(outputs["row 0 changed"][i] == base[i] for i in range(4)):
        problems.append("(3) changing row 0 left some row unchanged: rows do not see earlier block rows")
    ref = vf.float_block(model, list(CAUSALITY_BLOCKS["base"]), keys, values)
    for i in range(4):
        checks = (("logits", base_out["logits"][1][i], ref.logits[i], 0.15),
                  ("attention output", base_out["attn"][1][i], ref.attn[i], 0.12),
                  ("new key", base_out["k_new"][1][i], ref.keys[i], 0.12),
                  ("new value", base_out["v_new"][1][i], ref.values[i], 0.12))
        for what, got, want, bound in checks:
            err = relative_error(got, want)
            if err > bound:
                problems.append(f"(4) block row {i}: the chip's {what} is {err:.3f} away from float (bound {bound})")
    return problems


# ---------------------------------------------------------------- (5)
def rule_through_chip(mods: SpecModules, n=16, ks=(1, 2, 4), noises=(0.0, 3.0, 12.0)) -> list[str]:
    lm, dr = mods.tiny_lm, mods.draft
    model = lm.make_model("structured")
    expected = lm.rule_tokens(0, n)
    problems = []
    for k in ks:
        for noise in noises:
            Wd = dr.make_draft(model, noise, 1)
            chip = mods.chip.SpeculativeChip(model, Wd, n, k, config=mods.config)
            run = chip.generate(0, n)
            if run.tokens != expected:
                problems.append(f"(5) k={k}, noise {noise:g}: tokens {run.tokens} differ from the rule {expected}")
            st = run.stats
            if noise == 0.0 and st.accepted != st.proposed:
                problems.append(f"(5) k={k}: a perfect draft must be accepted completely, got {st.as_dict()}")
            if st.emitted != st.accepted + st.blocks or st.cache != st.emitted:
                problems.append(f"(5) k={k}, noise {noise:g}: inconsistent bookkeeping {st.as_dict()}")
            if len(run.log) != st.blocks * (k + 1):
                problems.append(f"(5) k={k}, noise {noise:g}: {len(run.log)} programs for {st.blocks} blocks")
            if k == ks[0] and noise == 0.0:
                for t in range(lm.V):
                    if chip.draft(t) != dr.draft_next(model, Wd, t):
                        problems.append(f"(5) after token {t} the draft's chip program picks {chip.draft(t)}, "
                                        f"the float draft {dr.draft_next(model, Wd, t)}")
    return problems


FLOAT_CHECKS = (block_matches_step, exactness)
CHIP_CHECKS = (causality_on_chip, rule_through_chip)


def all_problems(mods: SpecModules) -> list[str]:
    """Every check, in order; the mutation runner's verdict."""
    problems = []
    for check in FLOAT_CHECKS + CHIP_CHECKS:
        problems += check(mods)
    return problems
