"""The matrix unit's values: C = A x B as the ISA defines MM, instruction after instruction.

:class:`MatrixValues` is a :class:`~ga2_hdl.contracts.values.FreeWords` contract around the
matrix unit: a free word at every element of A (``A + m*lda + k``) and of B (``B + k*ldb + n``,
or ``B + n*ldb + k`` when ``tb``) the instruction's bounded sizes use (A and B may overlap: an
address holds one word), drawn anew at each start.  Two instructions run back to back within the
depth, the second on words of its own.

It is one half of an assume-guarantee split, as ``rq.values`` is with ``requant.formula``: the
multiplications are the array's own (the other half, ``systolic.pe_product``,
:mod:`ga2_hdl.contracts.systolic`, proves by k-induction, for any inputs, that each processing
element's product register is ``int8(a_in) * int8(b_in)`` of the cycle before, after a cycle
with ``run`` and no ``clear``).  Asserted here, besides the unit contract, with the processing
elements (:class:`~ga2_hdl.rtl.systolic.ProcessingElement`) found in the unit's elaborated design:

* the operands reach the right cell in the right cycle: in the matrix unit's schedule
  (``ga2_hdl/rtl/matrix_unit.py``: step k of the stream, started ``S + 3`` cycles after the
  start, S the staging reads, reaches PE(m, n)'s inputs ``S + 5 + k + m + n`` cycles after it;
  with ``stream_while_staging`` and B not transposed, ``K - 1`` cycles earlier),
  for every m < M, n < N, k < K, PE(m, n)'s ``a_in`` is the low byte of A[m][k]'s word, its
  ``b_in`` the low byte of B[k][n]'s, and the array runs without a clear;
* every word written at ``dst + m*ldc + n`` is :func:`accumulate` of PE(m, n)'s K products of
  the cycles after those (the design's own product registers, tapped): their sum wrapped to 32
  bits, from zero.  So the accumulator was cleared between the two instructions, no other
  cycle's product counted (the cells' products outside the schedule are zero), and the
  write-back selected the right cell;
* every element of C written by the end; nothing the instruction wrote read again by it.

With ``systolic.pe_product`` each tapped product is ``int8(A[m][k]) * int8(B[k][n])``, so each
word written is :func:`dot_word` of row m of A and column n of B, the ISA's
``sum over k < K of int8(A[m][k]) * int8(B[k][n])`` wrapped to 32 bits (:func:`dot_word` is
:func:`accumulate` of those products, simulated against the golden model's MM in
``sim_tests/gen/test_formal.py``).

Elements of C that share a word (``ldc < N`` with M > 1: the ISA's last row wins) are assumed
away (``ldc >= N`` when M > 1), so that each word written has one expected value.

Why the split: without it the solver proves the unit's 8 x 8 products equal to the spec's bit
by bit, two different circuits of equal inputs (the operands pass the row memories and the
array's skew): measured on the book's chip (M = N = 1, K <= 2, yices, load 2.6-5.3), no verdict
in 900 s at 32 cycles, none in 360 s at 17.
"""
from __future__ import annotations

from amaranth.hdl import Assert, Assume, Cat, Const, Cover, Fragment, Module, Mux, Signal, Value, signed
from amaranth.hdl._ast import AnyConst

from .. import isa
from ..rtl import decoder
from ..rtl.matrix_unit import chunk_count, staging_reads, stream_start
from ..rtl.systolic import OPERAND
from .unit import UnitContract, lanes
from .values import FreeWords, wide_lane
from .vector import int8_of

__all__ = ["accumulate", "dot_word", "chunk_count", "staging_reads", "stream_start", "staging_end", "memory_writes",
           "MatrixValues", "MatrixStream", "MatrixStaging", "MatrixWriteBack"]


def accumulate(m: Module, products, k_count) -> Signal:
    """The sum of the first ``k_count`` of ``products`` (signed values; ``k_count`` a hardware value,
    the products past it ignored), wrapped to a 32-bit word: the ISA's int32 sum."""
    total = Const(0)
    for k, p in enumerate(products):
        total = total + Mux(k < k_count, p, 0)
    word = Signal(isa.WORD_BITS)
    m.d.comb += word.eq(total)                         # truncated: the ISA's wrap-around
    return word


