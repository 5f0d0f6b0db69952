"""Synthesis per configuration: `ga2 synth --config`, the "does not fit" verdict, `ga2 explore --synth`.

The fast tests stand the tools in (the flow's reading of nextpnr's log, the cache
of a verdict, the join of area and clock with the cycles); the slow one runs
Yosys and nextpnr on a unit of a non-book configuration (it fails, naming the
package, when the ``fpga`` extra is missing, like tests/test_synth.py's).
"""
from __future__ import annotations

import json
import time
import sys

import pytest

from gen.fpga import explore as explore_synth
from ga2_cli.main import main
from ga2_hdl import isa
from ga2_hdl.config import PRESETS
from ga2_hdl.support.reporter import Recorder
from gen.fpga import synth
from gen.verilog import export as verilog
from spec import explore, figures

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

UTILISATION_LOG = """\
Info: Logic utilisation before packing:
Info:     Total LUT4s:      9000/24288    37%
Info:      Total DFFs:      3000/24288    12%
Info: Device utilisation:
Info: 	              DP16KD:      40/     56    71%
Info: 	          MULT18X18D:      83/     28   296%
Info: 	          TRELLIS_FF:    3000/  24288    12%
ERROR: Unable to place cell 'x', no BELs remaining to implement cell type 'MULT18X18D'
"""


def test_nextpnr_overuse_is_read_from_its_log():
    assert synth.overused(UTILISATION_LOG) == {"MULT18X18D": (83, 28)}
    assert synth.overused(UTILISATION_LOG.replace("83/", "20/")) == {}
    e = synth.DoesNotFit("ga2_chip", "ecp5-25k", synth.overused(UTILISATION_LOG), {"MULT18X18D": 83})
    assert "does not fit the ecp5-25k" in str(e) and "83 MULT18X18D of 28" in e.reason
    again = synth.DoesNotFit.from_json(json.loads(json.dumps(e.to_json())))
    assert (again.unit, again.target, again.overused, again.cells) == (e.unit, e.target, e.overused, e.cells)


