"""The random-program generator makes valid, varied programs; the directed suite covers what it promises."""
import collections
import json
import random

import pytest

from ga2_cli.main import main as ga2
from ga2_hdl import golden, isa
from ga2_hdl.formats.bundle import Bundle
from ga2_hdl.isa import ErrorCode
from gen.fuzz.programs import DEFAULT_MAX_CYCLES, fuzz, random_bundle, random_program
from gen.fuzz.directed import directed_suite
from gen.sim.simulator import SimulatorError


def _check_valid(code, ext, ext_words, max_cycles=DEFAULT_MAX_CYCLES):
    assert len(ext) == ext_words and all(0 <= w <= isa.WORD_MASK for w in ext)
    assert code[-1] == isa.HALT and all(ins.op != 0 for ins in code[:-1])
    for ins in code[:-1]:
        assert isa.check(ins, ext_words) == (ErrorCode.OK, ""), str(ins)
        spec = ins.spec
        if spec.disjoint_or_same:
            regions = [r for r in spec.regions(ins) if r.memory == "spad"]
            for i, p in enumerate(regions):
                for q in regions[i + 1:]:
                    assert p.start == q.start and p.length == q.length or p.end <= q.start or q.end <= p.start
    r = golden.run(code, ext, ext_words=ext_words, config=isa.BOOK)
    assert r.error == ErrorCode.OK, r.message
    assert r.counters.total <= max_cycles
    return r


@pytest.mark.parametrize("ext_words", [isa.EXT_WORDS_DEFAULT, 2048, 64])
def test_random_programs_are_valid(ext_words):
    rng = random.Random(ext_words)
    ops = collections.Counter()
    features = collections.Counter()
    stored = 0
    for _ in range(150):
        code, ext = random_program(rng, ext_words, config=isa.BOOK)
        r = _check_valid(code, ext, ext_words)
        stored += r.ext != ext
        for ins in code:
            ops[ins.mnemonic] += 1
            if ins.mnemonic == "MM":
                features["tb"] += ins.tb
                features["K64"] += ins.K == 64
                features["4x4"] += ins.M == 4 and ins.N == 4
                features["lda<K"] += ins.M > 1 and ins.lda < ins.K
                features["lda>K"] += ins.M > 1 and ins.lda > ins.K
            if ins.mnemonic in ("RQ", "SM"):
                features["same"] += ins.dst == ins.src
                features["relu"] += ins.mnemonic == "RQ" and ins.relu
            if ins.mnemonic == "VADD":
                features["vadd_same"] += ins.src1 == ins.src2 or ins.dst in (ins.src1, ins.src2)
    assert set(ops) == {s.mnemonic for s in isa.OPS}
    assert all(ops[s.mnemonic] >= 20 for s in isa.OPS if s.mnemonic != "HALT"), ops
    assert all(v > 0 for v in features.values()) and len(features) == 8, features
    assert stored >= 135          # results reach external memory (a few compute zeros)


def test_generator_is_deterministic_and_respects_budget():
    a = [random_program(random.Random(5), 1024, config=isa.BOOK) for _ in range(3)]
    b = [random_program(random.Random(5), 1024, config=isa.BOOK) for _ in range(3)]
    assert a == b
    rng = random.Random(6)
    for _ in range(40):
        code, ext = random_program(rng, 1024, max_cycles=800, config=isa.BOOK)
        _check_valid(code, ext, 1024, max_cycles=800)
    with pytest.raises(ValueError):
        random_program(rng, 8, config=isa.BOOK)


def test_directed_suite_coverage():
    suite = directed_suite(config=isa.BOOK)
    names = [n for n, _, _ in suite]
    assert len(names) == len(set(names))
    results = {name: golden.run(code, ext, config=isa.BOOK) for name, code, ext in suite}
    # every error the hardware can raise (NO_HALT cannot happen with a loaded program ending in HALT)
    raised = {r.error for n, r in results.items() if n.startswith("illegal")}
    assert raised == set(ErrorCode) - {ErrorCode.OK, ErrorCode.NO_HALT}
    assert all(r.error == ErrorCode.OK for n, r in results.items() if not n.startswith("illegal"))
    all_code = [ins for _, code, _ in suite for ins in code]
    ops = {ins.mnemonic for ins in all_code if ins.op in isa.OP_BY_CODE}
    assert ops == {s.mnemonic for s in isa.OPS}
    # largest tile both ways, length one for every op, the longest vectors
    mms = [i for i in all_code if i.op == 3 and isa.check(i)[0] == ErrorCode.OK]
    assert {i.tb for i in mms if (i.M, i.K, i.N) == (4, 64, 4)} == {0, 1}
    for s in isa.OPS:
        if s.lengths:
            lens = [getattr(i, s.lengths[0]) for i in all_code if i.op == s.code]
            assert 1 in lens and max(lens) >= 4096, s.mnemonic
    assert ("halt_immediately", [isa.HALT]) == (suite[0][0], suite[0][1])
    assert results["halt_immediately"].counters == (2, 0, 0, 0, 0)
    assert results["imem_full"].error_pc == isa.IMEM_WORDS - 1
    assert results["imem_full"].counters.instructions == isa.IMEM_WORDS - 1
    assert results["halt_with_unused_bits"].error_pc == 2
    # corner values really occur: RQ ties/saturation, softmax equal and wide, VADD saturation
    out = results["rq_saturate_relu"].ext[4096:4096 + 14]
    assert 127 in out and isa.word_of(-127) in out and isa.word_of(-128) not in out
    eq = results["sm_equal"].ext[4096:4096 + 8]
    assert len(set(eq)) == 1 and abs(sum(eq) - 65536) < 8
    wide = results["sm_wide_range"].ext[4096:4096 + 8]
    assert wide[1] == 0 and wide[0] > 0


