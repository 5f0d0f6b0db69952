"""An output-stationary systolic array: size x size processing elements.

Processing element PE(i, j) owns the result C[i][j].  Each cycle it takes an
``a`` value from its left neighbour and a ``b`` value from the neighbour
above, adds their product to its 32-bit accumulator (wrapping, like the
machine's int32 sums), and hands ``a`` to the right and ``b`` downwards
through one register each.  Row i of A enters at the left edge of row i,
column j of B at the top of column j.

Skew.  For A[i][k] and B[k][j] to meet in PE(i, j), row i's stream must lag
by i cycles and column j's by j cycles.  The array does this itself: it
takes one *unskewed* step per cycle (the whole column A[:, k] and the whole
row B[k, :]), registers it at the edge, and delays lane i by i further
registers.  So a step presented in cycle c (with ``valid``) is accumulated by
PE(i, j) at the end of cycle ``c + 2 + i + j`` (one edge register, then each
cell's product register before its accumulator): the first step reaches
PE(0, 0) after two cycles and the last step of a K-long product leaves the
M x N corner ``K + M + N - 2`` cycles after the first accumulation began
(the "skewed streaming" term of the MM busy time), plus the edge register
and the product register.

Cycles without ``valid`` feed zeros, which add nothing; ``run`` low freezes
every register (the matrix unit stops the array outside its streaming
phase); ``clear`` zeroes the accumulators and every pipeline register.

Structure note.  Each processing element is a :class:`ProcessingElement`
cell: a register holding its two pass-through operands (a struct), an
accumulator, and its multiply-accumulate.  The cells are built into the
array's own module; their operand registers are the elements of one
array-of-structs register (``cells``), their accumulators the elements of
the ``acc`` output register, as the skew stages are of one register per
side (the same hardware as 16 PE submodules; why it is built this way:
docs/verilog.md, "Structure and simulator speed").
"""
from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .. import isa
from ..config import Config

__all__ = ["ProcessingElement", "SystolicArray", "OPERAND", "pe_state"]

OPERAND = signed(8)


class ProcessingElement:
    """One multiply-accumulate cell, built into a module ``m``.

    ``state`` is the cell's operand register (a :func:`pe_state` struct): ``a``
    and ``b``, registered for the right and lower neighbours (:attr:`a_out`,
    :attr:`b_out`); ``acc`` is its accumulator register, the running sum.  Each
    cycle with ``run``: ``a <= a_in``, ``b <= b_in``, ``product <= a_in * b_in`` and
    ``acc <= acc + product`` (truncated to the accumulator width: wrap-around): the
    multiply and the accumulate in two stages (:attr:`SystolicArray.MAC_LATENCY`), so
    the multiplier runs from registers into a register (on an ECP5 the multiply alone
    is most of a cycle).  ``clear`` zeroes all four and wins over ``run``.

    :attr:`a_in`, :attr:`b_in` and :attr:`product` are kept for the formal contracts
    (``systolic.pe_product`` proves the product register against them; ``matrix.values``
    checks what reaches them).
    """

    def __init__(self, m: Module, state, acc, a_in, b_in, *, run, clear, product):
        self.state = state
        self._acc = acc
        self.a_in, self.b_in, self.product = a_in, b_in, product
        with m.If(clear):
            m.d.sync += [state.eq(0), acc.eq(0), product.eq(0)]
        with m.Elif(run):
            m.d.sync += [
                state.a.eq(a_in),
                state.b.eq(b_in),
                product.eq(a_in * b_in),
                acc.eq(acc + product),
            ]

    @property
    def a_out(self):
        return self.state.a

    @property
    def b_out(self):
        return self.state.b

    @property
    def acc(self):
        return self._acc


def pe_state() -> data.StructLayout:
    """The operand register of one processing element (its accumulator is separate)."""
    return data.StructLayout({"a": OPERAND, "b": OPERAND})


