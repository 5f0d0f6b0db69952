"""`ga2 run`, `ga2 replay`, `ga2 bench sim` (ga2_cli/cmd_sim.py), through ga2_cli.main.main."""
import json

from ga2_cli.main import main
from ga2_hdl import isa
from ga2_hdl.formats.bundle import Bundle
from ga2_hdl.formats.files import write_memory, write_program
from gen.fuzz.programs import random_bundle

PROGRAM = [isa.make("LD", dst=0, src=0, len=4), isa.make("MM", dst=10, A=0, B=2, M=1, K=2, N=1),
           isa.make("ST", src=10, dst=100, len=1), isa.HALT]


def _files(tmp_path):
    prog, mem = tmp_path / "p.hex", tmp_path / "m.hex"
    write_program(prog, PROGRAM)
    write_memory(mem, [1, 2, 3, 0xFFFFFFFE])
    return str(prog), str(mem)


def test_run_prints_what_golden_prints(tmp_path, capsys):
    prog, mem = _files(tmp_path)
    assert main(["golden", prog, "--ext", mem]) == 0
    golden_line = capsys.readouterr().out
    assert main(["run", prog, "--ext", mem, "--sim", "amaranth"]) == 0
    assert capsys.readouterr().out == golden_line
    assert main(["run", prog, "--ext", mem, "--sim", "amaranth", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert tuple(got["counters"]) == isa.program_counters(PROGRAM)
    assert got["ext"][100] == (1 * 3 + 2 * -2) & isa.WORD_MASK       # [1 2] x [3 -2]^T = -1


def test_run_reports_a_fault_with_nonzero_exit(tmp_path, capsys):
    prog = tmp_path / "bad.hex"
    write_program(prog, [isa.make("LD", dst=4095, src=0, len=2), isa.HALT])
    assert main(["run", str(prog), "--sim", "amaranth"]) == 1
    captured = capsys.readouterr()
    assert "total=2" in captured.out and "SPAD_RANGE" in captured.err
    # the golden model says why once; the address is said once too
    assert main(["run", str(prog), "--sim", "golden"]) == 1
    err = capsys.readouterr().err
    assert "halted with SPAD_RANGE (2) at pc 0: LD dst words 4095..4096 lie outside" in err
    assert err.count("pc 0") == 1


def test_replay_pass_and_mismatch(tmp_path, capsys):
    bundle = random_bundle(2, seed=9, config=isa.BOOK)
    good = tmp_path / "good.bundle"
    bundle.write(good)
    assert main(["replay", str(good), "--sims", "amaranth", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("amaranth: PASS: 2 programs") and "cycles/s" in out
    expected = bundle.programs[1].expected
    expected.counters = expected.counters._replace(total=expected.counters.total + 1)
    bad = tmp_path / "bad.bundle"
    bundle.write(bad)
    assert main(["replay", str(bad), "--sims", "amaranth", "--quiet"]) == 1
    assert "MISMATCH: program 1: counter total" in capsys.readouterr().out


def test_replay_of_an_empty_bundle_is_an_error_not_a_pass(tmp_path, capsys):
    path = tmp_path / "empty.bundle"
    Bundle(isa.EXT_WORDS_DEFAULT, config=isa.BOOK).write(path)
    assert main(["replay", str(path), "--sims", "golden", "--quiet"]) == 1
    captured = capsys.readouterr()
    assert "PASS" not in captured.out
    assert "holds no programs" in captured.err


def test_replay_writes_a_waveform(tmp_path, capsys):
    bundle = Bundle.from_programs([("p", PROGRAM, [1, 2, 3, 4])], config=isa.BOOK)
    path = tmp_path / "b.bundle"
    bundle.write(path)
    vcd = tmp_path / "w.vcd"
    assert main(["replay", str(path), "--sims", "amaranth", "--vcd", str(vcd), "--program", "0", "--quiet"]) == 0
    text = vcd.read_text()
    assert "$enddefinitions" in text and "cnt_total" in text


def test_bench_sim_reports_speed(capsys):
    assert main(["bench", "sim", "--sims", "amaranth", "--random", "2", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "amaranth:" in out and "simulated cycles/s" in out and "PASS" in out


def test_unknown_simulator_is_a_clear_error(tmp_path, capsys):
    prog, _ = _files(tmp_path)
    assert main(["run", prog, "--sim", "nosuch"]) == 1
    assert "nosuch" in capsys.readouterr().err


def test_run_refuses_an_external_memory_of_no_words(tmp_path, capsys):
    prog, _ = _files(tmp_path)
    for sim in ("golden", "amaranth"):
        assert main(["run", prog, "--sim", sim, "--ext-words", "0"]) == 2     # argparse's usage error
        captured = capsys.readouterr()
        assert captured.out == "" and "--ext-words: 0: the external memory holds 1 .. 65536 words" in captured.err
