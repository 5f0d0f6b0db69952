"""Chips beyond the book's: every simulator builds the configuration it is given, exactly.

For three non-book presets (an 8 x 8 and a 16 x 16 array; a chip with twice the
memories, a faster external memory and half the instruction memory) the
directed suite and random programs made for that chip agree golden = Verilator,
and the programs that depend on the configuration (the largest tiles, the shape
and scratchpad limits, the fullest instruction memory) and random ones golden =
Icarus and (fewer of them) golden = Amaranth, the two slow simulators;
``test_thousand_random_programs_in_four_simulators`` (slow) runs 1,000 random
programs per configuration in all four.  A bundle remembers the chip it was
made for and is refused on another one, naming the differences; the book
chip's bundles, exports and programs are what they were before configurations.
"""
from __future__ import annotations

import functools
import random
import subprocess
import sys

import pytest
from amaranth.sim import Simulator

from ga2_hdl import isa
from ga2_hdl.formats.bundle import Bundle, ChipMismatch, check_same_chip
from ga2_hdl.config import PRESETS, Config
from ga2_hdl.rtl.decoder import IssueCheck
from ga2_hdl.formats.files import FileFormatError
from gen.fuzz import coverage, programs as fuzz
from gen.fuzz.directed import directed_bundle
from gen.sim.simulator import SimulatorError, cycle_bound, get_simulator

#: the non-book configurations the generator is checked on
CONFIGS = [PRESETS[name] for name in ("array8", "array16", "spad8k_lat4")]
IDS = [c.name for c in CONFIGS]
RANDOM = 4           # random programs per configuration in the default suite
SEED = 12


@functools.lru_cache(maxsize=None)
def _bundles(config: Config) -> tuple[Bundle, Bundle]:
    """The directed suite and a few random programs (a quarter of them faulting) made for ``config``."""
    return directed_bundle(config=config), fuzz.random_bundle(RANDOM, SEED, illegal=0.25, config=config)


#: the directed programs whose behaviour depends on the configuration: the largest tiles, the shape
#: limits, the scratchpad's end, the fullest instruction memory
_CONFIG_SPECIFIC = ("mm_{a}x{k}x{a}", "illegal_bad_shape", "illegal_spad_range", "imem_full")


def _selection(config: Config) -> Bundle:
    directed, random_programs = _bundles(config)
    keys = tuple(k.format(a=config.array, k=config.max_k) for k in _CONFIG_SPECIFIC)
    chosen = [p for p in directed.programs if p.name.startswith(keys)]
    assert sum(p.name.startswith(keys[0]) for p in chosen) == 3
    return Bundle(directed.ext_words, chosen + random_programs.programs, config=config)


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_verilator_directed_and_random_programs(config):
    for bundle in _bundles(config):
        assert bundle.config is config
        report = get_simulator("verilator", config=config).run_bundle(bundle)
        assert report.passed, f"verilator on {config.describe()}: {report.line()}"


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_icarus(config):
    report = get_simulator("icarus", config=config).run_bundle(_selection(config))
    assert report.passed, f"icarus on {config.describe()}: {report.line()}"


def _whole_array(config: Config) -> Bundle:
    """Every processing element and the whole write-back at a small K (the largest tile's K costs
    Amaranth's simulator minutes), then the shape and scratchpad limits of this chip."""
    a, k = config.array, 3
    rng = random.Random(config.array)
    data = [rng.randint(-128, 127) for _ in range(2 * a * k)]
    top = config.spad_words - a * a
    code = [isa.make("LD", dst=0, src=0, len=2 * a * k),
            isa.make("MM", dst=top, A=0, B=a * k, M=a, K=k, N=a),
            isa.make("MM", dst=top - 2 * a * a, A=0, B=a * k, M=a, K=k, N=a, tb=1, ldb=k, ldc=2 * a),
            isa.make("ST", src=top - 2 * a * a, dst=100, len=3 * a * a), isa.HALT]
    directed, _ = _bundles(config)
    limits = [p for p in directed.programs if p.name.startswith(("illegal_bad_shape", "illegal_spad_range_0"))]
    made = Bundle.from_programs([(f"mm_{a}x{k}x{a}_at_the_scratchpad_end", code, data)], config=config)
    return Bundle(config.ext_words, made.programs + limits, config=config)


#: Amaranth's simulator compiles the 16 x 16 array's 256 multipliers for a minute or more: that chip
#: runs in Amaranth in the slow suite (here and in the thousand-program campaign)
_AMARANTH = [pytest.param(c, marks=pytest.mark.slow) if c.array > 8 else c for c in CONFIGS]


@pytest.mark.parametrize("config", _AMARANTH, ids=IDS)
def test_amaranth(config):
    report = get_simulator("amaranth", config=config).run_bundle(_whole_array(config))
    assert report.passed, f"amaranth on {config.describe()}: {report.line()}"


