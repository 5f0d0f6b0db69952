"""`ga2 bench ch16`: the side-by-side job's bookkeeping and its refusals (the runs themselves take minutes)."""
from __future__ import annotations

import sys

import pytest

from ga2_cli.main import main
from gen.bench import ch16 as bench_ch16
from gen.bench.ch16 import Run


def run(label, rnd, wall, cpu, rc=0):
    return Run(label, rnd, ["x"], wall, cpu, rc, "log")


def test_summary_takes_medians_and_ratios_to_the_book():
    runs = [run("book", 1, 100.0, 90.0), run("ours cold", 1, 40.0, 60.0), run("ours warm", 1, 20.0, 30.0),
            run("book", 2, 120.0, 95.0), run("ours cold", 2, 50.0, 64.0), run("ours warm", 2, 30.0, 34.0),
            run("book", 3, 110.0, 92.0), run("ours cold", 3, 45.0, 62.0), run("ours warm", 3, 25.0, 32.0)]
    s = bench_ch16.summary(runs)
    assert s["book"] == {"wall_seconds": 110.0, "cpu_seconds": 92.0, "runs": 3}
    assert s["ours cold"]["wall_ratio"] == pytest.approx(45 / 110) and s["ours cold"]["cpu_ratio"] == pytest.approx(62 / 92)
    assert s["ours warm"]["wall_ratio"] == pytest.approx(25 / 110) and s["ours warm"]["cpu_ratio"] == pytest.approx(32 / 92)


def test_a_failed_run_is_left_out_of_the_medians():
    s = bench_ch16.summary([run("book", 1, 100.0, 90.0), run("ours cold", 1, 40.0, 60.0, rc=1)])
    assert "ours cold" not in s and s["book"]["runs"] == 1


def test_commands_are_the_book_script_and_ga2_ch16(tmp_path):
    assert bench_ch16.book_command(tmp_path / "ch16_run.py", "python3") == ["python3", str(tmp_path / "ch16_run.py")]
    assert bench_ch16.ours_command(tmp_path)[1:] == ["-m", "ga2_cli", "ch16", "--sims", "icarus,verilator",
                                                     "--out", str(tmp_path)]
    assert bench_ch16.ours_command(tmp_path)[0] == sys.executable


def test_missing_script_and_interpreter_are_refused_in_one_line(tmp_path, capsys):
    assert main(["bench", "ch16", "--book-script", str(tmp_path / "nothing.py")]) == 2
    assert "no such file" in capsys.readouterr().err
    script = tmp_path / "ch16_run.py"
    script.write_text("print('hi')\n")
    assert main(["bench", "ch16", "--book-script", str(script), "--python", str(tmp_path / "no-python")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--python" in err[0] and "no such program" in err[0]
