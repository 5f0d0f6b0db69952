"""The chapter's figures on the golden model: the seven-run table, example A's trace, the
verifier's anatomy and the causality model's integer logits.  Cycles are the ISA's
prediction for every program executed (the RTL replays must give the same)."""
import pytest

from ga2_hdl import isa
from spec.checks import CHIP_CHECKS, FLOAT_CHECKS
from spec.on_chip import PlainChip, SpeculativeChip
from spec.draft import make_draft
from spec.mutate import MUTANTS, run_mutants
from spec.runs import (anatomy, causality_logits, chapter_table, example_a_chip, trace_blocks)
from spec.tiny_lm import float_generate, make_model

# label -> (accepted/proposed, blocks, programs, cycles), from the chapter's table (32 tokens)
BOOK_TABLE = {
    "plain greedy decoding": (None, None, 32, 268_346),
    "k=3, draft noise 0": ("24/24", 8, 32, 138_858),
    "k=3, draft noise 3": ("26/27", 9, 36, 158_818),
    "k=3, draft noise 4": ("18/45", 15, 60, 266_098),
    "random model: plain decoding": (None, None, 32, 268_346),
    "random model: k=1": ("15/17", 17, 34, 192_165),
    "random model: k=3": ("24/30", 10, 40, 172_210),
}


@pytest.fixture(scope="module")
def table():
    return {row.label: row for row in chapter_table(config=isa.BOOK)}


@pytest.mark.parametrize("label", list(BOOK_TABLE))
def test_table_row(table, label):
    row = table[label]
    acceptance = None if row.accepted is None else f"{row.accepted}/{row.proposed}"
    assert (acceptance, row.blocks, row.programs, row.cycles) == BOOK_TABLE[label]
    assert row.tokens_equal and len(row.tokens) == 33


def test_random_model_chip_tokens_are_its_float_greedy_tokens(table):
    assert table["random model: plain decoding"].tokens == float_generate(make_model("random", 1), 0, 32)


@pytest.fixture(scope="module")
def example_a():
    return example_a_chip(config=isa.BOOK)


def test_example_a_three_blocks(example_a):
    chip, Wd = example_a
    tokens, traces = trace_blocks(chip, Wd, blocks=3)
    assert [(t.block[1:], t.choices) for t in traces] == [
        ([5, 3, 13], [5, 3, 13, 9]),
        ([10, 9, 10], [1, 11, 10, 11]),
        ([11, 11, 11], [11, 11, 11, 11]),
    ]
    assert [t.accepted for t in traces] == [3, 0, 3]
    assert tokens == float_generate(chip.model, 0, 9) == [0, 5, 3, 13, 9, 1, 11, 11, 11, 11]


def test_verifier_anatomy_against_four_single_steps(example_a):
    chip, _ = example_a
    verifier = anatomy(chip.verifier_program(4, 4).code, config=isa.BOOK)
    assert verifier.ops == {"LD": 10, "MM": 56, "RQ": 23, "SM": 4, "ST": 5, "VADD": 2, "AMAX": 4, "HALT": 1}
    assert verifier.words_loaded == 2496
    assert verifier.counters[:4] == (12_330, 7_732, 2_856, 1_532)
    plain = PlainChip(chip.model, 8, config=isa.BOOK)
    singles = [anatomy(plain.program(L).code, config=isa.BOOK) for L in range(5, 9)]
    assert [s.counters.total for s in singles] == [7378, 7457, 7536, 7615]
    assert [s.words_loaded for s in singles] == [2448, 2480, 2512, 2544]
    assert anatomy(chip.draft_program.code, config=isa.BOOK).counters.total == 810


def test_example_a_causality_integer_logits():
    got = causality_logits([(1, 2, 3, 4), (1, 2, 3, 12), (1, 2, 9, 4), (5, 2, 3, 4)], config=isa.BOOK)
    first_five = {b: [row[:5] for row in rows] for b, rows in got.items()}
    assert first_five == {
        (1, 2, 3, 4): [[31, 0, 3, -8, -26], [-37, 22, 39, 5, 6], [18, 14, -30, -39, -43], [-3, -2, 24, 12, 14]],
        (1, 2, 3, 12): [[31, 0, 3, -8, -26], [-37, 22, 39, 5, 6], [18, 14, -30, -39, -43], [3, -4, 17, -16, -24]],
        (1, 2, 9, 4): [[31, 0, 3, -8, -26], [-37, 22, 39, 5, 6], [-24, 8, 3, 4, -1], [4, -6, 21, 9, 17]],
        (5, 2, 3, 4): [[-24, 34, 26, -4, -24], [-35, 32, 35, 3, 6], [17, 18, -30, -38, -40], [-3, 1, 20, 13, 18]],
    }


@pytest.mark.parametrize("noise,k,acceptance,speedup", [(0.0, 5, "100%", 1.64), (4.0, 1, "74%", 1.23)])
def test_example_b_cells(noise, k, acceptance, speedup):
    """Two cells of example B's sweep (structured model, 32 tokens)."""
    model = make_model("structured")
    base = sum(r.cycles for r in PlainChip(model, 32, config=isa.BOOK).generate(0, 32).log)
    run = SpeculativeChip(model, make_draft(model, noise, 1), 32, k, config=isa.BOOK).generate(0, 32)
    assert f"{100 * run.stats.accepted / run.stats.proposed:.0f}%" == acceptance
    assert round(base / sum(r.cycles for r in run.log), 2) == speedup


def test_mutants_that_need_the_chip_checks_are_caught():
    """Three of the nineteen broken versions that only the chip-level checks see (the full
    run is `ga2 mutate spec`, and the slow test below).  The unbroken package's checks are
    the tests of test_spec_float.py and test_spec_chip.py, so the baseline is not rerun here."""
    chosen = [m for m in MUTANTS if m.name in (
        "draft chain: every guess is made from the committed token, not the previous guess",
        "verifier mask: a row cannot see itself",
        "verifier: the query of row i is row 0's")]
    assert len(chosen) == 3
    unbroken, problem, verdicts = run_mutants(chosen, jobs=1, timeout=300, baseline=False, config=isa.BOOK)
    assert unbroken, problem
    assert [v.status for v in verdicts] == ["caught"] * 3, [v.as_dict() for v in verdicts]
    # caught by a check's finding, not by a crash or a timeout (with no baseline run here, a broken
    # copy loader would otherwise "catch" every mutant)
    check_names = {c.__name__ for c in FLOAT_CHECKS + CHIP_CHECKS}
    assert all(v.caught_by in check_names for v in verdicts), [v.as_dict() for v in verdicts]


@pytest.mark.slow
def test_all_nineteen_mutants_are_caught():
    unbroken, problem, verdicts = run_mutants(jobs=2, timeout=900, config=isa.BOOK)
    assert unbroken, problem
    assert len(verdicts) == len(MUTANTS)
    missed = [v.mutant.name for v in verdicts if v.status != "caught"]
    assert not missed, missed