def test_directed_suite_smaller_memories():
    for ew in (2048, 512):
        for name, code, ext in directed_suite(ew, config=isa.BOOK):
            r = golden.run(code, ext, ext_words=ew, config=isa.BOOK)
            assert (r.error == ErrorCode.OK) != name.startswith("illegal"), name
    with pytest.raises(ValueError):
        directed_suite(256, config=isa.BOOK)


def test_fuzz_report_and_bundle(tmp_path):
    path = tmp_path / "f.hex"
    rep = fuzz(20, 3, ["golden"], ext_words=1024, bundle_path=str(path), config=isa.BOOK)
    assert rep["programs"] == 20 and rep["mismatches"] == 0 and rep["first_mismatch"] is None
    assert rep["sims"] == ["golden"]
    assert rep["results"]["golden"]["passed"] and rep["results"]["golden"]["programs_run"] == 20
    b = Bundle.read(path)
    assert b.total_cycles == rep["cycles"] == random_bundle(20, 3, 1024, config=isa.BOOK).total_cycles
    with pytest.raises(SimulatorError):
        fuzz(2, 1, ["nonesuch"], config=isa.BOOK)
    rep = fuzz(3, 3, ["golden"], ext_words=1024, directed=True, config=isa.BOOK)
    assert rep["programs"] == 3 + len(directed_suite(1024, config=isa.BOOK)) and rep["results"]["golden"]["passed"]


def test_fuzz_detects_a_wrong_simulator(monkeypatch):
    """A simulator that gets one counter wrong is reported, by program and counter."""
    import gen.sim.simulator as simulator
    from gen.sim.golden import GoldenSimulator

    class OffByOne(GoldenSimulator):
        name = "offbyone"

        def run_program(self, program, ext, **kw):
            r = super().run_program(program, ext, **kw)
            if any(ins.mnemonic == "SM" for ins in program):
                r.counters = r.counters._replace(vector=r.counters.vector + 1)
            return r

        def run_bundle(self, bundle, **kw):
            return simulator.replay_with(self, bundle, lambda i: self.run_program(
                bundle.programs[i].code, bundle.programs[i].ext, ext_words=bundle.ext_words),
                kw.get("reporter"))

    monkeypatch.setitem(simulator.SIMULATORS, "offbyone", f"{__name__}:_OffByOneFactory")
    globals()["_OffByOneFactory"] = OffByOne
    rep = fuzz(30, 2, ["golden", "offbyone"], ext_words=1024, config=isa.BOOK)
    assert rep["mismatches"] == 1 and rep["results"]["golden"]["passed"]
    assert rep["first_mismatch"].startswith("offbyone: program ") and "counter vector" in rep["first_mismatch"]


def test_cli_fuzz_and_bundle_commands(tmp_path, capsys):
    js = tmp_path / "r.json"
    assert ga2(["fuzz", "--programs", "8", "--seed", "4", "--sims", "golden", "--json", str(js)]) == 0
    assert json.loads(js.read_text())["programs"] == 8
    assert "PASS: 8 programs" in capsys.readouterr().out
    assert ga2(["fuzz", "--programs", "2", "--sims", "bogus"]) == 2         # refused when the options are parsed
    assert "unknown simulator 'bogus'" in capsys.readouterr().err
    d = tmp_path / "d.hex"
    assert ga2(["bundle", "directed", "-o", str(d), "--ext-words", "2048"]) == 0
    assert Bundle.read(d).verify() == []
    f = tmp_path / "r.hex"
    assert ga2(["bundle", "fuzz", "--programs", "5", "--seed", "9", "-o", str(f)]) == 0
    assert len(Bundle.read(f).programs) == 5
    capsys.readouterr()
    assert ga2(["bundle", "info", str(f), "--verify"]) == 0
    assert "5 programs" in capsys.readouterr().out
