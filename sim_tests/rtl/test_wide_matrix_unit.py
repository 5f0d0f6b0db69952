"""The matrix unit with a wide scratchpad port (``Config.spad_ports`` = P > 1), against numpy.

The same checks as sim_tests/rtl/test_matrix_unit.py (C against an independent numpy
model, every other word untouched, the busy time exactly the configuration's
ISA formula, the unit contract every cycle), on shapes where K and N are and
are not multiples of P, unaligned bases, strides smaller than a row, and both
layouts of B.
"""
import random

import pytest

from ga2_hdl import isa
from ga2_hdl.config import Config
from sim_tests.rtl.test_matrix_unit import random_mm, run_jobs

CONFIGS = [Config(name="p2", spad_ports=2), Config(name="wide4", spad_ports=4, ext_port_words=4),
           pytest.param(Config(name="p8", spad_ports=8), marks=pytest.mark.slow)]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_wide_mm_shapes_layouts_and_busy(config):
    P = config.spad_ports
    iset = isa.instruction_set(config)
    rng = random.Random(P)
    ins = [
        isa.make("MM", dst=3001, A=3, B=517, M=4, K=64, N=4),
        isa.make("MM", dst=3001, A=3, B=517, M=4, K=64, N=4, tb=1),
        isa.make("MM", dst=4000, A=7, B=900, M=4, K=63, N=3, tb=1, lda=70, ldb=100, ldc=9),
        isa.make("MM", dst=0, A=1, B=2, M=1, K=1, N=1),
        isa.make("MM", dst=4095, A=4094, B=4093, M=1, K=1, N=1, tb=1),
        isa.make("MM", dst=4093, A=4090, B=4091, M=1, K=3, N=3, ldb=1),     # B rows overlap, at the end
        isa.make("MM", dst=20, A=20, B=24, M=2, K=3, N=2),                  # C overwrites A
        isa.make("MM", dst=0, A=0, B=0, M=3, K=5, N=2, lda=0, ldb=0, ldc=0),
        isa.make("MM", dst=11, A=20, B=30, M=3, K=P + 1, N=max(1, min(P - 1, config.array)), ldc=1),
    ]
    ins += [random_mm(rng, K=rng.randint(1, 12)) for _ in range(10)]
    busy = run_jobs(ins, seed=10 + P, config=config)
    book = isa.instruction_set(isa.BOOK)
    for i, b in zip(ins, busy):
        cd = isa.ceil_div
        b_reads = i.N * cd(i.K, P) if i.tb else i.K * cd(i.N, P)
        assert b == i.M * cd(i.K, P) + b_reads + (i.K + i.M + i.N - 2) + i.M * cd(i.N, P) + 7 == iset.busy(i)
        assert b <= book.busy(i)


@pytest.mark.parametrize("config", CONFIGS[:2], ids=lambda c: c.name)
def test_wide_mm_reads_exactly_its_operands(config):
    """The chunk masks select the words of A and B and no other: the last chunk of a row that is
    not a multiple of P words long is cut at the row's end, for A, B and B transposed."""
    from ga2_hdl.rtl.matrix_unit import MatrixUnit
    from sim_tests.spad_harness import UnitBench, _lanes
    P = config.spad_ports
    ins = [isa.make("MM", dst=3000, A=5, B=700, M=3, K=P + 1, N=2, lda=P + 4, ldb=P + 3),
           isa.make("MM", dst=3000, A=5, B=700, M=2, K=2 * P - 1, N=3, tb=1, lda=2 * P + 1, ldb=2 * P + 2),
           isa.make("MM", dst=3000, A=9, B=400, M=4, K=3, N=P + 1, lda=5, ldb=P + 6)]
    seen: dict[int, set[int]] = {}

    def monitor(ctx, i, cycle):
        spad = unit.spad
        seen.setdefault(id(i), set()).update(_lanes(ctx, spad, spad.rd_en, spad.rd_addr, spad.rd_mask))

    unit = MatrixUnit(config=config)
    UnitBench(unit, spad_init=[0] * isa.SPAD_WORDS).run([(i, None, None) for i in ins], monitor=monitor)
    for i in ins:
        a = {i.A + m * i.lda + k for m in range(i.M) for k in range(i.K)}
        b = ({i.B + n * i.ldb + k for n in range(i.N) for k in range(i.K)} if i.tb else
             {i.B + k * i.ldb + n for k in range(i.K) for n in range(i.N)})
        assert seen[id(i)] == a | b, f"{i}: read {sorted(seen[id(i)] - (a | b))} beyond A and B"
