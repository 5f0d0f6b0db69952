"""Busy-time formulas per port width (``Config.spad_ports`` = P, ``Config.ext_port_words`` = W).

The formula text of every operation (docs/isa.md, docs/chip.md) is a Python
expression of the operands, ``LAT`` and ``ceil``; evaluated, it is the busy
function, on every configuration.  With P = W = 1 every text and value is the
book's; wider ports never make an instruction slower.
"""
import math
import random

import pytest

from ga2_hdl import isa
from ga2_hdl.config import PRESETS, Config

CONFIGS = [Config.book(), PRESETS["wide2"], PRESETS["wide4"], Config(name="p2w8", spad_ports=2, ext_port_words=8),
           Config(name="p16w1", spad_ports=16), Config(name="lat3w4", lat=3, ext_port_words=4)]


def _random_operands(spec, rng):
    return {o.name: rng.randint(*o.legal) if o.legal else rng.randrange(1 << o.bits) for o in spec.operands}


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_formula_text_is_the_busy_function(config):
    iset = isa.instruction_set(config)
    rng = random.Random(config.spad_ports * 17 + config.ext_port_words)
    env = {"__builtins__": {}, "ceil": math.ceil, "LAT": config.lat}
    for spec in iset.ops:
        for _ in range(300):
            ins = isa.make(spec.mnemonic, **_random_operands(spec, rng))
            assert eval(spec.busy_formula, env, ins.operands()) == spec.busy(ins), \
                f"{config.name} {spec.mnemonic}: `{spec.busy_formula}` != busy() for {ins}"


def test_one_word_ports_are_the_books_texts_and_values():
    book = isa.instruction_set(isa.BOOK)
    for config in (Config(name="same"), Config(name="lat", lat=8)):
        iset = isa.instruction_set(config)
        assert [o.busy_formula for o in iset.ops] == [o.busy_formula for o in book.ops]
    texts = {o.mnemonic: o.busy_formula for o in book.ops}
    assert texts["LD"] == "len + LAT + 1" and texts["ST"] == "len + 2"
    assert texts["MM"] == "M*K + K*N + (K+M+N-2) + M*N + 7"
    assert texts["RQ"] == "len + 2" and texts["VADD"] == "2*len + 2" and texts["AMAX"] == "len + 3"


def test_wide_formulas_in_numbers():
    iset = isa.instruction_set(PRESETS["wide4"])
    assert iset.busy(isa.make("LD", dst=0, src=0, len=9)) == 3 + 8 + 1
    assert iset.busy(isa.make("ST", src=0, dst=0, len=8)) == 2 + 2
    # M*ceil(K/4) + K*ceil(N/4) + (K+M+N-2) + M*ceil(N/4) + 7
    assert iset.busy(isa.make("MM", dst=0, A=0, B=0, M=4, K=64, N=4)) == 64 + 64 + 70 + 4 + 7
    # B transposed: N*ceil(K/4) for B
    assert iset.busy(isa.make("MM", dst=0, A=0, B=0, M=4, K=64, N=4, tb=1)) == 64 + 64 + 70 + 4 + 7
    assert iset.busy(isa.make("MM", dst=0, A=0, B=0, M=1, K=5, N=3, tb=1)) == 2 + 6 + 7 + 1 + 7
    assert iset.busy(isa.make("RQ", dst=0, src=0, len=5, m=1, s=0)) == 2 + 2
    assert iset.busy(isa.make("VADD", dst=0, src1=0, src2=0, len=5)) == 2 * 2 + 2
    assert iset.busy(isa.make("AMAX", dst=0, src=0, len=4)) == 1 + 3
    assert iset.busy(isa.make("SM", dst=0, src=0, len=4)) == 3 * 4 + 47       # SM keeps one word per cycle
    assert PRESETS["wide4"].spad_ports == PRESETS["wide4"].ext_port_words == 4


@pytest.mark.parametrize("config", CONFIGS[1:], ids=lambda c: c.name)
def test_wider_is_never_slower(config):
    iset, book = isa.instruction_set(config), isa.instruction_set(Config(name="b", lat=config.lat))
    rng = random.Random(3)
    for spec in iset.ops:
        for _ in range(100):
            ins = isa.make(spec.mnemonic, **_random_operands(spec, rng))
            assert iset.busy(ins) <= book.busy(ins)


def test_widths_must_be_powers_of_two():
    from ga2_hdl.config import ConfigError
    for field in ("spad_ports", "ext_port_words"):
        with pytest.raises(ConfigError, match=f"{field}=3 must be a power of two"):
            Config(**{field: 3})
