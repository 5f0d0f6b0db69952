"""The chapter's results as commands: `ga2 ch16` (on a reduced token count: the full 32-token
run is `make ch16`), `ga2 example a`, `ga2 example b` (on a small grid), the parallel replay
that attributes results back to runs, and the comparison with the book."""
import json
from dataclasses import replace

import pytest

from ga2_cli.main import main
from ga2_hdl import isa
from gen.sim.replay import plan_pieces, program_words, replay
from ga2_hdl.formats.bundle import Bundle
from spec import ch16, examples
from spec.runs import bundle_of, plain_row
from spec.tiny_lm import make_model

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _is_png(path) -> bool:
    with open(path, "rb") as f:
        return f.read(8) == PNG_MAGIC


# ---------------------------------------------------------------- ga2 ch16 on 2 tokens per run
@pytest.fixture(scope="module")
def ch16_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("ch16")
    json_path = out / "rows.json"
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        status = main(["ch16", "--tokens", "2", "--sims", "icarus,verilator,cxxrtl", "--no-checks",
                       "--out", str(out), "--json", str(json_path)])
    return status, buf.getvalue(), json.loads(json_path.read_text()), out


def test_ch16_replays_every_run_on_icarus_verilator_and_cxxrtl_with_the_golden_cycles(ch16_run):
    status, text, data, _ = ch16_run
    assert status == 0, text
    assert len(data["rows"]) == 7
    for row in data["rows"]:
        assert row["tokens_equal"], row
        for sim in ("icarus", "verilator", "cxxrtl"):
            assert row["sims"][sim]["pass"], (sim, row)
            assert row["sims"][sim]["cycles"] == row["cycles"], (sim, row)
    # every program of every run was replayed, once per simulator
    assert data["programs"] == sum(r["programs"] for r in data["rows"])
    assert data["golden_cycles"] == sum(r["cycles"] for r in data["rows"])
    for sim in ("icarus", "verilator", "cxxrtl"):
        assert data["simulators"][sim]["pass"]
        assert data["simulators"][sim]["cycles"] == data["golden_cycles"]
        assert data["simulators"][sim]["cycles_per_second"] > 0
    assert "OK: every run replayed in icarus, verilator, cxxrtl" in text
    assert "the software checks were NOT run (--no-checks)" in text


def test_ch16_json_has_the_required_keys(ch16_run):
    _, _, data, _ = ch16_run
    for row in data["rows"]:
        assert {"run", "tokens_equal", "accepted", "proposed", "blocks", "programs", "cycles", "speedup",
                "book_cycles", "sims"} <= set(row)
        assert set(row["sims"]) == {"icarus", "verilator", "cxxrtl"}
        assert {"pass", "cycles"} <= set(row["sims"]["icarus"])
        assert row["book_cycles"] is None        # the book's figures are for 32 tokens
    assert data["software_checks_run"] is False  # the fixture passes --no-checks
    plain = [r for r in data["rows"] if r["accepted"] is None]
    assert [r["speedup"] for r in plain] == [1.0, 1.0]


def test_ch16_prints_the_table_and_its_speeds_and_draws_it(ch16_run):
    _, text, _, out = ch16_run
    for part in ("k=3, perfect draft (noise 0)", "random model, k=1", "== 4. time:", "cycles/s per process",
                 "not compared at 2"):
        assert part in text, part
    assert _is_png(out / "ch16_table.png")


def test_ch16_rejects_an_unknown_simulator(capsys):
    assert main(["ch16", "--sims", "icarus,modelsim"]) == 2       # refused when the options are parsed
    assert "argument --sims: unknown simulator 'modelsim'" in capsys.readouterr().err


# ---------------------------------------------------------------- the replay's pieces and attribution
def _two_runs():
    model = make_model("structured")
    a = bundle_of(plain_row("a", model, 3, config=isa.BOOK).log, "a")
    b = bundle_of(plain_row("b", model, 2, config=isa.BOOK).log, "b")
    return Bundle(a.ext_words, a.programs + b.programs, config=isa.BOOK), len(a.programs)


