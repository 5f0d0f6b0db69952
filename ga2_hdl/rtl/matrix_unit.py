"""The matrix unit: MM, C = A x B on the systolic array, through operand row memories.

``MM dst A B M K N tb lda ldb ldc``: A[m][k] at ``A + m*lda + k``; B[k][n] at
``B + k*ldb + n``, or ``B + n*ldb + k`` when ``tb``; C[m][n] (int32) to
``dst + m*ldc + n``.  Operands are the signed low byte of each word.

Schedule (start in cycle t; S = M*K + K*N, D = K+M+N-2, P = M*N)::

    t+1                  LOAD    register the walkers: bases, strides, counts
    t+2 .. t+S+1         STAGE   one scratchpad read per cycle: A row by row, then B
    t+S+2                DRAIN   the last staged word arrives (scratchpad read latency);
                                 the array's accumulators and pipeline registers are cleared
    r = t+S+3            STREAM  read step 0 of the operand memories (their read latency)
    r+1                          step 0 enters the array's edge register
    r+2                          ... and the first cells' product registers
    r+3 .. r+D+2                 the D = K+M+N-2 cycles of skewed accumulation
    r+D+3 .. r+D+P+2     WRITE   select C[m][n] into the write-back register, one per cycle
    r+D+4 .. r+D+P+3             ... which writes it to the scratchpad the next cycle
    r+D+P+4                      done

So W = S + D + P + 7: the staging reads (M*K + K*N), the skewed streaming
(K+M+N-2), the write-back (M*N) and seven cycles of control, one each for
LOAD, the scratchpad read latency (with the array's clear), the operand-memory
read latency, the array's edge register, its cells' product register, the
write-back register and the ``done`` pulse.  These are the reference machine's
cycles: its own seventh cycle cleared the array on its own (CLEAR); here the clear
shares the cycle of the read latency, and that cycle goes to the product register
that lets the multipliers run from a register into a register (docs/fpga.md).
With ``Config.mm_done_with_write`` (off on the book's chip) ``done`` is the
write-back register's "valid and last" itself, high in the cycle of the last
write, not registered into the cycle after: every write keeps its cycle and
W = S + D + P + 6.

Staging uses one address walker for both tiles: an inner index that steps
the address by 1 and an outer index that steps the row base by a stride.
A walks (outer m, stride lda; inner k); B walks (outer k, stride ldb; inner
n) or, transposed, (outer n, stride ldb; inner k).  Each word read lands
one cycle later in lane (m or n), position k of the A or B operand memory.

Wide scratchpad port (``Config.spad_ports`` = P > 1).  The walker's inner index
counts *chunks* of P consecutive words: a row of A (K words) is ceil(K/P)
reads, a row of B (N words) ceil(N/P), a row of B stored transposed (K words)
ceil(K/P); the last chunk of a row is masked to the row's words.  The operand
memories are banked by step (:class:`~ga2_hdl.rtl.rowmem.BankedOperandRowMemory`),
so a chunk along k (A, B transposed) lands in P banks at once and a chunk
across lanes (B) in P byte lanes of one bank.  The write-back writes a row of C
P words per cycle (ceil(N/P) per row).  Nothing else changes, so

    W = M*ceil(K/P) + (tb ? N*ceil(K/P) : K*ceil(N/P)) + (K+M+N-2) + M*ceil(N/P) + 7

(``isa``'s MM formula for the configuration).  Hardware cost over P = 1: the
operand memories in P banks each, P write-back lanes (a P-way selection of
accumulators instead of one), the chunk masks (P comparators per walker), and a
staging register of P bytes.

A wide port's chunk passes a register (``staged``) between the scratchpad's read
data (a bank's block RAM output through the read rotator) and the operand
memories' write port, in the slack of LOAD's cycle: the walkers are loaded in
every idle cycle, so in the start cycle t too (the instruction is held from
then on), and staging reads in t+1 .. t+S instead of t+2 .. t+S+1::

    t+1 .. t+S           STAGE   one read per cycle (chunk j in t+1+j)
    t+2 .. t+S+1                 chunk j arrives (t+2+j) and is registered (staged)
    t+S+1                LAND    the last chunk arrives
    t+S+2                DRAIN   the last chunk is written from staged; the array is cleared
    r = t+S+3            STREAM  as above

so every cycle from DRAIN on, and W, are those above.

Streaming while staging (``Config.stream_while_staging``; off on the book's chip).  Step k
of the stream reads row k of both operand memories, so it only needs B's row k to have
landed, not the whole of B.  B not transposed is staged row by row (row k's ceil(N/P)
reads), so the stream can start ``K - 1`` cycles before the last staged word lands: the
clear (DRAIN's work) comes in cycle ``t + stream_start - 1`` and the stream reads step 0 in
``r = t + stream_start`` (:func:`stream_start`: ``S + 3``, less ``K - 1`` when B is not
transposed), while the staging goes on beside it; every row still lands a cycle or more
before its read (row k's last chunk is written in ``t + S + 2 - (K - 1 - k)*ceil(N/P)``,
at most ``r + k - 1``).  A transposed B lands lane by lane, its row k complete only at
the end, so its stream starts as before.  The FSM waits in FEED for the stream's end; the
stream and the clear are driven by a count: in the first staging cycle the unit registers
the staging reads of A and of B (the instruction's products), in the second forms the count
to the clear from them, then counts down (no multiplication between the instruction
register and a count: with it in one cycle that path limited ``fast`` to 65.4 MHz,
docs/fpga.md).  Every other cycle is as above, so

    W = M*ceil(K/P) + (tb ? N*ceil(K/P) : K*ceil(N/P)) + (tb ? K+M+N-2 : M+N-1) + M*ceil(N/P) + 7
"""
from types import SimpleNamespace

