"""The systolic array's arithmetic: every processing element's product register is the signed
product of its two int8 inputs of the cycle before.

:class:`PEProductSpec` drives a :class:`~ga2_hdl.rtl.systolic.SystolicArray` alone with free
inputs in every cycle (``a``, ``b``, ``valid``, ``run``, ``clear``: any sequence, not only the
matrix unit's) and asserts, for every cell PE(i, j) (:class:`~ga2_hdl.rtl.systolic.ProcessingElement`,
found in the elaborated array: ``pes[i][j]``), in every cycle after a cycle c:

* ``run`` and no ``clear`` in c: ``product = int8(a_in(c)) * int8(b_in(c))``, the full 16-bit
  signed product (the ISA's ``int8 * int8``), of the cell's own inputs ``a_in`` and ``b_in`` in c;
* ``clear`` in c: ``product = 0``.

The spec multiplies the cell's inputs itself, every cycle, into a register of its own, on the
same signals as the cell (Yosys merges the two multipliers, as in ``requant.formula``: that a
signed ``$mul`` cell computes the signed product is the tools' semantics, not a proof obligation;
a multiplier of the spec's on registered copies of the inputs makes the solver prove two
multipliers equal bit by bit, which gave no verdict in 600 s at 4 cycles).  So the proof is of
what the cell multiplies (its own ``a_in`` and ``b_in``, not another value), the product's width
and signedness, and the product register's enable and clear.  It says nothing of *which* values reach ``a_in`` and ``b_in`` (the skew and the
neighbour links) nor of the accumulators: ``matrix.values`` checks those inside the matrix unit,
with this property's products (:mod:`ga2_hdl.contracts.matrix`).  Together they are MM's claim,
``C[m][n] = sum over k of int8(A[m][k]) * int8(B[k][n])`` wrapped to 32 bits.

Proven by k-induction (the property is inductive: each cycle's product depends only on the cycle
before).  Covered: the corner cell's product of two -128s (16384) and a negative product at PE(0, 0).
"""
from __future__ import annotations

from amaranth.hdl import Assert, Assume, Const, Cover, Fragment, Module, Mux, Signal, Value, signed
from amaranth.hdl._ast import AnyConst, AnySeq

from ..rtl.systolic import OPERAND, SystolicArray
from .base import Spec, inputs_of

__all__ = ["PEProductSpec", "ArrayTransportSpec", "ArrayValuesSpec"]


class _ArraySpec(Spec):
    """A spec of the systolic array alone (:class:`~ga2_hdl.rtl.systolic.SystolicArray`) of
    ``config``'s size: ``array`` and ``size``, and the array elaborated into the spec."""

    def __init__(self, config):
        super().__init__()
        self.array = SystolicArray(config=config)
        self.size = self.array.size

    def _elaborate(self, m: Module, *, free_inputs: bool) -> Fragment:
        """The array elaborated here as ``m``'s submodule (its cells are found after), its fragment
        returned; with ``free_inputs``, every input a free value in every cycle."""
        fragment = Fragment.get(self.array, None)
        m.submodules.array = fragment
        if free_inputs:
            for port in inputs_of(self.array):
                m.d.comb += port.eq(AnySeq(len(Value.cast(port))))     # a View's len() counts elements
        return fragment


class PEProductSpec(_ArraySpec):
    """Each PE's product register = int8(a_in) * int8(b_in) of the cycle before (run, no clear), 0 after a clear.

    Parameters
    ----------
    config : Config
        The chip (its array size).
    """

    name = "pe_product"

    def contract(self, m: Module) -> None:
        arr = self.array
        self._elaborate(m, free_inputs=True)
        was_run, was_clear = Signal(), Signal()
        m.d.sync += [was_run.eq(arr.run & ~arr.clear), was_clear.eq(arr.clear)]
        n = self.size
        for i in range(n):
            for j in range(n):
                pe = arr.pes[i][j]
                expected = Signal(signed(2 * OPERAND.width), name=f"product_{i}_{j}")
                m.d.sync += expected.eq(pe.a_in.as_signed() * pe.b_in.as_signed())   # every cycle
                with m.If(was_clear):
                    m.d.comb += Assert(pe.product == 0)
                with m.Elif(was_run):
                    m.d.comb += Assert(pe.product == expected)
        corner, first = arr.pes[n - 1][n - 1], arr.pes[0][0]
        most = (1 << (OPERAND.width - 1)) ** 2            # -128 * -128: the largest product
        m.d.comb += [Cover(was_run & (corner.product == most)), Cover(was_run & (first.product < 0))]


