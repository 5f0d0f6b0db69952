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
from ga2_hdl.rtl.sram import Scratchpad

from .test_overlap import hazard_programs

WIDE_OVERLAP = Config(name="wide4_overlap", spad_ports=4, ext_port_words=4, overlap=True)
#: two banks: the smallest banked scratchpad with ports per master
TWO_BANKS = Config(name="wide2_overlap", spad_ports=2, ext_port_words=2, overlap=True)


def offset_programs():
    """Accesses that start in the last bank (offset w - 1) and so reach the next row in every
    other bank, by the DMA, the matrix and the vector unit, some of them at once."""
    from ga2_hdl.isa import HALT, make
    ext = [(7 * i + 3) % 255 - 127 & 0xFFFFFFFF for i in range(64)]
    return [("bank offsets", [
        make("LD", dst=3, src=0, len=16),
        make("LD", dst=203, src=21, len=13),                  # independent of the MM and the VADD
        make("MM", dst=40, A=3, B=11, M=2, K=4, N=2),
        make("VADD", dst=51, src1=3, src2=7, len=8),
        make("ST", src=3, dst=100, len=16),
        make("ST", src=40, dst=121, len=4),
        make("ST", src=51, dst=131, len=8),
        make("ST", src=203, dst=143, len=13),
        HALT], ext)]


def _scheduled(config, plain_tokens=1):
    from compiler.schedule import schedule
    from spec.runs import make_model, plain_row
    log = plain_row("plain", make_model("random", 1), plain_tokens, config=config).log
    return [(f"scheduled {r.kind} {r.shape}", schedule(r.code, config), r.ext) for r in log]


@functools.lru_cache(maxsize=None)
def bundle(config=WIDE_OVERLAP, random_programs=6, seed=21):
    from ga2_hdl.formats.bundle import Bundle
    from gen.fuzz import programs as fuzz
    scheduled = _scheduled(config) if config == WIDE_OVERLAP else []
    b = Bundle.from_programs(hazard_programs() + offset_programs() + scheduled, config=config)
    b.programs += fuzz.random_bundle(random_programs, seed, config=config, illegal=0.25).programs
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


@pytest.mark.parametrize("sim,config", [("amaranth", WIDE_OVERLAP), ("amaranth", TWO_BANKS),
                                        pytest.param("icarus", WIDE_OVERLAP, marks=pytest.mark.slow),
                                        pytest.param("verilator", WIDE_OVERLAP, marks=pytest.mark.slow)],
                         ids=["amaranth-wide4", "amaranth-wide2", "icarus-wide4", "verilator-wide4"])
def test_wide_overlap_chip_agrees_with_the_golden_model(sim, config):
    from gen.sim.simulator import get_simulator
    b = bundle(config)
    report = get_simulator(sim, config=config).run_bundle(b)
    assert report.passed, report.line()
    assert len(report.results) == len(b.programs)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["wide8_overlap", "fast_overlap"])
def test_fuzz_on_the_wide_overlap_presets_in_every_simulator(name):
    from gen.fuzz.programs import fuzz
    report = fuzz(300, 2027, ("golden", "amaranth", "icarus", "verilator"), directed=True, config=PRESETS[name])
    assert report["mismatches"] == 0, report["first_mismatch"]
    assert all(r["programs_run"] == report["programs"] for r in report["results"].values())


def test_banked_ports_per_master_move_words_at_once_and_flag_a_shared_word():
    """The scratchpad alone (4 banks, 3 masters): every cycle each master reads and writes its own
    4-word runs from any address at the same time as the others, disjoint words as the hazard rule
    guarantees; a model follows each master's read data (its own, not a broadcast) and the memory.
    Two writes of one word in a cycle raise ``conflict``; writes of different words do not."""
    import random
    from amaranth.sim import Simulator
    words, top = 4, WIDE_OVERLAP.spad_words
    rng = random.Random(4)
    init = [rng.getrandbits(32) for _ in range(top)]
    dut = Scratchpad(3, config=WIDE_OVERLAP, init=init, words=words)
    model = list(init)

    async def bench(ctx):
        pending = [None] * 3
        for step in range(300):
            used: set[int] = set()
            writes = []
            for j, p in enumerate(dut.masters):
                ra, wa = rng.randrange(top), rng.randrange(top)
                rmask, wmask = rng.getrandbits(words) or 1, rng.getrandbits(words)
                reads = {(ra + i) % top for i in range(words) if rmask >> i & 1}
                wset = {(wa + i) % top for i in range(words) if wmask >> i & 1}
                rd = not reads & used and rng.random() < 0.8
                wr = bool(wset) and not wset & (used | (reads if rd else set())) and rng.random() < 0.8
                data = [rng.getrandbits(32) for _ in range(words)]
                ctx.set(p.rd_en, rd)
                ctx.set(p.rd_addr, ra)
                ctx.set(p.rd_mask, rmask)
                ctx.set(p.wr_en, wr)
                ctx.set(p.wr_addr, wa)
                ctx.set(p.wr_mask, wmask)
                for i in range(words):
                    ctx.set(p.wr_data[i], data[i])
                if rd:
                    used |= reads
                    pending[j] = ([model[(ra + i) % top] for i in range(words)], rmask)
                if wr:
                    used |= wset
                    writes.append((wa, wmask, data))
            assert ctx.get(dut.conflict) == 0, f"step {step}: disjoint writes flagged"
            assert ctx.get(dut.write_en) == bool(writes), f"step {step}: write_en"
            if len(writes) == 1:        # one writer: the chunk's first and last word (what the watchdog reads)
                wa = writes[0][0]
                assert (ctx.get(dut.write_addr), ctx.get(dut.write_last)) == (wa, (wa + words - 1) % top), \
                    f"step {step}: write_addr/write_last"
            await ctx.tick()
            for wa, wmask, data in writes:
                for i in range(words):
                    if wmask >> i & 1:
                        model[(wa + i) % top] = data[i]
            for j, p in enumerate(dut.masters):
                if pending[j] is not None:
                    want, mask = pending[j]
                    for i in range(words):
                        if mask >> i & 1:
                            assert ctx.get(p.rd_data[i]) == want[i], f"step {step}: master {j} lane {i}"
            pending = [None] * 3
        for p in dut.masters:
            ctx.set(p.rd_en, 0)
        for a, b in ((0, 1), (1, 2), (0, 2)):              # two masters write word 10 (bank 2) at once
            for j, p in enumerate(dut.masters):
                ctx.set(p.wr_en, j in (a, b))
                ctx.set(p.wr_addr, 9 if j == a else 10)
                ctx.set(p.wr_mask, 0b0010 if j == a else 0b0001)
            assert ctx.get(dut.conflict) == 1, (a, b)
            ctx.set(dut.masters[b].wr_addr, 11)            # word 11: another bank, no conflict
            assert ctx.get(dut.conflict) == 0, (a, b)
            ctx.set(dut.masters[b].wr_addr, 14)            # word 14: bank 2 as well, another row
            assert ctx.get(dut.conflict) == 0, (a, b)
        for p in dut.masters:
            ctx.set(p.wr_en, 0)
        for a in range(top):
            assert ctx.get(dut.cell(a)) == model[a], f"word {a}"

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
