"""Overlap together with wide ports: the scratchpad's banks with a read and a write port per master.

The chip ``wide4_overlap`` (4-word scratchpad and external ports, overlap) runs the hazard programs
of tests/test_overlap.py (RAW, WAR, WAW, independent units, read-after-read, a fault while units
run), example A's plain step as Capra schedules it for overlap, and random programs (a quarter
illegal) in Amaranth's simulator, Icarus and Verilator: every counter and word equal to that chip's
golden model.  The slow test adds the directed suite and 300 random programs on the 8-word chip.
"""
from __future__ import annotations

import functools

import pytest

from ga2_hdl import golden
from ga2_hdl.config import Config, PRESETS
from ga2_hdl.sram import Scratchpad

from .test_overlap import hazard_programs

WIDE_OVERLAP = Config(name="wide4_overlap", spad_ports=4, ext_port_words=4, overlap=True)


def _scheduled(config, plain_tokens=1):
    from compiler.schedule import schedule
    from spec.runs import make_model, plain_row
    log = plain_row("plain", make_model("random", 1), plain_tokens, config=config).log
    return [(f"scheduled {r.kind} {r.shape}", schedule(r.code, config), r.ext) for r in log]


@functools.lru_cache(maxsize=None)
def bundle(random_programs=6, seed=21):
    from ga2_hdl.bundle import Bundle
    from gen import fuzz
    b = Bundle.from_programs(hazard_programs() + _scheduled(WIDE_OVERLAP), config=WIDE_OVERLAP)
    b.programs += fuzz.random_bundle(random_programs, seed, config=WIDE_OVERLAP, illegal=0.25).programs
    return b


def test_the_scratchpad_builds_banks_with_a_port_per_master():
    spad = Scratchpad(3, config=WIDE_OVERLAP, words=4)
    assert spad.n_banks == 4 and spad.memory is None


def test_overlap_hides_cycles_on_the_wide_chip_too():
    wide = WIDE_OVERLAP.replace(name="wide4", overlap=False)
    for name, code, ext in hazard_programs():
        a, b = golden.run(code, ext, config=WIDE_OVERLAP), golden.run(code, ext, config=wide)
        assert a.ext == b.ext, name
        assert a.counters.total <= b.counters.total, name


@pytest.mark.parametrize("sim", ["amaranth", pytest.param("icarus", marks=pytest.mark.slow),
                                 pytest.param("verilator", marks=pytest.mark.slow)])
def test_wide_overlap_chip_agrees_with_the_golden_model(sim):
    from gen.simulator import get_simulator
    b = bundle()
    report = get_simulator(sim, config=WIDE_OVERLAP).run_bundle(b)
    assert report.passed, report.line()
    assert len(report.results) == len(b.programs)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["wide8_overlap", "fast_overlap"])
def test_fuzz_on_the_wide_overlap_presets_in_every_simulator(name):
    from gen.fuzz import fuzz
    report = fuzz(300, 2027, ("golden", "amaranth", "icarus", "verilator"), directed=True, config=PRESETS[name])
    assert report["mismatches"] == 0, report["first_mismatch"]
    assert all(r["programs_run"] == report["programs"] for r in report["results"].values())