from amaranth.hdl import Array, Cat, Module, Mux, Signal, Value, unsigned
from amaranth.lib import data, wiring

from .. import isa
from ..config import Config
from .decoder import operand
from .layout import SpadPort, UnitSignature, spad_addr_bits, spad_read_word
from .rowmem import BankedOperandRowMemory, OperandRowMemory
from .systolic import SystolicArray

__all__ = ["MatrixUnit", "chunk_count", "staging_read_parts", "staging_reads", "stream_start"]


def _operand(ins, name):
    return operand(ins, "MM", name)


def chunk_count(v, P: int) -> Value:
    """``ceil(v / P)`` for a hardware value ``v`` and a port of ``P`` words (a power of two): ``v`` itself
    at P = 1, else a shift."""
    return Value.cast(v) if P == 1 else (v + (P - 1)) >> (P.bit_length() - 1)


def staging_read_parts(operand, P: int) -> tuple[Value, Value]:
    """The matrix unit's staging reads of A and of B for the MM whose operands ``operand(name)`` gives, on
    a port of ``P`` words: ``M*ceil(K/P)`` and ``tb ? N*ceil(K/P) : K*ceil(N/P)``."""
    M, K, N, tb = (operand(n) for n in ("M", "K", "N", "tb"))
    return M * chunk_count(K, P), Mux(tb, N * chunk_count(K, P), K * chunk_count(N, P))


def staging_reads(operand, P: int) -> Value:
    """The matrix unit's staging reads S of the MM whose operands ``operand(name)`` gives, on a port of
    ``P`` words: ``M*ceil(K/P) + (tb ? N*ceil(K/P) : K*ceil(N/P))``."""
    a_reads, b_reads = staging_read_parts(operand, P)
    return a_reads + b_reads


def stream_start(operand, config: Config, reads=None) -> Value:
    """Cycles from an MM's start to its stream's first read of the operand memories: ``S + 3`` (S the
    staging reads, :func:`staging_reads`, or ``reads`` when given), or with
    ``config.stream_while_staging`` and B not transposed ``S + 3 - (K - 1)``.  The unit's schedule, and
    its contracts' (:mod:`ga2_hdl.contracts.matrix`)."""
    start = (staging_reads(operand, config.spad_ports) if reads is None else reads) + 3
    if not config.stream_while_staging:
        return start
    return start - Mux(operand("tb"), 0, operand("K") - 1)


