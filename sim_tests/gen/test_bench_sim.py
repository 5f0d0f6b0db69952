"""`ga2 bench sim`: figures per simulator, and the book's RTL as Icarus' reference when it is there."""
from __future__ import annotations

import json

import pytest

from ga2_cli.main import main
from ga2_hdl import isa
from ga2_hdl.formats.bundle import Bundle
from ga2_hdl.isa import make
from gen.bench import book_rtl
from gen.sim.simulator import SimulatorError


def _bundle() -> Bundle:
    return Bundle.from_programs([("ld st", [make("LD", dst=0, src=0, len=3), make("ST", src=0, dst=10, len=3),
                                            isa.HALT], [5, 6, 7]),
                                 ("fault", [make("LD", dst=0, src=8190, len=5), isa.HALT], [])], ext_words=8192, config=isa.BOOK)


def test_bench_prints_speed_per_cpu_second_and_says_when_the_book_rtl_is_missing(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(book_rtl.ENV, raising=False)
    path = tmp_path / "b.hex"
    _bundle().write(path)
    out_json = tmp_path / "bench.json"
    assert main(["bench", "sim", "--sims", "golden,icarus", "--bundle", str(path), "--json", str(out_json)]) == 0
    text = capsys.readouterr().out
    assert "per CPU-second" in text and "load average" in text
    assert "icarus against the book's hand-written RTL: not measured: the book's RTL is not available locally" in text
    data = json.loads(out_json.read_text())
    assert set(data["results"]) == {"golden", "icarus"}
    assert data["results"]["icarus"]["passed"] and data["results"]["icarus"]["cycles_per_cpu_second"] > 0


def test_a_book_rtl_directory_without_its_testbench_is_refused(tmp_path, capsys):
    assert main(["bench", "sim", "--sims", "icarus", "--book-rtl", str(tmp_path)]) != 0
    assert "no ga2_tb.v there" in capsys.readouterr().err


def test_the_book_testbench_format():
    bundle = _bundle()
    fit = book_rtl.fitting(bundle)
    assert [e.name for e in fit.programs] == ["ld st"]           # the faulting program is left out
    (words,) = book_rtl.pieces(fit)
    entry = fit.programs[0]
    assert words[0] == 1 and words[1] == len(entry.code)
    first = entry.code[0].encode()
    assert words[2:6] == [(first >> s) & 0xFFFFFFFF for s in (96, 64, 32, 0)]
    body = words[2 + 4 * len(entry.code):]
    assert body[:8192] == list(entry.ext) and body[8192:16384] == list(entry.expected.ext)
    assert body[16384:] == list(entry.expected.counters)


def test_long_programs_do_not_fit_the_book_testbench():
    long = Bundle.from_programs([("long", [make("LD", dst=0, src=0, len=1)] * 300 + [isa.HALT], [1])],
                                ext_words=8192, config=isa.BOOK)
    with pytest.raises(SimulatorError, match="holds 256"):
        book_rtl.pieces(long)
