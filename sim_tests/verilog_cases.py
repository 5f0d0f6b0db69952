"""Tests shared by the simulators of gen/tb (test_icarus.py, test_verilator.py, test_cxxrtl.py run them).

Every case runs the real exported chip under gen/sim/tb/ga2_tb.v.  The builds are
cached (gen/support/toolchain.py), so one test session compiles each simulator at most
once; a Verilator build takes about 11 CPU-s, an Icarus build well under a second.
A missing simulator binary fails these tests loudly (SimulatorError naming the
Debian package): `make simulators` installs them.
"""
from __future__ import annotations

import copy
import re
import subprocess
from pathlib import Path

import pytest

from ga2_hdl import golden, isa
from ga2_hdl.formats.bundle import Bundle
from ga2_hdl.isa import ErrorCode, make
from gen.fuzz import programs as fuzz
from gen.fuzz.directed import directed_bundle
from gen.sim.simulator import SimulatorError, get_simulator

RANDOM_SEED = 20240611
RANDOM_PROGRAMS = 4


def directed_and_random() -> Bundle:
    """The fuzzer's directed suite, then a few random programs."""
    directed = directed_bundle(config=isa.BOOK)
    extra = fuzz.random_bundle(RANDOM_PROGRAMS, RANDOM_SEED, directed.ext_words, config=isa.BOOK)
    return Bundle(directed.ext_words, directed.programs + extra.programs, config=isa.BOOK)


def small_bundle() -> Bundle:
    """Three short programs with every counter non-zero somewhere, and a legality error."""
    items = [
        ("ld st", [make("LD", dst=0, src=0, len=6), make("ST", src=0, dst=100, len=6), isa.HALT],
         [11, 22, 33, 44, 55, 66]),
        ("mm rq", [make("LD", dst=0, src=0, len=8),
                   make("MM", dst=100, A=0, B=4, M=2, K=2, N=2),
                   make("RQ", dst=200, src=100, len=4, m=1 << 23, s=23),
                   make("ST", src=200, dst=300, len=4), isa.HALT],
         [1, 2, 3, 4, 5, 6, 7, 0xFFFFFFF8]),
        ("fault", [make("LD", dst=0, src=0, len=2), make("LD", dst=0, src=8190, len=5), isa.HALT], [9, 8]),
    ]
    return Bundle.from_programs(items, ext_words=isa.EXT_WORDS_DEFAULT, config=isa.BOOK)


def pass_line(bundle: Bundle) -> str:
    return (f"PASS: {len(bundle.programs)} programs match the golden model (memory and all five cycle "
            f"counters), {bundle.total_cycles} cycles in total")


