"""``Config.coalesce_transfers``: Capra loads tensors that follow one another in external memory with one LD.

A compiler policy (``Config.COMPILER_FIELDS``): the programs differ, the hardware does not.  What is
checked: the outputs are the same integers as with one LD per tensor, every leaf is loaded exactly once
(the LDs' external ranges tile the leaves' layout), fewer LDs, the counters are the instruction set's,
a run too long for the free scratchpad is shortened rather than refused, and the chip's Verilog is the
same text with the field on or off.
"""
from __future__ import annotations

import random

import compiler as C
from ga2_hdl import isa
from ga2_hdl.config import PRESETS, Config
from gen.verilog import export


def _w(rows, cols, seed, sd=0.3):
    rng = random.Random(seed)
    return [[rng.gauss(0, sd) for _ in range(cols)] for _ in range(rows)]


def _chain(layers: int = 3, width: int = 16):
    """x (1 x width) through ``layers`` weights of width x width, a relu after each but the last: the
    weights lie one after another in external memory and each is first needed by its own step."""
    g = C.Graph()
    h = g.input("x", (1, width))
    for i in range(layers):
        h = g.matmul(h, g.weight(f"w{i}", _w(width, width, seed=i)))
        if i < layers - 1:
            h = g.relu(h)
    g.output(h, "o")
    return g, {"x": _w(1, width, seed=99, sd=0.5)}


def _loads(prog):
    return [ins for ins in prog.code if ins.mnemonic == "LD"]


def _leaf_ranges(prog):
    return sorted((v["addr"], v["addr"] + v["words"]) for v in prog.ext.values() if v["kind"] != "output")


def _check_loaded_once(prog):
    """The LDs' external ranges, in order of address, are the leaves' ranges joined: each leaf once."""
    spans = sorted((ins.src, ins.src + ins.len) for ins in _loads(prog))
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert end <= start, f"two LDs bring the same external words: {spans}"
    leaves = _leaf_ranges(prog)
    covered = [r for r in leaves if any(s <= r[0] and r[1] <= e for s, e in spans)]
    assert covered == leaves, f"leaves {leaves}, LD spans {spans}"
    assert sum(e - s for s, e in spans) == sum(e - s for s, e in leaves)


def test_one_ld_brings_the_weights_and_the_integers_are_the_same():
    g, inputs = _chain()
    one = PRESETS["fast"]
    assert one.coalesce_transfers
    each = one.replace(coalesce_transfers=False)
    coalesced, plain = C.compile_graph(g, [inputs], config=one), C.compile_graph(g, [inputs], config=each)
    assert len(_loads(plain)) == 4 and len(_loads(coalesced)) == 1
    for prog in (coalesced, plain):
        _check_loaded_once(prog)
    out_c, run_c = C.execute(coalesced, inputs)
    out_p, run_p = C.execute(plain, inputs)
    assert out_c["o"][0] == out_p["o"][0] == C.interpret(coalesced, inputs)[g.nodes[-1].id]
    assert run_c.counters == isa.instruction_set(one).counters(coalesced.code)
    # three LDs fewer: each saved LD is its latency, its last cycle and a fetch and issue
    iset = isa.instruction_set(one)
    saved = sum(iset.cycles(i) for i in _loads(plain)) - sum(iset.cycles(i) for i in _loads(coalesced))
    assert run_p.counters.total - run_c.counters.total == saved
    ld = _loads(plain)[0]
    assert saved >= 3 * (one.lat + 1 + iset.cycles(ld) - iset.busy(ld))    # (one fetch cycle with fetch_on_done)


def test_a_run_too_long_for_the_free_scratchpad_is_shortened():
    g, inputs = _chain(layers=3, width=16)        # x and three 256-word weights: 784 words in one run
    small = Config(name="small", spad_words=512, coalesce_transfers=True)
    prog = C.compile_graph(g, [inputs], config=small)
    assert 1 < len(_loads(prog)) < 4
    _check_loaded_once(prog)
    assert prog.spad_high <= 512
    book = C.compile_graph(g, [inputs], config=isa.BOOK)
    assert C.execute(prog, inputs)[0]["o"][0] == C.execute(book, inputs)[0]["o"][0]