def test_pieces_are_contiguous_cover_the_bundle_and_respect_the_word_limit():
    bundle, _ = _two_runs()
    words = program_words(bundle)
    limit = 2 * max(words) + 5
    pieces = plan_pieces(bundle, "icarus", workers=2, max_words=limit, words=words)
    assert pieces[0].start == 0 and pieces[-1].stop == len(bundle.programs)
    assert all(p.stop == q.start for p, q in zip(pieces, pieces[1:]))
    assert all(p.words <= limit for p in pieces)
    assert sum(p.cycles for p in pieces) == bundle.total_cycles
    # a piece's word count is what the bundle writer produces for it
    sub = Bundle(bundle.ext_words, bundle.programs[pieces[0].start:pieces[0].stop], config=isa.BOOK)
    assert pieces[0].words == len(sub.words())


def test_a_mismatch_is_attributed_to_its_run_and_program():
    bundle, first_of_b = _two_runs()
    broken = bundle.programs[first_of_b + 1]
    dma = broken.expected.counters.dma + 1                    # one DMA cycle more than the chip takes
    counters = broken.expected.counters._replace(dma=dma)
    bundle.programs[first_of_b + 1] = replace(broken, expected=replace(broken.expected, counters=counters))
    result = replay(bundle, ["golden"], workers=2)["golden"]
    assert not result.passed
    run_a = result.span(0, first_of_b)
    run_b = result.span(first_of_b, len(bundle.programs))
    assert run_a.passed and run_a.verdict == "PASS"
    assert run_b.verdict == "MISMATCH"
    assert str(run_b.mismatch) == f"program 1: counter dma: expected {dma}, got {dma - 1}"


def test_a_figure_that_differs_from_the_book_fails_unless_explained(monkeypatch):
    book = ch16.BOOK_TABLE["k=3, draft noise 0"]
    row = ch16.Ch16Row("k=3, draft noise 0", True, "rule", 24, 24, 8, 32, book.cycles + 1,
                       268_346 / (book.cycles + 1), 0, book)
    assert [w for w, _, _ in row.differences()] == ["cycles"]
    result = ch16.Ch16Result(32, [], [row], Bundle(8192, config=isa.BOOK), {}, {}, config=isa.BOOK)
    assert not result.ok and result.unexplained == ["k=3, perfect draft (noise 0): cycles 138859 (book 138858)"]
    monkeypatch.setitem(ch16.EXPLAINED, ("k=3, draft noise 0", "cycles"), "an explanation")
    assert result.ok and "an explanation" in ch16.format_differences(result)


# ---------------------------------------------------------------- ga2 example a / b
def test_example_a_prints_its_three_parts_and_writes_its_figures(tmp_path, capsys):
    assert main(["example", "a", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    for part in ("== 1. three blocks", "== 2. the anatomy", "== 3. causality in integers",
                 "block 2: last token 9, draft guesses [10, 9, 10]", "12,330 / 29,986 = 0.41", "the weights (2,304 words) are loaded once",
                 "none does."):
        assert part in text, part
    data = json.loads((tmp_path / "ch16_example_a.json").read_text())
    assert data["differences_from_book"] == []
    assert data["verifier"]["cycles"] == {"total": 12330, "matrix": 7732, "dma": 2856, "vector": 1532,
                                          "fetch and issue": 210}
    for name in ("ch16_mask.png", "ch16_cycles_by_unit.png"):
        assert _is_png(tmp_path / name)


def test_example_b_small_grid_prints_the_book_beside_and_writes_its_figures(tmp_path, capsys):
    assert main(["example", "b", "--noises", "0,4", "--ks", "1,3", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "every run produced exactly the plain decoder's tokens: yes" in text
    assert "differences from the book: none" in text
    data = json.loads((tmp_path / "ch16_example_b.json").read_text())
    cells = {(c["noise"], c["k"]): c for c in data["grid"]}
    assert set(cells) == {(0.0, 1), (0.0, 3), (4.0, 1), (4.0, 3)}
    assert (cells[(4.0, 3)]["accepted"], cells[(4.0, 3)]["proposed"], cells[(4.0, 3)]["cycles"]) == (18, 45, 266_098)
    assert data["unit_costs"]["verifier_m4"] == {"4": 12330, "12": 14410, "24": 17530}
    for name in ("ch16_speedup_vs_k.png", "ch16_serving.png"):
        assert _is_png(tmp_path / name)


def test_serving_arithmetic_equals_the_book_and_the_series():
    for (a, k, c), book in examples.BOOK_SERVE.items():
        assert round(examples.serving_speedup(a, k, c), 2) == book
    for a in (0.3, 0.6, 0.9):
        assert examples.expected_tokens(a, 2) == pytest.approx(1 + a + a * a)
    assert examples.expected_tokens(1.0, 3) == 4.0
    assert examples.best_k(0.8, 0.05) == 8