@pytest.fixture
def fake_tools(monkeypatch, tmp_path):
    """Tools that 'exist' and a private cache; the flow itself is replaced by the test."""
    monkeypatch.setenv("GA2_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(synth, "tool_path", lambda name: f"/fake/{name}")
    monkeypatch.setattr(synth, "tool_versions", lambda: {"yosys": "fake 1", "nextpnr-ecp5": "fake 1",
                                                         "ecppack": "fake 1"})


def test_a_design_that_does_not_fit_is_a_cached_verdict(fake_tools, monkeypatch):
    calls = []

    def flow(exported, tgt, work, *rest):
        calls.append(exported.unit)
        raise synth.DoesNotFit(exported.unit, tgt.name, {"MULT18X18D": (83, 28)}, {"MULT18X18D": 83})

    monkeypatch.setattr(synth, "_run_flow", flow)
    ex = verilog.Export("ga2_chip", "module ga2_chip(); endmodule\n", {}, 0.0, 0.0, False)
    with pytest.raises(synth.DoesNotFit) as first:
        synth.synthesize("chip", "ecp5-25k", exported=ex)
    assert not first.value.cached and calls == ["ga2_chip"]
    with pytest.raises(synth.DoesNotFit) as second:
        synth.synthesize("chip", "ecp5-25k", exported=ex)
    assert second.value.cached and second.value.reason == first.value.reason and calls == ["ga2_chip"]
    with pytest.raises(synth.DoesNotFit):                 # --no-cache runs the flow again
        synth.synthesize("chip", "ecp5-25k", exported=ex, use_cache=False)
    assert len(calls) == 2


def test_synth_exports_the_configurations_chip(fake_tools, monkeypatch, capsys, tmp_path):
    """`ga2 synth --config wide2 --unit dma`: the DMA of that chip is what goes to the tools, the JSON
    names the configuration; a unit that is the same on every chip is exported as it is."""
    seen = {}

    def fake_synthesize(unit, target, *, exported, **kw):
        seen[unit] = exported
        return synth.SynthResult(unit=exported.unit, target=target, lut=10, ff=5, ebr=0, mult=0, fmax_mhz=200.0,
                                 cells={}, utilization={}, critical_path=None, tools={}, verilog_digest=exported.digest,
                                 synth_seconds=0.0, pnr_seconds=0.0)

    monkeypatch.setattr(synth, "synthesize", fake_synthesize)
    out = tmp_path / "s.json"
    assert main(["synth", "--config", "wide2", "--unit", "dma", "--json", str(out)]) == 0
    assert "config=<wide2 (spad_ports=2, ext_port_words=2)>" in seen["dma"].text.splitlines()[0]
    assert seen["dma"].text != verilog.export("dma", config=isa.BOOK).text
    data = json.loads(out.read_text())
    assert data["config"] == PRESETS["wide2"].to_dict()
    assert main(["synth", "--config", "wide2", "--unit", "divider"]) == 0        # no config parameter
    assert seen["divider"].text == verilog.export("divider", config=isa.BOOK).text
    assert "dma of wide2 on ecp5-25k" in capsys.readouterr().out


def _entry(name: str, plain: float, k3: float) -> dict:
    units = {"matrix": plain / 2, "dma": plain / 4, "vector": plain / 8, "fetch_issue": plain / 8}
    k3_units = {u: v * k3 / plain for u, v in units.items()}
    cfg = PRESETS[name]
    return {"name": name, "description": cfg.describe(), "parameters": cfg.parameters, "config": cfg.to_dict(),
            "tokens": 32, "plain_cycles_per_token": plain, "k3_perfect_cycles_per_token": k3,
            "per_unit": {"plain": units, "k3_perfect": k3_units},
            "hidden_by_overlap": {"plain": 0, "k3_perfect": 0},
            "speedup": {"k3_perfect": plain / k3, "k3_noisy": 1.5, "k3_poor": 1.0, "k3_random": 1.5},
            "tokens_equal": True, "problems": []}


def _report() -> dict:
    return {"tokens": 32, "source": "test", "configs": [_entry("book", 8000.0, 4000.0), _entry("array8", 6000.0, 3000.0)],
            "skipped": [], "failed": [], "problems": []}


def test_explore_synth_joins_area_clock_and_cycles(fake_tools, monkeypatch, tmp_path):
    exported = []
    monkeypatch.setattr(verilog, "export", lambda unit, *, config=None, **kw: exported.append(config.name) or
                        verilog.Export("ga2_chip", f"// {config.name}\n", {}, 0.0, 0.0, False))

    placers = []

    def fake_synthesize(unit, target, *, exported, **kw):
        placers.append(kw["placer"])
        if "array8" in exported.text:
            raise synth.DoesNotFit("ga2_chip", target, {"MULT18X18D": (83, 28)}, {})
        return synth.SynthResult(unit="ga2_chip", target=target, lut=5000, ff=2000, ebr=19, mult=25, fmax_mhz=40.0,
                                 cells={}, utilization={}, critical_path=None, tools={}, verilog_digest="d",
                                 synth_seconds=1.0, pnr_seconds=2.0)

    monkeypatch.setattr(synth, "synthesize", fake_synthesize)
    report = _report()
    said = Recorder()
    problems = explore_synth.synthesize_configs(report, "ecp5-25k", reporter=said, placer="static")
    assert problems == [] and exported == ["book", "array8"]        # every chip exported before any run
    assert placers == ["static", "static"] and report["synth"]["placer"] == "static"
    assert "--placer static" in report["synth"]["flow"]
    assert [(d, t) for d, t, _ in said.steps] == [(1, 2), (2, 2)]          # one step per chip
    book, array8 = report["configs"]
    assert book["synth"]["fits"] and book["synth"]["lut"] == 5000
    assert book["synth"]["plain"]["tokens_per_s"] == pytest.approx(40e6 / 8000.0)        # Fmax / cycles per token
    assert book["synth"]["k3_perfect"]["tokens_per_s"] == pytest.approx(40e6 / 4000.0)
    assert array8["synth"]["fits"] is False and "83 MULT18X18D of 28" in array8["synth"]["reason"]
    table = explore.format_table(report)
    assert "array8                   does not fit: 83 MULT18X18D of 28" in table
    assert "5,000" in table and "40.0" in table and "5,000" in table.split("area and clock")[1]
    png = tmp_path / "e.png"
    figures.explore_figure(report, str(png))
    assert png.read_bytes()[:8] == PNG_MAGIC
    json.dumps(report)                                               # JSON-ready


def test_explore_tries_the_next_placer_for_a_chip_without_a_result(fake_tools, monkeypatch):
    """`ga2 explore --synth --synth-placer heap,static`: a chip with no result from the first placer
    (here: array8 stopped at the limit, which reaches every job) is tried again with the next, and only
    that chip; its record names the placer of its result and what the first gave; the table's row says
    which placer; a chip with a result from the first is not run again.  With the last placer giving
    nothing, the chip is a row saying why and a problem of the run."""
    monkeypatch.setattr(verilog, "export", lambda unit, *, config=None, **kw:
                        verilog.Export("ga2_chip", f"// {config.name}\n", {}, 0.0, 0.0, False))
    runs = []

    def fake_synthesize(unit, target, *, exported, placer, pnr_limit, **kw):
        name = exported.text.split()[1]
        runs.append((name, placer, pnr_limit))
        if name == "array8" and placer in stuck:
            raise synth.OverTime(f"ga2_chip: nextpnr: stopped after {pnr_limit:g} s (the limit), unfinished: routing")
        return synth.SynthResult(unit="ga2_chip", target=target, lut=5000, ff=2000, ebr=19, mult=25,
                                 fmax_mhz={"heap": 40.0, "static": 30.0}[placer], cells={}, utilization={},
                                 critical_path=None, tools={}, verilog_digest="d", synth_seconds=1.0,
                                 pnr_seconds=2.0, placer=placer)

    monkeypatch.setattr(synth, "synthesize", fake_synthesize)
    stuck = {"heap"}
    report = _report()
    said = Recorder()
    problems = explore_synth.synthesize_configs(report, "ecp5-25k", reporter=said, placer="heap,static",
                                                pnr_limit=900)
    assert problems == []
    assert runs == [("book", "heap", 900), ("array8", "heap", 900), ("array8", "static", 900)]
    book, array8 = (e["synth"] for e in report["configs"])
    assert (book["placer"], book["fmax_mhz"], "tried" in book) == ("heap", 40.0, False)
    assert (array8["placer"], array8["fmax_mhz"]) == ("static", 30.0)
    assert [(t["placer"], t["outcome"]) for t in array8["tried"]] == [("heap", "over_time")]
    assert "stopped after 900 s" in array8["tried"][0]["message"]
    assert report["synth"]["placer"] == ["heap", "static"] and report["synth"]["pnr_limit_s"] == 900
    assert "each chip placed by the first of heap, static with a result" in report["synth"]["flow"]
    assert [(d, t) for d, t, _ in said.steps] == [(1, 2), (2, 2)]           # one step per chip, not per try
    rows = {ln.split()[0]: ln for ln in explore.format_table(report).splitlines() if ln.startswith(("book ", "array8 "))}
    assert rows["array8"].endswith("(static placer)") and "placer" not in rows["book"]
    json.dumps(report)

    stuck = {"heap", "static"}                                              # nothing from either
    runs.clear()
    report = _report()
    problems = explore_synth.synthesize_configs(report, "ecp5-25k", placer=["heap", "static"], pnr_limit=60)
    array8 = report["configs"][1]["synth"]
    assert runs[-1] == ("array8", "static", 60) and array8["fits"] is None
    assert "stopped after 60 s" in array8["not_synthesised"] and array8["tried"][0]["placer"] == "heap"
    assert problems == ["array8: ga2_chip: nextpnr: stopped after 60 s (the limit), unfinished: routing"]
    assert "array8                   not synthesised: ga2_chip: nextpnr: stopped" in explore.format_table(report)


def test_run_tool_stops_a_tool_at_its_limit(tmp_path):
    """``run_tool(limit=)``: a tool still running at the limit is stopped (the process is gone) and
    :class:`OverTime` names the limit and the tool's last line; a tool that ends in time is not."""
    import sys as _sys
    script = "import time; print('placing', flush=True); time.sleep(30)"
    t0 = time.perf_counter()
    with pytest.raises(synth.OverTime, match=r"sleeper: stopped after 1 s \(the limit\), unfinished: placing"):
        synth.run_tool([_sys.executable, "-c", script], cwd=tmp_path, log=tmp_path / "out.log", what="sleeper",
                       reporter=None, limit=1.0)
    assert time.perf_counter() - t0 < 20                 # stopped, not waited for
    assert synth.run_tool([_sys.executable, "-c", "print('done')"], cwd=tmp_path, log=tmp_path / "ok.log",
                          what="quick", reporter=None, limit=60.0) >= 0
    assert synth.check_placers("heap, static", "--x") == ("heap", "static")
    assert synth.check_placers(None, "--x") == ("heap",)
    with pytest.raises(synth.SynthError, match="--x heap,heap: a placer named twice"):
        synth.check_placers("heap,heap", "--x")
    with pytest.raises(synth.SynthError, match="--y -5: the limit must be a positive number of seconds"):
        synth.check_limit(-5, "--y")


def test_explore_synth_without_tools_is_one_line_before_any_work(monkeypatch, capsys):
    monkeypatch.setattr(synth, "tool_versions", lambda: (_ for _ in ()).throw(synth.ToolsMissing("yosys missing: "
                                                                                                 "pip install -e '.[fpga]'")))
    monkeypatch.setattr(explore, "run_explore", lambda *a, **k: pytest.fail("work started"))
    assert main(["explore", "--configs", "book", "--synth"]) != 0
    err = capsys.readouterr().err
    assert "pip install -e '.[fpga]'" in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [["explore", "--configs", "book", "--synth-target", "ecp5-25k"],
                                  ["explore", "--configs", "book", "--synth", "--synth-target", "ice40"],
                                  ["explore", "--configs", "book", "--synth-plot", "p.png"],
                                  ["explore", "--configs", "book", "--synth-placer", "static"],
                                  ["explore", "--configs", "book", "--synth", "--synth-placer", "sa"],
                                  ["explore", "--configs", "book", "--synth", "--synth-placer", "heap,sa"],
                                  ["explore", "--configs", "book", "--synth", "--synth-placer", "heap,heap"],
                                  ["explore", "--configs", "book", "--synth-pnr-limit", "900"],
                                  ["explore", "--configs", "book", "--synth", "--synth-pnr-limit", "0"]])