def test_the_book_chip_loads_one_tensor_at_a_time():
    g, inputs = _chain()
    assert not isa.BOOK.coalesce_transfers
    assert len(_loads(C.compile_graph(g, [inputs], config=isa.BOOK))) == 4


def test_the_field_builds_no_hardware():
    fast = PRESETS["fast"]
    assert "coalesce_transfers" in Config.COMPILER_FIELDS
    assert fast.hardware() == fast.replace(coalesce_transfers=False) and fast.hardware().name == "fast"
    assert Config.book().hardware() == Config.book()
    on = export.export("chip", config=fast)
    off = export.export("chip", config=fast.replace(coalesce_transfers=False))
    assert on.text == off.text


def _cache_graph():
    """x and a weight give a new row, concatenated after a cached block (an input): the cache's buffer
    holds the new row after it.  A second weight follows the cache in external memory."""
    g = C.Graph()
    x = g.input("x", (1, 8))
    w = g.weight("w", _w(8, 8, seed=1))
    cache = g.input("cache", (3, 8))
    w2 = g.weight("w2", _w(8, 8, seed=2))
    keys = g.concat_rows(cache, g.matmul(x, w))
    g.output(g.matmul(keys, w2), "o")
    rng = random.Random(5)
    return g, {"x": _w(1, 8, seed=3, sd=0.5), "cache": [[rng.gauss(0, 0.5) for _ in range(8)] for _ in range(3)]}


def test_a_gap_in_external_memory_lets_one_ld_pass_a_concatenation():
    """The cache's buffer holds the new row after the cached ones: with coalesced loads the external
    layout leaves the row's 8 words free after the cache, so one LD brings x, w, the cache and w2 (the
    gap's words land where the new row is written later), and the integers are those of one LD a tensor."""
    g, inputs = _cache_graph()
    one = PRESETS["fast"]
    coalesced = C.compile_graph(g, [inputs], config=one)
    plain = C.compile_graph(g, [inputs], config=one.replace(coalesce_transfers=False))
    assert len(_loads(coalesced)) == 1 and len(_loads(plain)) == 4
    assert coalesced.ext["w2"]["addr"] == coalesced.ext["cache"]["addr"] + 24 + 8      # the gap
    assert plain.ext["w2"]["addr"] == plain.ext["cache"]["addr"] + 24                  # none without it
    (ld,) = _loads(coalesced)
    assert ld.len == sum(v["words"] for v in coalesced.ext.values() if v["kind"] != "output") + 8
    assert C.execute(coalesced, inputs)[0]["o"][0] == C.execute(plain, inputs)[0]["o"][0]


def _head_graph():
    """logits = rescale(x @ w), tok = argmax(logits); both are outputs, tok first (as a decoding
    step's): the rescale lands where x was, the argmax right after it."""
    g = C.Graph()
    x = g.input("x", (1, 16))
    logits = g.rescale(g.matmul(x, g.weight("w", _w(16, 16, seed=7))))
    g.output(g.argmax(logits), "tok")
    g.output(logits, "logits")
    return g, {"x": _w(1, 16, seed=8, sd=0.5)}


def test_outputs_next_to_each_other_in_the_scratchpad_leave_with_one_st():
    """The trailing STs whose sources follow one another in the scratchpad become one ST, the outputs
    laid out again in that order inside their external span; the host reads the same values."""
    g, inputs = _head_graph()
    one = PRESETS["fast"]
    coalesced = C.compile_graph(g, [inputs], config=one)
    plain = C.compile_graph(g, [inputs], config=one.replace(coalesce_transfers=False))
    stores = [i for i in coalesced.code if i.mnemonic == "ST"]
    assert len([i for i in plain.code if i.mnemonic == "ST"]) == 2 and len(stores) == 1
    (st,) = stores
    outs = {n: v for n, v in coalesced.ext.items() if v["kind"] == "output"}
    span = sorted((v["addr"], v["addr"] + v["words"]) for v in outs.values())
    assert (st.dst, st.dst + st.len) == (span[0][0], span[-1][1]) and span[0][1] == span[1][0]
    assert {v["addr"] for v in outs.values()} != {v["addr"] for n, v in plain.ext.items() if v["kind"] == "output"}
    got, want = C.execute(coalesced, inputs)[0], C.execute(plain, inputs)[0]
    assert got["tok"] == want["tok"] and got["logits"] == want["logits"]
    assert coalesced.ext_used == plain.ext_used
