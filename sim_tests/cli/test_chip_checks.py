"""A configuration is checked against the job before any work (issue 26, items 3 and 4): one line
naming what the workload's programs need that the chip lacks, derived by compiling them for the
chip; no traceback for any configuration Config accepts; campaigns that would compare nothing
are refused."""
from __future__ import annotations

import random

import pytest

from ga2_cli.main import main
from ga2_hdl.config import Config


def _toml(tmp_path, name: str, **fields) -> str:
    path = tmp_path / f"{name}.toml"
    path.write_text(f'name = "{name}"\n' + "".join(f"{k} = {v}\n" for k, v in fields.items()))
    return str(path)


def _one_line(capsys) -> str:
    out = capsys.readouterr()
    assert "Traceback" not in out.err + out.out
    lines = out.err.strip().splitlines()
    assert len(lines) == 1, out.err
    return lines[0]


@pytest.mark.parametrize("fields, needs", [
    ({"max_k": 32}, "inner dimension 33 exceeds the matrix unit's limit of 32"),
    ({"imem_words": 8}, "the instruction memory holds 8"),
    ({"spad_words": 16, "ext_words": 32}, "external memory is full"),
])
def test_ch16_refuses_a_chip_the_chapter_does_not_fit_in_one_line(tmp_path, capsys, monkeypatch, fields, needs):
    import spec.ch16
    started = []
    monkeypatch.setattr("gen.sim.replay.ReplayPool.__init__", lambda *a, **k: started.append(1) or 1 / 0)
    config = _toml(tmp_path, "mine", **fields)
    assert main(["ch16", "--config", config, "--sims", "verilator", "--out", str(tmp_path)]) == 1
    line = _one_line(capsys)
    assert line.startswith("ga2 ch16: error: --config mine: the chapter's runs (32 tokens) need what the chip lacks: ")
    assert needs in line and not started          # refused before the pool (any work) started
    assert spec.ch16.chip_problems(Config.book()) == []


@pytest.mark.parametrize("argv", [["explore", "--configs"], ["example", "b", "--config"], ["beyond", "--config"]])
def test_explore_example_and_beyond_check_the_chip_first(tmp_path, capsys, argv):
    config = _toml(tmp_path, "k32", max_k=32)
    extra = ["--sims", "verilator"] if argv[0] == "beyond" else []
    assert main([*argv, config, "--out" if argv[0] != "explore" else "--json",
                 str(tmp_path / ("o" if argv[0] != "explore" else "e.json")), *extra]) == 1
    line = _one_line(capsys)
    assert "need what the chip lacks" in line and "inner dimension 33" in line, line


def test_random_programs_fit_a_small_instruction_memory():
    from gen.fuzz.programs import random_program
    chip = Config(name="im16", imem_words=16)
    rng = random.Random(3)
    lengths = [len(random_program(rng, config=chip, illegal=0.3)[0]) for _ in range(300)]
    assert max(lengths) <= 16 and max(lengths) > 3
    with pytest.raises(ValueError, match="instruction memory holds 3"):
        random_program(rng, config=Config(name="im3", imem_words=3), illegal=0.1)


def test_fuzz_blames_the_option_the_user_gave(tmp_path, capsys):
    small = _toml(tmp_path, "small", spad_words=64, ext_words=32)
    assert main(["fuzz", "--config", small, "--programs", "5", "--directed"]) != 0
    line = _one_line(capsys)
    assert "--config small (ext_words = 32)" in line and "--ext-words" not in line
    assert main(["fuzz", "--ext-words", "100", "--programs", "5", "--directed"]) != 0
    assert "--ext-words 100: the directed suite" in _one_line(capsys)


def test_a_campaign_that_would_compare_nothing_is_refused(tmp_path, capsys):
    assert main(["fuzz", "--max-cycles", "5", "--programs", "3", "--sims", "golden,verilator"]) != 0
    assert "every program would be a HALT alone" in _one_line(capsys)
    assert main(["fuzz", "--programs", "3", "--sims", "icarus,icarus"]) != 0
    assert "icarus named more than once" in _one_line(capsys)


def test_a_campaign_of_halt_only_programs_is_reported_as_degenerate(tmp_path, capsys, monkeypatch):
    """Should programs that are a HALT alone get past the refusal (its sample is not the campaign's
    programs), the campaign says so and fails instead of "all simulators agree"."""
    from ga2_hdl import isa
    from gen.fuzz import campaign, programs
    monkeypatch.setattr(campaign.CampaignSpec, "validate", lambda self: None)
    monkeypatch.setattr(programs, "random_program",
                        lambda rng, ext_words=None, **k: ([isa.HALT], [0] * (ext_words or 8192)))
    assert main(["fuzz", "--programs", "4", "--sims", "golden,amaranth", "--jobs", "1"]) == 1
    out = capsys.readouterr().out
    assert "DEGENERATE: all 4 random programs are a HALT alone" in out and "all simulators agree" not in out