def test_explore_synth_options_are_checked_before_any_work(monkeypatch, capsys, argv):
    monkeypatch.setattr(synth, "tool_versions", lambda: {})
    monkeypatch.setattr(explore, "run_explore", lambda *a, **k: pytest.fail("work started"))
    assert main(argv) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--synth" in err[0]


@pytest.mark.slow
def test_a_wide_dma_synthesises(tmp_path):
    """The DMA of the wide2 chip through Yosys and nextpnr (the tools of the fpga extra)."""
    try:
        synth.tool_versions()
    except synth.ToolsMissing as e:
        pytest.fail(f"the slow suite needs the FPGA tools: {e}")
    book = synth.synthesize("dma", "ecp5-25k", config=isa.BOOK)
    wide = synth.synthesize("dma", "ecp5-25k", config=PRESETS["wide2"])
    assert wide.verilog_digest != book.verilog_digest
    assert wide.lut > 0 and wide.fmax_mhz and wide.ebr == 0


def test_build_refuses_a_configuration_it_cannot_build_in_one_line(tmp_path, capsys, monkeypatch):
    from ga2_cli import cmd_synth
    monkeypatch.setattr(cmd_synth, "_platform", lambda board: pytest.fail("work started"))
    cfg = tmp_path / "big.json"
    cfg.write_text(json.dumps({"name": "bigimem", "imem_words": 65536}))
    assert main(["build", "--board", "ulx3s-85f", "--config", str(cfg)]) == 1
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "--config bigimem" in err[0] and "imem_words=65536" in err[0]


