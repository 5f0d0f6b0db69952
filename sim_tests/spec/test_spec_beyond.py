"""Beyond the chapter: the tree of guesses (layout, mask in integers, host), drafts without
weights (n-gram, trigram) and adaptive k, on the chip."""
import pytest

from ga2_hdl import isa
from spec.beyond import checks as bc
from spec.beyond import host as host
from spec.beyond.tree_graphs import ancestors, chain_parents, tree_layout

MODS = bc.installed_beyond_modules(config=isa.BOOK)


def test_tree_layout_makes_every_visible_set_one_run():
    layout = tree_layout((-1, 0, 1, 0, 3), 4)
    assert layout.order == (2, 1, 0, 3, 4) and layout.left == 3
    # positions: rows 0-2 left, cache 3-6, rows 3-4 at 7-8
    assert layout.visible == ((0, 7), (1, 7), (2, 7), (2, 8), (2, 9))
    assert tree_layout(chain_parents(3), 2).visible == ((0, 6), (1, 6), (2, 6), (3, 6))
    assert tree_layout((-1,), 0).visible == ((0, 1),)
    assert ancestors((-1, 0, 1, 0, 3), 4) == [4, 3, 0]


@pytest.mark.parametrize("parents, why", [((-1, 0, 0, 0), "only the root may branch"),
                                          ((-1, 0, 1, 1), "only the root may branch"),
                                          ((0, 0), "starts with -1"), ((-1, 2, 0), "earlier node")])
def test_tree_layout_refuses_what_views_cannot_express(parents, why):
    with pytest.raises(ValueError, match=why):
        tree_layout(parents, 2)


def test_tree_mask_in_integers_changes_exactly_the_descendants():
    assert bc.tree_mask_on_chip(MODS) == []


def test_accept_path_takes_the_longest_agreeing_path():
    parents = host.two_leg_tree(2, 2)                      # (-1, 0, 1, 0, 3)
    assert parents == (-1, 0, 1, 0, 3)
    tokens = [5, 7, 8, 9, 10]
    assert host.accept_path(parents, tokens, [9, 0, 0, 10, 0]) == [3, 4]       # second leg, all of it
    assert host.accept_path(parents, tokens, [7, 8, 0, 0, 0]) == [1, 2]
    assert host.accept_path(parents, tokens, [7, 1, 0, 10, 0]) == [1]
    assert host.accept_path(parents, tokens, [3, 8, 0, 10, 0]) == []


def test_ngram_draft_looks_up_the_longest_suffix_seen_before():
    assert host.ngram_next([1, 2, 3, 1, 2]) == 3
    assert host.ngram_next([4, 1, 9, 2, 1]) == 9            # suffix [1] last seen before 9
    assert host.ngram_next([1, 2, 3]) is None
    assert host.ngram_next([7]) is None
    assert host.ngram_next([1, 5, 2, 3, 1, 6, 2, 3]) == 1   # [2, 3] -> 1


def test_trigram_draft_uses_pairs_and_falls_back_to_the_bigram():
    draft = host.TrigramDraft([[1, 2, 3, 1, 2, 3], [1, 2, 4, 1, 2, 4, 1, 2, 4]], lambda t: 15)
    assert draft([0, 1, 2]) == 4          # (1, 2) -> 4 seen 3 times, 3 twice
    assert draft([2, 3]) == 1
    assert draft([5, 6]) == 15 and draft([3]) == 15


def test_adaptive_k_follows_the_acceptance():
    cost = [[8000, 11000, 14000, 17000, 24000, 27000]] * 32     # the same at every cache length
    rule = host.AdaptiveK(cost)
    assert rule.acceptance == 0.5 and rule.best_k([1], 0, 32) == 1          # neutral prior: no plain step untried
    for _ in range(10):
        rule.update([1, 2, 3, 4], 3, 3)                      # everything accepted
    assert rule.best_k([1], 0, 32) == 3                      # the cheap 4-row verifier
    assert rule.best_k([1], 29, 32) == 2                     # only 3 tokens still wanted
    poor = host.AdaptiveK(cost)
    for _ in range(10):
        poor.update([1, 2, 3, 4], 0, 3)                      # the first guess always rejected
    assert poor.best_k([1], 0, 32) == 0                      # a plain step after a token whose guesses fail
    assert poor.best_k([7], 0, 32) == 1                      # but a token not yet tried gets its guess
    assert poor.trials == 10 and poor.successes == 0
    per_token = host.AdaptiveK(cost)
    for _ in range(6):
        per_token.update([5, 6], 0, 1)                       # rejected after 5, nothing known after 7
    assert per_token.acceptance_after(5) < per_token.acceptance < per_token.acceptance_after(7) + 1e-12


def test_adaptive_k_reads_the_cost_at_the_cache_it_is_at():
    cheap, dear = [8000, 11000, 14000, 17000, 24000, 27000], [8000, 9000, 20000, 30000, 40000, 50000]
    rule = host.AdaptiveK([cheap] * 16 + [dear] * 16)
    for _ in range(10):
        rule.update([1, 2, 3, 4], 3, 3)
    assert rule.best_k([1], 0, 32) == 3 and rule.best_k([1], 20, 32) == 1
    with pytest.raises(ValueError, match="no costs for a cache of 40"):
        rule.best_k([1], 40, 48)