def dot_word(m: Module, a_words, b_words, k_count) -> Signal:
    """MM's arithmetic for one element of C: ``sum(int8_of(a) * int8_of(b))`` over the first
    ``k_count`` pairs (a hardware value; the pairs past it are ignored), wrapped to a 32-bit word."""
    return accumulate(m, [int8_of(a) * int8_of(b) for a, b in zip(a_words, b_words)], k_count)


class MatrixValues(FreeWords):
    """MM's data path for every MM of the bounded sizes, on free operand words: the right bytes at the
    right cell in the right cycle, each C word the sum of its cell's products from zero (with
    ``systolic.pe_product``: C = A x B; the module's docstring).

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
    instructions : int
        How many MMs the covers ask to complete: 2 (back to back, the accumulators cleared between
        them) or 1 (a depth that holds one MM of larger sizes).
    """

    def __init__(self, unit, config, *, bounds, name="values", formal: bool = True, instructions: int = 2):
        if instructions not in (1, 2):
            raise ValueError(f"instructions={instructions}: the covers ask for one MM or two back to back")
        super().__init__(unit, config, "MM", bounds=bounds, name=name, formal=formal)
        self.dims = tuple(self.bounds[n] for n in ("M", "K", "N"))
        self.instructions = instructions

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

    def elaborate(self, platform):
        # the unit elaborated here, to find its array's processing elements
        self.unit_fragment = Fragment.get(self.unit, platform)
        return super().elaborate(platform)

    def unit_design(self):
        return self.unit_fragment

    def stream_start(self) -> Value:
        """Cycles from the start to the stream's first read (the unit's schedule,
        :func:`~ga2_hdl.rtl.matrix_unit.stream_start`): ``S + 3``, S the staging reads
        (:func:`staging_reads`); ``K - 1`` fewer with ``stream_while_staging`` and B not transposed."""
        return stream_start(lambda n: self._op(self.held, n), self.config)

    def staging_end(self) -> Value:
        """Cycles from the start to the staging's last write to an operand memory: :func:`staging_end`."""
        return staging_end(lambda n: self._op(self.held, n), self.config.spad_ports)

    def taps(self, m: Module) -> None:
        """The operands checked at each cell's inputs, and its K products tapped (``self.products``)."""
        ins, (Mb, Kb, Nb) = self.held, self.dims
        M, K, N = (self._op(ins, n) for n in ("M", "K", "N"))
        arr = self.unit.array
        stream = Signal(16, name="stream_start")
        m.d.comb += stream.eq(self.stream_start())
        self.products = {}
        for i in range(Mb):
            for n in range(Nb):
                pe, taps = arr.pes[i][n], []
                for k in range(Kb):
                    # step k at PE(i, n)'s inputs (edge register, i + n cells on), its product a cycle later
                    at_inputs, at_product = Signal(name=f"pe{i}_{n}_in{k}"), Signal(name=f"pe{i}_{n}_product{k}")
                    m.d.comb += [at_inputs.eq(self.running & (self.elapsed == stream + 2 + k + i + n)),
                                 at_product.eq(self.running & (self.elapsed == stream + 3 + k + i + n))]
                    with m.If(at_inputs & (i < M) & (n < N) & (k < K)):
                        m.d.comb += [Assert(pe.a_in == int8_of(self.word_at(self._a(ins, i, k)))),
                                     Assert(pe.b_in == int8_of(self.word_at(self._b(ins, k, n)))),
                                     Assert(arr.run & ~arr.clear)]
                    tap = Signal(signed(2 * OPERAND.width), name=f"pe{i}_{n}_tap{k}")
                    with m.If(at_product):
                        m.d.sync += tap.eq(pe.product)
                    taps.append(tap)
                self.products[i, n] = taps

    def properties(self, m: Module) -> None:
        self.taps(m)
        super().properties(m)

    def check(self, m: Module, j: int, data) -> Value:
        """C[i][n] written = the sum of PE(i, n)'s K tapped products, wrapped to 32 bits."""
        return data == accumulate(m, self.products[divmod(j, self.dims[2])], self._op(self.held, "K"))

    def contract(self, m: Module) -> None:
        super().contract(m)
        if self.dims[0] > 1:                           # one expected value per word of C
            with m.If(self.start):
                m.d.comb += Assume((self._op(self.fresh, "M") == 1)
                                   | (self._op(self.fresh, "ldc") >= self._op(self.fresh, "N")))

    def covers(self, m: Module) -> None:
        """MM completes at the largest K with a nonzero result (and again right after, for two
        instructions)."""
        p = self.unit.spad
        data = wide_lane(p, "wr_data", 0)
        ended = Signal(2)
        with m.If(self.unit.done & (ended != 3)):
            m.d.sync += ended.eq(ended + 1)
        full = self.running & (self._op(self.held, "K") == self.dims[1])
        m.d.comb += Cover(p.wr_en & full & (data != 0) & (ended == 0))
        if self.instructions == 2:
            m.d.comb += Cover(p.wr_en & full & (data != 0) & (ended == 1))


