"""Failure behaviour of the `ga2` tool (issue 11): each class of fault, several members of it.

* every writer against a full disk (ENOSPC injected where bytes reach the disk);
* loaders against truncated and damaged files;
* every counted option, size and output path checked before any work;
* bad input is one line naming the file, a bug keeps its traceback;
* memory images cost what the program touches;
* one verdict vocabulary across simulators;
* a damaged build cache is detected and rebuilt (a real Icarus build);
* --vcd into a missing or read-only directory, in each simulator;
* SIGINT/SIGTERM during a Verilator build and during an Icarus run end every child.
"""
from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from ga2_cli.main import main
from ga2_hdl import golden, isa
from ga2_hdl.support import safe_io
from ga2_hdl.formats.bundle import Bundle
from ga2_hdl.formats.files import FileFormatError, read_memory, read_program, write_memory, write_program
from ga2_hdl.formats.memimage import MemoryImage
from gen.support import toolchain
from gen.sim.simulator import SimulatorError, get_simulator

REPO = Path(__file__).resolve().parents[2]
GA2 = [sys.executable, "-m", "ga2_cli"]
PROGRAM = [isa.make("LD", dst=0, src=0, len=4), isa.make("ST", src=0, dst=100, len=4), isa.HALT]


def _leftovers(directory: Path) -> list[str]:
    """Temporary files a failed atomic write would have left."""
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(".") and ".tmp" in p.name)


