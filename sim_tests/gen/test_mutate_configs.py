"""`ga2 mutate compiler --config` and `ga2 mutate spec --config`: the configuration is the chip the
battery's and the checks' programs are compiled for and run on; the verdicts are those of that chip."""
from __future__ import annotations

import json

import pytest

from compiler import mutate as capra_mutate
from compiler.battery import run_battery
from ga2_cli.main import main
from ga2_hdl import isa
from ga2_hdl.config import PRESETS
from spec.beyond import checks as beyond_checks
from spec import checks

WIDE = PRESETS["wide4"]


def test_the_battery_compiles_for_the_configuration_and_catches_a_mutant_there(monkeypatch):
    compiled = []
    import compiler
    real = compiler.compile_graph

    def spy(*a, **k):
        compiled.append(k.get("config"))
        return real(*a, **k)

    monkeypatch.setattr(compiler, "compile_graph", spy)
    report = run_battery(graphs=2, chains=1, config=WIDE)
    assert report.passed, report.problems
    assert compiled and all(c == WIDE for c in compiled)
    monkeypatch.undo()
    caught, first = capra_mutate.check(capra_mutate.SLICE_MUTANTS[0], graphs=4, config=WIDE)
    assert caught, "the first slice_rows breakage went unnoticed on the wide4 chip"


def test_the_spec_checks_run_on_the_configuration():
    mods = checks.installed_modules(config=WIDE)
    program, _ = checks.causality_verifier(mods, samples=4)
    assert program.config == WIDE
    assert checks.rule_through_chip(mods, n=4, ks=(1,), noises=(0.0,)) == []
    beyond = beyond_checks.installed_beyond_modules(config=WIDE)
    assert beyond.config == WIDE and checks.installed_modules(config=isa.BOOK).config == isa.BOOK


@pytest.mark.parametrize("target", ["compiler", "spec"])
def test_mutate_passes_the_configuration_and_records_it(monkeypatch, tmp_path, capsys, target):
    seen = {}

    def fake(*a, config, **k):
        seen["config"] = config
        return True, None, []

    if target == "compiler":
        monkeypatch.setattr(capra_mutate, "run_mutation", fake)
    else:
        import spec.mutate
        monkeypatch.setattr(spec.mutate, "run_mutants", fake)
    out = tmp_path / "m.json"
    main(["mutate", target, "--config", "wide4", "--json", str(out)])
    assert seen["config"] == WIDE
    assert json.loads(out.read_text())["config"] == WIDE.to_dict()
    assert "wide4 (spad_ports=4, ext_port_words=4)" in capsys.readouterr().out