class MatrixStream(UnitContract):
    """The matrix unit's streaming: its operand memories' rows reach the array's input ports in the
    schedule's cycles, with the array's clear, run and valid as the schedule says.

    The unit around its control only: the array and both operand memories are formal cut points
    (:func:`gen.formal.sby.check`: their outputs free in every cycle), the scratchpad's read data free
    (the staging's words are ``matrix.staging``'s).  The memories' contents are free but constant
    (one row of ``size`` bytes per step k, A's and B's, chosen by the solver): a read of row k in
    cycle c is answered in c + 1 with that row (assumed; the memories' read latency,
    :class:`~ga2_hdl.rtl.rowmem.OperandRowMemory`).  With S the staging reads and DRAIN in cycle
    ``t + S + 2`` of a start in t (``ga2_hdl/rtl/matrix_unit.py``), asserted for one MM of the bounded
    sizes:

    * ``clear`` in DRAIN's cycle only; ``run`` in the K + M + N + 1 cycles after it only (the corner's
      last product in; low in WRITE and when idle); ``valid`` in cycles DRAIN + 2 .. DRAIN + 1 + K only;
    * in cycle DRAIN + 2 + k (k < K) the array's ``a`` is A's row k of the operand memory and its ``b``
      B's row k (every lane);
    * the operand memories written neither after DRAIN nor when idle (their contents at DRAIN's end,
      ``matrix.staging``'s, are what the stream reads), and read only at rows below K.

    So the array sees exactly ``systolic.values``'s schedule (cycle 0 = DRAIN, R = K + M + N + 1).
    With ``stream_while_staging`` DRAIN is the clear's cycle, ``K - 1`` cycles earlier when B is not
    transposed, and the memories are written up to the staging's last write (``t + S + 2``) and not
    after: ``matrix.staging`` checks that each row lands before the stream reads it.
    """

    def __init__(self, unit, config, *, bounds, name="stream"):
        super().__init__(unit, config, ["MM"], bounds=bounds, name=name)
        self.spec = self.iset.by_name["MM"]
        self.cutpoints = ["top.unit.array", "top.unit.a_mem", "top.unit.b_mem"]

    def _op(self, ins, name) -> Value:
        return decoder.operand(ins, self.spec, name)

    def drain_cycle(self) -> Value:
        """Cycles from the start to DRAIN, the clear: :meth:`MatrixValues.stream_start` minus one (``S + 2``,
        S the staging reads, :func:`staging_reads`; ``K - 1`` fewer with ``stream_while_staging`` and B
        not transposed)."""
        return stream_start(lambda n: self._op(self.held, n), self.config) - 1

    def properties(self, m: Module) -> None:
        u, arr, kb = self.unit, self.unit.array, self.bounds["K"]
        M, K, N = (self._op(self.held, n) for n in ("M", "K", "N"))
        drain = self.drain = Signal(16, name="drain")
        m.d.comb += drain.eq(self.drain_cycle())
        staged = Signal(16, name="staging_end")         # DRAIN's cycle unless streaming while staging
        m.d.comb += staged.eq(staging_end(lambda n: self._op(self.held, n), self.config.spad_ports))
        width = len(Value.cast(u.a_mem.rd_data))
        rows = {}
        for side, mem in (("a", u.a_mem), ("b", u.b_mem)):
            rows[side] = [Signal(width, name=f"{side}_row{k}") for k in range(kb)]
            m.d.comb += [r.eq(AnyConst(width)) for r in rows[side]]
            was_read, was_addr = Signal(name=f"{side}_was_read"), Signal.like(mem.rd_addr, name=f"{side}_was_addr")
            m.d.sync += [was_read.eq(mem.rd_en), was_addr.eq(mem.rd_addr)]
            row = Const(0, width)
            for k in reversed(range(kb)):
                row = Mux(was_addr == k, rows[side][k], row)
            with m.If(was_read):
                m.d.comb += Assume(Value.cast(mem.rd_data) == row)
            with m.If(mem.rd_en & self.running):
                m.d.comb += Assert(mem.rd_addr < K)
            with m.If(~self.running | (self.elapsed > staged)):
                m.d.comb += Assert(~mem.wr_en)
        E, run = self.elapsed, self.running
        m.d.comb += [
            Assert(arr.clear == (run & (E == drain))),
            Assert(arr.run == (run & (E >= drain + 1) & (E <= drain + 1 + K + M + N))),
            Assert(arr.valid == (run & (E >= drain + 2) & (E <= drain + 1 + K))),
        ]
        for k in range(kb):
            with m.If(run & (E == drain + 2 + k) & (k < K)):
                m.d.comb += [Assert(Value.cast(arr.a) == rows["a"][k]), Assert(Value.cast(arr.b) == rows["b"][k])]
        full = (M == self.bounds["M"]) & (N == self.bounds["N"]) & (K == kb)
        m.d.comb += [Cover(run & (E == drain + 2 + K + M + N) & full & self._op(self.held, "tb")),
                     Cover(run & (E == drain + 2 + K + M + N) & full & ~self._op(self.held, "tb"))]


