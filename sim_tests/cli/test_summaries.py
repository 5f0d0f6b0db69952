"""Summaries say what was compared with what (issue 26, item 4): ch16 on another chip than the
book's compares tokens with the book's and cycles with the chip's own golden model, and says so;
its figure names the chip and keeps every reference tick on the axis."""
from __future__ import annotations

from ga2_hdl import isa
from ga2_hdl.config import Config
from ga2_hdl.formats.bundle import Bundle
from spec import ch16

CHIP = Config(name="a6", array=6)


def _result(config: Config, tokens: int = 32, scale: float = 0.9) -> ch16.Ch16Result:
    rows = []
    for label, book in ch16.BOOK_TABLE.items():
        cycles = int(book.cycles * scale)
        rows.append(ch16.Ch16Row(label, True, "the rule", book.accepted, book.proposed, book.blocks, book.programs,
                                 cycles, book.speedup, 0, book if tokens == 32 else None,
                                 {"verilator": {"pass": True, "cycles": cycles, "verdict": "PASS", "line": "PASS"}},
                                 book_chip=config.same_chip(isa.BOOK)))
    return ch16.Ch16Result(tokens, [], rows, Bundle(config.ext_words, config=config), {}, {}, config=config)


def test_another_chip_is_not_called_equal_to_the_book():
    text = ch16.format_differences(_result(CHIP))
    assert "every figure of the table equals the book's" not in text
    assert "cycles and speedups with this chip's own golden model" in text
    assert "7 of 7 runs replayed in verilator with this chip's golden model's cycles" in text
    assert "241,511 cycles on this chip, 268,346 on the book's" in text
    # the book's chip: every figure compared with the book's, as before
    book = _result(isa.BOOK, scale=1.0)
    assert ch16.format_differences(book) == "  none: every figure of the table equals the book's"
    # another number of tokens: nothing is compared with the book
    assert "not compared" in ch16.format_differences(_result(isa.BOOK, tokens=8))


def test_the_figure_names_the_chip_and_keeps_the_books_ticks_on_the_axis(monkeypatch, tmp_path):
    from spec import figures
    seen = {}

    def keep(fig, path):
        seen["fig"] = fig
        return path

    monkeypatch.setattr(figures, "_save", keep)
    figures.table_figure(_result(CHIP, scale=0.5), str(tmp_path / "t.png"))
    ax = seen["fig"].axes[0]
    assert "a6 (array=6)" in ax.get_title()
    assert ax.get_xlim()[1] > max(b.cycles for b in ch16.BOOK_TABLE.values())


def test_golden_of_a_bundle_with_json_gives_one_object_per_program(tmp_path, capsys):
    import json
    from ga2_cli.main import main
    from gen.fuzz.directed import directed_suite
    bundle = Bundle.from_programs(directed_suite(8192, config=isa.BOOK)[:5], 8192, config=isa.BOOK)
    path = tmp_path / "b.hex"
    bundle.write(path)
    assert main(["golden", str(path), "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    objects = [json.loads(line) for line in lines]
    assert [o["program"] for o in objects] == list(range(5))
    for o, entry in zip(objects, bundle.programs):
        assert o["name"] == entry.name and o["counters"] == list(entry.expected.counters) and o["matches_bundle"]
        assert {int(a): w for a, w in o["ext_nonzero"].items()} == \
            {a: w for a, w in enumerate(entry.expected.ext) if w}


def test_the_json_says_what_was_compared_with_what():
    assert _result(CHIP).as_json()["compared_with"]["cycles_and_speedups"] == \
        "this chip's golden model (replayed on the RTL)"
    assert _result(isa.BOOK, scale=1.0).as_json()["compared_with"]["cycles_and_speedups"] == \
        "the book's and the golden model's"