def _one_error_line(err: str, *fragments: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err, err
    assert lines, "no error message"
    last = lines[-1]
    for fragment in fragments:
        assert fragment in last, (fragment, err)
    return last


class FullDisk:
    """Once armed, every write through ga2_hdl.support.safe_io writes a few bytes, then fails with ENOSPC."""

    def __init__(self, monkeypatch):
        self.monkeypatch = monkeypatch
        self.calls = 0

    def arm(self, under: str | None = None) -> None:
        """``under``: only the disk holding this directory is full (files written elsewhere, such as a
        fuzz campaign's temporary pieces, are written as usual)."""
        self.calls = 0

        def write(fd, data):
            if under is not None and not os.readlink(f"/proc/self/fd/{fd}").startswith(os.path.abspath(under)):
                return os.write(fd, data)
            self.calls += 1
            if self.calls == 1:
                return os.write(fd, bytes(data[:7]))       # a partial write first, as a filling disk does
            raise OSError(errno.ENOSPC, "No space left on device")
        self.monkeypatch.setattr(safe_io, "_os_write", write)


@pytest.fixture
def full_disk(monkeypatch):
    return FullDisk(monkeypatch)


# ------------------------------------------------------------------ 1. atomic writes

def _inputs(tmp_path: Path) -> tuple[str, str, str]:
    src = tmp_path / "p.s"
    src.write_text("LD dst=0 src=0 len=4\nST src=0 dst=100 len=4\nHALT\n")
    mem = tmp_path / "m.hex"
    mem.write_text("00000001\n00000002\n")
    bundle = tmp_path / "in.bundle"
    Bundle.from_programs([("p", PROGRAM, [1, 2])], 64, config=isa.BOOK).write(bundle)
    return str(src), str(mem), str(bundle)


WRITERS = {
    "golden --dump-ext": lambda i, out: ["golden", i[0], "--ext", i[1], "--dump-ext", out],
    "run --dump-ext": lambda i, out: ["run", i[0], "--sim", "golden", "--dump-ext", out],
    "asm -o": lambda i, out: ["asm", i[0], "-o", out],
    "bundle directed -o": lambda i, out: ["bundle", "directed", "-o", out],
    "bundle fuzz -o": lambda i, out: ["bundle", "fuzz", "--programs", "2", "-o", out],
    "bundle make -o": lambda i, out: ["bundle", "make", f"{i[0]}:{i[1]}", "-o", out],
    "bench sim --json": lambda i, out: ["bench", "sim", "--sims", "golden", "--random", "2", "--json", out],
    "fuzz --json": lambda i, out: ["fuzz", "--programs", "2", "--sims", "golden", "--json", out],
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_every_writer_on_a_full_disk_keeps_the_old_file(writer, tmp_path, capsys, full_disk):
    inputs = _inputs(tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / "result"
    target.write_text("the old contents\n")
    full_disk.arm(str(out_dir))          # (ga2 fuzz also writes its campaign's pieces, in a temporary directory)
    assert main(WRITERS[writer](inputs, str(target))) == 1
    _one_error_line(capsys.readouterr().err, str(target), "No space left on device")
    assert target.read_text() == "the old contents\n"          # not truncated, not replaced
    assert _leftovers(out_dir) == []                            # and no temporary file left behind
    assert full_disk.calls >= 2, "the writer did not go through the atomic writer"


def test_verilog_export_on_a_full_disk_keeps_the_old_files(tmp_path, capsys, full_disk):
    out = tmp_path / "v"
    assert main(["verilog", "-o", str(out)]) == 0          # the chip, from the export cache
    capsys.readouterr()
    old = {p.name: p.read_text() for p in out.iterdir()}
    assert set(old) == {"ga2_chip.v", "verilator_lint.vlt"}
    for p in out.iterdir():
        p.write_text("old " + p.name)
    full_disk.arm()
    assert main(["verilog", "-o", str(out)]) == 1
    _one_error_line(capsys.readouterr().err, str(out), "No space left on device")
    assert {p.name: p.read_text() for p in out.iterdir()} == {name: "old " + name for name in old}


def test_every_writer_writes_when_the_disk_has_room(tmp_path, capsys):
    inputs = _inputs(tmp_path)
    for writer, argv in WRITERS.items():
        target = tmp_path / f"{writer.replace(' ', '_')}.out"
        assert main(argv(inputs, str(target))) == 0, writer
        assert target.stat().st_size > 0, writer
    capsys.readouterr()


def _coverage_figure(path):
    from gen.fuzz import coverage
    model = coverage.CoverageModel(64, config=isa.BOOK)
    summary = model.summary(model.count_bundle(Bundle.from_programs([("p", PROGRAM, None)], 64, config=isa.BOOK)))
    coverage.plot(summary, {"golden": {"programs_run": 1, "cpu_seconds": 0.1}}, path)


def test_library_writers_are_atomic(tmp_path, full_disk):
    from spec import figures
    cases = {
        "memory": lambda p: write_memory(p, [1, 2, 3]),
        "program": lambda p: write_program(p, PROGRAM),
        "bundle": lambda p: Bundle.from_programs([("p", PROGRAM, None)], 16, config=isa.BOOK).write(p),
        "figure": lambda p: figures.mask_figure(2, 2, str(p)),
        "export": lambda p: __import__("gen.verilog.export", fromlist=["Export"]).Export("x", "module x; endmodule\n")
        .write(p.parent / "sub"),
        "manifest": lambda p: toolchain.write_manifest(p.parent, {"command": ["x"]}),
        "synth figure": lambda p: __import__("gen.fpga.report", fromlist=["plot"]).plot(
            [{"design": "d", "config": "book", "target": "ecp5-25k", "mode": "plain", "lut": 1, "fmax_mhz": 1.0,
              "tokens_per_s": 1.0}], p),
        "coverage figure": lambda p: _coverage_figure(p),
        "layers figure": lambda p: __import__("gen.support.layers", fromlist=["draw"]).draw(REPO, p),
    }
    for name, write in cases.items():
        target = tmp_path / (f"{name}.png" if name.endswith("figure") else f"{name}.out")
        target.write_text("old")
        full_disk.arm()
        with pytest.raises(OSError) as info:
            write(target)
        assert info.value.errno == errno.ENOSPC, name
        assert target.read_text() == "old", name
        assert _leftovers(tmp_path) == [], name


def test_atomic_open_writes_nothing_when_the_block_fails(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with safe_io.atomic_open(target) as f:
            f.write("new")
            raise RuntimeError("stopped half-way")
    assert target.read_text() == "old" and _leftovers(tmp_path) == []
    with safe_io.atomic_open(target) as f:
        f.write("new")
    assert target.read_text() == "new"


# ------------------------------------------------------------ 2. truncation is detected

@pytest.mark.parametrize("kind", ["memory", "program"])
def test_a_truncated_or_damaged_file_is_refused(kind, tmp_path):
    path = tmp_path / f"{kind}.hex"
    if kind == "memory":
        write_memory(path, list(range(1, 41)))
        read = lambda p: read_memory(p, 4096)        # noqa: E731
    else:
        write_program(path, [isa.make("LD", dst=i, src=0, len=1) for i in range(30)] + [isa.HALT])
        read = read_program
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    assert read(path)                                   # whole: reads back
    members = {
        "cut at a line end": "".join(lines[:len(lines) // 2]),
        "cut inside a line": text[:len(text) // 2 + 3],
        "last line lost": "".join(lines[:-1]),
        "a digit changed": text[:-3] + ("1" if text[-3] != "1" else "2") + text[-2:],
        "header only": lines[0],
    }
    for member, damaged in members.items():
        bad = tmp_path / f"bad_{kind}.hex"
        bad.write_text(damaged)
        with pytest.raises(FileFormatError, match=f"^{bad}"):
            read(bad)
    # a file written by hand, without the header, is read as it is
    hand = tmp_path / "hand.hex"
    hand.write_text("".join(lines[1:4]))
    assert read(hand) if kind == "memory" else True


def test_the_cli_refuses_a_truncated_memory_file(tmp_path, capsys):
    src, _mem, _b = _inputs(tmp_path)
    full = tmp_path / "full.hex"
    write_memory(full, [7] * 4096)
    cut = tmp_path / "cut.hex"
    cut.write_text("".join(full.read_text().splitlines(keepends=True)[:1000]))
    assert main(["golden", src, "--ext", str(cut)]) == 1
    _one_error_line(capsys.readouterr().err, str(cut), "truncated")


def test_a_truncated_bundle_is_refused_at_every_cut(tmp_path):
    b = Bundle.from_programs([("p", PROGRAM, [1, 2, 3]), ("q", PROGRAM, None)], 64, config=isa.BOOK)
    lines = b.to_text().splitlines(keepends=True)
    for k in range(len(lines)):
        with pytest.raises(FileFormatError):
            Bundle.parse("".join(lines[:k]), "b.bundle")


# ---------------------------------------------------- 3. options checked before any work

BAD_OPTIONS = [
    (["fuzz", "--programs", "0"], "--programs"),
    (["fuzz", "--programs", "-3"], "--programs"),
    (["fuzz", "--programs", "3", "--max-cycles", "0", "--sims", "golden"], "--max-cycles"),
    (["fuzz", "--programs", "3", "--max-cycles", "1", "--sims", "golden"], "--max-cycles"),
    (["fuzz", "--programs", "3", "--max-cycles", "-1", "--sims", "golden"], "--max-cycles"),
    (["bundle", "fuzz", "--programs", "-3", "-o", "{out}/x.bundle"], "--programs"),
    (["bundle", "fuzz", "--max-cycles", "0", "-o", "{out}/x.bundle"], "--max-cycles"),
    (["bundle", "directed", "--ext-words", "65537", "-o", "{out}/x.bundle"], "--ext-words"),
    (["bench", "sim", "--random", "-1"], "--random"),
    (["golden", "{src}", "--ext", "{mem}", "--ext-words", "-1"], "--ext-words"),
    (["run", "{src}", "--ext-words", "0"], "--ext-words"),
    (["verilog", "-o", "{out}/vdir", "--ext-words", "0"], "--ext-words"),
    (["replay", "{bundle}", "--vcd", "{out}/w.vcd", "--program", "-1"], "--program"),
    (["golden", "{src}", "--dump-ext", "{missing}/x.hex"], "--dump-ext"),
    (["run", "{src}", "--sim", "golden", "--dump-ext", "{missing}/x.hex"], "--dump-ext"),
    (["run", "{src}", "--sim", "amaranth", "--vcd", "{missing}/w.vcd"], "--vcd"),
    (["fuzz", "--programs", "2", "--json", "{missing}/r.json"], "--json"),
    (["bench", "sim", "--json", "{missing}/r.json"], "--json"),
    (["verilog", "-o", "{src}"], "-o/--output"),
    (["golden", "{missing}/p.s"], "file"),
    (["example", "b", "--ks", "0,1"], "--ks"),
    (["example", "b", "--noises", "1,x"], "--noises"),
    (["ch16", "--json", "{missing}/r.json"], "--json"),
    (["beyond", "--tokens", "1"], "--tokens"),
]


@pytest.mark.parametrize("argv, flag", BAD_OPTIONS, ids=[" ".join(a[:2]) + " " + f for a, f in BAD_OPTIONS])
def test_a_bad_option_stops_the_command_before_any_work(argv, flag, tmp_path, capsys, monkeypatch):
    src, mem, bundle = _inputs(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    fields = {"src": src, "mem": mem, "bundle": bundle, "out": out, "missing": tmp_path / "no" / "dir"}
    worked = []
    for module, name in (("gen.fuzz.programs", "random_bundle"), ("gen.fuzz.programs", "fuzz"), ("gen.fuzz.directed", "directed_suite"),
                         ("ga2_hdl.golden", "run")):
        monkeypatch.setattr(f"{module}.{name}", lambda *a, **k: worked.append(name))
    code = main([a.format(**fields) for a in argv])
    err = capsys.readouterr().err
    assert code == 2
    _one_error_line(err, f"argument {flag}")
    assert worked == []                            # nothing was generated, run or written
    assert list(out.iterdir()) == []


def test_the_commands_default_tokens_are_the_chapters():
    """`--tokens` (ga2_cli/options.add_tokens) defaults to the chapter's run length, spec's constant."""
    from ga2_cli import options
    from spec import runs
    assert options.CHAPTER_TOKENS == runs.TABLE_TOKENS


# ---------------------------------------------------- 4. user errors and bugs

def test_bad_input_is_one_line_naming_the_file(tmp_path, capsys):
    src, mem, bundle = _inputs(tmp_path)
    files = {
        "latin1.s": b"LD dst=0 src=0 len=1 ; caf\xe9\nHALT\n",
        "empty.hex": b"",
        "nohalt.hex": b"100000000000c0000000000000000000\n",
        "long.hex": b"0" * 32 + b"\n" * 1 + (b"0" * 32 + b"\n") * 1024,
        "huge.s": b"LD dst=" + b"9" * 5000 + b" src=0 len=1\nHALT\n",
        "empty.bundle": b"",
        "badmem.hex": b"00000001\nzz\n",
    }
    for name, blob in files.items():
        (tmp_path / name).write_bytes(blob)
    cases = [
        (["golden", str(tmp_path / "latin1.s")], ["latin1.s:1", "UTF-8"]),
        (["golden", str(tmp_path / "empty.hex")], ["empty.hex", "empty program"]),
        (["run", str(tmp_path / "nohalt.hex"), "--sim", "golden"], ["nohalt.hex", "HALT"]),
        (["golden", str(tmp_path / "long.hex")], ["long.hex", "1025 instructions"]),
        (["golden", str(tmp_path / "huge.s")], ["huge.s:1", "does not fit"]),
        (["bundle", "info", str(tmp_path / "empty.bundle")], ["empty.bundle", "empty"]),
        (["replay", str(tmp_path / "empty.bundle"), "--sims", "golden"], ["empty.bundle"]),
        (["golden", src, "--ext", str(tmp_path / "badmem.hex")], ["badmem.hex:2"]),
        (["golden", bundle, "--dump-ext", str(tmp_path / "x.hex")], ["--dump-ext", "bundle"]),
        (["golden", bundle, "--ext-words", "16"], ["--ext-words", "bundle"]),
        (["bundle", "directed", "--ext-words", "16", "-o", str(tmp_path / "d.bundle")], ["--ext-words", "512"]),
    ]
    for argv, fragments in cases:
        assert main(argv) == 1, argv
        _one_error_line(capsys.readouterr().err, *fragments)
    assert not (tmp_path / "x.hex").exists() and not (tmp_path / "d.bundle").exists()


def test_an_internal_error_keeps_its_traceback(tmp_path, monkeypatch):
    src, _mem, _b = _inputs(tmp_path)

    def broken(*args, **kwargs):
        raise ValueError("a bug inside ga2")
    monkeypatch.setattr("ga2_hdl.golden.run", broken)
    with pytest.raises(ValueError, match="a bug inside ga2"):
        main(["golden", src])
    monkeypatch.setattr("ga2_hdl.golden.run", lambda *a, **k: {}["no such key"])
    with pytest.raises(KeyError):
        main(["golden", src])


# ------------------------------------------------------------------- 5. memory

def test_memory_image_is_a_sequence_of_all_its_words():
    words = [0, 5, 6, 0, 0, 0, 7, 0]
    image = MemoryImage.from_words(words, 10)
    assert len(image) == 10 and list(image) == words + [0, 0] and image == words + [0, 0]
    assert image[1] == 5 and image[-4] == 7 and image[2:7] == [6, 0, 0, 0, 7]
    assert [(s, list(r)) for s, r in image.runs()] == [(1, [5, 6]), (6, [7])]
    assert image.overlay(2, [0, 9]) == [0, 5, 0, 9, 0, 0, 7, 0, 0, 0]
    image[7] = 1
    assert image.runs()[-1][0] == 6 and list(image.runs()[-1][1]) == [7, 1]
    assert image.first_difference(MemoryImage.from_words(words, 10)) == 7
    with pytest.raises(IndexError):
        image[10]


def test_a_bundle_costs_what_its_programs_touch(tmp_path):
    n, words = 120, 1 << 16
    items = [(f"p{i}", [isa.HALT], [i + 1] * (i % 7)) for i in range(n)]
    path = tmp_path / "big.bundle"
    Bundle.from_programs(items, words, config=isa.BOOK).write(path)
    tracemalloc.start()
    try:
        bundle = Bundle.read(path)
        report = get_simulator("golden", config=isa.BOOK).run_bundle(bundle)
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.passed and len(bundle.programs) == n
    # as lists, the 240 images alone would take 240 x 65,536 x 8 bytes = 126 MB; one program's
    # dense copies (a few MB) are all the replay may hold at a time
    assert peak < 16 << 20, f"{peak / 2**20:.0f} MiB"
    assert sum(p.ext.stored_words + p.expected.ext.stored_words for p in bundle.programs) == \
        2 * sum(i % 7 for i in range(n))


# --------------------------------------------------------- 6. one verdict vocabulary

def _falsified(total: int) -> Bundle:
    b = Bundle.from_programs([("p", PROGRAM, [1, 2, 3, 4])], config=isa.BOOK)     # the default size: the builds other tests use
    b.programs[0].expected.counters = b.programs[0].expected.counters._replace(total=total)
    return b


def _verilog_available() -> list[str]:
    return [name for name, tools in (("icarus", ("iverilog", "vvp")), ("verilator", ("verilator", "g++", "make")))
            if all(shutil.which(t) for t in tools)]


def test_a_wrong_expectation_is_the_same_mismatch_in_every_simulator():
    real = golden.run(PROGRAM, [1, 2, 3, 4], config=isa.BOOK).counters.total
    lines = {}
    for name in ["golden", "amaranth", *_verilog_available()]:
        report = get_simulator(name, config=isa.BOOK).run_bundle(_falsified(2))
        lines[name] = report.line()
    expected = f"MISMATCH: program 0: counter total: expected 2, got {real}"
    assert lines == {name: expected for name in lines}


def test_a_hung_program_is_the_same_timeout_in_every_simulator(monkeypatch):
    # a watchdog far too short stands in for a chip that never halts
    import gen.sim.amaranth_sim
    import gen.sim.verilog_sim
    monkeypatch.setattr(gen.sim.amaranth_sim, "cycle_bound", lambda program, config=None: 5)
    monkeypatch.setattr(gen.sim.verilog_sim, "cycle_bound", lambda program, config=None: 5)
    bundle = _falsified(golden.run(PROGRAM, [1, 2, 3, 4], config=isa.BOOK).counters.total)
    seen = {}
    for name in ["amaranth", *_verilog_available()]:
        try:
            report = get_simulator(name, config=isa.BOOK).run_bundle(bundle)
        except SimulatorError as e:
            seen[name] = f"raised {e}"
            continue
        seen[name] = (report.line(), [n for n in report.notes if n.startswith("TIMEOUT")])
    want = ("FAIL: 0 of 1 programs ran", [f"TIMEOUT: program 0 did not halt within 5 cycles "
                                          f"(the bundle expects {bundle.total_cycles})"])
    assert seen == {name: want for name in seen}


# ------------------------------------------------------- 7. a damaged cache is rebuilt

def test_the_cache_manifest_finds_every_kind_of_damage(tmp_path, capsys):
    def entry(name: str = "entry") -> Path:
        d = tmp_path / name.replace(" ", "_")
        shutil.rmtree(d, ignore_errors=True)
        (d / "obj").mkdir(parents=True)
        (d / "obj" / "sim").write_bytes(b"\x7fELF" + b"x" * 1000)
        (d / "chip.v").write_text("module chip; endmodule\n")
        toolchain.write_manifest(d, {"command": ["{dir}/obj/sim"], "compile_seconds": 1.5})
        return d
    assert toolchain.check_manifest(entry()) == ({"command": ["{dir}/obj/sim"], "compile_seconds": 1.5}, "")
    damage = {
        "truncated binary": lambda d: (d / "obj" / "sim").write_bytes(b"\x7fELF"),
        "missing binary": lambda d: (d / "obj" / "sim").unlink(),
        "edited source": lambda d: (d / "chip.v").write_text("module chop; endmodule\n"),
        "malformed manifest": lambda d: (d / toolchain.MANIFEST).write_text("{not json"),
        "manifest cut short": lambda d: (d / toolchain.MANIFEST).write_text(
            (d / toolchain.MANIFEST).read_text()[:40]),
        "manifest edited": lambda d: (d / toolchain.MANIFEST).write_text(
            (d / toolchain.MANIFEST).read_text().replace("1.5", "2.5")),
        "manifest of the wrong shape": lambda d: (d / toolchain.MANIFEST).write_text("[1, 2]"),
        "no manifest": lambda d: (d / toolchain.MANIFEST).unlink(),
    }
    for member, hurt in damage.items():
        d = entry(member)
        hurt(d)
        meta, why = toolchain.check_manifest(d)
        assert meta is None and why, member
        capsys.readouterr()
        assert toolchain.reusable(d, "test build") is None and not d.exists(), member
        assert toolchain.reusable(d, "test build") is None
        err = capsys.readouterr().err
        assert err.count("is damaged") == 1 and "rebuilding" in err, member


@pytest.mark.skipif(not shutil.which("iverilog"), reason="Icarus Verilog is not installed (make simulators)")
def test_a_damaged_icarus_build_is_rebuilt_once(tmp_path, monkeypatch, capsys):
    bundle = Bundle.from_programs([("p", PROGRAM, [1, 2, 3, 4])], config=isa.BOOK)
    sim = get_simulator("icarus", config=isa.BOOK)
    exported = sim.export(bundle.ext_words)          # from the shared cache: no conversion here
    shared = sim.build(bundle.ext_words, exported=exported)
    cache = tmp_path / "cache"                       # a copy of the shared entry, damaged below
    shutil.copytree(shared.directory, cache / "build" / shared.key)
    monkeypatch.setenv("GA2_CACHE_DIR", str(cache))
    monkeypatch.setattr(sim, "export", lambda ext_words, config=None: exported)   # the export is not under test
    first = sim.build(bundle.ext_words, exported=exported)
    assert first.cached and first.directory == cache / "build" / shared.key
    vvp = first.directory / "ga2_tb.vvp"
    vvp.write_bytes(vvp.read_bytes()[:100])          # a truncated binary
    capsys.readouterr()
    assert sim.run_bundle(bundle).passed
    again = sim.build(bundle.ext_words, exported=exported)
    assert again.cached and sim.run_bundle(bundle).passed
    err = capsys.readouterr().err
    assert err.count("is damaged") == 1 and "ga2_tb.vvp does not match its checksum" in err


# ---------------------------------------------------------- 8. --vcd in every simulator

@pytest.fixture
def read_only_dir(tmp_path):
    """A directory nobody may write into, even root (a read-only bind mount when running as root)."""
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    mounted = False
    try:
        safe_io.check_output_dir(d)
    except OSError:
        yield d                                              # the mode is enough (not root)
    else:
        r = subprocess.run(["mount", "--bind", "-o", "ro", str(d), str(d)], capture_output=True)
        mounted = r.returncode == 0
        if not mounted:
            pytest.skip("running as root without permission to mount: no directory is read-only")
        yield d
    finally:
        if mounted:
            subprocess.run(["umount", str(d)], check=False)
        d.chmod(0o755)


@pytest.mark.parametrize("where", ["missing directory", "read-only directory", "a directory"])
@pytest.mark.parametrize("name", ["amaranth", "icarus", "verilator"])
def test_vcd_that_cannot_be_written_is_refused_before_the_run(name, where, tmp_path, request, monkeypatch):
    if name != "amaranth" and name not in _verilog_available():
        pytest.skip(f"{name} is not installed (make simulators)")
    vcd = {"missing directory": lambda: tmp_path / "no" / "dir" / "w.vcd",
           "read-only directory": lambda: request.getfixturevalue("read_only_dir") / "w.vcd",
           "a directory": lambda: tmp_path}[where]()
    sim = get_simulator(name, config=isa.BOOK)
    ran = []
    if name == "amaranth":
        import gen.sim.amaranth_sim
        monkeypatch.setattr(gen.sim.amaranth_sim.ChipSimulation, "run", lambda *a, **k: ran.append(1))
    else:
        monkeypatch.setattr(type(sim), "build", lambda *a, **k: ran.append(1))
    bundle = Bundle.from_programs([("p", PROGRAM, None)], 64, config=isa.BOOK)
    with pytest.raises(SimulatorError, match=f"--vcd {vcd}"):
        sim.run_program(PROGRAM, [], ext_words=64, vcd=str(vcd))
    with pytest.raises(SimulatorError, match=f"--vcd {vcd}"):
        sim.run_bundle(bundle, vcd=str(vcd), vcd_program=0)
    assert ran == []


def test_cli_vcd_into_a_read_only_directory(tmp_path, read_only_dir, capsys):
    src, _mem, bundle = _inputs(tmp_path)
    for argv in (["run", src, "--sim", "amaranth", "--vcd", str(read_only_dir / "w.vcd")],
                 ["replay", bundle, "--sims", "icarus,verilator", "--vcd", str(read_only_dir / "w.vcd")]):
        assert main(argv) == 2
        _one_error_line(capsys.readouterr().err, "--vcd", str(read_only_dir))


def test_amaranth_writes_the_waveform_whole(tmp_path):
    vcd = tmp_path / "w.vcd"
    get_simulator("amaranth", config=isa.BOOK).run_program(PROGRAM, [1, 2], ext_words=64, vcd=str(vcd))
    assert "$enddefinitions" in vcd.read_text() and _leftovers(tmp_path) == []


# --------------------------------------------------- 9. children live and die with ga2

def _descendants(pid: int) -> dict[int, str]:
    """pid -> command name of every process below ``pid``."""
    parents: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] == "Z":
            continue
        parents.setdefault(int(fields[1]), []).append(int(entry))
        names[int(entry)] = name
    out, todo = {}, [pid]
    while todo:
        for c in parents.get(todo.pop(), []):
            out[c] = names[c]
            todo.append(c)
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def _interrupt_when(argv: list[str], wanted: set[str], signum: int, env: dict, timeout: float = 240.0):
    """Start ga2, wait until one of ``wanted`` runs below it, send ``signum``; (rc, stderr, children seen)."""
    proc = subprocess.Popen(GA2 + argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    seen: dict[int, str] = {}
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < timeout:
            seen.update(_descendants(proc.pid))
            if wanted & set(seen.values()):
                break
            if proc.poll() is not None:
                pytest.fail(f"ga2 ended before {wanted} started: {proc.communicate()}")
            time.sleep(0.05)
        else:
            pytest.fail(f"{wanted} never started below ga2")
        time.sleep(0.5)
        seen.update(_descendants(proc.pid))
        proc.send_signal(signum)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, err, seen


def _long_program(tmp_path: Path) -> str:
    load = isa.make("LD", dst=0, src=0, len=4000)
    program = [load] * 1000 + [isa.HALT]
    assert golden.run(program, config=isa.BOOK).error == isa.ErrorCode.OK      # four million cycles: minutes in Icarus
    path = tmp_path / "long.hex"
    write_program(path, program)
    return str(path)


@pytest.mark.skipif(not shutil.which("verilator"), reason="Verilator is not installed (make simulators)")
def test_sigint_during_a_verilator_build_ends_every_child(tmp_path):
    cache = tmp_path / "cache"
    exported = get_simulator("verilator", config=isa.BOOK).export(isa.EXT_WORDS_DEFAULT)    # from the shared cache
    with pytest.MonkeyPatch.context() as mp:
        # the test's own cache gets the export without converting it again, so only the build is fresh
        import gen.verilog.export
        mp.setenv("GA2_CACHE_DIR", str(cache))
        mp.setattr(gen.verilog.export, "convert", lambda info, params, **_: exported.text)
        gen.verilog.export.export("chip", ext_words=isa.EXT_WORDS_DEFAULT, config=isa.BOOK)
    env = dict(os.environ, GA2_CACHE_DIR=str(cache))
    prog = _long_program(tmp_path)
    rc, err, seen = _interrupt_when(["run", prog, "--sim", "verilator"], {"make", "g++", "cc1plus",
                                                                          "verilator_bin"}, signal.SIGINT, env)
    assert rc == 128 + signal.SIGINT, err
    _one_error_line(err, "interrupted by SIGINT")
    time.sleep(0.2)
    assert [f"{pid} {name}" for pid, name in seen.items() if _alive(pid)] == []
    assert [p.name for p in (cache / "build").iterdir() if p.name.startswith(".")] == []   # no half-made build


@pytest.mark.skipif(not shutil.which("vvp"), reason="Icarus Verilog is not installed (make simulators)")
def test_sigterm_during_an_icarus_run_ends_vvp(tmp_path):
    get_simulator("icarus", config=isa.BOOK).build(isa.EXT_WORDS_DEFAULT)       # the shared cache: the run starts at once
    prog = _long_program(tmp_path)
    rc, err, seen = _interrupt_when(["run", prog, "--sim", "icarus"], {"vvp"}, signal.SIGTERM, dict(os.environ))
    assert rc == 128 + signal.SIGTERM, err
    _one_error_line(err, "interrupted by SIGTERM")
    time.sleep(0.2)
    assert "vvp" in seen.values()
    assert [f"{pid} {name}" for pid, name in seen.items() if _alive(pid)] == []


@pytest.mark.skipif(not shutil.which("vvp"), reason="Icarus Verilog is not installed (make simulators)")
def test_sigterm_during_a_parallel_replay_ends_every_worker_and_simulator_quietly(tmp_path):
    """ga2 ch16's pool: the parent ends its workers, each worker ends its simulator's group on the
    way out and leaves without a traceback; one error line, exit status 143."""
    get_simulator("icarus", config=isa.BOOK).build(isa.EXT_WORDS_DEFAULT)       # the shared cache: the runs start at once
    rc, err, seen = _interrupt_when(["ch16", "--tokens", "3", "--sims", "icarus", "--no-checks",
                                     "--workers", "2", "--out", str(tmp_path)], {"vvp"}, signal.SIGTERM,
                                    dict(os.environ))
    assert rc == 128 + signal.SIGTERM, err
    _one_error_line(err, "interrupted by SIGTERM")
    time.sleep(0.2)
    assert "vvp" in seen.values()
    assert [f"{pid} {name}" for pid, name in seen.items() if _alive(pid)] == []