def staging_end(operand, P: int) -> Value:
    """Cycles from an MM's start to the staging's last write to an operand memory, on a port of ``P``
    words: ``S + 2`` (S the staging reads, :func:`staging_reads`), DRAIN's cycle when the stream waits
    for the whole of B (without ``stream_while_staging``, or B transposed)."""
    return staging_reads(operand, P) + 2


def memory_writes(mem) -> list[tuple[Value, Value, Value, Value]]:
    """What an operand memory's write port stores this cycle: one ``(enable, lane, step, value)`` per
    value of the port.

    A one-word port's :class:`~ga2_hdl.rtl.rowmem.OperandRowMemory` stores one value, ``wr_data`` at
    (``wr_lane``, ``wr_addr``).  A wide port's :class:`~ga2_hdl.rtl.rowmem.BankedOperandRowMemory` of
    B banks stores up to B, value j when ``wr_mask[j]``: along k (``wr_along_k``) at (``wr_lane``,
    ``wr_k + j``), across lanes at (``wr_lane + j``, ``wr_k``) (the memory's documented port; its
    precondition that ``wr_k`` is a multiple of B along k is asserted by :class:`MatrixStaging`).
    """
    if not hasattr(mem, "wr_mask"):
        return [(Value.cast(mem.wr_en), Value.cast(mem.wr_lane), Value.cast(mem.wr_addr), Value.cast(mem.wr_data))]
    return [(mem.wr_en & mem.wr_mask[j], Mux(mem.wr_along_k, mem.wr_lane, mem.wr_lane + j),
             Mux(mem.wr_along_k, mem.wr_k + j, mem.wr_k), Value.cast(mem.wr_data[j]))
            for j in range(mem.n_banks)]


