"""Random and directed GA-2 programs, and the differential fuzz loop.

* :func:`random_program` draws one VALID program: random data in external
  memory, loads first, then a random mix of every compute operation (random
  shapes, strides, transposition, lengths; operands identical or disjoint
  where the ISA asks it), and stores at the end so every result reaches
  external memory, where all simulators can be compared.  Each program stays
  within a few thousand cycles so that the slow simulators can run many.
* the directed suite of corner cases is :mod:`gen.fuzz.directed`;
* :func:`fuzz` puts n random programs in a bundle (expected results from the
  golden model) and replays it in each named simulator.

Everything is generated for one chip, ``config``: MM
shapes up to its array size and ``max_k``, regions within its ``spad_words``,
programs within its ``imem_words``, cycle budgets by its busy times.  With the
book's configuration every program is the one it always was (the same random
draws in the same order).
"""
from __future__ import annotations

import functools
import math
import random
import time
from typing import Callable, Sequence

from ga2_hdl import isa
from ga2_hdl.formats.bundle import Bundle
from ga2_hdl.config import Config
from ga2_hdl.isa import ErrorCode, Instruction, OpSpec, make
from ga2_hdl.support.reporter import Reporter

#: the generator's choice, not an ISA limit: a random MM's C spans at most this many full tiles'
#: words (4 x 4 x 4 = 64 on the book chip), so that its program keeps room for other operands; a
#: longer C (a large ldc) is still legal and reached by the directed suite's MM at the extremes
MM_C_SPAN_TILES = 4
STRIDE_MAX = (1 << isa.OP_BY_NAME["MM"].operand("lda").bits) - 1
DEFAULT_MAX_CYCLES = 3000         #: the book chip's cycle budget per random program


def _largest_mm(config: Config) -> int:
    """The busy time of the largest MM on ``config``."""
    a, k = config.array, config.max_k
    return isa.instruction_set(config).busy(make("MM", M=a, K=k, N=a))


def default_max_cycles(*, config: Config) -> int:
    """The cycle budget of a random program on ``config``: :data:`DEFAULT_MAX_CYCLES` on the book chip,
    scaled up by whole multiples as the largest MM outgrows the book's (so the largest tiles still fit)."""
    ratio = _largest_mm(config) / _largest_mm(isa.BOOK)
    return DEFAULT_MAX_CYCLES * max(1, math.ceil(ratio - 1e-9))
Region = tuple[int, int]          # (start, length)


# ----------------------------------------------------------------------------- random data

def _word(value: int) -> int:
    return value & isa.WORD_MASK


def random_word(rng: random.Random) -> int:
    """A data word of a random kind: int8, small int, int32 accumulator, or raw bits.

    Raw bits matter: int8 operands read only the low byte of a word, int32
    operands the whole word.
    """
    kind = rng.random()
    if kind < 0.40:
        return _word(rng.randint(-128, 127))               # an int8, sign-extended (-128 included)
    if kind < 0.55:
        return _word(rng.randint(-4, 4))
    if kind < 0.80:
        return _word(rng.randint(-(1 << 20), 1 << 20))     # a typical accumulator
    if kind < 0.95:
        return rng.getrandbits(32)                         # anything: junk above the low byte
    return rng.choice([0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x7F, 0x80, 0x81, 0xFF])


# ----------------------------------------------------------------------------- regions

def _disjoint(a: Region, b: Region) -> bool:
    return a[0] + a[1] <= b[0] or b[0] + b[1] <= a[0]


#: how often a value the generator draws is put at an end of its legal range instead (so that
#: every operand's least and largest value, and regions touching the ends of both memories,
#: occur in a campaign; gen/fuzz/coverage.py counts them)
EDGE = 0.08


def _pick(rng: random.Random, lo: int, hi: int, edge: float = EDGE) -> int:
    """A value in lo..hi: an end of the range with probability ``edge``, else uniform."""
    r = rng.random()
    if r < edge / 2:
        return lo
    if r < edge:
        return hi
    return rng.randint(lo, hi)


