"""The one reporter protocol of the long jobs (ga2_hdl/support/reporter.py)."""
import ast
from pathlib import Path

from ga2_hdl.support.reporter import QUIET, Prefixed, Recorder, Reporter, or_quiet

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("ga2_hdl", "compiler", "spec", "gen", "ga2_cli")
#: the names the seven callback shapes had before the one protocol (a parameter named so is one of them back)
CALLBACK_NAMES = {"progress", "say", "on_result"}
#: parameters of those names that are not a report (a control callback: its answer stops the run)
NOT_REPORTS = {("gen/sim/amaranth_sim.py", "on_result")}


def callback_parameters(root: Path) -> list[str]:
    """``file:line: function(name)`` for every parameter of the packages named like a progress callback."""
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            for node in ast.walk(ast.parse(path.read_text(), rel)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    a = node.args
                    for arg in a.posonlyargs + a.args + a.kwonlyargs:
                        if arg.arg in CALLBACK_NAMES and (rel, arg.arg) not in NOT_REPORTS:
                            found.append(f"{rel}:{node.lineno}: {getattr(node, 'name', 'lambda')}({arg.arg})")
    return found


def test_long_jobs_take_a_reporter_and_no_other_callback():
    assert callback_parameters(REPO) == []


def test_the_scan_finds_a_callback_parameter(tmp_path):
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "job.py").write_text("def run(n, *, progress=None):\n    pass\n")
    assert callback_parameters(tmp_path) == ["gen/job.py:1: run(progress)"]


def test_recorder_prefixed_and_quiet_are_reporters():
    said = Recorder()
    inner = Prefixed(said, "  ")
    for r in (said, inner, QUIET, or_quiet(None)):
        assert isinstance(r, Reporter)
    inner.step(1, 2, "golden")
    inner.note("started")
    QUIET.step(1, 2, "x")
    assert said.steps == [(1, 2, "  golden")] and said.notes == ["  started"]
    assert or_quiet(said) is said
