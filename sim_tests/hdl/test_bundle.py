"""Bundle format v1: round trips, the exact word layout, and every malformation the reader refuses."""
import random

import pytest

from ga2_hdl import isa
from ga2_hdl.formats.bundle import END_MARKER, MAGIC, Bundle, _runs, is_bundle_text
from ga2_hdl.formats.files import FileFormatError
from ga2_hdl.isa import ErrorCode, make
from ga2_hdl.formats.results import RunResult
from ga2_hdl.support.reporter import Recorder
from gen.sim.simulator import SimulatorError, get_simulator

H = isa.HALT


def small_bundle(ext_words=64):
    prog = [make("LD", dst=0, src=0, len=4), make("VADD", dst=10, src1=0, src2=2, len=2),
            make("ST", src=10, dst=40, len=2), H]
    bad = [make("LD", dst=0, src=60, len=8), H]
    return Bundle.from_programs([("add two", prog, [1, 2, 3, 0xFFFFFFFF]), ("out of range", bad, None),
                                 ("halt", [H], [0] * ext_words)], ext_words, config=isa.BOOK)


def words_of(text):
    return [int(line, 16) for line in text.splitlines() if line and not line.startswith("//")]


def test_exact_word_layout():
    b = small_bundle()
    w = words_of(b.to_text())
    assert w[:4] == [MAGIC, 1, 3, 64]
    # program 0: 4 instructions, each as 4 words most significant first
    assert w[4] == 4
    first = make("LD", dst=0, src=0, len=4).encode()
    assert w[5:9] == [(first >> 96) & 0xFFFFFFFF, (first >> 64) & 0xFFFFFFFF, (first >> 32) & 0xFFFFFFFF,
                      first & 0xFFFFFFFF]
    i = 5 + 16
    assert w[i:i + 7] == [1, 0, 4, 1, 2, 3, 0xFFFFFFFF]      # one run: start 0, length 4
    i += 7
    exp = b.programs[0].expected
    assert w[i:i + 2] == [0, 3]                                # status OK at the HALT's address
    assert tuple(w[i + 2:i + 7]) == exp.counters
    i += 7
    # final memory: input run at 0, results (1+3, 2-1) at 40 -> two runs
    assert w[i:i + 1 + 2 + 4 + 2 + 2] == [2, 0, 4, 1, 2, 3, 0xFFFFFFFF, 40, 2, 4, 1]
    assert w[-1] == END_MARKER
    # program 1 faulted at pc 0 with EXT_RANGE
    assert b.programs[1].expected.error == ErrorCode.EXT_RANGE


def test_every_line_is_8_lowercase_hex_or_a_comment():
    for line in small_bundle().to_text().splitlines():
        assert line.startswith("//") or (len(line) == 8 and set(line) <= set("0123456789abcdef")), line


def test_round_trip_file(tmp_path):
    b = small_bundle()
    path = tmp_path / "b.hex"
    b.write(path)
    b2 = Bundle.read(path)
    assert b2.ext_words == b.ext_words
    assert [p.name for p in b2.programs] == ["add two", "out of range", "halt"]
    for p, q in zip(b.programs, b2.programs):
        assert p.code == q.code and p.ext == q.ext
        assert (p.expected.counters, p.expected.ext, p.expected.error, p.expected.error_pc) == \
               (q.expected.counters, q.expected.ext, q.expected.error, q.expected.error_pc)
    assert b2.verify() == []
    assert b2.to_text() == b.to_text()


def test_round_trip_random_programs():
    from gen.fuzz.programs import random_bundle
    b = random_bundle(10, seed=7, ext_words=1024, config=isa.BOOK)
    b2 = Bundle.parse(b.to_text())
    assert b2.to_text() == b.to_text()
    assert b2.verify() == []


