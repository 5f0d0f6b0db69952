"""The command's printing reporters (ga2_cli/progress.py): what they print, not how it is worded."""
import io

from ga2_cli.progress import Lines, Progress
from ga2_hdl.support.reporter import Reporter


def _streams():
    return io.StringIO(), io.StringIO()


def test_lines_prints_every_step_on_its_stream_and_notes_on_theirs():
    steps, notes = _streams()
    r = Lines(stream=steps, notes=notes)
    assert isinstance(r, Reporter)
    for k in range(1, 4):
        r.step(k, 3, f"mutant {k}: caught")
    r.note("unbroken design passes")
    lines = steps.getvalue().splitlines()
    assert len(lines) == 3 and all(f"mutant {k}" in line and f"{k}/3" in line for k, line in enumerate(lines, 1))
    assert notes.getvalue().splitlines() == ["unbroken design passes"]


def test_lines_every_keeps_the_last_step_of_a_long_job():
    steps, notes = _streams()
    r = Lines(stream=steps, notes=notes, every=3600.0)
    for k in range(1, 101):
        r.step(k, 100, f"piece {k}")
    lines = steps.getvalue().splitlines()
    assert len(lines) == 2 and "piece 1" in lines[0] and "piece 100" in lines[1]     # the first and the last


def test_progress_counts_each_simulator_and_prints_a_tenth_at_a_time():
    steps, notes = _streams()
    r = Progress(stream=steps, notes=notes)              # not a terminal: a line per tenth
    for k in range(1, 101):
        r.step(k, 100, "icarus")
        r.step(k, 100, "verilator")
    r.close()
    lines = steps.getvalue().splitlines()
    assert sum("icarus" in line for line in lines) == 11 and sum("verilator" in line for line in lines) == 11
    assert "100/100" in lines[-1]
