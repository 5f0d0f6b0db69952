"""The matrix unit: MM, C = A x B on the systolic array, through operand row memories.

``MM dst A B M K N tb lda ldb ldc``: A[m][k] at ``A + m*lda + k``; B[k][n] at
``B + k*ldb + n``, or ``B + n*ldb + k`` when ``tb``; C[m][n] (int32) to
``dst + m*ldc + n``.  Operands are the signed low byte of each word.

Schedule (start in cycle t; S = M*K + K*N, D = K+M+N-2, P = M*N)::

    t+1                  LOAD    register the walkers: bases, strides, counts
    t+2 .. t+S+1         STAGE   one scratchpad read per cycle: A row by row, then B
    t+S+2                DRAIN   the last staged word arrives (scratchpad read latency)
    t+S+3                CLEAR   zero the array's accumulators and pipeline registers
    r = t+S+4            STREAM  read step 0 of the operand memories (their read latency)
    r+1                          step 0 enters the array's edge register
    r+2 .. r+D+1                 the D = K+M+N-2 cycles of skewed accumulation
    r+D+2 .. r+D+P+1     WRITE   select C[m][n] into the write-back register, one per cycle
    r+D+3 .. r+D+P+2             ... which writes it to the scratchpad the next cycle
    r+D+P+3                      done

So W = S + D + P + 7: the staging reads (M*K + K*N), the skewed streaming
(K+M+N-2), the write-back (M*N) and seven cycles of control, one each for
LOAD, the scratchpad read latency, CLEAR, the operand-memory read latency,
the array's edge register, the write-back register and the ``done`` pulse.
These are the reference machine's cycles; a faster configuration could
overlap CLEAR with staging or start writing back while the corner PEs finish.

Staging uses one address walker for both tiles: an inner index that steps
the address by 1 and an outer index that steps the row base by a stride.
A walks (outer m, stride lda; inner k); B walks (outer k, stride ldb; inner
n) or, transposed, (outer n, stride ldb; inner k).  Each word read lands
one cycle later in lane (m or n), position k of the A or B operand memory.
"""
from amaranth.hdl import Module, Mux, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from . import isa
from .decoder import operand
from .layout import INSTRUCTION, SPAD_ADDR_BITS, SpadPort
from .rowmem import OperandRowMemory
from .systolic import SystolicArray

__all__ = ["MatrixUnit"]


def _operand(ins, name):
    return operand(ins, "MM", name)


