"""Small edges of issue 26 (item 6): waveforms with an ordinary file mode, a configuration the
instruction word cannot hold named by its file, the book's testbench refused when its external
memory is smaller than the bundle's, and its replay under a watchdog."""
from __future__ import annotations

import os
import stat
import subprocess

import pytest

from ga2_cli.main import main
from ga2_hdl import isa
from ga2_hdl.formats.bundle import Bundle
from ga2_hdl.isa import make
from gen.bench import book_rtl
from gen.sim.simulator import SimulatorError, get_simulator


def test_a_waveform_has_an_ordinary_file_mode(tmp_path):
    vcd = tmp_path / "w.vcd"
    get_simulator("amaranth", config=isa.BOOK).run_program([isa.HALT], [], vcd=str(vcd))
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(vcd.stat().st_mode) == 0o644 & ~mask


def test_a_configuration_the_instruction_word_cannot_hold_names_its_file(tmp_path, capsys):
    path = tmp_path / "big.toml"
    path.write_text('name = "big"\narray = 300\n')
    program = tmp_path / "p.s"
    program.write_text("HALT\n")
    assert main(["golden", str(program), "--config", str(path)]) != 0
    err = capsys.readouterr().err
    assert f"{path}: configuration 'big' does not fit the instruction word" in err and "Traceback" not in err


def _bundle():
    return Bundle.from_programs([("ld st", [make("LD", dst=0, src=0, len=4), make("ST", src=0, dst=8, len=4),
                                            isa.HALT], [1, 2, 3, 4])], ext_words=8192, config=isa.BOOK)


def test_a_book_testbench_smaller_than_the_bundle_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    (tmp_path / "ga2_tb.v").write_text("module ga2_tb;\n  reg [31:0] ext_mem [0:2047];\nendmodule\n")
    assert book_rtl.external_memory_words((tmp_path / "ga2_tb.v").read_text()) == 2048
    with pytest.raises(SimulatorError, match="external memory of 2048 words; the bundle needs 8192"):
        book_rtl.run(_bundle(), tmp_path)
    ran = []
    monkeypatch.setattr("gen.sim.simulator.get_simulator", lambda *a, **k: ran.append(a) or 1 / 0)
    assert main(["bench", "sim", "--sims", "icarus", "--book-rtl", str(tmp_path)]) == 1
    assert "the book's testbench holds an external memory of 2048 words" in capsys.readouterr().err and not ran


def test_the_book_rtl_replay_has_a_watchdog(tmp_path, monkeypatch):
    (tmp_path / "ga2_tb.v").write_text("module ga2_tb;\n  reg [31:0] ext_mem [0:8191];\nendmodule\n")
    calls = {}

    def fake_run(cmd, **kwargs):
        if cmd[0].endswith("vvp"):
            calls["timeout"] = kwargs.get("timeout")
            raise subprocess.TimeoutExpired(cmd, kwargs.get("timeout"))
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(book_rtl.toolchain, "run", lambda *a, **k: None)
    monkeypatch.setattr(book_rtl.toolchain, "require", lambda tool: f"/usr/bin/{tool}")
    monkeypatch.setattr(book_rtl.subprocess, "run", fake_run)
    with pytest.raises(SimulatorError, match="did not finish within"):
        book_rtl.run(_bundle(), tmp_path)
    assert calls["timeout"] == book_rtl.watchdog_seconds(_bundle().total_cycles)


def test_a_bundle_is_read_line_by_line_not_held_whole(tmp_path):
    """ga2 bundle info of issue 26's 10.7 MB bundle peaked at 277 MB: the reader held the text, its
    lines and a (line, word) pair for every word.  It now reads the file a line at a time: the peak of
    reading is of the order of the bundle's own (sparse) images, well below the file's size."""
    import random
    import tracemalloc
    rng = random.Random(5)
    programs = [(f"p{i}", [make("LD", dst=0, src=0, len=4), isa.HALT],
                 [rng.randrange(1, 1 << 32) for _ in range(300)]) for i in range(80)]
    bundle = Bundle.from_programs(programs, ext_words=2048, config=isa.BOOK)
    path = tmp_path / "b.bundle"
    bundle.write(path)
    size = path.stat().st_size
    tracemalloc.start()
    again = Bundle.read(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert [e.name for e in again.programs] == [e.name for e in bundle.programs]
    assert again.programs[7].ext.tolist() == bundle.programs[7].ext.tolist()
    assert peak < size, (peak, size)
