"""The matrix unit's values: C = A x B as the ISA defines MM, instruction after instruction.

:class:`MatrixValues` is a :class:`~ga2_hdl.contracts.values.FreeWords` contract around the
matrix unit: a free word at every element of A (``A + m*lda + k``) and of B (``B + k*ldb + n``,
or ``B + n*ldb + k`` when ``tb``) the instruction's bounded sizes use (A and B may overlap: an
address holds one word), drawn anew at each start.  Asserted, besides the unit contract: every
word written at ``dst + m*ldc + n`` is :func:`dot_word` of row m of A and column n of B, the ISA's
``sum over k < K of int8(A[m][k]) * int8(B[k][n])`` wrapped to 32 bits; every element of C
written by the end; nothing the instruction wrote read again by it.  Two instructions run back to
back within the depth, the second on words of its own, so an accumulator not cleared between
tiles shows in the second's C.  :func:`dot_word` is simulated against the golden model's MM
(``sim_tests/gen/test_formal.py``).

Elements of C that share a word (``ldc < N`` with M > 1: the ISA's last row wins) are assumed
away (``ldc >= N`` when M > 1), so that each word written has one expected value.

Not in ``ga2 prove``'s properties yet: the solver does not finish it.  Measured on the book's chip
(M = N = 1, K <= 2, yices through SymbiYosys, load 2.6-5.3 on 2 shared cores): two instructions
(32 cycles) gave no verdict in 900 s, one instruction (17 cycles) none in 360 s; with the free
words cut to 2-bit signed values, one instruction was bounded in 107 s and two gave no verdict in
600 s.  The unit's 8 x 8 products and the spec's are different circuits of equal inputs (the
operands pass the row memories and the array's skew), which the solver proves equal bit by bit.
To run it by hand: ``sby.check(MatrixValues(MatrixUnit(config=c), c, bounds=prove.MM_BOUNDS),
mode="bmc", depth=...)``.
"""
from __future__ import annotations

from amaranth.hdl import Assume, Const, Cover, Module, Mux, Signal, Value

from .. import isa
from ..rtl import decoder
from .values import FreeWords, wide_lane
from .vector import int8_of

__all__ = ["dot_word", "MatrixValues"]


def dot_word(m: Module, a_words, b_words, k_count) -> Signal:
    """MM's arithmetic for one element of C: ``sum(int8_of(a) * int8_of(b))`` over the first
    ``k_count`` pairs (a hardware value; the pairs past it are ignored), wrapped to a 32-bit word."""
    total = Const(0)
    for k, (a, b) in enumerate(zip(a_words, b_words)):
        total = total + Mux(k < k_count, int8_of(a) * int8_of(b), 0)
    word = Signal(isa.WORD_BITS)
    m.d.comb += word.eq(total)                         # truncated: the ISA's wrap-around
    return word


class MatrixValues(FreeWords):
    """C = A x B for every MM of the bounded sizes, on free operand words.

    Parameters
    ----------
    unit : MatrixUnit
        The matrix unit, built for ``config``.
    config : Config
        Its chip.
    bounds : dict
        The largest ``M``, ``K`` and ``N`` (``{"M": 1, "K": 2, "N": 1}``).
    name : str
        The report's name.
    """

    def __init__(self, unit, config, *, bounds, name="values", formal: bool = True):
        super().__init__(unit, config, "MM", bounds=bounds, name=name, formal=formal)
        self.dims = tuple(self.bounds[n] for n in ("M", "K", "N"))

    def _op(self, ins, name) -> Value:
        return decoder.operand(ins, self.spec, name)

    def _a(self, ins, i, k):
        return self._op(ins, "A") + i * self._op(ins, "lda") + k

    def _b(self, ins, k, n):
        B, ldb = self._op(ins, "B"), self._op(ins, "ldb")
        return Mux(self._op(ins, "tb"), B + n * ldb + k, B + k * ldb + n)

    def inputs(self, ins):
        """A's elements row by row, then B's (k outer, n inner), each with whether the sizes use it."""
        M, K, N = (self._op(ins, n) for n in ("M", "K", "N"))
        Mb, Kb, Nb = self.dims
        return ([(self._a(ins, i, k), (i < M) & (k < K)) for i in range(Mb) for k in range(Kb)]
                + [(self._b(ins, k, n), (k < K) & (n < N)) for k in range(Kb) for n in range(Nb)])

    def outputs(self, ins):
        """C's elements row by row."""
        M, N, dst, ldc = (self._op(ins, n) for n in ("M", "N", "dst", "ldc"))
        Mb, _, Nb = self.dims
        return [(dst + i * ldc + n, (i < M) & (n < N)) for i in range(Mb) for n in range(Nb)]

    def check(self, m: Module, j: int, data) -> Value:
        i, n = divmod(j, self.dims[2])
        ins, Kb = self.held, self.dims[1]
        expected = dot_word(m, [self.word_at(self._a(ins, i, k)) for k in range(Kb)],
                            [self.word_at(self._b(ins, k, n)) for k in range(Kb)], self._op(ins, "K"))
        return data == expected

    def contract(self, m: Module) -> None:
        super().contract(m)
        if self.dims[0] > 1:                           # one expected value per word of C
            with m.If(self.start):
                m.d.comb += Assume((self._op(self.fresh, "M") == 1)
                                   | (self._op(self.fresh, "ldc") >= self._op(self.fresh, "N")))

    def covers(self, m: Module) -> None:
        """MM completes at the largest K with a nonzero result, and again right after."""
        p = self.unit.spad
        data = wide_lane(p, "wr_data", 0)
        ended = Signal(2)
        with m.If(self.unit.done & (ended != 3)):
            m.d.sync += ended.eq(ended + 1)
        full = self.running & (self._op(self.held, "K") == self.dims[1])
        m.d.comb += [Cover(p.wr_en & full & (data != 0) & (ended == 0)),
                     Cover(p.wr_en & full & (data != 0) & (ended == 1))]
