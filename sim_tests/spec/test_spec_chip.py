"""Speculative decoding on the chip: checks (3), (4) and (5), the host's bookkeeping,
and the logged programs replayed on the golden model."""
import pytest

from ga2_hdl import isa
from ga2_hdl.isa import ErrorCode

from gen.sim.simulator import get_simulator
from spec import checks
from spec.on_chip import PlainChip, SpeculativeChip, cycles_of
from spec.draft import make_draft
from spec.graphs import decode_step_graph, verifier_graph
from spec.runs import bundle_of
from spec.tiny_lm import make_model, rule_tokens

MODS = checks.installed_modules(config=isa.BOOK)


def test_check3_and_check4_causality_interpreter_and_accuracy():
    assert checks.causality_on_chip(MODS) == []


def test_check5_rule_through_the_chips_speculative_loop():
    assert checks.rule_through_chip(MODS) == []


def test_plain_chip_logs_one_program_per_step_and_replays_on_golden():
    model = make_model("structured")
    run = PlainChip(model, 6, config=isa.BOOK).generate(3, 6)
    assert run.tokens == rule_tokens(3, 6)
    assert [r.shape for r in run.log] == [(L,) for L in range(1, 7)]
    report = get_simulator("golden", config=isa.BOOK).run_bundle(bundle_of(run.log, "plain"))
    assert report.passed, report.line()
    assert all(r.error == ErrorCode.OK for r in report.results)      # every step ran to its HALT
    assert report.cycles == cycles_of(run.log)


def test_plain_chip_refuses_an_uncalibrated_context():
    with pytest.raises(ValueError, match="no calibration for context length 5"):
        PlainChip(make_model("structured"), 4, config=isa.BOOK).program(5)


def test_speculative_chip_log_and_cache_and_golden_replay():
    model = make_model("structured")
    chip = SpeculativeChip(model, make_draft(model, 3.0, 1), 10, 2, config=isa.BOOK)
    run = chip.generate(0, 10)
    st = run.stats
    assert run.tokens == rule_tokens(0, 10)
    assert len(run.log) == st.blocks * 3
    assert [r.kind for r in run.log[:3]] == ["draft", "draft", "verify"]
    # the verifier of block b sees exactly the cache the earlier blocks committed
    verify_shapes = [r.shape for r in run.log if r.kind == "verify"]
    assert verify_shapes[0] == (0, 3)
    assert [c for c, _ in verify_shapes] == sorted(c for c, _ in verify_shapes)
    assert st.cache == st.emitted == st.accepted + st.blocks
    report = get_simulator("golden", config=isa.BOOK).run_bundle(bundle_of(run.log, "spec"))
    assert report.passed, report.line()
    assert all(r.error == ErrorCode.OK for r in report.results)
    assert report.cycles == cycles_of(run.log)


def test_speculative_chip_refuses_a_shape_it_was_not_calibrated_for():
    model = make_model("structured")
    chip = SpeculativeChip(model, make_draft(model, 0.0, 1), 8, 3, config=isa.BOOK)
    with pytest.raises(ValueError, match="never verified a block of 4 rows against a cache of 5"):
        chip.verifier_program(5, 4)


def test_graph_builders_refuse_bad_shapes():
    model = make_model("structured")
    with pytest.raises(ValueError):
        decode_step_graph(model, 0)
    with pytest.raises(ValueError):
        verifier_graph(model, 0, 3)