def run_testbench(sim, bundle: Bundle, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    """Run the compiled testbench directly (not through the runner): its own output and exit status."""
    path = tmp_path / "bundle.hex"
    bundle.write(path)
    words = sum(1 for line in path.read_text().splitlines() if line and not line.startswith("//"))
    build = sim.build(bundle.ext_words, words=words)
    return subprocess.run(build.command + [f"+bundle={path}", f"+bundle_words={words}", *extra],
                          capture_output=True, text=True, timeout=600)


def vcd_time_span(path: Path) -> tuple[int, int]:
    """(first, last) timestamp of a VCD file, in its time unit."""
    times = [int(line[1:]) for line in path.read_text().splitlines() if line.startswith("#")]
    return min(times), max(times)


class VerilogSimulatorCases:
    """Subclasses set ``simulator`` ("icarus" or "verilator")."""

    simulator = ""

    @pytest.fixture(scope="class")
    @classmethod
    def sim(cls):
        return get_simulator(cls.simulator, config=isa.BOOK)

    @pytest.fixture(scope="class")
    @classmethod
    def suite(cls):
        return directed_and_random()

    @pytest.fixture(scope="class")
    @classmethod
    def suite_report(cls, sim, suite):
        return sim.run_bundle(suite)

    # ------------------------------------------------------------------ agreement
    def test_directed_suite_and_random_programs_pass(self, suite, suite_report):
        assert suite_report.simulator == self.simulator
        assert suite_report.line() == pass_line(suite), suite_report.notes
        assert suite_report.passed and len(suite_report.results) == len(suite.programs)
        for i, (entry, got) in enumerate(zip(suite.programs, suite_report.results)):
            # status, pc and counters come from the testbench's RESULT lines
            assert (got.error, got.error_pc, got.counters) == \
                (entry.expected.error, entry.expected.error_pc, entry.expected.counters), f"program {i}"
        assert any(r.error != ErrorCode.OK for r in suite_report.results)     # faults are in the suite too

    def test_memory_not_read_back_is_reported_unobserved(self, suite, suite_report):
        # a passing program's final memory was compared by the testbench, not read back: it is None,
        # never the golden model's copy, and comparing it is refused
        from ga2_hdl.formats.results import first_mismatch
        assert all(r.ext is None for r in suite_report.results)
        with pytest.raises(ValueError, match="not observed"):
            first_mismatch(suite.programs[0].expected, suite_report.results[0])
        assert first_mismatch(suite.programs[0].expected, suite_report.results[0], memory=False) is None

    def test_times_are_reported(self, suite_report):
        assert 0 < suite_report.build_seconds <= suite_report.wall_seconds
        assert suite_report.cycles_per_second > 0
        parts = {n.split()[0] for n in suite_report.notes}
        assert {"export", "build", "run"} <= parts, suite_report.notes

    def test_run_program_returns_the_whole_final_memory(self, sim):
        program = [make("LD", dst=10, src=5, len=4), make("VADD", dst=20, src1=10, src2=10, len=4),
                   make("ST", src=20, dst=8000, len=4), make("AMAX", dst=30, src=10, len=4),
                   make("ST", src=30, dst=8191, len=1), isa.HALT]
        ext = [0] * 5 + [3, 0xFFFFFF9C, 100, 7]
        got = sim.run_program(program, ext)
        want = golden.run(program, ext, config=isa.BOOK)
        assert got.counters == want.counters
        assert (got.error, got.error_pc) == (want.error, want.error_pc)
        assert len(got.ext) == isa.EXT_WORDS_DEFAULT and got.ext == want.ext
        assert got.ext[8000:8004] == [6, 0xFFFFFF81, 127, 14] and got.ext[8191] == 2

    def test_run_program_reports_what_the_chip_did_even_if_it_differs(self, sim):
        # a fault: the chip's result is still returned (status, pc, counters, memory)
        program = [make("ST", src=0, dst=8190, len=3), isa.HALT]
        got = sim.run_program(program, [1, 2, 3])
        assert (got.error, got.error_pc, got.counters) == (ErrorCode.EXT_RANGE, 0, (2, 0, 0, 0, 0))
        assert got.ext[:3] == [1, 2, 3]

    # ------------------------------------------------------------------ the testbench can fail
    def test_corrupted_counter_gives_the_exact_mismatch_line_and_a_nonzero_exit(self, sim, tmp_path):
        bundle = small_bundle()
        expected = bundle.programs[1].expected
        want = expected.counters.dma
        expected.counters = expected.counters._replace(dma=want + 1)
        line = f"MISMATCH: program 1: counter dma: expected {want + 1}, got {want}"
        p = run_testbench(sim, bundle, tmp_path)
        assert p.returncode != 0
        assert line in p.stdout.splitlines(), p.stdout
        assert not any(x.startswith("PASS") for x in p.stdout.splitlines())
        report = sim.run_bundle(bundle)
        assert report.line() == line and not report.passed
        assert len(report.results) == 2

    def test_corrupted_memory_word_is_named_by_address(self, sim, tmp_path):
        bundle = small_bundle()
        exp = bundle.programs[0].expected
        exp.ext[103] ^= 0x80000000
        line = f"MISMATCH: program 0: ext[103]: expected {exp.ext[103]:#010x}, got {44:#010x}"
        p = run_testbench(sim, bundle, tmp_path)
        assert p.returncode != 0 and line in p.stdout.splitlines(), p.stdout
        report = sim.run_bundle(bundle)
        assert report.line() == line
        assert report.mismatch.where == "ext[103]" and report.results[0].ext[103] == 44

    def test_a_written_word_expected_zero_is_named(self, sim):
        # ext[100..105] are written by the chip and outside every run of the (corrupted)
        # expectation: the testbench must still compare them (it compares only where a word
        # can differ: the expected runs, the image's runs and the range the chip wrote)
        bundle = small_bundle()
        for a in range(100, 106):
            bundle.programs[0].expected.ext[a] = 0
        report = sim.run_bundle(bundle)
        assert report.line() == f"MISMATCH: program 0: ext[100]: expected {0:#010x}, got {11:#010x}"

    def test_an_image_word_expected_zero_is_named(self, sim):
        # ext[0..5] are the program's image, never written, and outside every expected run
        bundle = small_bundle()
        for a in range(6):
            bundle.programs[0].expected.ext[a] = 0
        report = sim.run_bundle(bundle)
        assert report.line() == f"MISMATCH: program 0: ext[0]: expected {0:#010x}, got {11:#010x}"

    def test_programs_after_one_that_wrote_memory_start_from_zero(self, sim):
        # program 0 writes ext[100..105]; the same program again, then one that reads those
        # words back (they must be zero again: every program starts from its own image)
        items = [
            ("st", [make("LD", dst=0, src=0, len=6), make("ST", src=0, dst=100, len=6), isa.HALT],
             [11, 22, 33, 44, 55, 66]),
            ("st again", [make("LD", dst=0, src=0, len=6), make("ST", src=0, dst=100, len=6), isa.HALT],
             [1, 2, 3, 4, 5, 6]),
            ("read back", [make("LD", dst=0, src=100, len=6), make("ST", src=0, dst=200, len=6), isa.HALT],
             [7]),
        ]
        bundle = Bundle.from_programs(items, ext_words=isa.EXT_WORDS_DEFAULT, config=isa.BOOK)
        assert bundle.programs[2].expected.ext[200:206] == [0] * 6
        report = sim.run_bundle(bundle)
        assert report.passed, report.line()

    def test_corrupted_status_is_reported_first(self, sim):
        bundle = small_bundle()
        exp = bundle.programs[2].expected
        assert (exp.error, exp.error_pc) == (ErrorCode.EXT_RANGE, 1)
        exp.error_pc = 0
        exp.counters = exp.counters._replace(total=exp.counters.total + 5)   # also wrong, but the status comes first
        report = sim.run_bundle(bundle)
        assert report.line() == "MISMATCH: program 2: status error: expected EXT_RANGE@0, got EXT_RANGE@1"

    def test_a_program_that_does_not_halt_in_time_fails(self, tmp_path):
        sim = get_simulator(self.simulator, timeout_cycles=20, config=isa.BOOK)
        bundle = small_bundle()
        report = sim.run_bundle(bundle)
        assert report.line() == "FAIL: 0 of 3 programs ran"
        assert any(n.startswith("TIMEOUT: program 0 did not halt within 20 cycles") for n in report.notes)

    def test_a_bundle_for_another_memory_size_is_refused(self, sim, tmp_path):
        bundle = small_bundle()
        other = Bundle(2048, copy.deepcopy(bundle.programs), config=isa.BOOK)
        for p in other.programs:
            p.ext = p.ext[:2048]
            p.expected.ext = p.expected.ext[:2048]
        path = tmp_path / "b2048.hex"
        other.write(path)
        words = sum(1 for line in path.read_text().splitlines() if line and not line.startswith("//"))
        build = sim.build(8192, words=words)
        p = subprocess.run(build.command + [f"+bundle={path}", f"+bundle_words={words}"],
                           capture_output=True, text=True, timeout=600)
        assert p.returncode != 0
        assert "ERROR: the bundle is for ext_words=2048 but this chip was built with 8192" in p.stdout

    # ------------------------------------------------------------------ builds and binaries
    def test_the_build_is_cached_and_serves_other_bundles(self, sim, suite_report):
        first = sim.build(isa.EXT_WORDS_DEFAULT, words=100)
        again = sim.build(isa.EXT_WORDS_DEFAULT, words=5000)
        assert again.cached and again.directory == first.directory
        # served from the cache, not rebuilt: the same recorded compilation and an untouched build
        assert again.compile_seconds == first.compile_seconds
        stamps = {f: f.stat().st_mtime_ns for f in first.directory.rglob("*") if f.is_file()}
        sim.build(isa.EXT_WORDS_DEFAULT, words=7000)
        assert {f: f.stat().st_mtime_ns for f in first.directory.rglob("*") if f.is_file()} == stamps

    def test_a_missing_binary_names_the_debian_package(self, monkeypatch, tmp_path):
        empty = tmp_path / "bin"
        empty.mkdir()
        monkeypatch.setenv("PATH", str(empty))
        sim = get_simulator(self.simulator, config=isa.BOOK)
        package = {"icarus": "iverilog", "verilator": "verilator", "cxxrtl": "g++"}[self.simulator]
        with pytest.raises(SimulatorError, match=re.escape(f"install the Debian package '{package}'")):
            sim.run_bundle(small_bundle())

    def test_vcd_of_the_chosen_program(self, sim, tmp_path):
        self.check_vcd(sim, tmp_path)

    def check_vcd(self, sim, tmp_path):
        bundle = small_bundle()
        vcd = tmp_path / "wave.vcd"
        report = sim.run_bundle(bundle, vcd=str(vcd), vcd_program=1)
        assert report.passed, report.line()
        text = vcd.read_text()
        assert "$enddefinitions" in text and "cnt_total" in text and "ext_rvalid" in text
        first, last = vcd_time_span(vcd)
        cycles = (last - first) // 10                   # 10 ns clock period
        total = bundle.programs[1].expected.counters.total
        # only program 1 (from its start pulse to one edge after halted), not the whole bundle
        assert total <= cycles <= total + 6, (cycles, total)
        assert first > 10 * bundle.programs[0].expected.counters.total