def test_tree_ngram_trigram_adaptive_give_the_plain_decoders_tokens():
    # the default suite: the structured model, 6 tokens; both models, 8 tokens in the slow suite
    assert bc.greedy_drafts_are_exact(MODS, n=6, cases=bc.GREEDY_DRAFT_CASES[:1]) == []


@pytest.mark.slow
def test_tree_ngram_trigram_adaptive_give_the_plain_decoders_tokens_both_models():
    assert bc.greedy_drafts_are_exact(MODS) == []


def test_tree_run_replays_on_golden():
    from gen.sim.simulator import get_simulator
    from spec.beyond.runs import tree_run
    from spec.draft import make_draft
    from spec.runs import bundle_of
    from spec.tiny_lm import make_model, rule_tokens
    model = make_model("structured")
    run = tree_run(model, make_draft(model, 4.0, 1), 6, 2, 2, config=isa.BOOK)
    assert run.tokens == rule_tokens(0, 6)
    assert run.rows == 5 * run.blocks and {r.kind for r in run.log} == {"draft", "tree"}
    report = get_simulator("golden", config=isa.BOOK).run_bundle(bundle_of(run.log, "tree"))
    assert report.passed, report.line()
    assert report.cycles == run.cycles


# ---------------------------------------------------------------- ga2 beyond
def test_beyond_refuses_bad_flags_before_any_work(capsys, tmp_path):
    from ga2_cli.main import main
    assert main(["beyond", "--sims", "icarus,modelsim", "--out", str(tmp_path)]) == 2
    assert "argument --sims: unknown simulator 'modelsim'" in capsys.readouterr().err
    # the checked option types: argparse's one line naming the flag, exit status 2
    assert main(["beyond", "--tokens", "1", "--out", str(tmp_path)]) == 2
    assert "argument --tokens: 1: the number of tokens must be at least 2" in capsys.readouterr().err
    assert main(["beyond", "--json", str(tmp_path / "no" / "such.json"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "argument --json" in err and "such.json" in err
    assert list(tmp_path.iterdir()) == []


def test_every_mutant_of_spec_applies_exactly_once():
    from spec.mutate import MUTANTS, sources
    for m in MUTANTS:
        sources(m)
    assert len({m.name for m in MUTANTS}) == len(MUTANTS)


@pytest.mark.slow
def test_beyond_on_three_tokens_replays_every_run_and_writes_its_json(tmp_path):
    import contextlib
    import io
    import json
    from ga2_cli.main import main
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        status = main(["beyond", "--tokens", "3", "--sims", "icarus,verilator", "--out", str(tmp_path),
                       "--json", str(tmp_path / "rows.json")])
    text = buf.getvalue()
    assert status == 0, text
    data = json.loads((tmp_path / "rows.json").read_text())
    methods = {r["method"] for r in data["rows"]}
    assert {"greedy", "sampling", "tree", "ngram", "adaptive_k"} <= methods
    for r in data["rows"]:
        assert {"name", "method", "tokens", "cycles", "speedup", "sims"} <= set(r)
        assert r["sims"]["icarus"]["verdict"] == "PASS" and r["sims"]["verilator"]["verdict"] == "PASS", r
        assert r["tokens_ok"] in (True, None)
    with open(tmp_path / "beyond.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_adaptive_study_replay_equals_the_runs_on_the_chip():
    # the offline replay of the host (spec/studies/adaptive_study.py) gives the chip's cycles and counts exactly
    from spec.studies import adaptive_study
    from spec.beyond.runs import adaptive_costs, linear_run
    from spec.beyond.block_chip import BlockChip
    from spec.draft import make_draft
    from spec.tiny_lm import make_model
    n = 8
    model = make_model("structured")
    Wd = make_draft(model, 4.0, 1)                      # the poor draft: rejections in both runs
    chip = BlockChip(model, Wd, n, 8, config=isa.BOOK)
    costs = adaptive_costs(chip, chip.draft_program().counters()[0], n, host.K_MAX)
    [study] = adaptive_study.study("structured", [0], [(4.0, 1)], n=n, chip=chip)
    for name, policy in (("k=2", 2), ("adaptive", host.AdaptiveK(costs))):
        run = linear_run(model, Wd, n, policy, chip=chip, config=isa.BOOK)
        assert study["per_start"][0][name] == run.cycles, name
    assert 0 in run.ks                                  # a plain step (the verifier of one row) is in the comparison
    assert study["total"]["adaptive"] == study["per_start"][0]["adaptive"]


def test_host_units_check_passes():
    # the mutation judge's host_units check (chooser mapping, n-gram, trigram, top two, tree path and
    # cache, adaptive k's counts and choices), run as a test too
    assert bc.host_units(MODS) == []
