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
PE(i, j) at the end of cycle ``c + 1 + i + j``: the first step reaches
PE(0, 0) after one cycle and the last step of a K-long product leaves the
M x N corner ``K + M + N - 2`` cycles after the first accumulation began
(the "skewed streaming" term of the MM busy time), plus the one edge
register.

Cycles without ``valid`` feed zeros, which add nothing; ``run`` low freezes
every register (the matrix unit stops the array outside its streaming
phase); ``clear`` zeroes the accumulators and every pipeline register.
"""
from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["ProcessingElement", "SystolicArray"]

OPERAND = signed(8)


class ProcessingElement(wiring.Component):
    """One multiply-accumulate cell.

    Ports: ``a_in``/``b_in``: In(signed(8)) operands this cycle;
    ``a_out``/``b_out``: Out(signed(8)), the operands registered for the right
    and lower neighbours; ``acc``: Out(signed(acc_bits)), the running sum;
    ``run``: In(1) advance (else hold); ``clear``: In(1) zero everything.
    """

    def __init__(self, acc_bits: int = 32):
        self.acc_bits = acc_bits
        super().__init__({
            "a_in": In(OPERAND), "b_in": In(OPERAND),
            "a_out": Out(OPERAND), "b_out": Out(OPERAND),
            "acc": Out(signed(acc_bits)),
            "run": In(1), "clear": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        with m.If(self.clear):
            m.d.sync += [self.a_out.eq(0), self.b_out.eq(0), self.acc.eq(0)]
        with m.Elif(self.run):
            m.d.sync += [
                self.a_out.eq(self.a_in),
                self.b_out.eq(self.b_in),
                self.acc.eq(self.acc + self.a_in * self.b_in),   # truncated to acc_bits: wraps
            ]
        return m


class SystolicArray(wiring.Component):
    """``size`` x ``size`` output-stationary array with built-in operand skew.

    Parameters
    ----------
    size : int
        Rows and columns of processing elements.
    acc_bits : int
        Accumulator width (32: the machine's wrap-around int32 sums).

    Ports
    -----
    ``a``: In(ArrayLayout(signed(8), size)), one column of A: ``a[i] = A[i][k]``.
    ``b``: In(ArrayLayout(signed(8), size)), one row of B: ``b[j] = B[k][j]``.
    ``valid``: In(1), ``a``/``b`` carry step k this cycle (else zeros enter).
    ``run``: In(1), advance the array this cycle (else every register holds).
    ``clear``: In(1), zero the accumulators and all pipeline registers.
    ``acc``: Out(ArrayLayout(signed(acc_bits), size*size)), ``acc[i*size + j]`` = C[i][j].

    A step presented in cycle c is accumulated by PE(i, j) at the end of
    cycle ``c + EDGE_LATENCY + i + j`` (with ``run`` high throughout).
    """

    EDGE_LATENCY = 1

    def __init__(self, size: int = 4, acc_bits: int = 32):
        if size < 1:
            raise ValueError(f"array size {size}: at least 1")
        self.size = size
        self.acc_bits = acc_bits
        super().__init__({
            "a": In(data.ArrayLayout(OPERAND, size)),
            "b": In(data.ArrayLayout(OPERAND, size)),
            "valid": In(1), "run": In(1), "clear": In(1),
            "acc": Out(data.ArrayLayout(signed(acc_bits), size * size)),
        })

    def _skew_lane(self, m: Module, value, lane: int, side: str):
        """Register ``value`` at the edge and delay it ``lane`` more cycles; return the last stage."""
        stage = value
        for s in range(lane + 1):
            reg = Signal(OPERAND, name=f"{side}{lane}_skew{s}")
            with m.If(self.clear):
                m.d.sync += reg.eq(0)
            with m.Elif(self.run):
                m.d.sync += reg.eq(stage)
            stage = reg
        return stage

    def elaborate(self, platform):
        m = Module()
        n = self.size
        a_edge = [self._skew_lane(m, Mux(self.valid, self.a[i], 0), i, "a") for i in range(n)]
        b_edge = [self._skew_lane(m, Mux(self.valid, self.b[j], 0), j, "b") for j in range(n)]
        pes = [[ProcessingElement(self.acc_bits) for _ in range(n)] for _ in range(n)]
        for i in range(n):
            for j in range(n):
                pe = pes[i][j]
                m.submodules[f"pe_{i}_{j}"] = pe
                m.d.comb += [
                    pe.a_in.eq(a_edge[i] if j == 0 else pes[i][j - 1].a_out),
                    pe.b_in.eq(b_edge[j] if i == 0 else pes[i - 1][j].b_out),
                    pe.run.eq(self.run),
                    pe.clear.eq(self.clear),
                    self.acc[i * n + j].eq(pe.acc),
                ]
        return m
