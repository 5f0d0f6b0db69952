"""Fuzz campaigns (gen/fuzz/campaign.py) and their functional coverage (gen/fuzz/coverage.py).

Pieces, resuming, shrinking a mismatching program, the coverage bins derived
from the ISA, the CLI's validation, and the same campaign on a Dask cluster.
"""
import json
import random
import sys

import pytest

from ga2_cli.main import main as ga2
from ga2_hdl import isa
from ga2_hdl.formats.bundle import Bundle
from ga2_hdl.isa import ErrorCode, Instruction, make
from gen.fuzz import campaign as cp
from gen.sim import simulator
from gen.fuzz.coverage import CoverageModel, raisable_errors
from gen.fuzz.programs import illegal_instruction, random_bundle, random_program
from gen.sim.golden import GoldenSimulator

HALT = isa.HALT


# ----------------------------------------------------------------------------- coverage


def test_coverage_bins_come_from_the_isa():
    m = CoverageModel(2048, None, config=isa.BOOK)
    ranges = {(ob.op, ob.operand): (ob.lo, ob.hi) for ob in m.operands}
    assert {op for op, _ in ranges} == {s.mnemonic for s in isa.OPS if s.operands}
    assert set(ranges) == {(s.mnemonic, o.name) for s in isa.OPS for o in s.operands}
    assert ranges[("MM", "M")] == (1, isa.MM_MAX_MN) and ranges[("MM", "K")] == (1, isa.MM_MAX_K)
    assert ranges[("LD", "dst")] == (0, isa.SPAD_WORDS - 1) and ranges[("LD", "src")] == (0, 2047)
    assert ranges[("LD", "len")] == (1, 2048) and ranges[("VADD", "len")] == (1, isa.SPAD_WORDS)
    assert ranges[("RQ", "m")] == (0, (1 << isa.OP_BY_NAME["RQ"].operand("m").bits) - 1)
    assert [k for k in m.bins if k.startswith("error ")] == [f"error {c.name}" for c in ErrorCode]
    pairs = [k for k in m.bins if k.startswith("pair ")]
    assert len(pairs) == (len(isa.OPS) - 1) * len(isa.OPS) and "pair HALT>LD" not in pairs
    regions = [k for k in m.bins if k.startswith("region ")]
    assert "region MM.dst spad high" in regions and "region LD.src ext low" in regions
    assert len(regions) == 2 * sum(len(s.regions(make(s.mnemonic, **{o.name: 1 for o in s.operands})))
                                   for s in isa.OPS if s.operands)
    # without a cycle budget only the error no instruction raises is out of reach
    assert list(m.unreachable) == ["error NO_HALT"]
    assert raisable_errors(2048, config=isa.BOOK) == set(ErrorCode) - {ErrorCode.NO_HALT}
    # a budget puts the longest vectors out of reach, with the reason
    budget = CoverageModel(8192, 3000, config=isa.BOOK)
    assert "operand LD.len max" in budget.unreachable and "3000" in budget.unreachable["operand LD.len max"]
    assert "operand MM.K max" not in budget.unreachable


def test_coverage_counts_what_a_program_executes():
    ew = 1024
    m = CoverageModel(ew, 3000, config=isa.BOOK)
    code = [make("LD", dst=4095, src=0, len=1), make("AMAX", dst=0, src=4095, len=1),
            make("ST", src=0, dst=ew - 1, len=1), HALT]
    c = m.count(code, ErrorCode.OK, 3)
    assert c["error OK"] == 1
    assert c["operand LD.dst max"] == c["operand LD.src min"] == c["operand LD.len min"] == 1
    assert c["operand ST.dst max"] == 1 and c["operand AMAX.src max"] == 1
    assert c["region LD.dst spad high"] == c["region LD.src ext low"] == c["region ST.dst ext high"] == 1
    assert c["pair LD>AMAX"] == c["pair AMAX>ST"] == c["pair ST>HALT"] == 1
    assert sum(v for k, v in c.items() if k.startswith("pair")) == 3
    # a fault: the faulting instruction and what follows it are not executed
    bad = [make("LD", dst=0, src=0, len=4), Instruction(op=isa.RESERVED_OP_CODES[0]), make("ST", src=0, dst=0, len=4), HALT]
    c = m.count(bad, ErrorCode.BAD_OPCODE, 1)
    assert c["error BAD_OPCODE"] == 1 and not any(k.startswith(("pair", "operand ST")) for k in c)
    s = m.summary(c)
    assert s["hit"] == len(c) and "error OK" in s["empty"] and "error NO_HALT" not in s["empty"]
    assert "EMPTY" in m.table(c) and "unreachable: error NO_HALT" in m.table(c)


