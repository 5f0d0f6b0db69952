"""gen.sim.replay.ReplayPool: bundles replayed as they become known, beside other work, each
simulator prepared once before its pieces; per-bundle results put back together."""
import os

import pytest

from ga2_hdl import isa
from gen.sim import replay as replay_mod
from gen.sim import simulator as simulator_mod
from gen.sim.replay import ReplayPool, concatenate, replay
from gen.sim.golden import GoldenSimulator
from gen.sim.simulator import SimulatorError
from ga2_hdl.formats.bundle import Bundle
from spec.runs import bundle_of, plain_row
from spec.tiny_lm import make_model


def _bundle(label: str, tokens: int) -> Bundle:
    return bundle_of(plain_row(label, make_model("structured"), tokens, config=isa.BOOK).log, label)


def _run_bundle_job(label: str, tokens: int) -> Bundle:
    """A worker's task that makes a bundle (as ga2 ch16's runs do)."""
    return _bundle(label, tokens)


def _value(x):
    return x


# ---------------------------------------------------------------- a simulator that must be prepared
class PreparedGolden(GoldenSimulator):
    """The golden model behind a preparation that takes a while and leaves a marker file; a piece
    that starts before the marker exists fails (what a piece racing its simulator's build would do)."""
    name = "prepared"

    def prepare(self, ext_words: int) -> None:
        marker = os.environ["GA2_TEST_MARKER"]
        if os.environ.get("GA2_TEST_PREPARE_FAILS"):
            raise SimulatorError("the build failed (planted)")
        import time
        time.sleep(0.5)                      # long enough for an ungated piece to start meanwhile
        with open(marker, "a") as f:
            f.write("prepared\n")

    def run_bundle(self, bundle, **kwargs):
        if not os.path.exists(os.environ["GA2_TEST_MARKER"]):
            raise SimulatorError("a piece ran before its simulator was prepared")
        return super().run_bundle(bundle, **kwargs)


@pytest.fixture
def prepared_simulator(monkeypatch, tmp_path):
    monkeypatch.setitem(simulator_mod.SIMULATORS, "prepared", f"{__name__}:PreparedGolden")
    marker = tmp_path / "marker"
    monkeypatch.setenv("GA2_TEST_MARKER", str(marker))
    monkeypatch.setattr(replay_mod, "SPEED_HINT", {**replay_mod.SPEED_HINT, "prepared": 1_000})  # many pieces
    return marker


def test_bundles_added_while_working_are_replayed_and_put_back_together(prepared_simulator):
    pool = ReplayPool(["golden", "prepared"], workers=2, pieces_per_worker=0, config=isa.BOOK)
    made = {}

    def made_bundle(label, bundle):
        made[label] = pool.add(bundle)

    for label, tokens in (("a", 3), ("b", 2)):
        pool.submit(_run_bundle_job, label, tokens, on_done=lambda b, label=label: made_bundle(label, b))
    pool.run()
    assert sorted(made) == ["a", "b"]
    per_bundle = pool.replays()
    bundles = [pool.bundles[made["a"]], pool.bundles[made["b"]]]
    for name in ("golden", "prepared"):
        parts = [per_bundle[made["a"]][name], per_bundle[made["b"]][name]]
        assert all(p.passed for p in parts), [p.errors for p in parts]
        whole = concatenate(parts)
        assert whole.programs == sum(len(b.programs) for b in bundles)
        assert whole.cycles == sum(b.total_cycles for b in bundles)
        # the pieces renumbered in the concatenation cover it once, in order
        spans = sorted((r.piece.start, r.piece.stop) for r in whole.pieces)
        assert spans[0][0] == 0 and spans[-1][1] == whole.programs
        assert all(p[1] == q[0] for p, q in zip(spans, spans[1:]))
        first_b = len(bundles[0].programs)
        assert whole.span(first_b, whole.programs).cycles == bundles[1].total_cycles
    # the preparation ran once, and before every piece of its simulator
    assert prepared_simulator.read_text() == "prepared\n"
    assert pool.preparations["prepared"].error is None
    assert "golden" not in pool.preparations          # nothing to prepare


def test_a_failed_preparation_fails_each_piece_of_its_simulator_without_running_it(prepared_simulator, monkeypatch):
    monkeypatch.setenv("GA2_TEST_PREPARE_FAILS", "1")
    bundle = _bundle("a", 3)
    result = replay(bundle, ["golden", "prepared"], workers=2)
    assert result["golden"].passed
    broken = result["prepared"]
    assert not broken.passed and len(broken.pieces) > 1
    assert all(e == "SimulatorError: the build failed (planted)" for e in broken.errors)
    assert broken.span(0, len(bundle.programs)).verdict == "ERROR"
    assert not prepared_simulator.exists()


def test_waiting_work_goes_in_priority_order_and_later_work_can_overtake():
    pool = ReplayPool(["golden"], workers=1, config=isa.BOOK)
    order = []
    for priority in (3, 1, 2):
        pool.submit(_value, priority, priority=priority, on_done=order.append)

    def first_done(value):
        order.append(value)
        pool.submit(_value, 0, priority=0, on_done=order.append)      # overtakes 2 and 3, still waiting

    pool.submit(_value, -1, priority=-1, on_done=first_done)
    pool.run()
    assert order == [-1, 0, 1, 2, 3]


def test_concatenate_renumbers_mismatches():
    bundle = _bundle("a", 2)
    from dataclasses import replace
    entry = bundle.programs[1]
    counters = entry.expected.counters._replace(dma=entry.expected.counters.dma + 1)
    bundle.programs[1] = replace(entry, expected=replace(entry.expected, counters=counters))
    good = replay(_bundle("b", 3), ["golden"], workers=1)["golden"]
    bad = replay(bundle, ["golden"], workers=1)["golden"]
    whole = concatenate([good, bad])
    assert [m.program for m in whole.mismatches] == [good.programs + 1]
    assert whole.span(0, good.programs).passed
    with pytest.raises(ValueError):
        concatenate([])


def test_meanwhile_runs_once_in_this_process_while_the_workers_work():
    pool = ReplayPool(["golden"], workers=2, config=isa.BOOK)
    calls, done = [], []
    pool.submit(_value, 1, on_done=done.append)
    pool.run(meanwhile=lambda: calls.append(len(done)))
    assert calls == [0] and done == [1]        # once, before the first task came back