class MatrixStaging(MatrixValues):
    """The matrix unit's staging: at DRAIN's end its operand memories hold the scratchpad words the
    instruction's M, K, N, strides and ``tb`` name.

    :class:`MatrixValues`'s scratchpad of free words (drawn at the start; a read of lane j at address a
    answered a cycle later with the word at a + j), the array and both operand memories formal cut
    points (their outputs free: nothing the staging does depends on them).  Asserted on the memories'
    write ports (:func:`memory_writes`: one value per cycle on a one-word scratchpad port, up to P on a
    port of P words, each at its (lane, step)), for one MM of the bounded sizes:

    * every value written to A's memory at (lane i, step k) has i < M and k < K and is the low byte of
      A[i][k]'s word (``A + i*lda + k``); every value written to B's at (lane n, step k) has n < N and
      k < K and is B[k][n]'s (``B + k*ldb + n``, ``B + n*ldb + k`` when ``tb``);
    * every such element written by the end of DRAIN (the cycle ``t + S + 2``, ``matrix.stream``'s
      DRAIN; S the staging reads, ``M*ceil(K/P) + (tb ? N*ceil(K/P) : K*ceil(N/P))``), and no write
      when idle or after DRAIN;
    * on a wide port, a write along k starts at a step that is a multiple of P (the banked memory's
      precondition: value j then lands in bank j).

    With ``stream_while_staging`` the writes go on up to the staging's last (``t + S + 2``) and each
    element at step k must be written before the stream reads row k, by the end of cycle
    ``t + stream_start + k - 1`` (:meth:`MatrixValues.stream_start`: B's rows land one by one while
    the stream runs).

    Since every value written to a position is that position's operand, the memories hold after DRAIN,
    at every lane below M (N) and step below K, the operand the ISA names: the rows ``matrix.stream``
    reads.
    """

    def __init__(self, unit, config, *, bounds, name="staging"):
        super().__init__(unit, config, bounds=bounds, name=name, instructions=1)
        self.cutpoints = ["top.unit.array", "top.unit.a_mem", "top.unit.b_mem"]

    def contract(self, m: Module) -> None:
        FreeWords.contract(self, m)             # C's words are not checked here: ldc free

    def properties(self, m: Module) -> None:
        u, ins, (Mb, Kb, Nb) = self.unit, self.held, self.dims
        M, K, N = (self._op(ins, n) for n in ("M", "K", "N"))
        drain = Signal(16, name="drain")
        m.d.comb += drain.eq(self.stream_start() - 1)
        early = self.config.stream_while_staging
        staged = Signal(16, name="staging_end")         # DRAIN's cycle unless streaming while staging
        m.d.comb += staged.eq(self.staging_end())
        E, run = self.elapsed, self.running
        for side, mem, used, places in (("a", u.a_mem, M, [(i, k) for i in range(Mb) for k in range(Kb)]),
                                         ("b", u.b_mem, N, [(n, k) for n in range(Nb) for k in range(Kb)])):
            with m.If(~run | (E > staged)):
                m.d.comb += Assert(~mem.wr_en)
            if hasattr(mem, "wr_mask"):         # banked: a write along k starts in bank 0
                with m.If(mem.wr_en & mem.wr_along_k):
                    m.d.comb += Assert(mem.wr_k[:mem.n_banks.bit_length() - 1] == 0)
            writes = memory_writes(mem)
            for en, lane, k, _ in writes:
                with m.If(en):
                    m.d.comb += [Assert(lane < used), Assert(k < K)]
            written = Signal(len(places), name=f"{side}_written")
            hits = []
            for place, k in places:
                word = self._a(ins, place, k) if side == "a" else self._b(ins, k, place)
                here = Const(0)
                for j, (en, lane, step, value) in enumerate(writes):
                    at = Signal(name=f"{side}_w{j}_at{place}_{k}")
                    m.d.comb += at.eq(en & (lane == place) & (step == k))
                    with m.If(at):
                        m.d.comb += Assert(value == int8_of(self.word_at(word)))
                    here = here | at
                hits.append(here)
            with m.If(self.start):
                m.d.sync += written.eq(0)
            with m.Else():
                m.d.sync += written.eq(written | Cat(*hits))
            for j, (lane, k) in enumerate(places):
                # read by the stream in cycle drain + 1 + k (every step, after DRAIN, without streaming
                # while staging): written by the end of the cycle before
                read_at = drain + 1 + k if early else drain + 1
                with m.If(run & (E == read_at) & (lane < used) & (k < K)):
                    m.d.comb += Assert(written[j])
        full = (M == Mb) & (N == Nb) & (K == Kb)
        tb = self._op(ins, "tb")
        m.d.comb += [Cover(run & (E == drain + 1) & full & tb), Cover(run & (E == drain + 1) & full & ~tb)]


