"""Compiled programs travel in a bundle and replay exactly.

A decode step and the chapter's verifier are compiled, their external-memory
images built, and the pair put into a bundle (the golden model's expected
memory and counters recorded).  The bundle survives its text round trip and
replays on the simulators through the one simulator interface.

The bundle (about 20,000 cycles) replays on the golden model and on the RTL in
Amaranth's simulator, Icarus Verilog and Verilator.
"""
from __future__ import annotations

import random

import pytest

import compiler as C
from ga2_hdl import isa
from ga2_hdl.formats.bundle import Bundle
from gen.sim.simulator import get_simulator
from sim_tests.compiler.test_capra_anatomy import _model, _verify_calibration, build_decode_step, build_verify

SIMULATORS = ["golden", "amaranth", "icarus", "verilator", "cxxrtl"]


@pytest.fixture(scope="module")
def compiled_bundle():
    m = _model(1)
    rng = random.Random(3)
    ranges = {"x": 1.0, "k": 2.0, "v": 2.0}
    items, runs = [], []
    for name, graph, samples in (
            ("decode step, context 5", build_decode_step(m, 5), _verify_calibration(m, 1, 4, 6, rng)),
            ("verifier, cache 4, block 4", build_verify(m, 4, 4), _verify_calibration(m, 4, 4, 6, rng))):
        prog = C.compile_graph(graph, samples[:-1], ranges=ranges, config=isa.BOOK)
        inputs = samples[-1]
        items.append((name, prog.code, C.ext_image(prog, inputs)))
        runs.append((prog, inputs))
    return Bundle.from_programs(items, ext_words=8192, config=isa.BOOK), runs


def test_bundle_holds_the_compiled_results(compiled_bundle):
    bundle, runs = compiled_bundle
    assert bundle.total_cycles == sum(prog.counters().total for prog, _ in runs)
    assert len(bundle.programs) == len(runs) == 2
    for entry, (prog, inputs) in zip(bundle.programs, runs):
        # the golden model's expectation: no fault, and the ISA's cycle formula
        assert entry.expected.error == isa.ErrorCode.OK, (entry.name, entry.expected.error)
        assert entry.expected.counters == isa.program_counters(entry.code), entry.name
        outs = C.run(prog, inputs)
        for name, e in prog.ext.items():
            if e["kind"] == "output":
                words = entry.expected.ext[e["addr"]:e["addr"] + e["words"]]
                flat = [v for row in outs[name][0] for v in row]
                assert [w - (1 << 32) if w >> 31 else w for w in words] == flat, (entry.name, name)
    again = Bundle.parse(bundle.to_text())
    assert [p.name for p in again.programs] == [p.name for p in bundle.programs]
    assert again.verify() == []


@pytest.mark.parametrize("simulator", SIMULATORS)
def test_compiled_bundle_replays(compiled_bundle, simulator):
    # Replayed from its text: on the golden model the bundle built in memory would be compared
    # with the very runs that made its expectations (a check that could not fail).
    bundle = Bundle.parse(compiled_bundle[0].to_text())
    report = get_simulator(simulator, config=isa.BOOK).run_bundle(bundle)
    assert report.passed, report.line()
    assert report.cycles == bundle.total_cycles