def test_explore_from_json_adds_cached_synthesis_only(fake_tools, monkeypatch, tmp_path, capsys):
    """`ga2 explore --from-json FILE --synth --synth-cached-only`: no decoding and no tool run; a chip
    with a cached result gets its row, one without says it was not synthesised."""
    report = _report()
    src = tmp_path / "cycles.json"
    src.write_text(json.dumps(report))
    monkeypatch.setattr(explore, "run_explore", lambda *a, **k: pytest.fail("decoded again"))
    monkeypatch.setattr(verilog, "export", lambda unit, *, config=None, **kw:
                        verilog.Export("ga2_chip", f"// {config.name}\n", {}, 0.0, 0.0, False))
    monkeypatch.setattr(synth, "_run_flow", lambda *a: pytest.fail("a tool ran"))

    def cached(unit, target, *, exported, cached_only, **kw):
        assert cached_only
        if "array8" in exported.text:
            raise synth.NotCached("ga2_chip: no cached result")
        return synth.SynthResult(unit="ga2_chip", target=target, lut=5000, ff=2000, ebr=19, mult=25, fmax_mhz=40.0,
                                 cells={}, utilization={}, critical_path=None, tools={}, verilog_digest="d",
                                 synth_seconds=1.0, pnr_seconds=2.0, cached=True)

    monkeypatch.setattr(synth, "synthesize", cached)
    out, png = tmp_path / "out.json", tmp_path / "out.png"
    assert main(["explore", "--from-json", str(src), "--synth", "--synth-cached-only", "--json", str(out),
                 "--plot", str(png)]) == 0
    table = capsys.readouterr().out
    assert "array8                   not synthesised: ga2_chip: no cached result" in table
    data = json.loads(out.read_text())
    assert data["configs"][0]["synth"]["fits"] and data["configs"][1]["synth"]["fits"] is None
    assert png.read_bytes()[:8] == PNG_MAGIC