def test_runs_merge_small_gaps_only():
    mem = [0, 5, 0, 6, 0, 0, 7, 0, 0, 0, 8, 0]
    assert _runs(mem) == [(1, [5, 0, 6, 0, 0, 7]), (10, [8])]
    assert _runs([0] * 5) == []
    assert _runs([1] * 3) == [(0, [1, 1, 1])]
    rng = random.Random(1)
    for _ in range(100):
        mem = [rng.choice([0, 0, 0, rng.getrandbits(32)]) for _ in range(rng.randint(0, 40))]
        rebuilt = [0] * len(mem)
        last_end = -1
        for start, ws in _runs(mem):
            assert start > last_end and ws[0] != 0 and ws[-1] != 0
            rebuilt[start:start + len(ws)] = ws
            last_end = start + len(ws)
        assert rebuilt == mem


def test_names_are_single_line():
    b = Bundle.from_programs([("two\nlines", [H], None)], 16, config=isa.BOOK)
    assert Bundle.parse(b.to_text()).programs[0].name == "two lines"


def test_from_programs_pads_and_refuses():
    b = Bundle.from_programs([("p", [H], [1])], 16, config=isa.BOOK)
    assert b.programs[0].ext == [1] + [0] * 15
    with pytest.raises(isa.IsaError, match="does not end with HALT"):
        Bundle.from_programs([("p", [make("LD", dst=0, src=0, len=1)], None)], 16, config=isa.BOOK)
    with pytest.raises(isa.IsaError, match="longer than the memory"):
        Bundle.from_programs([("p", [H], [0] * 17)], 16, config=isa.BOOK)


def test_is_bundle_text():
    assert is_bundle_text(small_bundle().to_text())
    assert not is_bundle_text("00000000000000000000000000000000\n")
    assert not is_bundle_text("")


# ----------------------------------------------------------------------------- malformed bundles

def lines_of(b=None):
    return (b or small_bundle()).to_text().splitlines()


def word_line_numbers(lines):
    """1-based line numbers of the word lines, in order."""
    return [i + 1 for i, l in enumerate(lines) if l and not l.startswith("//")]


def parse(lines):
    return Bundle.parse("\n".join(lines) + "\n", "x.hex")


def replace_word(lines, index, value):
    nums = word_line_numbers(lines)
    out = list(lines)
    out[nums[index] - 1] = value if isinstance(value, str) else f"{value:08x}"
    return out, nums[index]


def expect_error(lines, lineno, fragment):
    with pytest.raises(FileFormatError) as e:
        parse(lines)
    assert str(e.value).startswith(f"x.hex:{lineno}:"), str(e.value)
    assert fragment in str(e.value), str(e.value)


def test_bad_magic_version_and_sizes():
    L = lines_of()
    expect_error(*replace_word(L, 0, 0x12345678), "not a GA2 bundle")
    expect_error(*replace_word(L, 1, 2), "version 2 is not supported")
    expect_error(*replace_word(L, 3, 0), "ext_words=0")
    expect_error(*replace_word(L, 3, 70000), "ext_words=70000")


def test_bad_hex_lines():
    L = lines_of()
    expect_error(*replace_word(L, 2, "0000003"), "exactly 8 lowercase hex digits")
    expect_error(*replace_word(L, 2, "0000000G"), "exactly 8 lowercase hex digits")
    expect_error(*replace_word(L, 2, "0000000A"), "exactly 8 lowercase hex digits")
    expect_error(*replace_word(L, 2, "00000003 // x"), "exactly 8 lowercase hex digits")


def test_truncated_and_trailing_data():
    L = lines_of()
    with pytest.raises(FileFormatError, match="bundle ends early: expected the end marker"):
        parse(L[:-1])
    with pytest.raises(FileFormatError, match="bundle ends early"):
        parse(L[:30])
    n = len(L)
    expect_error(L + ["00000000"], n + 1, "data after the end marker")
    expect_error(*replace_word(L, len(word_line_numbers(L)) - 1, 0), "end marker")
    # more programs announced than present: the end marker is read as an instruction count
    L2, _ = replace_word(L, 2, 4)
    expect_error(L2, n, f"program 3 has {END_MARKER} instructions")


