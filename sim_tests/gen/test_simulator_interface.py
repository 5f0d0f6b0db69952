"""The one simulator interface: choosing by name, and the memory size every simulator uses."""
import pytest

from ga2_hdl import isa
from gen.sim.simulator import SIMULATORS, SimulatorError, external_memory_words, get_simulator, parse_sims


def test_memory_size_comes_from_the_caller_then_the_simulator_then_the_isa():
    assert external_memory_words(16, 2048, config=isa.BOOK) == 16
    assert external_memory_words(None, 2048, config=isa.BOOK) == 2048
    assert external_memory_words(None, None, config=isa.BOOK) == isa.EXT_WORDS_DEFAULT
    with pytest.raises(SimulatorError, match="at least one word"):
        external_memory_words(0, 2048, config=isa.BOOK)


@pytest.mark.parametrize("name", ["golden", "amaranth", "icarus"])
def test_every_simulator_refuses_an_empty_external_memory_and_honours_a_small_one(name):
    sim = get_simulator(name, config=isa.BOOK)
    with pytest.raises(SimulatorError, match="ext_words=0"):
        sim.run_program([isa.HALT], [], ext_words=0)
    result = sim.run_program([isa.make("LD", dst=0, src=0, len=4), isa.make("ST", src=0, dst=12, len=4), isa.HALT],
                             [1, 2, 3, 4], ext_words=16)
    assert len(result.ext) == 16 and result.ext[12:16] == [1, 2, 3, 4]
    assert result.counters == isa.program_counters(
        [isa.make("LD", dst=0, src=0, len=4), isa.make("ST", src=0, dst=12, len=4), isa.HALT])


@pytest.mark.parametrize("name", ["verilator", "cxxrtl"])
def test_the_compiled_simulators_refuse_an_empty_external_memory_before_building(name):
    # (a small memory is a separate build of 20-60 CPU-seconds for these two: not run here)
    with pytest.raises(SimulatorError, match="ext_words=0"):
        get_simulator(name, config=isa.BOOK).run_program([isa.HALT], [], ext_words=0)


def test_unknown_names_are_refused_with_the_known_ones():
    with pytest.raises(SimulatorError, match="choose from golden, amaranth, icarus, verilator, cxxrtl"):
        get_simulator("nosuch", config=isa.BOOK)
    with pytest.raises(SimulatorError, match="unknown simulator 'x'"):
        parse_sims("golden,x")
    assert parse_sims(" golden , verilator ") == ["golden", "verilator"]
    assert list(SIMULATORS) == ["golden", "amaranth", "icarus", "verilator", "cxxrtl"]