@pytest.mark.slow
@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_thousand_random_programs_in_four_simulators(config):
    report = fuzz.fuzz(1000, 1, ("golden", "amaranth", "icarus", "verilator"), directed=True, config=config)
    assert report["mismatches"] == 0, report["first_mismatch"]
    assert all(r["passed"] and r["programs_run"] == report["programs"] for r in report["results"].values())


# ----------------------------------------------------------------------------- what is generated

@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_random_programs_reach_the_configurations_limits(config):
    """Shapes up to the array and max_k, regions up to spad_words, every instruction legal on this chip
    (some of them illegal on the book's), budgets by this chip's busy times."""
    iset = isa.instruction_set(config)
    rng = random.Random(5)
    shapes, spad_ends, beyond_book = set(), [], 0
    for _ in range(150):
        code, ext = fuzz.random_program(rng, config=config)
        assert len(ext) == config.ext_words and len(code) <= config.imem_words
        assert sum(isa.FETCH_ISSUE_CYCLES + iset.busy(i) for i in code[:-1]) + 2 <= fuzz.default_max_cycles(config=config)
        for ins in code[:-1]:
            assert iset.check(ins)[0] == isa.ErrorCode.OK, str(ins)
            beyond_book += isa.check(ins)[0] != isa.ErrorCode.OK
            if ins.op == isa.OP_BY_NAME["MM"].code:
                shapes.add((ins.M, ins.N))
            spad_ends += [r.end for r in iset.spec(ins.op).regions(ins) if r.memory == "spad"]
    assert max(max(s) for s in shapes) == config.array
    assert max(spad_ends) <= config.spad_words
    if config.array > isa.BOOK.array:
        assert beyond_book > 0
    if config.spad_words > isa.BOOK.spad_words:
        assert max(spad_ends) > isa.BOOK.spad_words


def test_book_programs_and_budget_are_the_books():
    assert fuzz.default_max_cycles(config=isa.BOOK) == fuzz.DEFAULT_MAX_CYCLES
    a, b = fuzz.random_bundle(20, 3, config=isa.BOOK), fuzz.random_bundle(20, 3, config=Config.book())
    assert a.to_text() == b.to_text()
    assert "// config" not in a.to_text() and "// config" not in directed_bundle(config=isa.BOOK).to_text()


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_coverage_bins_follow_the_configuration(config):
    model = coverage.CoverageModel(config.ext_words, fuzz.default_max_cycles(config=config), config=config)
    ranges = {f"{o.op}.{o.operand}": (o.lo, o.hi) for o in model.operands}
    assert ranges["MM.M"] == ranges["MM.N"] == (1, config.array)
    assert ranges["MM.K"] == (1, config.max_k)
    assert ranges["LD.len"][1] == min(config.spad_words, config.ext_words)
    # a region ending at the scratchpad's last word counts as "high" on this chip only
    end = isa.make("LD", dst=config.spad_words - 1, src=0, len=1)
    counts = model.count([end, isa.HALT], isa.ErrorCode.OK, 1)
    assert counts["region LD.dst spad high"] == 1


@pytest.mark.parametrize("config", [CONFIGS[1], CONFIGS[2]], ids=[IDS[1], IDS[2]])
def test_issue_check_matches_the_configurations_rules(config):
    """The decoder's check is the configuration's: MM shapes around array and max_k, regions around
    spad_words, on this chip's hardware."""
    iset = isa.instruction_set(config)
    a, k, s = config.array, config.max_k, config.spad_words
    cases = [isa.make("MM", dst=0, A=0, B=0, M=m, K=kk, N=n)
             for m in (0, 1, 4, 5, a, a + 1) for kk in (1, k, k + 1) for n in (1, a, a + 1)]
    cases += [isa.make("LD", dst=d, src=0, len=n) for d in (0, 4090, s - 1, s) for n in (1, 6, 7)]
    cases += [isa.make("SM", dst=0, src=0, len=n) for n in (s - 1, s, s + 1)]
    cases += [isa.make("MM", dst=s - a * a, A=0, B=0, M=a, K=1, N=a), isa.make("MM", dst=s - a * a + 1, A=0,
                                                                                  B=0, M=a, K=1, N=a)]
    dut = IssueCheck(config=config)
    seen = set()

    async def bench(ctx):
        for ins in cases:
            ctx.set(dut.ins.as_value(), ins.encode())
            want, why = iset.check(ins)
            got = ctx.get(dut.error)
            assert got == want, f"{ins}: hardware says {isa.ErrorCode(got).name}, the ISA {want.name} ({why})"
            seen.add(want)

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    assert {isa.ErrorCode.OK, isa.ErrorCode.BAD_SHAPE, isa.ErrorCode.SPAD_RANGE} <= seen