def test_bad_program_records():
    b = Bundle.from_programs([("p", [make("LD", dst=0, src=0, len=1), H], [9])], 16, config=isa.BOOK)
    L = lines_of(b)
    # word 4 is n_code
    expect_error(*replace_word(L, 4, 0), "program 0 has 0 instructions")
    expect_error(*replace_word(L, 4, isa.IMEM_WORDS + 1), f"program 0 has {isa.IMEM_WORDS + 1} instructions")
    # last instruction (words 9..12, op code in the top 4 bits of word 9) not HALT
    expect_error(*replace_word(L, 9, 0x10000000), "does not end with HALT")
    # initial runs: words 13 = n_runs (1), 14 = start 0, 15 = length 1, 16 = value 9
    expect_error(*replace_word(L, 13, 17), "cannot fit")
    expect_error(*replace_word(L, 15, 0), "has length 0")
    expect_error(*replace_word(L, 14, 16), "outside the external memory")
    expect_error(*replace_word(L, 15, 17), "outside the external memory")
    # status (17), status_pc (18)
    expect_error(*replace_word(L, 17, 99), "not an ErrorCode")
    expect_error(*replace_word(L, 18, 2), "beyond its 2 instructions")


def test_runs_out_of_order_or_overlapping():
    b = Bundle.from_programs([("p", [H], [5, 0, 0, 0, 6])], 16, config=isa.BOOK)
    L = lines_of(b)
    # words: 4 n_code, 5..8 HALT, 9 n_runs=2, 10 start 0, 11 len 1, 12 = 5, 13 start 4, 14 len 1, 15 = 6
    assert words_of("\n".join(L))[9:16] == [2, 0, 1, 5, 4, 1, 6]
    expect_error(*replace_word(L, 13, 0), "before the end of the previous run")


def test_golden_simulator_replays_and_detects_differences():
    b = small_bundle()
    sim = get_simulator("golden", config=isa.BOOK)
    rep = sim.run_bundle(b)
    assert rep.passed and rep.line().startswith("PASS: 3 programs match the golden model")
    assert rep.cycles == b.total_cycles
    # a corrupted expectation is reported exactly
    expected = b.programs[0].expected
    expected.counters = expected.counters._replace(dma=expected.counters.dma + 1)
    rep = sim.run_bundle(b)
    assert not rep.passed and rep.mismatch.program == 0 and rep.mismatch.where == "dma"
    assert "MISMATCH: program 0: counter dma" in rep.line()
    expected.counters = expected.counters._replace(dma=expected.counters.dma - 1)
    b.programs[0].expected.ext[41] ^= 1
    rep = sim.run_bundle(b)
    assert rep.mismatch.where == "ext[41]"
    b.programs[0].expected.ext[41] ^= 1
    b.programs[1].expected.error = ErrorCode.SPAD_RANGE
    assert get_simulator("golden", config=isa.BOOK).run_bundle(b).mismatch.what == "status"


def test_golden_simulator_interface():
    sim = get_simulator("golden", config=isa.BOOK)
    assert sim.name == "golden"
    r = sim.run_program([make("LD", dst=0, src=0, len=1), make("ST", src=0, dst=3, len=1), H], [42], ext_words=8)
    assert isinstance(r, RunResult) and r.ext == [42, 0, 0, 42, 0, 0, 0, 0]
    assert len(sim.run_program([H], []).ext) == isa.EXT_WORDS_DEFAULT
    with pytest.raises(SimulatorError, match="waveform"):
        sim.run_program([H], [], vcd="x.vcd")
    said = Recorder()
    sim.run_bundle(small_bundle(), reporter=said)
    assert said.steps == [(1, 3, "golden"), (2, 3, "golden"), (3, 3, "golden")]