def _free_start(rng: random.Random, length: int, avoid: Sequence[Region], limit: int,
                edge: float = EDGE) -> int | None:
    """A random start for ``length`` words inside 0..limit-1, disjoint from every region in ``avoid``
    (at one end of the memory with probability ``edge``, when that end is free)."""
    if length > limit:
        return None
    if rng.random() < edge:
        ends = [0, limit - length]
        rng.shuffle(ends)
        for s in ends:
            if all(_disjoint((s, length), r) for r in avoid):
                return s
    for _ in range(64):
        s = rng.randrange(0, limit - length + 1)
        if all(_disjoint((s, length), r) for r in avoid):
            return s
    return None


def _source_start(rng: random.Random, span: int, filled: Sequence[Region], spad: int) -> int:
    """A start for a source of ``span`` words, usually where loaded or computed data lies,
    sometimes at an end of the scratchpad (of ``spad`` words: the configuration's)."""
    SPAD = spad
    if rng.random() < EDGE:
        return rng.choice([0, SPAD - span])
    if filled and rng.random() < 0.92:
        r = rng.choice(filled)
        # mostly inside the region, sometimes running past its end
        s = r[0] + rng.randrange(r[1] - span + 1 if span <= r[1] and rng.random() < 0.7 else r[1])
    else:
        s = rng.randrange(SPAD)
    return max(0, min(s, SPAD - span))


# ----------------------------------------------------------------------------- operations