def test_explore_from_json_refuses_a_file_that_is_not_a_report(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"configs": [{"name": "x"}]}))
    assert main(["explore", "--from-json", str(bad)]) != 0
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "not the JSON of `ga2 explore --json`" in err[0]
    assert main(["explore", "--from-json", str(bad), "--configs", "book"]) != 0


def test_synth_runs_each_seed_as_a_task_of_a_dask_cluster(fake_tools, monkeypatch, tmp_path, capsys):
    """`ga2 synth --seed 1 --seed 2 --seed 3 --scheduler ADDRESS`: every run is a task of the cluster
    (stand-in tools: the flow is replaced, the runner, the cache and the median are real); the JSON
    holds the median run and the spread, and a second run takes all three from the cache."""
    import threading
    from dask import distributed      # the cluster extra: make setup installs it, so this test always runs
    ran = []

    def flow(exported, tgt, work, yosys, nextpnr, tools, progress, seed=1, placer=synth.PLACER, pnr_limit=None):
        ran.append((seed, threading.current_thread().name))
        return synth.SynthResult(unit=exported.unit, target=tgt.name, lut=100, ff=50, ebr=0, mult=0,
                                 fmax_mhz={1: 90.0, 2: 110.0, 3: 100.0}[seed], cells={}, utilization={},
                                 critical_path=None, tools=tools, verilog_digest=exported.digest,
                                 synth_seconds=0.0, pnr_seconds=0.0, seed=seed)

    monkeypatch.setattr(synth, "_run_flow", flow)
    out = tmp_path / "s.json"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        argv = ["synth", "--unit", "dma", "--seed", "1", "--seed", "2", "--seed", "3",
                "--scheduler", cluster.scheduler_address, "--json", str(out)]
        assert main(argv) == 0
        said = capsys.readouterr().out
        assert "on Dask scheduler" in said and "3 run(s)" in said
        assert sorted(s for s, _ in ran) == [1, 2, 3]
        assert all(name != threading.main_thread().name for _, name in ran)      # on the cluster's workers
        got = json.loads(out.read_text())["units"]["dma"]
        assert got["seed"] == 3 and got["fmax_mhz"] == 100.0                      # the median, not the best
        assert got["seeds"] == {"by_seed": {"1": 90.0, "2": 110.0, "3": 100.0}, "median_mhz": 100.0,
                                "min_mhz": 90.0, "max_mhz": 110.0}
        assert main(argv) == 0 and len(ran) == 3                                  # all three cached


def test_synth_scheduler_that_cannot_be_reached_is_one_line_before_any_work(fake_tools, monkeypatch, capsys):
    monkeypatch.setattr(synth, "_run_flow", lambda *a, **k: pytest.fail("work started"))
    assert main(["synth", "--unit", "dma", "--scheduler", "inproc://nowhere"]) == 1      # refused at once
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "--scheduler inproc://nowhere: cannot reach" in err[0]


