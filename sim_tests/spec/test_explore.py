"""`ga2 explore`: the design-space table, its JSON and figure, and its refusals.

The book's entry is the chapter's table, exactly: plain decoding 268,346 cycles
and the k=3 runs 138,858 / 158,818 / 266,098 (structured) and 172,210 (random)
over 32 tokens, every cycle from the golden model's counters.
"""
from __future__ import annotations

import json
import os
import sys

import pytest

from ga2_cli.main import main
from ga2_hdl import isa
from ga2_hdl.config import PRESETS, Config
from spec import ch16, explore, figures

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ARRAY8 = Config(name="array8", array=8)


def _file(tmp_path, config: Config) -> str:
    path = tmp_path / f"{config.name}.json"
    path.write_text(json.dumps(config.to_dict()))
    return str(path)


@pytest.fixture(scope="module")
def book_entry():
    return explore.explore_config(isa.BOOK, 32)


def test_the_book_entry_is_the_chapters_table_exactly(book_entry):
    e = book_entry
    n = ch16.TABLE_TOKENS
    book = ch16.BOOK_TABLE
    assert e["name"] == "book" and e["parameters"] == isa.BOOK.parameters and e["tokens"] == n
    assert e["plain_cycles_per_token"] == book["plain greedy decoding"].cycles / n          # 268,346 / 32
    for key, label in explore.K3_RUNS:
        assert e[f"{key}_cycles_per_token"] == book[label].cycles / n, key
        assert round(e["speedup"][key], 2) == book[label].speedup, key
    for run in e["runs"]:
        b = book[run["label"]]
        assert (run["cycles"], run["programs"], run["accepted"], run["proposed"], run["blocks"]) == \
            (b.cycles, b.programs, b.accepted, b.proposed, b.blocks), run["label"]
        assert run["tokens_equal"]
        # the split adds up to the total (no overlap on the book's chip), from the golden counters
        c = run["counters"]
        assert sum(run["per_token"].values()) * n == c["total"] == run["cycles"]
        assert run["per_token"]["matrix"] * n == c["matrix"] and run["per_token"]["dma"] * n == c["dma"]
        assert run["per_token"]["fetch_issue"] * n == isa.FETCH_ISSUE_CYCLES * (c["instructions"] + run["programs"])
    assert e["per_unit"]["plain"] == e["runs"][0]["per_token"]
    assert e["problems"] == [] and e["tokens_equal"]


def test_explore_json_keys_book_first_and_the_figure(tmp_path, capsys):
    js, png = tmp_path / "explore.json", tmp_path / "explore.png"
    assert main(["explore", "--tokens", "1", "--workers", "1", "--configs", _file(tmp_path, ARRAY8), "book",
                 "--json", str(js), "--plot", str(png)]) == 0
    data = json.loads(js.read_text())
    assert [c["name"] for c in data["configs"]] == ["book", "array8"]          # the book's chip first
    for entry in data["configs"]:
        assert {"name", "parameters", "plain_cycles_per_token", "k3_perfect_cycles_per_token", "per_unit",
                "speedup", "runs", "tokens_equal"} <= set(entry)
        assert set(entry["per_unit"]) == {"plain", "k3_perfect", "k3_noisy", "k3_poor", "k3_random"}
        for split in entry["per_unit"].values():
            assert set(split) == set(explore.UNITS)
        assert entry["tokens_equal"] and entry["problems"] == []
    book, a8 = data["configs"]
    assert a8["parameters"]["array"] == 8 and book["parameters"]["array"] == 4
    assert a8["per_unit"]["plain"]["matrix"] < book["per_unit"]["plain"]["matrix"]
    assert a8["per_unit"]["plain"]["dma"] == book["per_unit"]["plain"]["dma"]     # the same words are loaded
    assert "golden model's counters" in data["source"]
    with open(png, "rb") as f:
        assert f.read(8) == PNG_MAGIC
    text = capsys.readouterr().out
    assert "k3 perfect" in text and "OK:" in text