def test_illegal_programs_raise_every_error_an_instruction_can_raise():
    rng = random.Random(4)
    for code in sorted(raisable_errors(isa.EXT_WORDS_DEFAULT, config=isa.BOOK) - {ErrorCode.OK}):
        bad = illegal_instruction(rng, code, isa.EXT_WORDS_DEFAULT, config=isa.BOOK)
        assert bad is not None and isa.check(bad)[0] == code
    b = random_bundle(36, 5, 1024, illegal=1.0, config=isa.BOOK)
    ended = {p.expected.error for p in b.programs}
    assert ended >= set(raisable_errors(1024, config=isa.BOOK)) - {ErrorCode.OK}
    assert all(p.expected.error != ErrorCode.OK or all(isa.check(i, 1024)[0] == ErrorCode.OK for i in p.code)
               for p in b.programs)
    # valid by default: existing callers keep getting valid programs
    rng = random.Random(8)
    for _ in range(30):
        code, _ = random_program(rng, 1024, config=isa.BOOK)
        assert all(isa.check(i, 1024)[0] == ErrorCode.OK for i in code)


@pytest.mark.slow
def test_ten_thousand_programs_hit_every_reachable_bin():
    # the programs of the 10,000-program campaign of docs/results.md (the simulators do not change them)
    spec = cp.CampaignSpec(10_000, seed=1, sims=("golden",), config=isa.BOOK)
    rep = cp.report(spec, [cp.run_piece(t) for t in spec.pieces()])
    assert rep["coverage"]["empty"] == [], rep["coverage"]["empty"]


# ----------------------------------------------------------------------------- campaigns


def test_pieces_are_deterministic_and_piece_zero_is_the_plain_bundle():
    spec = cp.CampaignSpec(25, seed=3, ext_words=1024, piece_size=10, illegal=0.2, config=isa.BOOK)
    tasks = spec.pieces()
    assert [(t.start, t.stop) for t in tasks] == [(0, 10), (10, 20), (20, 25)]
    first = tasks[0].bundle()
    assert [p.code for p in first.programs] == [p.code for p in random_bundle(10, 3, 1024, illegal=0.2, config=isa.BOOK).programs]
    again = cp.CampaignSpec(25, seed=3, ext_words=1024, piece_size=10, illegal=0.2, config=isa.BOOK).pieces()[2].bundle()
    assert [p.code for p in again.programs] == [p.code for p in tasks[2].bundle().programs]
    assert tasks[1].bundle().programs[0].code != first.programs[0].code


