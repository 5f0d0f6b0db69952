"""Capra and the chapter's runs on a configuration other than the book's.

The compiler reads every size from the Config it compiles for: the array size
tiles MM, max_k bounds K, the scratchpad, external and instruction memories
bound the plans; the instruction set of that Config judges every instruction
and predicts the counters, and the program runs on that chip's golden model.
On array 8 and array 16 the chapter's seven runs give exactly the book chip's
tokens (32 tokens: the slow test; a few tokens in the default suite).
"""
from __future__ import annotations

import json
import math
import random

import pytest

import compiler as C
from ga2_hdl import golden, isa
from ga2_hdl.config import PRESETS, Config
from ga2_cli.main import main
from spec.runs import bundle_of, chapter_table, plain_row
from spec.tiny_lm import make_model


def _preset_or(name: str, **fields) -> Config:
    """The preset ``name`` if the generator has one with these parameters, else the configuration built here."""
    built = Config(name=name, **fields)
    preset = PRESETS.get(name)
    return preset if preset is not None and preset.same_chip(built) else built


ARRAY8 = _preset_or("array8", array=8)
ARRAY16 = _preset_or("array16", array=16)


def _w(rows, cols, seed=0, sd=0.3):
    rng = random.Random(seed)
    return [[rng.gauss(0, sd) for _ in range(cols)] for _ in range(rows)]


def _product_graph(m, k, n, seed=0):
    g = C.Graph()
    x = g.input("x", (m, k))
    g.output(g.matmul(x, g.weight("w", _w(k, n, seed))), "o")
    return g, {"x": _w(m, k, seed + 1, 0.5)}


def _mms(prog):
    return [ins for ins in prog.code if ins.mnemonic == "MM"]


@pytest.mark.parametrize("config", [isa.BOOK, ARRAY8, ARRAY16], ids=lambda c: c.name)
def test_matmul_tiles_for_the_array_and_computes_the_same_integers(config):
    g, inputs = _product_graph(6, 20, 10)
    prog = C.compile_graph(g, [inputs], config=config)
    a = config.array
    mms = _mms(prog)
    assert len(mms) == math.ceil(6 / a) * math.ceil(10 / a)
    assert max(ins.M for ins in mms) == min(6, a) and max(ins.N for ins in mms) == min(10, a)
    book = C.compile_graph(g, [inputs], config=isa.BOOK)
    outs, result = C.execute(prog, inputs)
    assert outs["o"][0] == C.run(book, inputs)["o"][0] == C.interpret(prog, inputs)[g.nodes[-1].id]
    assert result.counters == prog.counters() == isa.instruction_set(config).counters(prog.code)
    assert prog.config is config


def test_a_program_for_a_larger_array_is_illegal_on_the_book_chip_and_runs_on_its_own():
    g, inputs = _product_graph(8, 16, 8)
    prog = C.compile_graph(g, [inputs], config=ARRAY8)
    assert [(i.M, i.N) for i in _mms(prog)] == [(8, 8)]
    assert isa.check(_mms(prog)[0])[0] == isa.ErrorCode.BAD_SHAPE          # the book's rule
    assert golden.run(prog.code, C.ext_image(prog, inputs), config=isa.BOOK).error == isa.ErrorCode.BAD_SHAPE
    C.run(prog, inputs)                                                     # its own chip: fine


def test_max_k_bounds_the_inner_dimension():
    g, inputs = _product_graph(2, 100, 3)
    with pytest.raises(C.CompileError, match="inner dimension 100 exceeds the matrix unit's limit of 64"):
        C.compile_graph(g, [inputs], config=isa.BOOK)
    deep = Config(name="deep", max_k=128)
    prog = C.compile_graph(g, [inputs], config=deep)
    assert [i.K for i in _mms(prog)] == [100]
    assert C.run(prog, inputs)["o"][0] == C.interpret(prog, inputs)[g.nodes[-1].id]


def test_the_scratchpad_instruction_and_external_memories_are_the_configurations():
    g, inputs = _product_graph(16, 32, 16)
    prog = C.compile_graph(g, [inputs], config=isa.BOOK)
    assert prog.ext_words == isa.BOOK.ext_words
    small = Config(name="small", spad_words=prog.spad_high - 1)
    with pytest.raises(C.CompileError, match="cannot place"):
        C.compile_graph(g, [inputs], config=small)
    exact = Config(name="exact", spad_words=prog.spad_high)
    assert C.compile_graph(g, [inputs], config=exact).spad_high == prog.spad_high
    with pytest.raises(C.CompileError, match=f"the instruction memory holds {len(prog.code) - 1}"):
        C.compile_graph(g, [inputs], config=Config(name="short", imem_words=len(prog.code) - 1))
    ext = Config(name="ext", ext_words=prog.ext_used)
    assert C.compile_graph(g, [inputs], config=ext).ext_words == prog.ext_used
    with pytest.raises(C.CompileError, match="external memory is full"):
        C.compile_graph(g, [inputs], config=Config(name="ext", ext_words=prog.ext_used - 1))