class _Builder:
    """Accumulates a program while keeping it legal and within its cycle budget.

    Every compute operation of the instruction set has a generator (:meth:`compute_ops`):
    the book's own (:attr:`DEDICATED`, which know each operation's corners), or for an
    extension's operation the generic one, :meth:`generic`, which reads the OpSpec.
    """

    #: the generators written for the book's compute operations, by mnemonic (the methods below)
    DEDICATED = {"MM": "mm", "RQ": "rq", "SM": "sm", "VADD": "vadd", "AMAX": "amax"}

    def __init__(self, rng: random.Random, ext_words: int, max_cycles: int, *, config: Config):
        self.rng = rng
        self.config = config
        self.iset = isa.instruction_set(config)
        self.spad = config.spad_words
        self.ext_words = ext_words
        self._store_cycles: dict[int, int] = {}
        self.code: list[Instruction] = []
        self.cycles = isa.FETCH_ISSUE_CYCLES          # the final HALT
        self.max_cycles = max_cycles
        #: instructions the program may hold before its HALT (the instruction memory's, less room
        #: for a fault when :func:`random_program` plants one)
        self.max_code = config.imem_words - 1
        self.filled: list[Region] = []                # scratchpad regions holding data
        self.results: list[Region] = []               # regions computed, to be stored at the end

    def compute_ops(self) -> list[Callable[[], bool]]:
        """A generator for every operation that is neither HALT nor a DMA transfer, in op-code order."""
        out = []
        for spec in self.iset.ops:
            if spec.unit in (isa.Unit.NONE, isa.Unit.DMA):
                continue
            if spec.code in self.iset.extension_of:
                out.append(functools.partial(self.generic, spec))
            else:
                out.append(getattr(self, self.DEDICATED[spec.mnemonic]))
        return out

    def fits(self, ins: Instruction, reserve: int = 0) -> bool:
        # room in the cycle budget, and in the instruction memory for this instruction, one more
        # (a round trip's LD), its result's store and the stores of the results so far
        return (self.cycles + self.iset.cycles(ins) + reserve <= self.max_cycles
                and len(self.code) + len(self.results) + 3 <= self.max_code)

    def emit(self, ins: Instruction) -> None:
        code, why = self.iset.check(ins, self.ext_words)
        assert code == ErrorCode.OK, f"generator made an illegal instruction {ins}: {why}"
        self.code.append(ins)
        self.cycles += self.iset.cycles(ins)

    def free_start(self, length: int, avoid: Sequence[Region]) -> int | None:
        return _free_start(self.rng, length, avoid, limit=self.spad)

    def source_start(self, span: int) -> int:
        return _source_start(self.rng, span, self.filled, self.spad)

    def store_cycles(self, n: int) -> int:
        """Cycles of an ST of ``n`` words (fetch and issue included)."""
        if n not in self._store_cycles:
            self._store_cycles[n] = self.iset.cycles(self.iset.make("ST", src=0, dst=0, len=n))
        return self._store_cycles[n]

    def store_reserve(self) -> int:
        """Cycles the final stores of the results so far will need."""
        return sum(self.store_cycles(n) for _, n in self.results)

    def try_emit(self, ins: Instruction, result: Region | None) -> bool:
        extra = self.store_cycles(result[1]) if result else 0
        if not self.fits(ins, self.store_reserve() + extra):
            return False
        self.emit(ins)
        if result:
            self.filled.append(result)
            self.results.append(result)
        return True

    # -- compute operations
    def mm(self) -> bool:
        rng = self.rng
        A_, K_ = self.config.array, self.config.max_k      # the largest M and N, the largest K
        M, N = rng.choice([rng.randint(1, A_), A_, 1]), rng.choice([rng.randint(1, A_), A_, 1])
        K = rng.choice([rng.randint(1, min(8, K_)), rng.randint(1, K_), K_, 1])
        SPAD = self.spad
        tb = rng.randint(0, 1)

        def stride(rows: int, natural: int) -> int:
            # rows == 1: the stride is never used, so any 12-bit value is legal
            if rows == 1 and rng.random() < 0.3:
                return _pick(rng, 0, STRIDE_MAX, 0.3)
            pick = rng.random()
            if pick < 0.5:
                return natural
            if pick < 0.8:
                return natural + rng.randint(1, 9)
            return rng.randint(0, natural)        # rows overlap (or repeat): reads only, legal

        lda = stride(M, K)
        ldb = stride(N, K) if tb else stride(K, N)
        # C rows must not share words (the ISA leaves no order among them to rely on)
        ldc = _pick(rng, 0, STRIDE_MAX, 0.3) if M == 1 and rng.random() < 0.3 else N + rng.choice([0, 0, 1, 3])
        # the spans of A, B and C by the ISA's own region rule (the instruction placed at 0)
        probe = self.iset.make("MM", dst=0, A=0, B=0, M=M, K=K, N=N, tb=tb, lda=lda, ldb=ldb, ldc=ldc)
        span = {r.role: r.length for r in self.iset.spec(probe.op).regions(probe)}
        a_span, b_span, c_span = span["A"], span["B"], span["dst"]
        if max(a_span, b_span) > SPAD or c_span > MM_C_SPAN_TILES * A_ * A_:
            return False
        A = self.source_start(a_span)
        B = A if rng.random() < 0.1 and a_span <= SPAD - A and b_span <= SPAD - A \
            else self.source_start(b_span)
        dst = self.free_start(c_span, [(A, a_span), (B, b_span)])
        if dst is None:
            return False
        ins = make("MM", dst=dst, A=A, B=B, M=M, K=K, N=N, tb=tb, lda=lda, ldb=ldb, ldc=ldc)
        return self.try_emit(ins, (dst, c_span))

    def _unary(self, op: str, max_len: int) -> bool:
        rng = self.rng
        n = rng.choice([1, rng.randint(1, 16), rng.randint(1, min(max_len, self.spad))])
        src = self.source_start(n)
        dst = src if rng.random() < 0.3 else self.free_start(n, [(src, n)])
        if dst is None:
            return False
        if op == "RQ":
            m = rng.randrange(1 << 23, 1 << 24) if rng.random() < 0.85 else _pick(rng, 0, (1 << 24) - 1, 0.3)
            s = rng.randint(16, 44) if rng.random() < 0.8 else _pick(rng, 0, 63, 0.3)
            ins = make("RQ", dst=dst, src=src, len=n, m=m, s=s, relu=rng.randint(0, 1))
        else:
            ins = make(op, dst=dst, src=src, len=n)
        return self.try_emit(ins, (dst, n))

    def rq(self) -> bool:
        return self._unary("RQ", 160)

    def sm(self) -> bool:
        return self._unary("SM", 64)

    def vadd(self) -> bool:
        rng = self.rng
        n = rng.choice([1, rng.randint(1, 16), rng.randint(1, min(160, self.spad))])
        s1 = self.source_start(n)
        if rng.random() < 0.2:
            s2 = s1
        else:
            s2 = self.free_start(n, [(s1, n)])
            if s2 is None:
                return False
            if rng.random() < 0.7 and self.filled:   # prefer real data for the second operand too
                cand = self.source_start(n)
                if cand == s1 or _disjoint((cand, n), (s1, n)):
                    s2 = cand
        pick = rng.random()
        if pick < 0.2:
            dst = s1
        elif pick < 0.3:
            dst = s2
        else:
            dst = self.free_start(n, [(s1, n), (s2, n)])
            if dst is None:
                return False
        return self.try_emit(make("VADD", dst=dst, src1=s1, src2=s2, len=n), (dst, n))

    def amax(self) -> bool:
        rng = self.rng
        n = rng.choice([1, rng.randint(1, 16), rng.randint(1, min(160, self.spad))])
        src = self.source_start(n)
        # AMAX reads everything before writing its one word, so dst may lie inside src.
        dst = src + rng.randrange(n) if rng.random() < 0.25 else self.free_start(1, [(src, n)])
        if dst is None:
            return False
        return self.try_emit(make("AMAX", dst=dst, src=src, len=n), (dst, 1))

    def generic(self, spec: OpSpec) -> bool:
        """One instruction of ``spec`` with random legal operands, read from the OpSpec alone.

        Lengths are 1, up to 16, or up to 160; every other operand is uniform in its legal
        range (or its bits), sometimes at an end.  A scratchpad region named after an operand
        (``Region.role``) is placed where data lies when it is read, in free space when it is
        the destination (``dst``), or on a source when the operation allows identical regions;
        an external region anywhere in the external memory.  The destination is the result
        that gets stored.  False if that gives no legal instruction this time.
        """
        rng = self.rng
        values = {}
        for o in spec.operands:
            lo, hi = o.legal if o.legal else (0, (1 << o.bits) - 1)
            if o.name in spec.lengths:
                hi = min(hi, 160)
                values[o.name] = rng.choice([max(lo, 1), rng.randint(max(lo, 1), min(hi, 16)),
                                             rng.randint(max(lo, 1), hi)])
            else:
                values[o.name] = _pick(rng, lo, hi)
        names = {o.name for o in spec.operands}
        regions = [r for r in spec.regions(self.iset.make(spec.mnemonic, **values)) if r.role in names]
        sources: list[Region] = []
        result: Region | None = None
        for r in sorted(regions, key=lambda r: r.role == "dst"):      # sources first
            top = (1 << spec.operand(r.role).bits) - 1
            if r.memory == "ext":
                if r.length > self.ext_words:
                    return False
                start = rng.randrange(0, self.ext_words - r.length + 1)
            elif r.role != "dst":
                if r.length > self.spad:
                    return False
                start = _source_start(rng, r.length, self.filled, self.spad)
                sources.append((start, r.length))
            else:
                same = [s for s in sources if s[1] == r.length]
                if spec.disjoint_or_same and same and rng.random() < 0.3:
                    start = rng.choice(same)[0]
                else:
                    start = _free_start(rng, r.length, sources, limit=self.spad)
                    if start is None:
                        return False
                result = (start, r.length)
            if start > top:
                return False
            values[r.role] = start
        ins = self.iset.make(spec.mnemonic, **values)
        if self.iset.check(ins, self.ext_words)[0] != ErrorCode.OK:
            return False
        return self.try_emit(ins, result)

    def round_trip(self) -> bool:
        """ST a region out and LD it back elsewhere: external memory read after write."""
        rng = self.rng
        if not self.filled:
            return False
        start, n = rng.choice(self.filled)
        n = min(n, 48, self.ext_words)
        ext_at = rng.randrange(0, self.ext_words - n + 1)
        back = self.free_start(n, [(start, n)])
        if back is None:
            return False
        st = make("ST", src=start, dst=ext_at, len=n)
        ld = make("LD", dst=back, src=ext_at, len=n)
        if not self.fits(st, self.iset.cycles(ld) + self.store_reserve() + self.store_cycles(n)):
            return False
        self.emit(st)
        self.emit(ld)
        self.filled.append((back, n))
        self.results.append((back, n))
        return True