def test_campaign_resumes_only_unfinished_pieces(tmp_path):
    spec = cp.CampaignSpec(25, seed=2, sims=("golden",), ext_words=1024, piece_size=10, config=isa.BOOK)
    d = tmp_path / "c"
    full = cp.run_campaign(spec, d, cp.LocalRunner(1))
    assert full["complete"] and full["programs"] == 25 and full["campaign"]["pieces_run"] == 3
    assert full["results"]["golden"]["passed"] and full["results"]["golden"]["programs_run"] == 25
    # a lost piece (never written) and a half-written one are run again; the rest are kept
    (d / "pieces" / "piece-000001.json").unlink()
    text = (d / "pieces" / "piece-000002.json").read_text()
    (d / "pieces" / "piece-000002.json").write_text(text[:len(text) // 2])
    again = cp.run_campaign(spec, d, cp.LocalRunner(1))
    assert again["campaign"]["pieces_run"] == 2 and again["campaign"]["resumed_pieces"] == 1
    for key in ("programs", "cycles", "mismatches", "coverage"):
        assert again[key] == full[key], key
    assert cp.run_campaign(spec, d, cp.LocalRunner(1))["campaign"]["pieces_run"] == 0
    other = cp.CampaignSpec(25, seed=3, sims=("golden",), ext_words=1024, piece_size=10, config=isa.BOOK)
    with pytest.raises(cp.CampaignError, match="seed"):
        cp.run_campaign(other, d, cp.LocalRunner(1))


def test_an_interrupted_campaign_keeps_its_finished_pieces(tmp_path):
    spec = cp.CampaignSpec(30, seed=4, sims=("golden",), ext_words=1024, piece_size=10, config=isa.BOOK)

    class Interrupted(cp.LocalRunner):
        def run(self, tasks):
            for k, item in enumerate(super().run(tasks)):
                if k == 1:
                    raise KeyboardInterrupt
                yield item

    with pytest.raises(KeyboardInterrupt):
        cp.run_campaign(spec, tmp_path, Interrupted(1))
    assert [p.name for p in (tmp_path / "pieces").iterdir()] == ["piece-000000.json"]
    rep = cp.run_campaign(spec, tmp_path, cp.LocalRunner(1))
    assert rep["complete"] and rep["campaign"]["pieces_run"] == 2 and rep["programs"] == 30


class _WrongSoftmax(GoldenSimulator):
    """Counts one vector cycle too many in any program that executes an SM."""
    name = "wrongsm"

    def run_program(self, program, ext, **kw):
        r = super().run_program(program, ext, **kw)
        if any(ins.op == isa.OP_BY_NAME["SM"].code for ins in program[:r.error_pc]):
            r.counters = r.counters._replace(vector=r.counters.vector + 1)
        return r

    def run_bundle(self, bundle, **kw):
        return simulator.replay_with(self, bundle, lambda i: self.run_program(
            bundle.programs[i].code, bundle.programs[i].ext, ext_words=bundle.ext_words), kw.get("reporter"))


def test_every_mismatching_program_is_kept_and_shrunk(tmp_path, monkeypatch):
    monkeypatch.setitem(simulator.SIMULATORS, "wrongsm", f"{__name__}:_WrongSoftmax")
    monkeypatch.setattr(cp, "_SIMULATORS", {})
    spec = cp.CampaignSpec(8, seed=2, sims=("golden", "wrongsm"), ext_words=1024, piece_size=4, config=isa.BOOK)
    rep = cp.run_campaign(spec, tmp_path, cp.LocalRunner(1))
    with_sm = [i for t in spec.pieces() for i, p in enumerate(t.bundle().programs, t.start)
               if any(ins.op == isa.OP_BY_NAME["SM"].code for ins in p.code[:p.expected.error_pc])]
    assert with_sm and sorted(k["program"] for k in rep["kept"]) == with_sm      # every one, not the first
    assert rep["results"]["golden"]["passed"] and not rep["results"]["wrongsm"]["passed"]
    assert rep["results"]["wrongsm"]["mismatching_programs"] == len(with_sm) == rep["mismatches"]
    assert rep["first_mismatch"].startswith("wrongsm: program ") and "counter vector" in rep["first_mismatch"]
    for k in rep["kept"]:
        small = Bundle.read(k["file"])
        code = small.programs[0].code
        assert [i.mnemonic for i in code] == ["SM", "HALT"] and code[0].len == 1, code
        assert k["shrunk_instructions"] == 2 and k["shrink_complete"]
        assert _WrongSoftmax(config=isa.BOOK).run_bundle(small).mismatch is not None       # still wrong in that simulator
        assert GoldenSimulator(config=isa.BOOK).run_bundle(small).passed
        assert len(Bundle.read(k["original_file"]).programs[0].code) == k["instructions"]


# ----------------------------------------------------------------------------- the command


@pytest.mark.parametrize("args, code", [
    # 2: refused while the arguments are parsed, by the option types of ga2_cli/options.py
    (["fuzz", "--programs", "3", "--max-cycles", "0"], 2),
    (["fuzz", "--programs", "3", "--max-cycles", "1"], 2),
    (["fuzz", "--programs", "3", "--max-cycles", "-1"], 2),
    (["fuzz", "--programs", "-3"], 2),
    (["fuzz", "--programs", "3", "--piece-size", "0"], 2),
    (["fuzz", "--programs", "3", "--jobs", "0"], 2),
    (["fuzz", "--programs", "3", "--json", "/nonexistent/dir/r.json"], 2),
    (["bundle", "fuzz", "--programs", "3", "--max-cycles", "0", "-o", "x.hex"], 2),
    (["bundle", "fuzz", "--programs", "-3", "-o", "x.hex"], 2),
    # 1: refused by the campaign's own rules (CampaignSpec.validate), still before any work
    (["fuzz", "--programs", "3", "--illegal", "1.5"], 1),
    (["fuzz", "--programs", "3", "--max-cycles", "3"], 1),          # a HALT fits, not a faulting instruction too
    (["fuzz", "--programs", "3", "--directed", "--ext-words", "100"], 1),
    (["bundle", "fuzz", "--programs", "3", "--max-cycles", "3", "-o", "x.hex"], 1),
])
def test_bad_options_are_refused_in_one_line_before_any_work(args, code, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert ga2(args) == code
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err and lines and "error:" in lines[-1], err
    if code == 1:
        assert len(lines) == 1, err
    assert "fuzz:" not in out and list(tmp_path.iterdir()) == []      # nothing started, nothing written


def test_cli_campaign_resume_and_report(tmp_path, capsys):
    d, js = tmp_path / "camp", tmp_path / "r.json"
    args = ["fuzz", "--programs", "12", "--piece-size", "5", "--seed", "6", "--ext-words", "1024", "--jobs", "1",
            "--resume", str(d), "--json", str(js), "--plot", str(tmp_path / "c.png")]
    assert ga2(args) == 0
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = capsys.readouterr().out
    rep = json.loads(js.read_text())
    assert rep["programs"] == 12 and rep["campaign"]["pieces"] == 3 and rep["coverage"]["total_bins"] > 0
    assert "3/3 pieces" in out and "functional coverage" in out and "coverage:" in out
    assert ga2(["fuzz", "--resume", str(d), "--jobs", "1"]) == 0          # options from the campaign
    assert "12 random programs, seed 6" in capsys.readouterr().out
    assert ga2(["fuzz", "--resume", str(d), "--seed", "7"]) == 1
    assert "--seed 7" in capsys.readouterr().err
    (d / "pieces" / "piece-000002.json").unlink()
    assert ga2(["fuzz", "--resume", str(d), "--status"]) == 0      # looks, runs nothing
    assert "2 of 3 pieces finished (10 programs" in capsys.readouterr().out
    assert not (d / "pieces" / "piece-000002.json").exists()
    import fcntl                                                   # one command at a time per campaign
    with open(d / "lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert ga2(["fuzz", "--resume", str(d), "--jobs", "1"]) == 1
        assert "another ga2 fuzz is running this campaign" in capsys.readouterr().err


def test_scheduler_without_dask_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    assert ga2(["fuzz", "--programs", "2", "--scheduler", "tcp://127.0.0.1:1"]) == 1
    assert "pip install -e '.[cluster]'" in capsys.readouterr().err


def test_dask_cluster_gives_the_local_verdicts_and_coverage(tmp_path):
    from dask import distributed      # the cluster extra: make setup installs it, so this test always runs
    spec = cp.CampaignSpec(4, seed=9, sims=("golden", "verilator"), piece_size=2, config=isa.BOOK)
    local = cp.run_campaign(spec, tmp_path / "local", cp.LocalRunner(1))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        js = tmp_path / "dask.json"
        assert ga2(["fuzz", "--programs", "4", "--seed", "9", "--sims", "golden,verilator", "--piece-size", "2",
                    "--scheduler", cluster.scheduler_address, "--resume", str(tmp_path / "dask"),
                    "--json", str(js)]) == 0
    remote = json.loads(js.read_text())
    assert remote["campaign"]["runner"].startswith("Dask scheduler")
    for name in spec.sims:
        for key in ("passed", "programs_run", "cycles", "mismatching_programs", "line"):
            assert remote["results"][name][key] == local["results"][name][key], (name, key)
    assert remote["coverage"] == local["coverage"] and remote["cycles"] == local["cycles"]
    workers = {json.loads(p.read_text())["worker"] for p in (tmp_path / "dask" / "pieces").iterdir()}
    assert workers and all(not w.endswith(f":{__import__('os').getpid()}") for w in workers)

def test_the_report_names_the_simulator_whose_piece_failed_not_the_golden_models_incomplete_count():
    """A piece whose CXXRTL run raised is unfinished for every simulator; the report's first problem is
    CXXRTL's error, not the golden model's "INCOMPLETE" (which said nothing of the cause)."""
    from gen.fuzz import campaign
    spec = campaign.CampaignSpec(programs=10, sims=("golden", "cxxrtl"), piece_size=10, config=isa.BOOK)

    def sim(error=None, programs=10):
        return {"programs_run": programs, "cycles": 100, "mismatches": [], "error": error, "run_seconds": 0.1,
                "setup_seconds": 0.0, "seconds": 0.1, "cpu_seconds": 0.1}

    piece = {"piece": 0, "start": 0, "stop": 10, "programs": 10, "cycles": 100, "generate_seconds": 0.0,
             "sims": {"golden": sim(), "cxxrtl": sim("cxxrtl: SimulatorError: a bundle it could not read", 0)},
             "kept": [], "halt_only": 0, "coverage": {}}
    rep = campaign.report(spec, [piece])
    assert not rep["complete"]
    assert rep["first_mismatch"] == "cxxrtl: ERROR: cxxrtl: SimulatorError: a bundle it could not read"
    assert rep["results"]["golden"]["line"].startswith("INCOMPLETE")