def test_a_configuration_the_instruction_set_refuses_is_a_compile_error():
    g, inputs = _product_graph(2, 4, 2)
    with pytest.raises(C.CompileError, match="does not fit the instruction word"):
        C.compile_graph(g, [inputs], config=Config(name="huge", array=300))


@pytest.fixture(scope="module")
def book_rows():
    return chapter_table(4, config=isa.BOOK)


@pytest.mark.parametrize("config", [ARRAY8, ARRAY16], ids=lambda c: c.name)
def test_the_seven_runs_give_the_book_chips_tokens_on_a_larger_array(book_rows, config):
    rows = chapter_table(4, config=config)
    iset = isa.instruction_set(config)
    for book, row in zip(book_rows, rows):
        assert row.label == book.label
        assert row.tokens == book.tokens and row.tokens_equal, row.label
        assert (row.accepted, row.proposed, row.blocks, row.programs) == \
            (book.accepted, book.proposed, book.blocks, book.programs), row.label
        assert row.cycles < book.cycles, row.label          # fewer, larger MM tiles
        for r in row.log:
            assert r.config is config and r.measured == iset.counters(r.code) == r.counters


@pytest.mark.slow
@pytest.mark.parametrize("config", [ARRAY8, ARRAY16], ids=lambda c: c.name)
def test_the_seven_runs_of_32_tokens_give_the_book_chips_tokens(config):
    book = chapter_table(32, config=isa.BOOK)
    for b, row in zip(book, chapter_table(32, config=config)):
        assert row.tokens == b.tokens and row.tokens_equal, row.label
        assert (row.accepted, row.proposed, row.blocks, row.programs) == \
            (b.accepted, b.proposed, b.blocks, b.programs), row.label


def test_a_bundle_is_made_for_the_chip_of_its_programs(book_rows):
    row = plain_row("plain", make_model("structured"), 1, config=ARRAY8)
    bundle = bundle_of(row.log, "plain")
    assert bundle.config.same_chip(ARRAY8) and bundle.total_cycles == row.cycles
    assert [p.expected.counters for p in bundle.programs] == [r.measured for r in row.log]
    with pytest.raises(ValueError, match="a bundle holds the programs of one chip"):
        bundle_of(row.log + book_rows[0].log[:1], "mixed")
    assert bundle_of(book_rows[0].log[:1], "plain").total_cycles == book_rows[0].log[0].cycles


# ----------------------------------------------------------------------------- the commands
def _config_file(tmp_path, config: Config) -> str:
    if config.name in PRESETS:
        return config.name
    path = tmp_path / f"{config.name}.json"
    path.write_text(json.dumps(config.to_dict()))
    return str(path)


def test_ch16_on_another_chip_is_judged_by_its_golden_model(tmp_path, capsys):
    """The bundle is made for the chip; the golden simulator is built for it (hwgen's simulator layer)."""
    out = tmp_path / "out"
    assert main(["ch16", "--tokens", "1", "--no-checks", "--sims", "golden", "--workers", "1",
                 "--config", _config_file(tmp_path, ARRAY8), "--out", str(out)]) == 0
    data = json.loads((out / "ch16.json").read_text())
    assert data["config"] == ARRAY8.to_dict() and data["ok"]
    assert len(data["rows"]) == 7
    for row in data["rows"]:
        assert row["tokens_equal"] and row["sims"]["golden"]["pass"]
        assert row["sims"]["golden"]["cycles"] == row["cycles"]
    assert "chip: array8 (array=8)" in capsys.readouterr().out


@pytest.mark.slow
def test_ch16_on_another_chip_replays_on_the_rtl(tmp_path):
    out = tmp_path / "out"
    assert main(["ch16", "--tokens", "2", "--no-checks", "--sims", "icarus,verilator", "--config",
                 _config_file(tmp_path, ARRAY16), "--out", str(out)]) == 0
    data = json.loads((out / "ch16.json").read_text())
    assert data["ok"] and data["config"] == ARRAY16.to_dict()
    for row in data["rows"]:
        for sim in ("icarus", "verilator"):
            assert row["sims"][sim]["pass"] and row["sims"][sim]["cycles"] == row["cycles"], (sim, row)


@pytest.mark.slow
def test_example_a_on_another_chip_keeps_the_chip_independent_figures(tmp_path, capsys):
    assert main(["example", "a", "--config", _config_file(tmp_path, ARRAY16), "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "ch16_example_a.json").read_text())
    assert data["config"]["array"] == 16 and data["failures"] == []
    assert data["verifier"]["ops"]["MM"] < 56                       # fewer, larger tiles than the book's 56
    assert any(d.startswith("verifier histogram") for d in data["differences_from_book"])
    assert data["verifier"]["words_loaded"] == 2496                  # what the DMA loads is the same


@pytest.mark.slow
def test_beyond_on_another_chip_is_judged_by_its_golden_model(tmp_path):
    assert main(["beyond", "--tokens", "2", "--sims", "golden", "--config", _config_file(tmp_path, ARRAY8),
                 "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "beyond.json").read_text())
    assert data["ok"] and data["config"] == ARRAY8.to_dict()
    assert all(row["sims"]["golden"]["pass"] for row in data["rows"])
    assert all(row["tokens_ok"] is not False for row in data["rows"])