# ----------------------------------------------------------------------------- bundles and chips

def test_a_bundle_remembers_its_chip():
    config = PRESETS["spad8k_lat4"]
    bundle = fuzz.random_bundle(3, 1, config=config)
    text = bundle.to_text()
    assert text.splitlines()[1].startswith("// config: ")
    again = Bundle.parse(text)
    assert again.config == config and again.to_text() == text
    assert again.verify() == []


def test_a_bundle_for_another_chip_is_refused_naming_the_differences():
    bundle = directed_bundle(config=PRESETS["array8"])
    for sim in ("golden", "icarus"):      # refused before anything is built or run
        with pytest.raises(SimulatorError, match=r"made for configuration 'array8'.*'book'.*array=8 \(chip: 4\)"):
            get_simulator(sim, config=isa.BOOK).run_bundle(bundle)
    with pytest.raises(ChipMismatch) as e:
        check_same_chip(PRESETS["spad8k_lat4"], PRESETS["array16"])
    message = str(e.value)
    assert "\n" not in message
    for difference in ("array=4 (chip: 16)", "spad_words=8192 (chip: 4096)", "lat=4 (chip: 8)",
                       "imem_words=512 (chip: 1024)", "ext_words=16384 (chip: 8192)"):
        assert difference in message
    check_same_chip(PRESETS["array8"], PRESETS["array8"].replace(name="renamed"))   # names aside: the same chip


def test_the_command_refuses_a_bundle_for_another_chip(tmp_path):
    path = tmp_path / "a8.hex"
    fuzz.random_bundle(2, 1, config=PRESETS["array8"]).write(path)
    for extra in ([], ["--config", "array16"]):
        p = subprocess.run([sys.executable, "-m", "ga2_cli", "replay", str(path), "--sims", "golden", *extra],
                           capture_output=True, text=True)
        assert p.returncode != 0 and "Traceback" not in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1 and "array=8 (chip: " in p.stderr
    p = subprocess.run([sys.executable, "-m", "ga2_cli", "replay", str(path), "--sims", "golden", "--config",
                        "array8", "--quiet"], capture_output=True, text=True)
    assert p.returncode == 0 and "PASS" in p.stdout, p.stdout + p.stderr


def test_a_bad_configuration_line_names_the_file_and_line():
    text = fuzz.random_bundle(1, 1, config=PRESETS["array8"]).to_text()
    with pytest.raises(FileFormatError, match=r"b.hex:2: .*array=300"):
        Bundle.parse(text.replace('"array": 8', '"array": 300'), "b.hex")
    with pytest.raises(FileFormatError, match=r"b.hex:2: .*unknown field"):
        Bundle.parse(text.replace('"array": 8', '"arrays": 8'), "b.hex")


def test_programs_too_long_for_the_chip_are_refused():
    config = PRESETS["spad8k_lat4"]
    program = [isa.make("LD", dst=0, src=0, len=1)] * config.imem_words + [isa.HALT]
    with pytest.raises(isa.IsaError, match="512"):
        Bundle.from_programs([("long", program, None)], config=config)


def test_the_watchdog_follows_the_chips_timing():
    """LD's busy time holds the external memory's latency: the watchdog bound is the chip's."""
    program = [isa.make("LD", dst=0, src=0, len=10), isa.HALT]
    fast, book = PRESETS["spad8k_lat4"], isa.BOOK
    assert cycle_bound(program, config=book) - cycle_bound(program, config=fast) == 2 * (book.lat - fast.lat)


def test_book_exports_are_the_books():
    from gen.verilog import export as verilog
    words = isa.EXT_WORDS_DEFAULT     # the simulators' exports: found in the cache after their tests
    plain = verilog.export("chip", ext_words=words, config=Config.book())
    assert "config=" not in plain.text.splitlines()[0]
    other = verilog.export("chip", ext_words=words, config=PRESETS["array8"])
    assert "config=<array8 (array=8)>" in other.text.splitlines()[0] and other.text != plain.text


def test_a_campaign_records_its_chip():
    from gen.fuzz.campaign import CampaignError, CampaignSpec
    spec = CampaignSpec(10, config=PRESETS["array16"])
    assert spec.ext_words == 8192 and spec.max_cycles == fuzz.default_max_cycles(config=PRESETS["array16"]) > 3000
    assert CampaignSpec.from_json(spec.to_json()) == spec
    assert "config" not in CampaignSpec(10, config=isa.BOOK).to_json()          # a book campaign's manifest is unchanged
    assert CampaignSpec.from_json(CampaignSpec(10, config=isa.BOOK).to_json()).config == isa.BOOK
    with pytest.raises(CampaignError, match="lat >= 2"):
        CampaignSpec(10, sims=("golden", "verilator"), config=Config(name="lat1", lat=1)).validate()