class MatrixUnit(wiring.Component):
    """Executes MM.

    Parameters
    ----------
    config : Config
        The chip (required; ``isa.BOOK`` is the book's): ``config.array`` is the array size (largest M
        and N), ``config.max_k`` the depth of the operand memories (largest K),
        ``config.spad_words`` sets the address width, ``config.spad_ports`` the width of
        the scratchpad port.

    Ports
    -----
    start, ins, done, busy, spad : UnitSignature
        The unit contract (:class:`ga2_hdl.rtl.layout.UnitSignature`); ``spad`` reads while
        staging and writes C.  A ``start`` assumes a legal shape (the sequencer's issue
        check refuses the others).

    Attributes ``array``, ``a_mem``, ``b_mem`` are the submodules (for tests).
    """

    def __init__(self, *, config: Config):
        self.config = config
        self.size = size = config.array
        self.max_k = max_k = config.max_k
        self.ports = config.spad_ports
        self.array = SystolicArray(config=config)
        if self.ports == 1:
            self.a_mem = OperandRowMemory(config=config)
            self.b_mem = OperandRowMemory(config=config)
            super().__init__(UnitSignature(config=config))
        else:
            self.a_mem = BankedOperandRowMemory(size, max_k, self.ports)
            self.b_mem = BankedOperandRowMemory(size, max_k, self.ports)
            super().__init__(UnitSignature(spad=SpadPort(words=self.ports, config=config), config=config))

    def elaborate(self, platform):
        m = Module()
        m.submodules.array = self.array
        m.submodules.a_mem = self.a_mem
        m.submodules.b_mem = self.b_mem
        r = self._registers()

        # The datapath around the FSM: each in a submodule of its own, so that in Amaranth's
        # simulator a change wakes only the logic that reads it (another unit's scratchpad
        # reads, for one, wake only the landing wires).
        m.submodules.landing = self._land_staged_words(r.land)
        m.submodules.feed = self._feed_array(r.stream)
        m.submodules.write_port = self._drive_write_port(r.out)
        m.d.sync += [r.land.valid.eq(0), r.stream.mem_valid.eq(0), r.out.valid.eq(0)]
        if self.config.mm_done_with_write:  # done with the last write (the busy formula's 6)
            m.d.comb += self.done.eq(r.out.valid & r.out.last)
        else:                               # done the cycle after it (the book's 7)
            m.d.sync += self.done.eq(r.out.valid & r.out.last)
        with m.If(self.done):
            m.d.sync += self.busy.eq(0)

        wide = self.ports > 1
        early = self.config.stream_while_staging
        with m.FSM(name="mm") as fsm:
            with m.State("IDLE"):
                if wide:
                    # the walkers are loaded in every idle cycle, so in the start cycle's too (the
                    # instruction is held from then on), and staging reads from t+1 (the module's
                    # docstring: the cycle of LOAD goes to the staging register)
                    self._load(m, r)
                with m.If(self.start):
                    m.d.sync += self.busy.eq(1)
                    m.next = "STAGE" if wide else "LOAD"
            if not wide:
                with m.State("LOAD"):
                    self._load(m, r)
                    m.next = "STAGE"
            with m.State("STAGE"):
                self._stage(m, r)
            if early:
                with m.State("FEED"):       # the staging is over; the stream runs to its end
                    with m.If(self._stream_ends(r)):
                        m.next = "WRITE"
            else:
                if wide:
                    with m.State("LAND"):   # the last chunk arrives and is registered
                        m.next = "DRAIN"
                with m.State("DRAIN"):      # the array is cleared while the last staged word lands
                    m.d.comb += self.array.clear.eq(1)
                    m.d.sync += r.stream.step.eq(0)
                    m.next = "STREAM"
                with m.State("STREAM"):
                    self._stream(m, r)
                    with m.If(self._stream_ends(r)):
                        m.next = "WRITE"
            with m.State("WRITE"):
                self._write_back(m, r)
        if early:
            self._stream_beside_staging(m, r, counting=fsm.ongoing("STAGE") | fsm.ongoing("FEED"))
        return m

    # ---- chunks of the scratchpad port (spad_ports = P words; P = 1 on the book's chip)

    def _chunk_start(self, index):
        """The first element of chunk ``index`` (the index itself on a one-word port)."""
        return index if self.ports == 1 else index << (self.ports.bit_length() - 1)

    def _last_chunk(self, last):
        """The chunk holding element ``last`` (``last`` itself on a one-word port)."""
        return last if self.ports == 1 else last >> (self.ports.bit_length() - 1)

    def _chunk_mask(self, index, last):
        """Lanes j of chunk ``index`` whose element (chunk start + j) is at most ``last``."""
        return Cat(*((self._chunk_start(index) + j) <= last for j in range(self.ports)))

    # ---- registers

    def _registers(self):
        """The unit's registers, one struct-typed register per purpose (a wide port's chunk
        fields only when ``spad_ports`` > 1)."""
        dim_bits = max(self.size, self.max_k).bit_length()
        addr, dim = unsigned(spad_addr_bits(self.config)), unsigned(dim_bits)
        P, wide = self.ports, self.ports > 1
        return SimpleNamespace(
            dims=Signal(data.StructLayout({
                "last_m": dim, "last_k": dim, "last_n": dim,    # M-1, K-1, N-1
                "stream_last": unsigned(dim_bits + 2),           # K+M+N: the corner's last accumulation
                **({"last_n_chunk": dim} if wide else {}),       # the chunk holding column N-1
            }), name="dims"),
            walk=Signal(data.StructLayout({                      # the staging walker
                "ptr": addr,           # address read this cycle
                "row": addr,           # base address of the current outer index
                "stride": addr,        # outer step (lda, then ldb)
                "inner": dim, "outer": dim, "inner_last": dim, "outer_last": dim,
                "in_b": 1,             # staging B (else A)
                "inner_is_lane": 1,    # B not transposed: the inner index is the column n
                **({"inner_end": dim} if wide else {}),          # the row's last element (chunk mask)
            }), name="walk"),
            land=Signal(data.StructLayout({                      # where this cycle's read data lands
                "valid": 1, "b": 1, "lane": range(self.size), "k": range(self.max_k),
                **({"along_k": 1, "mask": P} if wide else {}),   # a chunk along k (A, B^T) or across lanes
            }), name="land"),
            stream=Signal(data.StructLayout({
                "step": unsigned(dim_bits + 2),                  # cycles since STREAM began
                "mem_valid": 1,                                  # the operand memories deliver a step
                **({"armed": 1,                                  # the clear is still to come
                    "phase": 2,                                  # 0, 1: the count being formed; 2: counting
                    "a_reads": unsigned(self._until_clear_bits()),   # the staging reads of A and B
                    "b_reads": unsigned(self._until_clear_bits()),
                    "active": 1,                                 # streaming
                    "until_clear": unsigned(self._until_clear_bits())}
                   if self.config.stream_while_staging else {}),
            }), name="stream"),
            wb=Signal(data.StructLayout({                        # the write-back walker
                "m": dim, "n": dim, "row": addr, "addr": addr,   # n counts chunks of P columns
            }), name="wb"),
            out=Signal(data.StructLayout({                       # the write-back register
                "valid": 1, "last": 1, "addr": addr,
                "data": data.ArrayLayout(unsigned(isa.WORD_BITS), P) if wide else unsigned(isa.WORD_BITS),
                **({"mask": P} if wide else {}),
            }), name="out"),
        )

    # ---- operand loading: scratchpad -> operand row memories

    def _load(self, m, r):
        """LOAD: register the shape, the A walk and the write-back walker from the instruction."""
        ins = self.ins
        M, K, N = (_operand(ins, n) for n in ("M", "K", "N"))
        m.d.sync += [
            r.dims.last_m.eq(M - 1), r.dims.last_k.eq(K - 1), r.dims.last_n.eq(N - 1),
            r.dims.stream_last.eq(K + M + N - 2 + SystolicArray.EDGE_LATENCY + SystolicArray.MAC_LATENCY),
            r.walk.ptr.eq(_operand(ins, "A")), r.walk.row.eq(_operand(ins, "A")),
            r.walk.stride.eq(_operand(ins, "lda")),
            r.walk.inner.eq(0), r.walk.outer.eq(0),
            r.walk.inner_last.eq(self._last_chunk(K - 1)), r.walk.outer_last.eq(M - 1),
            r.walk.in_b.eq(0), r.walk.inner_is_lane.eq(0),
            r.wb.m.eq(0), r.wb.n.eq(0),
            r.wb.row.eq(_operand(ins, "dst")), r.wb.addr.eq(_operand(ins, "dst")),
        ]
        if self.ports > 1:
            m.d.sync += [r.walk.inner_end.eq(K - 1), r.dims.last_n_chunk.eq(self._last_chunk(N - 1))]
        if self.config.stream_while_staging:
            m.d.sync += [r.stream.armed.eq(1), r.stream.phase.eq(0)]

    def _stage(self, m, r):
        """STAGE: one scratchpad read (of a chunk) per cycle, A row by row, then B; its word lands
        next cycle."""
        walk, dims, tb = r.walk, r.dims, _operand(self.ins, "tb")
        wide = self.ports > 1
        m.d.comb += [self.spad.rd_en.eq(1), self.spad.rd_addr.eq(walk.ptr)]
        inner = self._chunk_start(walk.inner)
        m.d.sync += [
            r.land.valid.eq(1),
            r.land.b.eq(walk.in_b),
            r.land.lane.eq(Mux(walk.inner_is_lane, inner, walk.outer)),
            r.land.k.eq(Mux(walk.inner_is_lane, walk.outer, inner)),
        ]
        if wide:
            mask = self._chunk_mask(walk.inner, walk.inner_end)
            m.d.comb += self.spad.rd_mask.eq(mask)
            m.d.sync += [r.land.mask.eq(mask), r.land.along_k.eq(~walk.inner_is_lane)]
        with m.If(walk.inner == walk.inner_last):
            m.d.sync += walk.inner.eq(0)
            with m.If(walk.outer == walk.outer_last):
                with m.If(walk.in_b):
                    m.next = "FEED" if self.config.stream_while_staging else "LAND" if wide else "DRAIN"
                with m.Else():     # A done: walk B
                    b_base = _operand(self.ins, "B")
                    row_end = Mux(tb, dims.last_k, dims.last_n)
                    m.d.sync += [
                        walk.in_b.eq(1), walk.inner_is_lane.eq(~tb),
                        walk.outer.eq(0),
                        walk.ptr.eq(b_base), walk.row.eq(b_base),
                        walk.stride.eq(_operand(self.ins, "ldb")),
                        walk.inner_last.eq(self._last_chunk(row_end)),
                        walk.outer_last.eq(Mux(tb, dims.last_n, dims.last_k)),
                    ]
                    if wide:
                        m.d.sync += walk.inner_end.eq(row_end)
            with m.Else():
                m.d.sync += [
                    walk.outer.eq(walk.outer + 1),
                    walk.row.eq(walk.row + walk.stride),
                    walk.ptr.eq(walk.row + walk.stride),
                ]
        with m.Else():
            m.d.sync += [walk.inner.eq(walk.inner + 1), walk.ptr.eq(walk.ptr + self.ports)]

    def _land_staged_words(self, land):
        """The word (chunk) read last cycle goes to lane ``land.lane``, position ``land.k``, of A or B;
        a wide port's chunk to P positions along k (A, B transposed) or P lanes (B), from the
        staging register (``staged``: the chunk's low bytes and ``land``, a cycle later), so no bank
        output reaches the operand memories' write data."""
        w = Module()
        if self.ports > 1:
            staged = Signal(data.StructLayout({
                **{name: field.shape for name, field in land.shape()},
                "data": data.ArrayLayout(unsigned(8), self.ports),
            }), name="staged")
            w.d.sync += [getattr(staged, name).eq(getattr(land, name)) for name, _ in land.shape()]
            w.d.sync += [staged.data[j].eq(self.spad.rd_data[j][:8]) for j in range(self.ports)]
            land = staged
        for mem in (self.a_mem, self.b_mem):
            if self.ports == 1:
                w.d.comb += [
                    mem.wr_lane.eq(land.lane),
                    mem.wr_addr.eq(land.k),
                    mem.wr_data.eq(spad_read_word(self.spad)[:8]),
                ]
            else:
                w.d.comb += [
                    mem.wr_along_k.eq(land.along_k), mem.wr_lane.eq(land.lane), mem.wr_k.eq(land.k),
                    mem.wr_mask.eq(land.mask),
                    *(mem.wr_data[j].eq(land.data[j]) for j in range(self.ports)),
                ]
        w.d.comb += [
            self.b_mem.wr_en.eq(land.valid & land.b),
            self.a_mem.wr_en.eq(land.valid & ~land.b),
        ]
        return w

    # ---- the systolic schedule: operand row memories -> array

    def _stream(self, m, r):
        """STREAM: read step k of both memories in cycle r+k (k <= K-1); run the array until the
        M x N corner has taken its last product (:meth:`_stream_ends`)."""
        step = r.stream.step
        reading = step <= r.dims.last_k
        m.d.comb += [
            self.array.run.eq(1),
            self.a_mem.rd_en.eq(reading), self.a_mem.rd_addr.eq(step),
            self.b_mem.rd_en.eq(reading), self.b_mem.rd_addr.eq(step),
        ]
        m.d.sync += [r.stream.mem_valid.eq(reading), step.eq(step + 1)]

    def _stream_ends(self, r) -> Value:
        """The stream's last cycle: the corner's last product is in (WRITE next)."""
        ends = r.stream.step == r.dims.stream_last
        return ends & r.stream.active if self.config.stream_while_staging else ends

    def _until_clear_bits(self) -> int:
        """Bits of the count to the clear: at most the staging reads of the largest MM, plus 2."""
        P, n, k = self.ports, self.size, self.max_k
        most = n * -(-k // P) + max(n * -(-k // P), k * -(-n // P)) + 2
        return most.bit_length()

    #: cycles from the first staging read to the count's first cycle: the staging reads of A and B are
    #: registered in the first, the count formed from them in the second (no multiplication between the
    #: instruction and the count: the instruction register fans out to the whole chip)
    COUNT_SETUP = 2

    def _stream_beside_staging(self, m, r, *, counting) -> None:
        """With ``stream_while_staging``: the clear in cycle ``t + stream_start - 1``, then the stream
        (:meth:`_stream`) until its end, while the FSM stages and then waits in FEED.  From the first
        staging read (``t + 2`` on a one-word port, after LOAD; ``t + 1`` on a wide one) the unit
        registers the staging reads of A and B, then forms the count to the clear from them, then counts
        down (:attr:`COUNT_SETUP` cycles of set-up, which every MM has: the clear is at least that far)."""
        st = r.stream
        first_read = 2 if self.ports == 1 else 1
        operand = lambda n: _operand(self.ins, n)
        with m.If(counting & st.armed):
            with m.Switch(st.phase):
                with m.Case(0):
                    a_reads, b_reads = staging_read_parts(operand, self.ports)
                    m.d.sync += [st.a_reads.eq(a_reads), st.b_reads.eq(b_reads), st.phase.eq(1)]
                with m.Case(1):
                    start = stream_start(operand, self.config, reads=st.a_reads + st.b_reads)
                    m.d.sync += [st.until_clear.eq(start - 1 - first_read - self.COUNT_SETUP), st.phase.eq(2)]
                with m.Default():
                    with m.If(st.until_clear == 0):
                        m.d.comb += self.array.clear.eq(1)
                        m.d.sync += [st.armed.eq(0), st.active.eq(1), st.step.eq(0)]
                    with m.Else():
                        m.d.sync += st.until_clear.eq(st.until_clear - 1)
        with m.If(st.active):
            self._stream(m, r)
            with m.If(self._stream_ends(r)):
                m.d.sync += st.active.eq(0)

    def _feed_array(self, stream):
        """The operand memories' read data is the array's input step, one cycle after the read."""
        f = Module()
        f.d.comb += [
            self.array.a.eq(self.a_mem.rd_data),
            self.array.b.eq(self.b_mem.rd_data),
            self.array.valid.eq(stream.mem_valid),
        ]
        return f

    # ---- the write-back: array -> scratchpad

    def _write_back(self, m, r):
        """WRITE: select C[m][n] (a wide port: the chunk of P columns from n) into the write-back
        register, one per cycle, row by row."""
        wb, dims = r.wb, r.dims
        last_n = dims.last_n if self.ports == 1 else dims.last_n_chunk
        if self.ports == 1:
            select = [r.out.data.eq(self.array.acc[wb.m * self.size + wb.n])]
        else:
            accs = Array(self.array.acc[i] for i in range(self.size * self.size))
            select = [r.out.mask.eq(self._chunk_mask(wb.n, dims.last_n)),
                      *(r.out.data[j].eq(accs[wb.m * self.size + self._chunk_start(wb.n) + j])
                        for j in range(self.ports))]
        m.d.sync += [
            r.out.valid.eq(1),
            r.out.addr.eq(wb.addr),
            *select,
            r.out.last.eq((wb.m == dims.last_m) & (wb.n == last_n)),
        ]
        with m.If(wb.n == last_n):
            next_row = wb.row + _operand(self.ins, "ldc")
            m.d.sync += [wb.n.eq(0), wb.m.eq(wb.m + 1), wb.row.eq(next_row), wb.addr.eq(next_row)]
            with m.If(wb.m == dims.last_m):
                m.next = "IDLE"
        with m.Else():
            m.d.sync += [wb.n.eq(wb.n + 1), wb.addr.eq(wb.addr + self.ports)]

    def _drive_write_port(self, out):
        """The write-back register drives the scratchpad's write port (a cycle after its select)."""
        w = Module()
        w.d.comb += [
            self.spad.wr_en.eq(out.valid),
            self.spad.wr_addr.eq(out.addr),
            self.spad.wr_data.eq(out.data),
        ]
        if self.ports > 1:
            w.d.comb += self.spad.wr_mask.eq(Mux(out.valid, out.mask, 0))
        return w
