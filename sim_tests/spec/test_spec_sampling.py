"""Speculative sampling: the rejection rule in integers, its exactness proved by enumeration with
exact fractions on the chip's own distributions, a chi-square check, and greedy as temperature 0."""
from fractions import Fraction

import pytest

from ga2_hdl import isa
from spec.beyond import checks as bc
from spec.beyond import sampling as sp

MODS = bc.installed_beyond_modules(config=isa.BOOK)


def test_accept_weights_and_residual_are_the_rule_in_integers():
    p, q = [2, 1, 1, 0], [1, 1, 0, 2]          # p = (1/2, 1/4, 1/4, 0), q = (1/4, 1/4, 0, 1/2)
    assert sp.accept_weights(p, q, 0) == (1, 0)            # p >= q: always
    assert sp.accept_weights(p, q, 1) == (1, 0)            # equal
    assert sp.accept_weights(p, q, 3) == (0, 8)            # p = 0: never
    assert sp.residual(p, q) == [4, 0, 4, 0]               # max(0, p - q) = (1/4, 0, 1/4, 0) * 16
    assert sp.accept_weights([1, 3], [3, 1], 0) == (4, 8)  # p/q = (1/4)/(3/4) = 1/3
    with pytest.raises(ValueError, match="zero probability under the draft"):
        sp.accept_weights(p, q, 2)
    with pytest.raises(ValueError, match="must not all be zero"):
        sp.residual([0, 0], [1, 1])


def test_exact_distribution_of_a_hand_computed_block():
    # k = 1, one context: p = (1/2, 1/2, 0), the draft always proposes token 2 (p = 0 there)
    out = sp.exact_distribution(lambda ch: tuple(sp.sample_block(
        1, 0, lambda t: [0, 0, 1], lambda block: [[1, 1, 0], [0, 1, 0]], ch).emitted))
    assert out == {(0,): Fraction(1, 2), (1,): Fraction(1, 2)}
    # a perfect draft is always accepted and the bonus comes from the second row
    out = sp.exact_distribution(lambda ch: tuple(sp.sample_block(
        1, 0, lambda t: [1, 1, 0], lambda block: [[1, 1, 0], [0, 1, 3]], ch).emitted))
    assert out == {(0, 1): Fraction(1, 8), (0, 2): Fraction(3, 8), (1, 1): Fraction(1, 8), (1, 2): Fraction(3, 8)}


def test_exactness_problems_notices_a_biased_block():
    target = lambda h: [1, 1]          # noqa: E731
    assert sp.exactness_problems({(0,): Fraction(1, 2), (1,): Fraction(1, 2)}, target, 1) == []
    assert sp.exactness_problems({(0,): Fraction(3, 4), (1,): Fraction(1, 4)}, target, 1) != []


def test_seeded_chooser_reproduces_and_takes_no_randomness_for_a_certain_choice():
    a, b = sp.SeededChooser(5), sp.SeededChooser(5)
    draws = [a.choose([3, 0, 5, 1]) for _ in range(200)]
    assert draws == [b.choose([3, 0, 5, 1]) for _ in range(200)]
    assert 1 not in draws and {0, 2, 3} <= set(draws)
    c = sp.SeededChooser(5)
    assert [c.choose([0, 4, 0]) for _ in range(10)] == [1] * 10 and c.draws == 0


def test_chi_square_critical_values_match_the_tables():
    # the standard tables: df 1 at 0.05 is 3.841, df 10 at 0.05 is 18.307, df 15 at 0.001 is 37.697
    assert sp.chi_square_critical(1, 0.05) == pytest.approx(3.841, abs=1e-3)
    assert sp.chi_square_critical(10, 0.05) == pytest.approx(18.307, abs=1e-3)
    assert sp.chi_square_critical(15, 0.001) == pytest.approx(37.697, abs=1e-3)
    assert sp.chi_square([10, 10, 0], [1, 1, 0]) == (0.0, 1)
    assert sp.chi_square([10, 10, 1], [1, 1, 0])[0] == float("inf")


def test_speculative_sampling_is_exact_on_the_chips_distributions_k1_k2_both_models():
    assert bc.sampling_exact(MODS, ks=(1, 2), contexts=bc.EXACT_CONTEXTS[:2]) == []


@pytest.mark.slow
def test_speculative_sampling_is_exact_full_sweep_k1_to_k4():
    assert bc.sampling_exact(MODS, ks=(1, 2, 3, 4), contexts=bc.EXACT_CONTEXTS, chip_draft_k=2) == []


def test_speculative_sampling_chi_square_20000_draws():
    assert bc.sampling_chi_square(MODS) == []


def test_temperature_zero_is_the_chapters_greedy_decoding():
    # the default suite: the random model (the chapter's k = 3 row); both models in the slow suite
    assert bc.greedy_is_temperature_zero(MODS, cases=bc.TEMPERATURE_ZERO_CASES[1:]) == []


@pytest.mark.slow
def test_temperature_zero_is_the_chapters_greedy_decoding_both_models():
    assert bc.greedy_is_temperature_zero(MODS) == []


def test_sampled_runs_reproduce_at_a_fixed_seed_and_replay_on_golden():
    from gen.sim.simulator import get_simulator
    from spec.beyond.runs import speculative_sampling
    from spec.beyond.block_chip import BlockChip
    from spec.draft import make_draft
    from spec.runs import bundle_of
    from spec.tiny_lm import make_model
    model = make_model("structured")
    Wd = make_draft(model, 3.0, 1)
    chip = BlockChip(model, Wd, 6, 3, config=isa.BOOK)          # one chip: the second run reuses the compiled programs
    a = speculative_sampling(model, Wd, 6, 2, 1.0, seed=11, chip=chip, config=isa.BOOK)
    b = speculative_sampling(model, Wd, 6, 2, 1.0, seed=11, chip=chip, config=isa.BOOK)
    assert a.tokens == b.tokens and a.cycles == b.cycles and len(a.tokens) == 7
    report = get_simulator("golden", config=isa.BOOK).run_bundle(bundle_of(a.log, "sampling"))
    assert report.passed, report.line()
    assert report.cycles == a.cycles


def test_sampling_head_follows_the_temperature_and_stores_the_q16_words():
    # within 0.06 total variation of softmax(logits / T) at T = 0.5 and 2; every target and draft
    # row is the softmax unit's Q0.16 words (sums 65536 within 16)
    assert bc.sampling_head_follows_temperature(MODS) == []