def test_pareto_front_and_explore_figure(tmp_path):
    from gen.fpga import report as synth_report
    points = [("book", 6000, 8000), ("wide2", 8000, 7000), ("wide4", 11000, 9800), ("wide8", 17000, 6300),
              ("twin", 11000, 9800)]
    # wide2 has more area and fewer tokens than the book; wide8 is beaten by wide4; equal points both stay
    assert synth_report.pareto_front(points) == ["book", "twin", "wide4"] or \
        synth_report.pareto_front(points) == ["book", "wide4", "twin"]
    assert synth_report.pareto_front([("a", 1, 1)]) == ["a"]
    report = {"synth": {"part": "LFE5U-85F-6BG381C"}, "configs": []}
    for name, lut, tps in points[:4]:
        fmax = tps * 8000 / 1e6
        report["configs"].append({"name": name, "synth": {"fits": True, "lut": lut, "fmax_mhz": fmax,
                                                          "plain": {"tokens_per_s": tps},
                                                          "k3_perfect": {"tokens_per_s": 2 * tps}}})
    report["configs"].append({"name": "array16", "synth": {"fits": False, "reason": "MULT18X18D"}})
    assert [p[0] for p in synth_report.explore_points(report)] == ["book", "wide2", "wide4", "wide8"]
    png = tmp_path / "pareto.png"
    assert synth_report.plot_explore(report, png) == ["book", "wide4"]
    assert png.read_bytes()[:8] == PNG_MAGIC
    with pytest.raises(synth_report.ReportError):
        synth_report.plot_explore({"configs": [report["configs"][-1]]}, tmp_path / "none.png")
    assert not (tmp_path / "none.png").exists()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["overlap", "wide8_overlap"])