def useful_program(config: Config) -> tuple[int, int]:
    """(cycles, instructions) of the least program that does anything on the chip ``config``: an LD
    and an ST of one word and the HALT, by the chip's busy times.  A cycle budget or an instruction
    memory below it makes every random program a HALT alone (a campaign that compares nothing)."""
    iset = isa.instruction_set(config)
    code = [iset.make("LD", dst=0, src=0, len=1), iset.make("ST", src=0, dst=0, len=1), isa.HALT]
    return sum(iset.cycles(i) for i in code), len(code)


#: instructions a planted fault may add to a random program (the fault, and the work after it)
FAULT_INSTRUCTIONS = 2


def min_max_cycles(illegal: float = 0.0) -> int:
    """The least cycle budget a random program fits in: its HALT (and a faulting instruction,
    when programs may be illegal)."""
    return isa.FETCH_ISSUE_CYCLES * (2 if illegal > 0 else 1)


def random_program(rng: random.Random, ext_words: int | None = None, *,
                   max_cycles: int | None = None, illegal: float = 0.0,
                   config: Config) -> tuple[list[Instruction], list[int]]:
    """One random program for the chip ``config`` and its external-memory image (``ext_words``
    words, by default the configuration's).

    Loads come first, then 2..10 actions (any compute operation of the instruction set,
    :meth:`_Builder.compute_ops`, and
    sometimes another load, an early store of a result, or a store-and-reload),
    then one store per result; sometimes one more operation whose result is
    never stored comes last.  The program takes at most ``max_cycles`` cycles
    (by default :func:`default_max_cycles` of the configuration).

    The program is valid, except with probability ``illegal``: then one
    instruction raising a random error code (of those an instruction can
    raise, :func:`gen.fuzz.coverage.raisable_errors`) is put somewhere after the
    loads (half the time after the stores), and the rest of the program is the
    work the fault must prevent.
    """
    ext_words = config.ext_words if ext_words is None else ext_words
    max_cycles = default_max_cycles(config=config) if max_cycles is None else max_cycles
    SPAD = config.spad_words
    if ext_words < 16:
        raise ValueError(f"random programs need an external memory of at least 16 words, not {ext_words}")
    if not 0.0 <= illegal <= 1.0:
        raise ValueError(f"illegal={illegal}: a probability lies in 0..1")
    if max_cycles < min_max_cycles(illegal):
        raise ValueError(f"max_cycles={max_cycles}: a random program needs at least {min_max_cycles(illegal)} cycles")
    least = useful_program(config)[1] + (FAULT_INSTRUCTIONS if illegal > 0 else 0)
    if config.imem_words < least:
        raise ValueError(f"configuration {config.name!r}: a random program that does anything needs "
                         f"{least} instructions (an LD, an ST and the HALT"
                         f"{', and room for a fault' if illegal > 0 else ''}); the instruction memory holds "
                         f"{config.imem_words}")
    fault = illegal > 0 and rng.random() < illegal
    b = _Builder(rng, ext_words, max_cycles - (isa.FETCH_ISSUE_CYCLES if fault else 0), config=config)
    if fault:
        b.max_code -= FAULT_INSTRUCTIONS

    # Input data somewhere in external memory (sometimes at one of its ends).
    n_in = rng.randint(8, min(320, ext_words // 2))
    in_base = _pick(rng, 0, ext_words - n_in)
    ext = [0] * ext_words
    for i in range(n_in):
        ext[in_base + i] = random_word(rng)

    def load(reserve: int) -> None:
        """A piece of the input (sometimes reaching past it into zeros) to a random scratchpad place."""
        r = rng.random()            # a length of 1, the longest both memories allow, or typical
        n = 1 if r < EDGE / 2 else min(ext_words, SPAD) if r < EDGE else rng.randint(1, min(n_in, 160))
        if rng.random() < EDGE:     # at an end of external memory (zeros outside the input are data too)
            src = rng.choice([0, ext_words - n])
        else:
            src = min(rng.randrange(in_base, in_base + n_in), ext_words - n)
        dst = b.free_start(n, b.filled) if rng.random() < 0.8 else _pick(rng, 0, SPAD - n)
        if dst is None:
            return
        ins = make("LD", dst=dst, src=src, len=n)
        if b.fits(ins, reserve):
            b.emit(ins)
            b.filled.append((dst, n))

    def store(start: int, n: int) -> Instruction:
        n = min(n, ext_words)           # a tiny external memory sees the start of a long result
        return make("ST", src=start, dst=_pick(rng, 0, ext_words - n), len=n)

    def store_early() -> None:
        if not b.results:
            return
        k = rng.randrange(len(b.results))
        start, n = b.results.pop(k)
        st = store(start, n)
        if b.fits(st, b.store_reserve()):
            b.emit(st)
        else:
            b.results.insert(k, (start, n))

    for _ in range(rng.randint(1, 4)):
        load(400)
    loaded = len(b.code)

    ops = b.compute_ops()
    for _ in range(rng.randint(2, 10)):
        pick = rng.random()
        if pick < 0.08:
            b.round_trip()
        elif pick < 0.16:
            load(b.store_reserve())
        elif pick < 0.24:
            store_early()
        else:
            rng.choice(ops)()

    # Stores: every result to a random place in external memory.
    for start, n in b.results:
        b.emit(store(start, n))
    b.results = []
    # Sometimes one more operation, whose result stays in the scratchpad: only the counters see it.
    if rng.random() < 0.12:
        rng.choice(ops + [lambda: load(0)])()
    if fault:
        at = len(b.code) if rng.random() < 0.5 else rng.randint(min(loaded, len(b.code)), len(b.code))
        target = rng.choice(sorted(raisable_errors(ext_words, config=config) - {ErrorCode.OK}))
        bad = illegal_instruction(rng, target, ext_words, b.code, config=config)
        if bad is not None:
            b.code.insert(at, bad)
            if at == len(b.code) - 1 and b.code[:at]:        # work after the fault that must not happen
                b.code.append(rng.choice(b.code[:at]))
    b.code.append(isa.HALT)
    assert len(b.code) <= config.imem_words
    assert b.cycles <= max_cycles
    return b.code, ext


@functools.lru_cache(maxsize=None)
def raisable_errors(ext_words: int, *, config: Config) -> frozenset[ErrorCode]:
    from .coverage import raisable_errors as probe
    return frozenset(probe(ext_words, config=config))


def illegal_instruction(rng: random.Random, code: ErrorCode, ext_words: int,
                        pool: Sequence[Instruction] = (), *, config: Config) -> Instruction | None:
    """An instruction that raises ``code`` at issue, or None if 200 tries find none.

    An undefined op code with junk in every field for BAD_OPCODE; otherwise a
    legal instruction (one of ``pool``, or an operation at its least legal
    operands) with one or two operands changed to a value near an end of
    their field or of a memory, or next to another operand's value, until
    the configuration's check says ``code``.
    """
    iset = isa.instruction_set(config)
    SPAD = config.spad_words
    if code == ErrorCode.BAD_OPCODE:
        return Instruction(rng.choice(iset.undefined_codes()), **{f: rng.getrandbits(isa.FIELD[f].width)
                                                                  for f in isa.OPERAND_FIELDS})
    from .coverage import legal_base
    candidates = [ins for ins in pool if ins.op in iset.by_code and iset.spec(ins.op).operands]
    candidates += [iset.make(spec.mnemonic, **legal_base(spec, ext_words, config=config))
                   for spec in iset.ops if spec.operands]
    for _ in range(200):
        ins = rng.choice(candidates)
        spec = iset.spec(ins.op)
        values = ins.operands()
        names = {o.name for o in spec.operands}
        starts = [r for r in spec.regions(ins) if r.memory == "spad" and r.role in names]
        if spec.disjoint_or_same and len(starts) > 1 and rng.random() < 0.5:
            # one region moved to start inside another: the overlap rule
            a, b = rng.sample(starts, 2)
            for length in spec.lengths:
                values[length] = max(values[length], rng.randint(2, 16))
            values[b.role] = values[a.role] + rng.randint(1, max(1, values[spec.lengths[0]] - 1)) \
                if spec.lengths else values[a.role] + 1
        for _ in range(rng.choice([1, 1, 2])):
            o = rng.choice(spec.operands)
            top = (1 << o.bits) - 1
            near = rng.choice([values[p.name] for p in spec.operands])
            v = rng.choice([0, top, rng.randint(0, top), near + rng.randint(-3, 3),
                            SPAD - rng.randint(0, 3), ext_words - rng.randint(0, 3)])
            values[o.name] = min(max(v, 0), top)
        bad = iset.make(spec.mnemonic, **{o.name: min(values[o.name], (1 << o.bits) - 1) for o in spec.operands})
        if iset.check(bad, ext_words)[0] == code:
            return bad
    return None


# ----------------------------------------------------------------------------- the fuzz loop

def random_bundle(n: int, seed: int, ext_words: int | None = None,
                  max_cycles: int | None = None, illegal: float = 0.0, *, config: Config) -> Bundle:
    """``n`` random programs for ``config`` from ``random.Random(seed)`` (expected results from the golden model)."""
    ext_words = config.ext_words if ext_words is None else ext_words
    rng = random.Random(seed)
    items = []
    for i in range(n):
        code, ext = random_program(rng, ext_words, max_cycles=max_cycles, illegal=illegal, config=config)
        items.append((f"random seed={seed} #{i}", code, ext))
    return Bundle.from_programs(items, ext_words, config=config)


def fuzz(n: int, seed: int, sims: Sequence[str] = ("golden",), *, ext_words: int | None = None,
         max_cycles: int | None = None, bundle_path: str | None = None, directed: bool = False,
         reporter: Reporter | None = None, config: Config) -> dict:
    """Replay ``n`` random programs (seeded by ``seed``) in every simulator of ``sims``.

    Returns ``{"programs", "seed", "ext_words", "cycles" (golden total),
    "mismatches" (number of simulators that disagreed), "first_mismatch"
    (text of the first disagreement, or None), "sims": [names in the order run],
    "results": {name: {...}}}``.  A simulator's replay stops at its first
    disagreement, so "mismatches" counts simulators, each naming its first.
    ``bundle_path`` keeps the bundle on disk so that a mismatch can be
    replayed (``ga2 replay``).  ``directed`` puts the directed suite first
    (``programs`` then counts both).  ``config``: the chip every simulator builds and the golden
    model predicts.  ``reporter`` gets each simulator's ``step(programs done, programs, simulator)``.
    """
    from gen.sim.simulator import SimulatorError, get_simulator

    simulators = {}
    for name in sims:                      # fail before the work if a simulator is missing
        try:
            simulators[name] = get_simulator(name, config=config)
        except ImportError as e:
            raise SimulatorError(f"simulator {name!r} is not available here: {e}") from e
    ext_words = config.ext_words if ext_words is None else ext_words
    t0 = time.perf_counter()
    bundle = random_bundle(n, seed, ext_words, max_cycles, config=config)
    if directed:
        from .directed import directed_bundle           # (the directed suite builds on this module)
        bundle.programs[:0] = directed_bundle(ext_words, config=config).programs
    gen_seconds = time.perf_counter() - t0
    if bundle_path:
        bundle.write(bundle_path)
    report: dict = {"programs": len(bundle.programs), "random_programs": n, "seed": seed, "ext_words": ext_words,
                    "config": config.to_dict(), "cycles": bundle.total_cycles,
                    "generate_seconds": round(gen_seconds, 3), "mismatches": 0, "first_mismatch": None,
                    "sims": list(simulators), "results": {}}
    for name, sim in simulators.items():
        rep = sim.run_bundle(bundle, reporter=reporter)
        entry = {"passed": rep.passed, "programs_run": len(rep.results), "cycles": rep.cycles,
                 "wall_seconds": round(rep.wall_seconds, 3), "line": rep.line(),
                 "mismatch": str(rep.mismatch) if rep.mismatch else None}
        if rep.mismatch is not None:
            entry["mismatch_program"] = bundle.programs[rep.mismatch.program].name \
                if rep.mismatch.program is not None else None
        report["results"][name] = entry
        if not rep.passed:
            report["mismatches"] += 1
            if report["first_mismatch"] is None:
                report["first_mismatch"] = f"{name}: {entry['mismatch'] or entry['line']}"
    return report