class SystolicArray(wiring.Component):
    """``size`` x ``size`` output-stationary array with built-in operand skew.

    Parameters
    ----------
    size : int, optional
        Rows and columns of processing elements: by default the configuration's ``array``.
    acc_bits : int
        Accumulator width (32: the machine's wrap-around int32 sums).
    config : Config
        The chip (required; ``isa.BOOK`` is the book's).

    Ports
    -----
    a : In(ArrayLayout(signed(8), size))
        One column of A: ``a[i] = A[i][k]``.
    b : In(ArrayLayout(signed(8), size))
        One row of B: ``b[j] = B[k][j]``.
    valid : In(1)
        ``a``/``b`` carry step k this cycle (else zeros enter).
    run : In(1)
        Advance the array this cycle (else every register holds).
    clear : In(1)
        Zero the accumulators and all pipeline registers.
    acc : Out(ArrayLayout(signed(acc_bits), size*size))
        ``acc[i*size + j]`` = C[i][j].

    A step presented in cycle c is accumulated by PE(i, j) at the end of
    cycle ``c + EDGE_LATENCY + MAC_LATENCY + i + j`` (with ``run`` high throughout).

    Attribute ``pes[i][j]``: the :class:`ProcessingElement` cells.
    """

    EDGE_LATENCY = 1
    #: the product register between a cell's multiplier and its accumulator
    MAC_LATENCY = 1

    def __new__(cls, size: int | None = None, acc_bits: int = isa.WORD_BITS, *, config: Config):
        # refused before the array exists: nothing left for Amaranth to warn about
        size = config.array if size is None else size
        if size < 1:
            raise ValueError(f"size={size}: the array needs at least 1 row")
        if acc_bits < 2 * OPERAND.width:
            raise ValueError(f"acc_bits={acc_bits}: an accumulator holds at least one product "
                             f"({2 * OPERAND.width} bits)")
        return super().__new__(cls, src_loc_at=1)

    def __init__(self, size: int | None = None, acc_bits: int = isa.WORD_BITS, *, config: Config):
        size = config.array if size is None else size
        self.size = size
        self.acc_bits = acc_bits
        self.pes = None
        super().__init__({
            "a": In(data.ArrayLayout(OPERAND, size)),
            "b": In(data.ArrayLayout(OPERAND, size)),
            "valid": In(1), "run": In(1), "clear": In(1),
            "acc": Out(data.ArrayLayout(signed(acc_bits), size * size)),
        })

    def _skew(self, m: Module, lanes, side: str):
        """Edge registers plus skew: lane i leaves after 1 + i cycles.

        All lanes' delay lines live in one register: a triangle of 1 + 2 + ... + size stages.
        """
        n = self.size
        starts = [i * (i + 1) // 2 for i in range(n)]        # first stage of lane i
        stages = Signal(data.ArrayLayout(OPERAND, n * (n + 1) // 2), name=f"{side}_skew")
        with m.If(self.clear):
            m.d.sync += stages.eq(0)
        with m.Elif(self.run):
            for i in range(n):
                m.d.sync += stages[starts[i]].eq(Mux(self.valid, lanes[i], 0))
                for s in range(1, i + 1):
                    m.d.sync += stages[starts[i] + s].eq(stages[starts[i] + s - 1])
        return [stages[starts[i] + i] for i in range(n)]

    def elaborate(self, platform):
        m = Module()
        n = self.size
        a_edge = self._skew(m, self.a, "a")
        b_edge = self._skew(m, self.b, "b")
        cells = Signal(data.ArrayLayout(pe_state(), n * n), name="cells")
        products = Signal(data.ArrayLayout(signed(2 * OPERAND.width), n * n), name="products")
        # The accumulators are the output port itself, a register: no wiring between the
        # cells and the port (docs/verilog.md, "Structure and simulator speed").
        pes = [[None] * n for _ in range(n)]
        for i in range(n):
            for j in range(n):
                pes[i][j] = ProcessingElement(
                    m, cells[i * n + j], self.acc[i * n + j],
                    a_in=a_edge[i] if j == 0 else pes[i][j - 1].a_out,
                    b_in=b_edge[j] if i == 0 else pes[i - 1][j].b_out,
                    run=self.run, clear=self.clear, product=products[i * n + j])
        self.pes = pes
        return m
