"""`ga2 mutate compiler`: the battery catches every broken copy of slice_rows, and not the equivalent one."""
from __future__ import annotations

import json

import pytest

from compiler import mutate
from ga2_cli.main import main
from ga2_hdl import isa


def test_mutate_compiler_cli(tmp_path, capsys):
    out = tmp_path / "mutants.json"
    assert main(["mutate", "compiler", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "'caught' is EXPECTED" in text
    assert "slice_rows: 10 of 10 broken compilers caught" in text
    report = json.loads(out.read_text())
    assert report["unbroken_passes"] is True
    statuses = {m["name"]: m["status"] for m in report["mutants"]}
    assert len(statuses) == 11
    assert [statuses[m.name] for m in mutate.SLICE_MUTANTS] == ["caught"] * 10
    assert [statuses[m.name] for m in mutate.EQUIVALENT_MUTANTS] == ["equivalent"]
    assert report["totals"]["caught"] == 10 and report["totals"]["equivalent"] == 1
    assert all(m["file"].startswith("compiler/") and m["change"] for m in report["mutants"])


def test_every_anchor_occurs_exactly_once():
    for m in mutate.MUTANTS:
        assert mutate.module_source(mutate.module_of(m)).count(m.old) == 1, m.name


def test_a_stale_anchor_fails_loudly():
    stale = mutate.Mutant("a change whose text is gone", "planner", "this text is not in the planner", "x")
    with pytest.raises(mutate.MutantAnchorError, match="occurs 0 times"):
        mutate.check(stale, config=isa.BOOK)


def test_copies_do_not_touch_the_real_package():
    import sys

    import compiler
    before = set(sys.modules)
    with mutate.CompilerCopy(mutate.SLICE_MUTANTS[0]) as copy:
        assert copy.Graph is not compiler.Graph
        assert copy.planner.__file__.startswith("<mutant copy")
    assert set(sys.modules) == before