def _stages(fragment, side: str, n: int):
    """The array's skew register of ``side`` (``a``/``b``: the signal ``{side}_skew`` its elaborated
    ``fragment`` assigns), as ``stages[lane][s]``, stage s of lane i (s <= i) a signed byte."""
    found = None
    for statements in fragment.statements.values():
        for statement in statements:
            for signal in statement._lhs_signals():
                if signal.name == f"{side}_skew":
                    found = signal
    if found is None:
        raise LookupError(f"the array assigns no signal named {side}_skew: the transport's invariant "
                          f"reads its skew stages by name")
    width = OPERAND.width
    starts = [i * (i + 1) // 2 for i in range(n)]
    return [[found[width * (starts[i] + s):width * (starts[i] + s + 1)].as_signed() for s in range(i + 1)]
            for i in range(n)]


class ArrayTransportSpec(_ArraySpec):
    """What each processing element multiplies and accumulates, for any input sequence (k-induction).

    The array (:class:`~ga2_hdl.rtl.systolic.SystolicArray`) alone, its inputs ``a``, ``b``,
    ``valid``, ``run`` and ``clear`` free in every cycle.  The spec keeps, for each lane i of A, the
    history ``ha[i][d]`` of the values that entered it: ``valid ? a[i] : 0`` of the run cycle
    ``d + 1`` run cycles ago (``d = 0``: the last run cycle), counting only cycles with ``run`` and
    no ``clear``, and zero for those before the last ``clear`` (likewise ``hb[j][d]`` for lane j of
    B).  Asserted in every cycle, for every cell PE(i, j):

    * ``a_in = ha[i][i + j]`` and ``b_in = hb[j][i + j]``: the step presented ``i + j + 1`` run
      cycles ago, in row i and column j (the skew and the neighbour links; the skew registers'
      stages, read by name from the elaborated array, are the invariant's helpers:
      stage s of lane i = ``ha[i][s]``);
    * ``acc`` = the sum, wrapped to 32 bits, of the cell's product register over the run cycles
      since the last clear (the spec's own sum, zero after a clear).

    With ``systolic.pe_product`` (the product register after a run cycle = ``int8(a_in) *
    int8(b_in)`` of that cycle) this is, for every K and every schedule: ``acc(i, j)`` = the sum,
    over the steps presented since the last clear and at least ``i + j + 3`` run cycles old, of
    ``int8(a[i]) * int8(b[j])`` (docs/formal.md, "The whole array").
    """

    name = "transport"

    def contract(self, m: Module) -> None:
        arr, n = self.array, self.size
        fragment = self._elaborate(m, free_inputs=True)
        hist = {}
        for side, lanes in (("a", arr.a), ("b", arr.b)):
            hist[side] = [[Signal(OPERAND, name=f"h{side}_{i}_{d}") for d in range(2 * n - 1)] for i in range(n)]
            for i in range(n):
                h = hist[side][i]
                with m.If(arr.clear):
                    m.d.sync += [x.eq(0) for x in h]
                with m.Elif(arr.run):
                    m.d.sync += h[0].eq(Mux(arr.valid, lanes[i], 0))
                    m.d.sync += [h[d].eq(h[d - 1]) for d in range(1, len(h))]
            for i, stages in enumerate(_stages(fragment, side, n)):
                for s, stage in enumerate(stages):
                    m.d.comb += Assert(stage == hist[side][i][s])
        for i in range(n):
            for j in range(n):
                pe = arr.pes[i][j]
                total = Signal(signed(arr.acc_bits), name=f"sum_{i}_{j}")
                with m.If(arr.clear):
                    m.d.sync += total.eq(0)
                with m.Elif(arr.run):
                    m.d.sync += total.eq(total + pe.product)
                m.d.comb += [Assert(pe.a_in == hist["a"][i][i + j]), Assert(pe.b_in == hist["b"][j][i + j]),
                             Assert(pe.acc == total)]
        corner = arr.pes[n - 1][n - 1]
        cleared = Signal()
        with m.If(arr.clear):
            m.d.sync += cleared.eq(1)
        m.d.comb += Cover(cleared & (corner.acc != 0) & (corner.a_in != 0))


class ArrayValuesSpec(_ArraySpec):
    """Every cell's accumulator after one MM's schedule: the sum of its K products (bounded K).

    The array alone, driven as the matrix unit drives it (``ga2_hdl/rtl/matrix_unit.py``; the
    property ``matrix.stream`` asserts that the unit does): a clear in cycle 0 (DRAIN's), ``run`` in
    cycles 1 .. R and low after (STREAM's cycles, then WRITE's), step k (``a[i] = A[i][k]``,
    ``b[j] = B[k][j]``, ``valid``) in cycle ``2 + k`` for k < K, ``valid`` low in every other cycle (the
    lanes free then), A, B (free signed bytes), K (1 <= K <= ``k_max``) and R (``R >= K + 1``) chosen by
    the solver.  Asserted for every cell PE(i, j) of the whole array:

    * in cycle ``3 + k + i + j``, its ``a_in`` is A[i][k] and its ``b_in`` B[k][j] (k < K, the array
      run long enough to bring it there: ``R >= 2 + k + i + j``);
    * when its last product is in (``R >= K + 3 + i + j``), from cycle ``K + 4 + i + j`` on, ``acc`` is the
      sum of its product register's K values in the cycles ``4 + k + i + j`` (tapped), wrapped to 32
      bits: no other cycle's product counted, every lane's and every neighbour's value where it
      belongs, and the sum held once ``run`` is low.  (The matrix unit's R is ``K + M + N + 1``: every
      cell the write-back reads, i < M and j < N, is complete.)

    With ``systolic.pe_product`` each tapped product is ``int8(A[i][k]) * int8(B[k][j])``, so the
    accumulator is C[i][j] = the sum over k < K of A[i][k] * B[k][j].
    """

    name = "values"

    def __init__(self, config, k_max: int):
        super().__init__(config)
        self.k_max = k_max

    def contract(self, m: Module) -> None:
        arr, n, kb = self.array, self.size, self.k_max
        self._elaborate(m, free_inputs=False)
        A = [[Signal(OPERAND, name=f"A_{i}_{k}") for k in range(kb)] for i in range(n)]
        B = [[Signal(OPERAND, name=f"B_{k}_{j}") for j in range(n)] for k in range(kb)]
        K = Signal(range(kb + 1), name="K")
        last = kb + 2 * n + 3
        R = Signal(range(last + 1), name="R")
        m.d.comb += [x.eq(AnyConst(OPERAND)) for row in A + B for x in row]
        m.d.comb += [K.eq(AnyConst(len(K))), Assume((K >= 1) & (K <= kb)),
                     R.eq(AnyConst(len(R))), Assume(R >= K + 1)]
        cycle = Signal(range(last + 2), name="cycle")
        with m.If(cycle <= last):
            m.d.sync += cycle.eq(cycle + 1)
        m.d.comb += [arr.clear.eq(cycle == 0), arr.run.eq((cycle != 0) & (cycle <= R))]
        m.d.comb += [arr.valid.eq(0)] + [x.eq(AnySeq(OPERAND.width)) for x in (*arr.a, *arr.b)]
        for k in range(kb):
            with m.If((cycle == 2 + k) & (k < K)):
                m.d.comb += [arr.valid.eq(1), *(arr.a[i].eq(A[i][k]) for i in range(n)),
                             *(arr.b[j].eq(B[k][j]) for j in range(n))]
        for i in range(n):
            for j in range(n):
                pe, taps = arr.pes[i][j], []
                for k in range(kb):
                    with m.If((cycle == 3 + k + i + j) & (k < K) & (R >= 2 + k + i + j)):
                        m.d.comb += [Assert(pe.a_in == A[i][k]), Assert(pe.b_in == B[k][j])]
                    tap = Signal(signed(2 * OPERAND.width), name=f"tap_{i}_{j}_{k}")
                    with m.If(cycle == 4 + k + i + j):
                        m.d.sync += tap.eq(pe.product)
                    taps.append(tap)
                total = Const(0)
                for k, tap in enumerate(taps):
                    total = total + Mux(k < K, tap, 0)
                word = Signal(signed(arr.acc_bits), name=f"c_{i}_{j}")
                m.d.comb += word.eq(total)
                with m.If((cycle >= K + 4 + i + j) & (R >= K + 3 + i + j)):
                    m.d.comb += Assert(pe.acc == word)
        corner = arr.pes[n - 1][n - 1]
        m.d.comb += Cover((cycle == kb + 2 * n + 3) & (K == kb) & (R == kb + 2 * n + 1) & (corner.acc != 0))
