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

from amaranth.hdl import Assert, Cover, Fragment, Module, Signal, Value, signed
from amaranth.hdl._ast import AnySeq

from ..rtl.systolic import OPERAND, SystolicArray
from .base import Spec, inputs_of

__all__ = ["PEProductSpec"]


class PEProductSpec(Spec):
    """Each PE's product register = int8(a_in) * int8(b_in) of the cycle before (run, no clear), 0 after a clear.

    Parameters
    ----------
    config : Config
        The chip (its array size).
    """

    name = "pe_product"

    def __init__(self, config):
        super().__init__()
        self.array = SystolicArray(config=config)
        self.size = self.array.size

    def contract(self, m: Module) -> None:
        arr = self.array
        m.submodules.array = Fragment.get(arr, None)      # elaborated here: its cells are found after
        for port in inputs_of(arr):
            m.d.comb += port.eq(AnySeq(len(Value.cast(port))))     # a View's len() counts elements
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