class MatrixWriteBack(MatrixStream):
    """The matrix unit's write-back: C[m][n] written in its cycle, at its address, on its lane of the
    scratchpad port, with its cell's accumulator as the stream left it.

    :class:`MatrixStream`'s environment (the array and both operand memories cut, the scratchpad's
    read data free), and one assumption on the cut array, ``systolic.transport``'s guarantee: after a
    cycle with neither ``run`` nor ``clear`` the accumulators hold.  With X = DRAIN + 2 + K + M + N
    (``matrix.stream``'s first cycle after the run, WRITE's first), a port of P words (1 on the book's
    chip) and Q = ceil(N/P) writes per row of C, asserted for one MM of the bounded sizes, row by row,
    a row's columns in chunks of P (the last chunk masked to the row's end):

    * in cycle ``X + 1 + m*Q + n div P`` (m < M, n < N) a write whose lane ``n mod P`` is enabled and
      carries ``acc[m*size + n]`` as it was in cycle X, the write's address (its lane 0's) being
      ``dst + m*ldc + P*(n div P)``, so C[m][n] goes to ``dst + m*ldc + n``;
    * no write, and no lane of a write enabled, in any other cycle.

    So every C[m][n] is written once, at the ISA's address, with its cell's sum, in the M*Q cycles the
    ISA's busy time counts for the write-back (``ldc < N`` with M > 1, words shared by two elements, is
    not excluded: the later row's write comes later, as the ISA says).  At P = 1 this is C[m][n] in
    cycle ``X + 1 + m*N + n`` at ``dst + m*ldc + n``.
    """

    def __init__(self, unit, config, *, bounds, name="write_back"):
        super().__init__(unit, config, bounds=bounds, name=name)

    def contract(self, m: Module) -> None:
        """MM started in the first cycle, once (the unit idles in its reset state until a start, so a
        later start is the same run shifted; as ``sm.values``)."""
        super().contract(m)
        first = Signal(init=1, name="first_cycle")
        m.d.sync += first.eq(0)
        m.d.comb += Assume(self.start == first)

    def properties(self, m: Module) -> None:
        u, arr, ins = self.unit, self.unit.array, self.held
        size, Mb, Nb = self.config.array, self.bounds["M"], self.bounds["N"]
        P = self.config.spad_ports
        M, K, N, dst, ldc = (self._op(ins, n) for n in ("M", "K", "N", "dst", "ldc"))
        drain = Signal(16, name="drain")
        m.d.comb += drain.eq(self.drain_cycle())
        after = Signal(16, name="after_stream")
        m.d.comb += after.eq(drain + 2 + K + M + N)
        per_row = chunk_count(N, P)                      # writes per row of C: N on a one-word port
        E, run = self.elapsed, self.running
        # the cut array's accumulators hold after a cycle without run or clear (systolic.transport)
        was_holding, before = Signal(), Signal.like(Value.cast(arr.acc))
        m.d.sync += [was_holding.eq(~arr.run & ~arr.clear), before.eq(Value.cast(arr.acc))]
        with m.If(was_holding):
            m.d.comb += Assume(Value.cast(arr.acc) == before)
        p = u.spad
        port_lanes = lanes(p, "wr")
        expected = [Const(0)] * len(port_lanes)          # per lane of the port: a write of C due now
        for i in range(Mb):
            for n in range(Nb):
                j, chunk = n % P, n // P
                snap = Signal(signed(isa.WORD_BITS), name=f"c_{i}_{n}")
                with m.If(run & (E == after)):
                    m.d.sync += snap.eq(arr.acc[i * size + n])
                here = Signal(name=f"write_c{i}_{n}")
                m.d.comb += here.eq(run & (i < M) & (n < N) & (E == after + 1 + i * per_row + chunk))
                expected[j] = expected[j] | here
                with m.If(here):
                    m.d.comb += [Assert(port_lanes[j][0]),
                                 Assert(p.wr_addr == (dst + i * ldc + chunk * P)[:len(p.wr_addr)]),
                                 Assert(wide_lane(p, "wr_data", j) == snap[:isa.WORD_BITS])]
        anything = Const(0)
        for e in expected:
            anything = anything | e
        with m.If(~anything):
            m.d.comb += Assert(~p.wr_en)
        if P > 1:                                        # and no lane beyond the row's end
            for (en, _), e in zip(port_lanes, expected):
                with m.If(~e):
                    m.d.comb += Assert(~en)
        full = (M == Mb) & (N == Nb) & (K == self.bounds["K"])
        m.d.comb += [Cover(run & full & p.wr_en & (E == after + M * per_row) & (Value.cast(p.wr_data) != 0)),
                     Cover(run & u.done & full)]