def _entry(name, plain, perfect, hidden=0.0):
    """A made-up entry with the keys the figure reads (``hidden``: cycles the units overlapped)."""
    split = lambda total: {"matrix": total * 0.5, "dma": total * 0.3, "vector": total * 0.1 + hidden,
                           "fetch_issue": total * 0.1}
    return {"name": name, "plain_cycles_per_token": plain, "k3_perfect_cycles_per_token": perfect,
            "per_unit": {"plain": split(plain), "k3_perfect": split(perfect)},
            "speedup": {"k3_perfect": plain / perfect}}


def test_the_figure_is_written_atomically(tmp_path, monkeypatch):
    report = {"tokens": 32, "configs": [_entry("book", 8385.8, 4339.3), _entry("overlapped", 3000.0, 1500.0, 400.0)]}
    path = tmp_path / "f.png"
    path.write_bytes(b"the old figure")
    import matplotlib.figure

    def broken(self, *a, **k):
        raise RuntimeError("rendering failed")
    with monkeypatch.context() as m:
        m.setattr(matplotlib.figure.Figure, "savefig", broken)
        with pytest.raises(RuntimeError):
            figures.explore_figure(report, str(path))
    assert path.read_bytes() == b"the old figure" and os.listdir(tmp_path) == ["f.png"]
    assert figures.explore_figure(report, str(path)) == str(path)
    assert path.read_bytes()[:8] == PNG_MAGIC and os.listdir(tmp_path) == ["f.png"]


@pytest.mark.parametrize("argv, says", [
    (["--configs", "book,nope"], "argument --configs: nope: not a configuration name"),
    (["--configs", "book,"], "argument --configs: 'book,': an empty configuration name"),
    (["--plot", "x.svg"], "argument --plot: x.svg: the figure is written as PNG"),
])
def test_a_bad_option_is_one_line_before_any_work(monkeypatch, capsys, argv, says):
    monkeypatch.setattr(explore, "explore_config", lambda *a: pytest.fail("work started"))
    assert main(["explore"] + argv) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


def test_a_configuration_named_twice_is_refused_before_any_work(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(explore, "explore_config", lambda *a: pytest.fail("work started"))
    assert main(["explore", "--configs", "book", _file(tmp_path, Config(name="book", array=8))]) == 1
    err = capsys.readouterr().err
    assert "book named more than once" in err and err.count("\n") == 1


def test_default_configurations_are_the_book_and_every_accepted_preset(monkeypatch):
    monkeypatch.setitem(PRESETS, "array8", ARRAY8)
    monkeypatch.setitem(PRESETS, "huge", Config(name="huge", array=300))      # the instruction word cannot name it
    configs, skipped = explore.default_configs()
    assert configs[0] is isa.BOOK and ARRAY8 in configs and len(configs) == len(PRESETS) - 1
    assert [name for name, _ in skipped] == ["huge"] and "does not fit" in skipped[0][1]


def test_scheduler_without_dask_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    monkeypatch.setattr(explore, "explore_config", lambda *a: pytest.fail("work started"))
    assert main(["explore", "--tokens", "1", "--scheduler", "tcp://127.0.0.1:1"]) == 1
    assert "pip install -e '.[cluster]'" in capsys.readouterr().err


def test_a_dask_scheduler_gives_the_local_entries(tmp_path):
    from dask import distributed      # the cluster extra: make setup installs it
    local = explore.run_explore([ARRAY8], 1, workers=1)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        js = tmp_path / "dask.json"
        assert main(["explore", "--tokens", "1", "--configs", _file(tmp_path, ARRAY8),
                     "--scheduler", cluster.scheduler_address, "--json", str(js)]) == 0
    remote = json.loads(js.read_text())
    for key in ("plain_cycles_per_token", "k3_perfect_cycles_per_token", "per_unit", "speedup", "runs"):
        assert remote["configs"][0][key] == json.loads(json.dumps(local["configs"][0][key])), key


def test_a_configuration_the_runs_do_not_fit_is_a_failed_entry_not_a_crash(capsys):
    tiny = Config(name="tiny", imem_words=8)          # no program of the chapter fits 8 instructions
    report = explore.run_explore([tiny], 1, workers=1)
    assert report["configs"] == [] and [e["name"] for e in report["failed"]] == ["tiny"]
    assert "the instruction memory holds 8" in report["failed"][0]["error"]
    assert report["problems"] and "FAILED tiny" in explore.format_table(report)