class MatrixUnit(wiring.Component):
    """Executes MM (unit control contract: start/done/ins/spad).

    Parameters
    ----------
    size : int
        Array size (largest M and N); the ISA's is ``isa.MM_MAX_MN``.
    max_k : int
        Depth of the operand memories (largest K); the ISA's is ``isa.MM_MAX_K``.

    Ports
    -----
    ``start``: In(1), one-cycle pulse in the issue cycle of an MM (legal shape assumed:
    the sequencer's issue check refuses the others).
    ``ins``: In(INSTRUCTION), held stable from ``start`` until ``done``.
    ``done``: Out(1), one-cycle pulse ``ins.busy()`` cycles after ``start``.
    ``busy``: Out(1), high from the cycle after ``start`` until the cycle before ``done``.
    ``spad``: Out(SpadPort()), scratchpad master port (reads while staging, writes C).

    Attributes ``array``, ``a_mem``, ``b_mem`` are the submodules (for tests).
    """

    def __init__(self, size: int = isa.MM_MAX_MN, max_k: int = isa.MM_MAX_K):
        self.size = size
        self.max_k = max_k
        self.array = SystolicArray(size)
        self.a_mem = OperandRowMemory(size, max_k)
        self.b_mem = OperandRowMemory(size, max_k)
        super().__init__({
            "start": In(1), "ins": In(INSTRUCTION), "done": Out(1), "busy": Out(1),
            "spad": Out(SpadPort()),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.array = array = self.array
        m.submodules.a_mem = a_mem = self.a_mem
        m.submodules.b_mem = b_mem = self.b_mem

        ins = self.ins
        dim_bits = max(self.size, self.max_k).bit_length()
        addr = unsigned(SPAD_ADDR_BITS)
        dim = unsigned(dim_bits)
        M_ins, K_ins, N_ins = (_operand(ins, n) for n in ("M", "K", "N"))
        tb = _operand(ins, "tb")

        # The unit's registers, grouped by purpose (each group is one struct-typed register).
        dims = Signal(data.StructLayout({
            "last_m": dim, "last_k": dim, "last_n": dim,   # M-1, K-1, N-1
            "stream_last": unsigned(dim_bits + 2),          # K+M+N-1: the corner's last accumulation
        }), name="dims")
        walk = Signal(data.StructLayout({                   # the staging walker
            "ptr": addr,           # address read this cycle
            "row": addr,           # base address of the current outer index
            "stride": addr,        # outer step (lda, then ldb)
            "inner": dim, "outer": dim, "inner_last": dim, "outer_last": dim,
            "in_b": 1,             # staging B (else A)
            "inner_is_lane": 1,    # B not transposed: the inner index is the column n
        }), name="walk")
        land = Signal(data.StructLayout({                   # where this cycle's read data lands
            "valid": 1, "b": 1, "lane": range(self.size), "k": range(self.max_k),
        }), name="land")
        stream = Signal(data.StructLayout({
            "step": unsigned(dim_bits + 2),                 # cycles since STREAM began
            "mem_valid": 1,                                 # the operand memories deliver a step
        }), name="stream")
        wb = Signal(data.StructLayout({                     # the write-back walker
            "m": dim, "n": dim, "row": addr, "addr": addr,
        }), name="wb")
        out = Signal(data.StructLayout({                    # the write-back register
            "valid": 1, "last": 1, "addr": addr, "data": unsigned(isa.WORD_BITS),
        }), name="out")
        last_m, last_k, last_n, stream_last = dims.last_m, dims.last_k, dims.last_n, dims.stream_last
        ptr, row, stride = walk.ptr, walk.row, walk.stride
        inner, outer, inner_last, outer_last = walk.inner, walk.outer, walk.inner_last, walk.outer_last
        in_b, inner_is_lane = walk.in_b, walk.inner_is_lane
        land_valid, land_b, land_lane, land_k = land.valid, land.b, land.lane, land.k
        step, mem_valid = stream.step, stream.mem_valid
        wb_m, wb_n, wb_row, wb_addr = wb.m, wb.n, wb.row, wb.addr
        out_valid, out_last, out_addr, out_data = out.valid, out.last, out.addr, out.data

        # ---- staged words land in the operand memories (one cycle after their read)
        for mem in (a_mem, b_mem):
            m.d.comb += [
                mem.wr_lane.eq(land_lane),
                mem.wr_addr.eq(land_k),
                mem.wr_data.eq(self.spad.rd_data[:8]),
            ]
        m.d.comb += [
            b_mem.wr_en.eq(land_valid & land_b),
            a_mem.wr_en.eq(land_valid & ~land_b),
        ]
        m.d.sync += land_valid.eq(0)

        # ---- operand memories feed the array (one cycle after their read)
        m.d.comb += [
            array.a.eq(a_mem.rd_data),
            array.b.eq(b_mem.rd_data),
            array.valid.eq(mem_valid),
        ]
        m.d.sync += mem_valid.eq(0)

        # ---- the write-back register drives the scratchpad write port
        m.d.comb += [
            self.spad.wr_en.eq(out_valid),
            self.spad.wr_addr.eq(out_addr),
            self.spad.wr_data.eq(out_data),
        ]
        m.d.sync += [out_valid.eq(0), self.done.eq(out_valid & out_last)]
        with m.If(out_valid & out_last):
            m.d.sync += self.busy.eq(0)

        with m.FSM(name="mm"):
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += self.busy.eq(1)
                    m.next = "LOAD"

            with m.State("LOAD"):
                m.d.sync += [
                    last_m.eq(M_ins - 1), last_k.eq(K_ins - 1), last_n.eq(N_ins - 1),
                    ptr.eq(_operand(ins, "A")), row.eq(_operand(ins, "A")),
                    stride.eq(_operand(ins, "lda")),
                    inner.eq(0), outer.eq(0),
                    inner_last.eq(K_ins - 1), outer_last.eq(M_ins - 1),
                    in_b.eq(0), inner_is_lane.eq(0),
                    stream_last.eq(K_ins + M_ins + N_ins - 1),
                    wb_m.eq(0), wb_n.eq(0),
                    wb_row.eq(_operand(ins, "dst")), wb_addr.eq(_operand(ins, "dst")),
                ]
                m.next = "STAGE"

            with m.State("STAGE"):
                m.d.comb += [self.spad.rd_en.eq(1), self.spad.rd_addr.eq(ptr)]
                m.d.sync += [
                    land_valid.eq(1),
                    land_b.eq(in_b),
                    land_lane.eq(Mux(inner_is_lane, inner, outer)),
                    land_k.eq(Mux(inner_is_lane, outer, inner)),
                ]
                with m.If(inner == inner_last):
                    m.d.sync += inner.eq(0)
                    with m.If(outer == outer_last):
                        with m.If(in_b):
                            m.next = "DRAIN"
                        with m.Else():     # A done: walk B
                            b_base = _operand(ins, "B")
                            m.d.sync += [
                                in_b.eq(1), inner_is_lane.eq(~tb),
                                outer.eq(0),
                                ptr.eq(b_base), row.eq(b_base),
                                stride.eq(_operand(ins, "ldb")),
                                inner_last.eq(Mux(tb, last_k, last_n)),
                                outer_last.eq(Mux(tb, last_n, last_k)),
                            ]
                    with m.Else():
                        m.d.sync += [
                            outer.eq(outer + 1),
                            row.eq(row + stride),
                            ptr.eq(row + stride),
                        ]
                with m.Else():
                    m.d.sync += [inner.eq(inner + 1), ptr.eq(ptr + 1)]

            with m.State("DRAIN"):
                m.next = "CLEAR"

            with m.State("CLEAR"):
                m.d.comb += [array.clear.eq(1)]
                m.d.sync += step.eq(0)
                m.next = "STREAM"

            with m.State("STREAM"):
                reading = step <= last_k
                m.d.comb += [
                    array.run.eq(1),
                    a_mem.rd_en.eq(reading), a_mem.rd_addr.eq(step),
                    b_mem.rd_en.eq(reading), b_mem.rd_addr.eq(step),
                ]
                m.d.sync += [mem_valid.eq(reading), step.eq(step + 1)]
                with m.If(step == stream_last):
                    m.next = "WRITE"

            with m.State("WRITE"):
                m.d.sync += [
                    out_valid.eq(1),
                    out_addr.eq(wb_addr),
                    out_data.eq(array.acc[wb_m * self.size + wb_n]),
                    out_last.eq((wb_m == last_m) & (wb_n == last_n)),
                ]
                with m.If(wb_n == last_n):
                    m.d.sync += [
                        wb_n.eq(0), wb_m.eq(wb_m + 1),
                        wb_row.eq(wb_row + _operand(ins, "ldc")),
                        wb_addr.eq(wb_row + _operand(ins, "ldc")),
                    ]
                    with m.If(wb_m == last_m):
                        m.next = "IDLE"
                with m.Else():
                    m.d.sync += [wb_n.eq(wb_n + 1), wb_addr.eq(wb_addr + 1)]
        return m
