"""The vector unit with a wide scratchpad port (``Config.spad_ports`` = P > 1).

RQ, VADD and AMAX run P words per cycle, SM one (on lane 0); every result is
checked against isa.py's primitives and an independent numpy model, every
other word of the scratchpad stays as it was, every source word is read
exactly once per pass (the read masks are exact), the busy time is the
configuration's ISA formula, and the unit contract holds every cycle.  Lengths
are and are not multiples of P, bases are unaligned, regions are in place and
back to back.
"""
import random

import pytest

from ga2_hdl import isa
from ga2_hdl.config import Config
from sim_tests.rtl.test_vector_unit import run_and_check, words

CONFIGS = [Config(name="p2", spad_ports=2), Config(name="wide4", spad_ports=4, ext_port_words=4),
           pytest.param(Config(name="p8", spad_ports=8), marks=pytest.mark.slow)]
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_wide_vector_ops(config):
    P = config.spad_ports
    rng = random.Random(100 + P)
    n = 37
    accs = [0, 1, -1, 127, -128, INT32_MAX, INT32_MIN] + [rng.randrange(INT32_MIN, INT32_MAX + 1) for _ in range(n - 7)]
    image = words(accs) + words(rng.randrange(-128, 128) for _ in range(n)) + [0xCAFEF00D] * 5
    ties = [5, 9, 9, 2, 9, -3, 9, 1]                    # the first maximum is at 1
    image += words(ties)
    t0 = len(image) - len(ties)
    program = [
        isa.make("RQ", dst=500, src=0, len=1, m=1 << 23, s=24),
        isa.make("RQ", dst=601, src=3, len=P + 1, m=(1 << 23) + 12345, s=20),
        isa.make("RQ", dst=701, src=0, len=n, m=rng.randrange(1 << 23, 1 << 24), s=30, relu=1),
        isa.make("RQ", dst=n, src=n, len=n, m=(1 << 23) + 99, s=20),          # in place
        isa.make("VADD", dst=900, src1=0, src2=n, len=n),
        isa.make("VADD", dst=1003, src1=5, src2=n + 1, len=P - 1 or 1),
        isa.make("VADD", dst=n, src1=n, src2=1, len=n - 1),                    # dst = src1
        isa.make("VADD", dst=2, src1=20, src2=2, len=15),                      # dst = src2
        isa.make("VADD", dst=1101, src1=7, src2=7, len=P * 2),                 # src1 = src2
        isa.make("AMAX", dst=1200, src=0, len=n),
        isa.make("AMAX", dst=1201, src=t0, len=len(ties)),
        isa.make("AMAX", dst=t0 + 3, src=t0, len=len(ties)),                   # dst inside src
        isa.make("AMAX", dst=1202, src=t0 + 1, len=1),
        isa.make("SM", dst=1300, src=n, len=P + 3),
        isa.make("SM", dst=n, src=n, len=9),                                   # in place
        isa.make("RQ", dst=4096 - P - 1, src=4096 - 2 * P - 2, len=P + 1, m=1 << 23, s=23),  # the last words
    ]
    _, busy = run_and_check(image, program, config=config)
    cd = isa.ceil_div
    for ins, b in zip(program, busy):
        want = {"RQ": cd(ins.len, P) + 2, "VADD": 2 * cd(ins.len, P) + 2, "AMAX": cd(ins.len, P) + 3,
                "SM": 3 * ins.len + 47}[ins.mnemonic]
        assert b == want, f"{ins}: busy {b}, expected {want}"


@pytest.mark.parametrize("config", CONFIGS[:2], ids=lambda c: c.name)
def test_wide_amax_of_negative_values_starts_below_every_word(config):
    """Every word negative, the first maximum not at index 0 and not in the first chunk: the
    running best must start at the smallest int32 (a start at 0 would keep index 0)."""
    P = config.spad_ports
    values = [-9, -70000, INT32_MIN] + [-5] * P + [-2, -3, -2, INT32_MIN + 1]
    program = [isa.make("AMAX", dst=100, src=0, len=len(values)),
               isa.make("AMAX", dst=101, src=1, len=2)]                 # INT32_MIN vs -70000: index 0
    spad, _ = run_and_check(words(values), program, config=config)
    assert spad[100] == values.index(max(values)) and spad[101] == 0


@pytest.mark.parametrize("config", CONFIGS[:2], ids=lambda c: c.name)
def test_wide_amax_index_past_half_the_scratchpad(config):
    """The maximum's index needs every bit of a scratchpad address: a vector of 3,000 words whose
    maximum is at index 2,600 (> 2,048, the top bit of a 4,096-word scratchpad's index)."""
    rng = random.Random(12)
    values = [rng.randrange(-1000, 1000) for _ in range(3000)]
    values[2600] = 5000
    program = [isa.make("AMAX", dst=4000, src=0, len=len(values))]
    spad, _ = run_and_check(words(values), program, config=config)
    assert spad[4000] == 2600