def test_the_partitioned_scratchpad_maps_to_block_ram(name, tmp_path):
    """The overlapped presets' scratchpad alone (three masters) through Yosys's synth_ecp5 (no
    place and route): every memory ``memory_libmap`` collects is a block RAM, one per partition
    and bank, none left to flip-flops (the per-master ports it replaced had no RAM shape)."""
    import subprocess
    from amaranth.back import verilog as amaranth_verilog
    from ga2_hdl.rtl.sram import Scratchpad
    try:
        yosys = synth.tool_path("yosys")
    except synth.ToolsMissing as e:
        pytest.fail(f"the slow suite needs the FPGA tools: {e}")
    config = PRESETS[name]
    spad = Scratchpad(3, config=config, words=config.spad_banks)
    (tmp_path / "spad.v").write_text(amaranth_verilog.convert(spad, name="spad"))
    (tmp_path / "synth.ys").write_text(synth.SYNTH_SCRIPT.format(verilog="spad.v", top="spad",
                                                                 netlist="net.json", stat="stat.json"))
    subprocess.run([yosys, "-q", "-l", "yosys.log", "synth.ys"], cwd=tmp_path, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    memories = synth.read_memories((tmp_path / "yosys.log").read_text(errors="replace"), "spad")
    assert sorted(memories) == sorted(spad.bank_names()) and len(memories) == config.spad_memories
    assert all(kind.startswith("block RAM") for kind in memories.values()), memories
    # each memory's read port is transparent to its write stage (Yosys emulates it on the DP16KD)
    rw = synth.read_during_write((tmp_path / "yosys.log").read_text(errors="replace"))
    assert sorted(rw) == sorted(memories) and all(v.startswith("transparent") for v in rw.values()), rw


def test_synth_placer_is_passed_to_nextpnr_and_keyed_apart(fake_tools, monkeypatch, tmp_path, capsys):
    """`ga2 synth --placer static`: the job's placer reaches the flow and the result (and its JSON); a
    result of one placer is never taken from the cache for the other; the default placer adds nothing
    to nextpnr's command or to the cache key (the results cached before the option stay valid); an
    unknown placer is refused before any work."""
    ran = []

    def flow(exported, tgt, work, yosys, nextpnr, tools, progress, seed=1, placer=synth.PLACER, pnr_limit=None):
        ran.append(placer)
        return synth.SynthResult(unit=exported.unit, target=tgt.name, lut=100, ff=50, ebr=0, mult=0,
                                 fmax_mhz={"heap": 90.0, "static": 95.0}[placer], cells={}, utilization={},
                                 critical_path=None, tools=tools, verilog_digest=exported.digest,
                                 synth_seconds=0.0, pnr_seconds=0.0, seed=seed, placer=placer)

    monkeypatch.setattr(synth, "_run_flow", flow)
    out = tmp_path / "s.json"
    assert main(["synth", "--unit", "dma", "--placer", "static", "--json", str(out)]) == 0
    got = json.loads(out.read_text())["units"]["dma"]
    assert ran == ["static"] and (got["placer"], got["fmax_mhz"]) == ("static", 95.0)
    assert main(["synth", "--unit", "dma", "--json", str(out)]) == 0            # heap: not the static result
    assert ran == ["static", "heap"] and json.loads(out.read_text())["units"]["dma"]["placer"] == "heap"
    assert main(["synth", "--unit", "dma", "--placer", "static"]) == 0 and len(ran) == 2     # cached
    capsys.readouterr()
    tgt = synth.TARGETS["ecp5-25k"]
    assert synth._flow_fingerprint(tgt, 1) == synth._flow_fingerprint(tgt, 1, "heap") != \
        synth._flow_fingerprint(tgt, 1, "static")
    assert synth._placer_args("heap") == [] and synth._placer_args("static") == ["--placer", "static"]
    with pytest.raises(synth.SynthError, match="unknown placer 'sa'; choose from heap, static"):
        synth.synthesize("dma", "ecp5-25k", config=isa.BOOK, placer="sa")
    assert main(["synth", "--unit", "dma", "--placer", "sa"]) != 0
    said = capsys.readouterr()
    assert "--placer sa: choose from heap, static" in said.out + said.err and "exporting" not in said.out
    assert len(ran) == 2


def test_synth_pnr_limit_reaches_nextpnr_and_a_stopped_run_fails_the_command(fake_tools, monkeypatch, capsys):
    """`ga2 synth --pnr-limit S`: the limit reaches the flow; a run stopped there fails the command in
    one line naming the limit, and nothing is cached (the next run runs the tools again); a limit
    that is not a positive number of seconds is refused before any work."""
    limits = []

    def flow(exported, tgt, work, yosys, nextpnr, tools, progress, seed=1, placer=synth.PLACER, pnr_limit=None):
        limits.append(pnr_limit)
        raise synth.OverTime(f"{exported.unit}: nextpnr: stopped after {pnr_limit:g} s (the limit), unfinished: routing")

    monkeypatch.setattr(synth, "_run_flow", flow)
    assert main(["synth", "--unit", "dma", "--pnr-limit", "5"]) != 0
    err = capsys.readouterr().err
    assert "stopped after 5 s (the limit)" in err and "Traceback" not in err
    assert main(["synth", "--unit", "dma", "--pnr-limit", "5"]) != 0 and limits == [5.0, 5.0]     # not cached
    assert main(["synth", "--unit", "dma", "--pnr-limit", "0"]) != 0 and len(limits) == 2
    assert "--pnr-limit 0: the limit must be a positive number of seconds" in capsys.readouterr().err


def test_a_cached_result_reads_its_memories_read_during_write_from_the_kept_yosys_log(fake_tools, monkeypatch,
                                                                                      capsys):
    """A result cached before the read-during-write verdicts were recorded gets them from the Yosys
    log kept beside it; `ga2 synth` prints them under the memories and its JSON carries them."""
    from sim_tests.gen.test_synth import MEMORY_DFF_LOG

    def flow(exported, tgt, work, yosys, nextpnr, tools, progress, seed=1, placer=synth.PLACER, pnr_limit=None):
        (work / "yosys.log").write_text(MEMORY_DFF_LOG)
        return synth.SynthResult(unit=exported.unit, target=tgt.name, lut=100, ff=50, ebr=1, mult=0,
                                 fmax_mhz=90.0, cells={}, utilization={}, critical_path=None, tools=tools,
                                 verilog_digest=exported.digest, synth_seconds=0.0, pnr_seconds=0.0, seed=seed)

    monkeypatch.setattr(synth, "_run_flow", flow)
    first = synth.synthesize("dma", "ecp5-25k", config=isa.BOOK)
    assert not first.cached and first.read_during_write is None      # the stand-in flow recorded none
    again = synth.synthesize("dma", "ecp5-25k", config=isa.BOOK)
    assert again.cached and again.read_during_write == synth.read_during_write(MEMORY_DFF_LOG)
    assert main(["synth", "--unit", "dma"]) == 0
    assert "read during write: spad.memory transparent" in capsys.readouterr().out
