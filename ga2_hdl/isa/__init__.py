"""The GA-2 instruction set, defined once.

Everything that knows about GA-2 instructions takes it from here: the golden
model, the assembler and disassembler, the Amaranth decoder, the compiler and
the generated documentation.  This module is plain data and integer arithmetic:
it imports nothing of the project's but the configuration (:mod:`ga2_hdl.config`,
which sits below it) and no Amaranth, so anyone may read it.

What lives here
  * the instruction set of a configuration (:func:`instruction_set`): the
    operations, their legality and busy times for that chip's sizes, the
    book's eight and those of the configuration's extensions (:class:`Extension`,
    defined in a user's own module: ``docs/extending.md``); the module-level
    names (``SPAD_WORDS``, ``OPS``, :func:`check` ...) are the book's chip,
    :data:`BOOK`;
  * the constants no configuration changes (word width, instruction word);
  * the 128-bit instruction word: its fields and their bit positions;
  * one :class:`OpSpec` per operation: op code, assembly operands (and which
    bits of which field each one occupies), the unit that executes it, the
    busy-time formula, and the legality rules whose failure halts the machine;
  * the arithmetic primitives the units implement bit for bit (requantizer,
    exp table, 40-bit divider, fixed-point softmax), which the golden model
    and the RTL unit tests share.

Adding an instruction: an extension, in a module of your own (``docs/extending.md``).
"""
from __future__ import annotations

import enum
import importlib
import math
from dataclasses import dataclass, field
import functools
from typing import Callable, Iterable, Mapping, NamedTuple, Sequence

from ..config import Config

# --------------------------------------------------------------------------
# Machine constants
# --------------------------------------------------------------------------

#: The book's chip: what the module-level sizes and :data:`OPS` describe.
BOOK = Config.book()

WORD_BITS = 32                 #: every memory word is 32 bits
WORD_MASK = (1 << WORD_BITS) - 1
INSTR_BITS = 128               #: one instruction word
EXT_ADDR_BITS = 16             #: external addresses are 16 bits (LD's src and ST's dst fields)
EXT_WORDS_MAX = 1 << EXT_ADDR_BITS  #: the largest external memory: 65536 words
FETCH_ISSUE_CYCLES = 2         #: every instruction, HALT included, costs fetch + issue
INT8_MIN, INT8_MAX = -127, 127 #: -128 is never produced by any unit
Q16_ONE = 1 << 16              #: probabilities are Q0.16: 65536 = 1.0
EXP_TABLE_SIZE = 256
DIV_BITS = 40                  #: width of the softmax unit's unsigned divider
SOFTMAX_NUMERATOR = 1 << 38    #: r = floor(2**38 / S)
SOFTMAX_OUT_SHIFT = 22         #: p = (e * r + 2**21) >> 22


def _exp_table() -> tuple[int, ...]:
    # T[d] = round(65535 * exp(-d/16)), ties up (no entry is near a tie).
    return tuple(int(math.floor(65535 * math.exp(-d / 16) + 0.5)) for d in range(EXP_TABLE_SIZE))


EXP_TABLE: tuple[int, ...] = _exp_table()

# The book chip's sizes (a configuration's own are on its Config).
SPAD_WORDS = BOOK.spad_words           #: scratchpad size in words
IMEM_WORDS = BOOK.imem_words           #: instruction memory, in 128-bit words
EXT_WORDS_DEFAULT = BOOK.ext_words     #: external memory size in words (the book's early chapters use 2048)
LAT = BOOK.lat                         #: external-memory latency in cycles, paid once per load
MM_MAX_MN = BOOK.array                 #: the systolic array is 4 x 4
MM_MAX_K = BOOK.max_k                  #: the operand row memories hold 64 values


# --------------------------------------------------------------------------
# The instruction word
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Field:
    """A field of the 128-bit instruction word: bits [lsb + width - 1 : lsb]."""
    name: str
    lsb: int
    width: int

    @property
    def msb(self) -> int:
        return self.lsb + self.width - 1

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1


#: The fields, most significant first.  ``op`` is 4 bits; the rest are operands.
FIELDS: tuple[Field, ...] = (
    Field("op", 124, 4),
    Field("a", 108, 16),
    Field("b", 92, 16),
    Field("c", 76, 16),
    Field("d", 52, 24),
    Field("e", 46, 6),
    Field("f", 38, 8),
    Field("g", 30, 8),
    Field("h", 22, 8),
    Field("fl", 18, 4),
    Field("x", 0, 18),
)
FIELD = {f.name: f for f in FIELDS}
OPERAND_FIELDS = tuple(f.name for f in FIELDS if f.name != "op")

assert sum(f.width for f in FIELDS) == INSTR_BITS
assert FIELD["b"].width == EXT_ADDR_BITS     # LD's src and ST's dst span the whole external memory


class IsaError(ValueError):
    """An instruction, program or file that the ISA does not allow."""


def ext_words_problem(ext_words) -> str | None:
    """What is wrong with an external-memory size, or None: it holds 1 .. EXT_WORDS_MAX words.

    The one statement of the rule; every simulator, loader and command that takes a
    size asks it (each puts its own name for the value in front).
    """
    if isinstance(ext_words, int) and not isinstance(ext_words, bool) and 1 <= ext_words <= EXT_WORDS_MAX:
        return None
    return f"the external memory holds 1 .. {EXT_WORDS_MAX} words"


def check_ext_words(ext_words) -> int:
    """``ext_words`` if it is a legal external-memory size, else :class:`IsaError`."""
    problem = ext_words_problem(ext_words)
    if problem:
        raise IsaError(f"ext_words={ext_words}: {problem}")
    return ext_words


class Unit(enum.Enum):
    """The unit whose busy counter an instruction's busy time is added to."""
    NONE = "none"     # HALT
    DMA = "dma"       # LD, ST
    MATRIX = "mm"     # MM
    VECTOR = "vec"    # RQ, SM, VADD, AMAX, and every extension's operation


class Counter(enum.IntEnum):
    """The five counters the machine reports at HALT, in this order."""
    TOTAL = 0
    MATRIX = 1
    DMA = 2
    VECTOR = 3
    INSTRUCTIONS = 4


class Counters(NamedTuple):
    """The five counters of a run, by name (a tuple in :class:`Counter` order)."""
    total: int = 0           #: every cycle from the first fetch to the halting issue
    matrix: int = 0          #: busy cycles of the matrix unit
    dma: int = 0             #: busy cycles of the DMA
    vector: int = 0          #: busy cycles of the vector unit
    instructions: int = 0    #: instructions executed (not HALT, not a faulting one)


COUNTER_NAMES = Counters._fields
assert [name.upper() for name in COUNTER_NAMES] == [c.name for c in Counter]
UNIT_COUNTER = {Unit.MATRIX: Counter.MATRIX, Unit.DMA: Counter.DMA, Unit.VECTOR: Counter.VECTOR}


class ErrorCode(enum.IntEnum):
    """What the machine reports when an instruction is illegal.

    The check happens at issue.  A faulting instruction does not execute and
    changes no memory; it costs its fetch and issue cycles (2) and is not
    counted as executed; the machine then halts with this code and the
    faulting instruction's address (with overlap, once the instructions in
    flight have completed: :class:`IssueTimer`).  ``OK`` is a normal HALT.
    """
    OK = 0
    BAD_OPCODE = 1        #: an op code the chip does not define (never one of RESERVED_OP_CODES)
    SPAD_RANGE = 2        #: a scratchpad operand region leaves 0 .. SPAD_WORDS-1
    EXT_RANGE = 3         #: an external-memory region leaves 0 .. ext_words-1
    BAD_SHAPE = 4         #: an operand outside its legal range (:attr:`Operand.legal`: MM's M, K, N)
    ZERO_LENGTH = 5       #: a length operand of 0
    OVERLAP = 6           #: RQ/SM/VADD operands that overlap without being identical
    NO_HALT = 7           #: the program counter ran past the last instruction-memory word
                          #: (loaders refuse a program without HALT, so only stale memory can do this)


# --------------------------------------------------------------------------
# Operands and operations
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Operand:
    """An assembly operand: ``name`` occupies bits [lsb + width - 1 : lsb] of field ``field``.

    ``legal`` is the inclusive range (lo, hi) of the values the operation accepts, when it
    accepts fewer than the bits can hold; a value outside halts the machine with BAD_SHAPE
    (:func:`check`, the decoder's :class:`~ga2_hdl.rtl.decoder.IssueCheck` and the generated
    docs/isa.md all read it from here).

    Parameters
    ----------
    name : str
        The operand's name in assembly (``dst=5``) and as an attribute of an
        :class:`Instruction` (``ins.dst``): an identifier that is none of the word's field
        names (``a`` .. ``x``, ``op``) nor an ``Instruction`` method.
    field : str
        The instruction field that holds it (:data:`FIELDS`: ``a`` .. ``x``; docs/isa.md lists
        their bits).
    lsb : int, optional
        Its lowest bit inside the field (0: from the field's own lowest bit).
    width : int or None, optional
        Its width in bits; None (the default) takes the rest of the field above ``lsb``.
        Two operands of one operation may share a field but not a bit.
    doc : str, optional
        What it is, one phrase, for docs/isa.md's operand table.
    legal : (int, int) or None, optional
        The inclusive range of values the operation accepts (BAD_SHAPE outside it); None: any
        value the bits hold.  Given by keyword: ``Operand("M", "f", legal=(1, 4))``.

    Examples
    --------
    ``Operand("dst", "a", doc="scratchpad destination")`` is the whole field ``a``;
    ``Operand("tb", "fl", 0, 1, doc="B is stored transposed")`` is bit 0 of field ``fl``
    (MM's, in ``_book_ops``).
    """
    name: str
    field: str
    lsb: int = 0
    width: int | None = None     # None: the whole field
    doc: str = ""
    legal: tuple[int, int] | None = None

    @property
    def bits(self) -> int:
        return FIELD[self.field].width - self.lsb if self.width is None else self.width

    def get(self, fields: Mapping[str, int]) -> int:
        return (fields[self.field] >> self.lsb) & ((1 << self.bits) - 1)


@dataclass(frozen=True)
class Region:
    """A run of memory words an instruction touches (for range, overlap and hazard checks).

    ``write`` says whether the instruction writes the region (else it reads it); it is
    filled in by :meth:`OpSpec.accesses` from the operation's :attr:`OpSpec.writes`.

    Parameters
    ----------
    memory : str
        ``"spad"`` (the scratchpad: SPAD_RANGE past its end) or ``"ext"`` (the external
        memory: EXT_RANGE).
    start : int
        Its first word (an operand's value: ``i.dst``).
    length : int
        Its words.
    role : str
        The name of the operand that holds ``start`` (``"dst"``, ``"src"``, ``"A"`` ...): the
        random programs place regions by it, and :attr:`OpSpec.writes` names the written ones.
    write : bool, optional
        Whether the instruction writes it; leave it False in an ``OpSpec``'s ``regions``
        (:meth:`OpSpec.accesses` sets it).
    """
    memory: str           # "spad" or "ext"
    start: int
    length: int
    role: str             # e.g. "dst", "src", "A"
    write: bool = False

    @property
    def end(self) -> int:  # one past the last word
        return self.start + self.length

    def conflicts(self, other: "Region") -> bool:
        """Whether the two regions share a word of one memory and at least one of them writes it."""
        return (self.memory == other.memory and (self.write or other.write)
                and self.start < other.end and other.start < self.end)


@dataclass(frozen=True)
class OpSpec:
    """One operation: everything the project needs to know about it, in one place.

    The parameters in their order: the book's operations and docs/extending.md's example give
    the first seven or eight by position (``OpSpec(code, mnemonic, unit, operands, meaning,
    busy_formula, busy, regions, ...)``) and the rest by keyword.  docs/extending.md builds
    one step by step.

    Parameters
    ----------
    code : int
        The op code (the ``op`` field); an extension's is one the book leaves free and not one of
        :data:`RESERVED_OP_CODES` (docs/isa.md lists the undefined codes).
    mnemonic : str
        The assembly name, an upper-case identifier.
    unit : Unit
        The unit that runs it and whose busy counter counts it (an extension's: ``Unit.VECTOR``).
    operands : tuple of Operand
        The assembly operands, in the order the disassembler prints them.
    meaning : str
        What it computes, one sentence, for docs/isa.md.
    busy_formula : str
        The busy time W as text: a Python expression of the operand names, ``LAT`` and
        ``ceil`` (docs/isa.md prints it; a test evaluates the book's against ``busy``).
    busy : callable
        ``busy(ins) -> int``: the busy time W of an :class:`Instruction`, in cycles: what every
        simulator and counter uses, and exactly what the RTL engine must take.
    regions : callable, optional
        ``regions(ins) -> tuple of Region``: the memory the instruction reads and writes, for
        the range checks (SPAD_RANGE, EXT_RANGE), the overlap rule and the overlapped
        timing's hazards (default: none).
    lengths : tuple of str, optional
        Operands that must not be 0 (ZERO_LENGTH).
    disjoint_or_same : bool, optional
        Its scratchpad regions must be pairwise identical or disjoint (OVERLAP otherwise).
    defaults : mapping, optional
        Assembly defaults, operand -> value, or -> the name of another operand whose value it
        takes (MM's ``lda="K"``); an operand without one must be written.
    arithmetic : str, optional
        The exact arithmetic, one line of Markdown, for docs/isa.md.
    writes : frozenset of str, optional
        The roles of the regions it writes (default ``{"dst"}``); it reads the others.
    """
    code: int
    mnemonic: str
    unit: Unit
    operands: tuple[Operand, ...]
    meaning: str
    busy_formula: str                          # the busy time, as documentation
    busy: Callable[["Instruction"], int]       # the busy time, computed
    regions: Callable[["Instruction"], tuple[Region, ...]] = lambda ins: ()
    lengths: tuple[str, ...] = ()              # operands that must not be zero
    disjoint_or_same: bool = False             # spad regions identical or disjoint (RQ, SM, VADD)
    defaults: Mapping[str, str | int] = field(default_factory=dict)  # assembly defaults
    arithmetic: str = ""                       # the exact arithmetic, for docs/isa.md (markdown)
    writes: frozenset[str] = frozenset({"dst"})  # roles of the regions the op writes; it reads the others

    def accesses(self, ins: "Instruction") -> tuple[Region, ...]:
        """``regions(ins)`` with each region's ``write`` flag set from :attr:`writes`
        (what the overlapped timing rule's hazard check compares)."""
        return tuple(Region(r.memory, r.start, r.length, r.role, r.role in self.writes)
                     for r in self.regions(ins))

    def operand(self, name: str) -> Operand:
        for o in self.operands:
            if o.name == name:
                return o
        raise KeyError(name)

    @functools.cached_property
    def ranged(self) -> tuple[Operand, ...]:
        """The operands with a legal range (BAD_SHAPE outside it), in operand order."""
        return tuple(o for o in self.operands if o.legal is not None)

    @functools.cached_property
    def operand_bits(self) -> dict[str, tuple[str, int, int]]:
        """Operand name -> (field, lsb, mask): where :meth:`Instruction.__getattr__` reads it
        (computed once per operation: operand reads are the golden model's and the checker's
        innermost step)."""
        return {o.name: (o.field, o.lsb, (1 << o.bits) - 1) for o in self.operands}

    def ranges_text(self) -> str:
        """The legal ranges in words, operands of one range together: ``M and N in 1..4, K in 1..64``."""
        groups: dict[tuple[int, int], list[str]] = {}
        for o in self.ranged:
            groups.setdefault(o.legal, []).append(o.name)
        return ", ".join(f"{' and '.join(names)} in {lo}..{hi}" for (lo, hi), names in groups.items())


def _span(rows: int, stride: int, cols: int) -> int:
    """Words from the first to the last element of a rows x cols block with row stride ``stride``."""
    return (rows - 1) * stride + cols


def _mm_regions(i: "Instruction") -> tuple[Region, ...]:
    M, K, N = i.M, i.K, i.N
    if i.tb:
        b_len = _span(N, i.ldb, K)
    else:
        b_len = _span(K, i.ldb, N)
    return (
        Region("spad", i.A, _span(M, i.lda, K), "A"),
        Region("spad", i.B, b_len, "B"),
        Region("spad", i.dst, _span(M, i.ldc, N), "dst"),
    )


def ceil_div(a: int, b: int) -> int:
    """ceil(a / b) for positive integers (the busy formulas' ``ceil``)."""
    return -(-a // b)


def _per(n: str, width: int) -> str:
    """The formula text of "cycles to move ``n`` words, ``width`` per cycle": ``n`` when width is 1."""
    return n if width == 1 else f"ceil({n}/{width})"


def _book_ops(config: Config) -> tuple[OpSpec, ...]:
    """The book's eight operations, with the sizes and timings of ``config``.

    Widths (docs/chip.md, "Wide ports"): the DMA moves ``W = config.ext_port_words``
    words per cycle, so a transfer of ``len`` words takes ``ceil(len/W)`` cycles of
    requests; the matrix unit and the vector engines RQ, VADD and AMAX read (and
    write) ``P = config.spad_ports`` consecutive scratchpad words per cycle, so a run
    of ``n`` consecutive words takes ``ceil(n/P)`` cycles.  MM stages A row by row
    (``M*ceil(K/P)``), B row by row (``K*ceil(N/P)``, or ``N*ceil(K/P)`` stored
    transposed) and writes C row by row (``M*ceil(N/P)``).  SM keeps one word per
    cycle.  With W = P = 1 every formula and its text is the book's.  Each formula
    text is a Python expression of the operands, ``LAT`` and ``ceil`` (a test
    evaluates it against the busy function).
    """
    _O = Operand
    LAT = config.lat
    P, W = config.spad_ports, config.ext_port_words
    cd = ceil_div
    if P == 1:
        mm_text = "M*K + K*N + (K+M+N-2) + M*N + 7"
        mm_busy = lambda i: i.M * i.K + i.K * i.N + (i.K + i.M + i.N - 2) + i.M * i.N + 7
    else:
        mm_text = (f"M*{_per('K', P)} + (N*{_per('K', P)} if tb else K*{_per('N', P)}) "
                   f"+ (K+M+N-2) + M*{_per('N', P)} + 7")
        mm_busy = lambda i: (i.M * cd(i.K, P) + (i.N * cd(i.K, P) if i.tb else i.K * cd(i.N, P))
                             + (i.K + i.M + i.N - 2) + i.M * cd(i.N, P) + 7)
    return (
        OpSpec(0, "HALT", Unit.NONE, (),
               "stop; the counters hold their final values (an all-zero word is HALT)",
               "0", lambda i: 0),
        OpSpec(1, "LD", Unit.DMA,
               (_O("dst", "a", doc="scratchpad destination"), _O("src", "b", doc="external source"),
                _O("len", "c", doc="words")),
               "scratch[dst+i] = ext[src+i] for i < len",
               f"{_per('len', W)} + LAT + 1", lambda i: cd(i.len, W) + LAT + 1,
               lambda i: (Region("spad", i.dst, i.len, "dst"), Region("ext", i.src, i.len, "src")),
               lengths=("len",)),
        OpSpec(2, "ST", Unit.DMA,
               (_O("src", "a", doc="scratchpad source"), _O("dst", "b", doc="external destination"),
                _O("len", "c", doc="words")),
               "ext[dst+i] = scratch[src+i] for i < len",
               f"{_per('len', W)} + 2", lambda i: cd(i.len, W) + 2,
               lambda i: (Region("spad", i.src, i.len, "src"), Region("ext", i.dst, i.len, "dst")),
               lengths=("len",)),
        OpSpec(3, "MM", Unit.MATRIX,
               (_O("dst", "a", doc="C"), _O("A", "b", doc="A (M x K)"), _O("B", "c", doc="B (K x N)"),
                _O("M", "f", legal=(1, config.array)), _O("K", "g", legal=(1, config.max_k)),
                _O("N", "h", legal=(1, config.array)),
                _O("tb", "fl", 0, 1, doc="B is stored transposed"),
                _O("lda", "d", 0, 12), _O("ldb", "d", 12, 12), _O("ldc", "x", 0, 12)),
               "C = A x B, int8 inputs (low byte, signed), wrap-around int32 sums; A[m][k] at A+m*lda+k; "
               "B[k][n] at B+k*ldb+n, or B+n*ldb+k when tb; C[m][n] to dst+m*ldc+n",
               mm_text, mm_busy,
               _mm_regions, defaults={"tb": 0, "lda": "K", "ldb": "N", "ldc": "N"},
               arithmetic="int8 inputs are the signed low bytes of the words; sums are int32 with wrap-around."),
        OpSpec(4, "RQ", Unit.VECTOR,
               (_O("dst", "a"), _O("src", "b"), _O("len", "c"),
                _O("m", "d", doc="24-bit mantissa"), _O("s", "e", doc="shift"),
                _O("relu", "fl", 0, 1)),
               "dst[i] = clamp(round_half_away(acc[i]*m / 2^s), -127, 127) (relu: clamp at 0 from below)",
               f"{_per('len', P)} + 2", lambda i: cd(i.len, P) + 2,
               lambda i: (Region("spad", i.dst, i.len, "dst"), Region("spad", i.src, i.len, "src")),
               lengths=("len",), disjoint_or_same=True, defaults={"relu": 0},
               arithmetic="`clamp(round_half_away(acc * m / 2^s), -127, 127)`; relu raises the lower bound to 0. "
                          "acc is the signed 32-bit word, m the 24-bit mantissa (2^23 <= m < 2^24 for a scale "
                          "from `mantissa_shift`), s the 6-bit shift."),
        OpSpec(5, "SM", Unit.VECTOR,
               (_O("dst", "a"), _O("src", "b"), _O("len", "c")),
               "dst = softmax of int8 scores src[0..len) (real value x/16), Q0.16 probabilities",
               "3*len + 41 + 6", lambda i: 3 * i.len + 41 + 6,
               lambda i: (Region("spad", i.dst, i.len, "dst"), Region("spad", i.src, i.len, "src")),
               lengths=("len",), disjoint_or_same=True,
               arithmetic=f"scores are the signed low bytes x (real value x/16); `e_i = T[max - x_i]` with "
                          f"`T[d] = round(65535 * exp(-d/16))`, d = 0..{EXP_TABLE_SIZE - 1} (T[0] = "
                          f"{EXP_TABLE[0]}, T[{EXP_TABLE_SIZE - 1}] = {EXP_TABLE[-1]}); `r = floor(2^38 / sum e)` "
                          f"from a {DIV_BITS}-bit unsigned divider; `p_i = (e_i * r + 2^21) >> "
                          f"{SOFTMAX_OUT_SHIFT}` in Q0.16."),
        OpSpec(6, "VADD", Unit.VECTOR,
               (_O("dst", "a"), _O("src1", "b"), _O("src2", "c"), _O("len", "d", 0, 16)),
               "dst[i] = clamp(int8 src1[i] + int8 src2[i], -127, 127)",
               f"2*{_per('len', P)} + 2", lambda i: 2 * cd(i.len, P) + 2,
               lambda i: (Region("spad", i.dst, i.len, "dst"), Region("spad", i.src1, i.len, "src1"),
                          Region("spad", i.src2, i.len, "src2")),
               lengths=("len",), disjoint_or_same=True,
               arithmetic="`clamp(int8 + int8, -127, 127)` on the low bytes."),
        OpSpec(7, "AMAX", Unit.VECTOR,
               (_O("dst", "a"), _O("src", "b"), _O("len", "c")),
               "dst[0] = index of the first maximum of the signed int32 src[0..len)",
               f"{_per('len', P)} + 3", lambda i: cd(i.len, P) + 3,
               lambda i: (Region("spad", i.dst, 1, "dst"), Region("spad", i.src, i.len, "src")),
               lengths=("len",), arithmetic="index of the first maximum of the signed 32-bit words."),
    )

#: Op codes no configuration may define: the undefined op that tests and the
#: directed suite use to provoke BAD_OPCODE.
RESERVED_OP_CODES = (15,)


# --------------------------------------------------------------------------
# Extensions: operations defined outside the package
# --------------------------------------------------------------------------

#: The name an extension module gives its :class:`Extension`.
EXTENSION_ATTRIBUTE = "EXTENSION"


@dataclass(frozen=True, eq=False)
class Extension:
    """Operations a user's own module adds to the instruction set (``docs/extending.md``).

    A module named in ``Config(extensions=(...))`` defines ``EXTENSION = isa.Extension(...)``;
    every tool that works on that configuration (assembler, golden model, issue check,
    the chip's dispatch, the random programs and their coverage, docs/isa.md, Verilog)
    picks its operations up from there.

    Parameters
    ----------
    ops : callable
        ``ops(config)``: the extension's :class:`OpSpec` objects on the chip ``config``
        (busy-time and legality functions may close over its sizes, as the book's do).
        Their op codes must be free (not the book's, not another extension's, not one of
        :data:`RESERVED_OP_CODES`); their mnemonics, their operands and the unit must be
        the same on every configuration.  They run on the vector unit.
    golden : mapping
        Mnemonic -> ``semantics(machine, ins)``: what the operation does to the golden
        model's state (:class:`ga2_hdl.golden.Machine`: ``machine.spad`` and ``machine.ext``
        are numpy arrays of unsigned 32-bit word values; read every operand before
        writing anything).
    engines : mapping
        Mnemonic -> the RTL engine's class: a ``wiring.Component`` on the unit contract
        (:class:`ga2_hdl.rtl.layout.UnitSignature`), built as ``engine(config=config)``, whose
        busy time is the OpSpec's.
    """
    ops: Callable[[Config], Sequence[OpSpec]]
    golden: Mapping[str, Callable] = field(default_factory=dict)
    engines: Mapping[str, Callable] = field(default_factory=dict)
    #: the module it came from (set when it is loaded)
    module: str = ""


#: op code -> (module, OpSpec on the book's sizes) of every extension operation this process
#: has loaded: what lets an :class:`Instruction` name the operands of an extension's operation
_LOADED_OPS: dict[int, tuple[str, OpSpec]] = {}

#: attributes an operand name would hide (Instruction's own fields and methods)
_RESERVED_NAMES = frozenset(f.name for f in FIELDS) | {"op", "spec", "mnemonic", "fields", "operands",
                                                        "encode", "decode", "busy", "cycles"}


def _layout(spec: OpSpec) -> tuple:
    """What must not change between configurations: code, mnemonic, unit, operand bits."""
    return (spec.code, spec.mnemonic, spec.unit,
            tuple((o.name, o.field, o.lsb, o.bits) for o in spec.operands))


def _extension_ops(ext: Extension, config: Config) -> tuple[OpSpec, ...]:
    """``ext.ops(config)``, checked on its own terms (clashes are the instruction set's to find)."""
    where = f"extension {ext.module}"
    try:
        ops = tuple(ext.ops(config))
    except IsaError:
        raise
    except Exception as e:
        raise IsaError(f"{where}: ops(config) failed on configuration {config.name!r}: "
                       f"{type(e).__name__}: {e}") from None
    if not ops:
        raise IsaError(f"{where}: ops(config) defines no operation")
    top = FIELD["op"].mask
    for spec in ops:
        if not isinstance(spec, OpSpec):
            raise IsaError(f"{where}: ops(config) must give OpSpec objects, not {type(spec).__name__}")
        what = f"{where}: {spec.mnemonic}"
        if not (isinstance(spec.code, int) and 0 <= spec.code <= top):
            raise IsaError(f"{what}: op code {spec.code!r} is not a {FIELD['op'].width}-bit value (0..{top})")
        if spec.code in RESERVED_OP_CODES:
            raise IsaError(f"{what}: op code {spec.code} is reserved (no configuration may define "
                           f"{', '.join(map(str, RESERVED_OP_CODES))}: it is the undefined op of the tests)")
        if not (isinstance(spec.mnemonic, str) and spec.mnemonic.isidentifier()
                and spec.mnemonic == spec.mnemonic.upper()):
            raise IsaError(f"{where}: mnemonic {spec.mnemonic!r} must be an upper-case identifier")
        if spec.unit is not Unit.VECTOR:
            raise IsaError(f"{what}: runs on the {spec.unit.value} unit; an extension's operations run on "
                           f"the vector unit (the unit that holds one engine per operation)")
        names = [o.name for o in spec.operands]
        for o in spec.operands:
            if o.field not in FIELD or o.field == "op":
                raise IsaError(f"{what}: operand {o.name} names no operand field ({', '.join(OPERAND_FIELDS)})")
            if o.lsb < 0 or o.bits < 1 or o.lsb + o.bits > FIELD[o.field].width:
                raise IsaError(f"{what}: operand {o.name} (bits {o.lsb}..{o.lsb + o.bits - 1}) does not fit "
                               f"field {o.field} of {FIELD[o.field].width} bits")
            if o.name in _RESERVED_NAMES or not o.name.isidentifier():
                raise IsaError(f"{what}: an operand cannot be called {o.name!r} (an Instruction attribute)")
        if len(set(names)) != len(names):
            raise IsaError(f"{what}: two operands share a name")
        taken = [(p.name, q.name) for i, p in enumerate(spec.operands) for q in spec.operands[i + 1:]
                 if p.field == q.field and p.lsb < q.lsb + q.bits and q.lsb < p.lsb + p.bits]
        if taken:
            raise IsaError(f"{what}: operands {taken[0][0]} and {taken[0][1]} share bits of field "
                           f"{spec.operand(taken[0][0]).field}")
    mnemonics = {spec.mnemonic for spec in ops}
    for kind, table in (("golden", ext.golden), ("engines", ext.engines)):
        unknown = sorted(set(table) - mnemonics)
        if unknown:
            raise IsaError(f"{where}: {kind} names {', '.join(unknown)}, which ops(config) does not define "
                           f"(it defines {', '.join(sorted(mnemonics))})")
    return ops


@functools.lru_cache(maxsize=None)
def load_extension(module: str) -> Extension:
    """The :class:`Extension` of an importable module (``EXTENSION = isa.Extension(...)`` in it).

    Its operations on the book's sizes are registered for this process, so that an
    :class:`Instruction` of one of them names its operands (``ins.dst``).  Two loaded
    extensions may not share an op code or a mnemonic.
    """
    try:
        mod = importlib.import_module(module)
    except Exception as e:
        raise IsaError(f"extension {module!r} cannot be imported ({type(e).__name__}: {e}); "
                       f"is its directory on PYTHONPATH?") from None
    ext = getattr(mod, EXTENSION_ATTRIBUTE, None)
    if not isinstance(ext, Extension):
        raise IsaError(f"extension {module!r}: the module defines no {EXTENSION_ATTRIBUTE} = isa.Extension(...)")
    ext = Extension(ext.ops, dict(ext.golden), dict(ext.engines), module)
    ops = _extension_ops(ext, BOOK)
    for spec in ops:
        owner = OP_BY_CODE.get(spec.code) or OP_BY_NAME.get(spec.mnemonic)
        if owner is not None:
            raise IsaError(f"extension {module}: {spec.mnemonic} (op code {spec.code}) clashes with the book's "
                           f"{owner.mnemonic} (op code {owner.code})")
        for code, (other, known) in _LOADED_OPS.items():
            if other != module and (code == spec.code or known.mnemonic == spec.mnemonic):
                raise IsaError(f"extension {module}: {spec.mnemonic} (op code {spec.code}) clashes with "
                               f"{known.mnemonic} (op code {code}) of extension {other}, also loaded")
    for spec in ops:
        _LOADED_OPS[spec.code] = (module, spec)
    return ext


def known_spec(key: int | str) -> OpSpec | None:
    """The operation of op code (or mnemonic) ``key`` among the book's and every loaded
    extension's, on the book's sizes (None if there is none)."""
    if isinstance(key, str):
        spec = OP_BY_NAME.get(key)
        return spec or next((s for _, s in _LOADED_OPS.values() if s.mnemonic == key), None)
    spec = OP_BY_CODE.get(key)
    if spec is None and key in _LOADED_OPS:
        spec = _LOADED_OPS[key][1]
    return spec


def config_problems(config: Config) -> list[str]:
    """What stops ``config`` from fitting the instruction word (empty if it fits)."""
    out = []
    for name, what, fld in (("array", "M and N", "f"), ("max_k", "K", "g")):
        top = FIELD[fld].mask
        if getattr(config, name) > top:
            out.append(f"{name}={getattr(config, name)}: {what} are {FIELD[fld].width}-bit fields (at most {top})")
    spad_top = 1 << FIELD["a"].width
    if config.spad_words > spad_top:
        out.append(f"spad_words={config.spad_words}: scratchpad addresses are {FIELD['a'].width}-bit fields "
                   f"(at most {spad_top} words)")
    problem = ext_words_problem(config.ext_words)
    if problem:
        out.append(f"ext_words={config.ext_words}: {problem}")
    return out


class InstructionSet:
    """The operations of one configuration, with that chip's legality rules and busy times.

    Get one with :func:`instruction_set`; the module-level :data:`OPS`,
    :func:`check` and :func:`program_counters` are the book chip's.  The book's
    operations come first, then each extension's (``config.extensions``), in order.
    """

    def __init__(self, config: Config):
        problems = config_problems(config)
        if problems:
            raise IsaError(f"configuration {config.name!r} does not fit the instruction word: "
                           + "; ".join(problems))
        self.config = config
        ops = list(_book_ops(config))
        #: op code -> the extension that defines it (book operations are not in it)
        self.extension_of: dict[int, Extension] = {}
        for module in config.extensions:
            ext = load_extension(module)
            if any(e.module == module for e in self.extension_of.values()):
                raise IsaError(f"configuration {config.name!r}: extension {module} is named twice")
            for spec in _extension_ops(ext, config):
                if _layout(spec) != _layout(_LOADED_OPS[spec.code][1]):
                    raise IsaError(f"extension {module}: {spec.mnemonic}'s op code, mnemonic, unit or operand "
                                   f"bits differ on configuration {config.name!r} from the book's sizes")
                ops.append(spec)
                self.extension_of[spec.code] = ext
        self.ops: tuple[OpSpec, ...] = tuple(ops)
        self.extensions: tuple[Extension, ...] = tuple(dict.fromkeys(self.extension_of.values()))
        self.by_code: dict[int, OpSpec] = {o.code: o for o in self.ops}
        self.by_name: dict[str, OpSpec] = {o.mnemonic: o for o in self.ops}
        if len(self.by_code) != len(self.ops) or len(self.by_name) != len(self.ops):
            raise IsaError(f"configuration {config.name!r}: two operations share an op code or a mnemonic")
        reserved = sorted(set(self.by_code) & set(RESERVED_OP_CODES))
        if reserved:
            raise IsaError(f"op code {reserved[0]} is reserved: no configuration may define it")
        # The verdict is a function of the instruction and the memory size alone, and the same
        # instruction is checked again and again (compiling, decoding, making a bundle's expectations):
        # remembered, a bounded number of them per instruction set.
        self._check = functools.lru_cache(maxsize=CHECK_CACHE_SIZE)(
            lambda ins, ext_words: _check(self, ins, ext_words))

    def __repr__(self):
        return f"InstructionSet({self.config.describe()})"

    def origin(self, code: int) -> str:
        """Who defines op code ``code``: ``the book`` or ``extension MODULE``."""
        ext = self.extension_of.get(code)
        return "the book" if ext is None else f"extension {ext.module}"

    def spec(self, code: int) -> OpSpec:
        """The operation of op code ``code`` (:class:`IsaError` if this chip has none)."""
        try:
            return self.by_code[code]
        except KeyError:
            raise IsaError(f"undefined op code {code}") from None

    def unit_ops(self, unit: "Unit") -> tuple[int, ...]:
        """The op codes a unit executes, in op-code order."""
        return tuple(sorted(o.code for o in self.ops if o.unit == unit))

    def undefined_codes(self) -> tuple[int, ...]:
        """The op codes this chip does not define (BAD_OPCODE), reserved ones included."""
        return tuple(c for c in range(FIELD["op"].mask + 1) if c not in self.by_code)

    def busy(self, ins: "Instruction") -> int:
        """The executing unit's busy time of ``ins`` on this chip (0 for HALT)."""
        return self.spec(ins.op).busy(ins)

    def cycles(self, ins: "Instruction") -> int:
        """Fetch + issue + busy time of ``ins`` on this chip."""
        return FETCH_ISSUE_CYCLES + self.busy(ins)

    def make(self, mnemonic: str, **operands: int) -> "Instruction":
        """:func:`make` with this chip's operations (an extension's included)."""
        try:
            spec = self.by_name[mnemonic.upper()]
        except KeyError:
            raise IsaError(f"unknown operation {mnemonic!r} (operations: {', '.join(self.by_name)})") from None
        return _make(spec, operands)

    def check(self, ins: "Instruction", ext_words: int | None = None) -> tuple["ErrorCode", str]:
        """:func:`check` on this chip (``ext_words`` defaults to the configuration's)."""
        return self._check(ins, self.config.ext_words if ext_words is None else ext_words)

    def counters(self, program: Sequence["Instruction"]) -> "Counters":
        """:func:`program_counters` on this chip (under the overlapped rule if ``config.overlap``)."""
        return _counters(self, program)

    def timer(self) -> "IssueTimer":
        """A fresh :class:`IssueTimer`: this chip's timing rule, one instruction at a time."""
        return IssueTimer(self)


#: how many (instruction, memory size) verdicts an instruction set remembers
CHECK_CACHE_SIZE = 1 << 16


@functools.lru_cache(maxsize=None)
def instruction_set(config: Config = BOOK) -> InstructionSet:
    """The instruction set of ``config`` (the book's by default); one object per configuration."""
    return InstructionSet(config)


OP_BY_CODE: dict[int, OpSpec] = {}       # (filled below: the book set is built first)
OP_BY_NAME: dict[str, OpSpec] = {}
_BOOK_SET = instruction_set(BOOK)
OPS: tuple[OpSpec, ...] = _BOOK_SET.ops                  #: the book chip's operations
OP_BY_CODE.update(_BOOK_SET.by_code)
OP_BY_NAME.update(_BOOK_SET.by_name)


# --------------------------------------------------------------------------
# Instructions
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Instruction:
    """One decoded instruction: its op code and the raw value of every field.

    Operand names of the operation are attributes: ``ins.dst``, ``ins.len``,
    ``ins.M`` ... (see :data:`OPS`; an extension's operation once it is loaded,
    :func:`known_spec`).  Build one with :func:`make`, or with
    :meth:`decode` from a 128-bit word.
    """
    op: int
    a: int = 0
    b: int = 0
    c: int = 0
    d: int = 0
    e: int = 0
    f: int = 0
    g: int = 0
    h: int = 0
    fl: int = 0
    x: int = 0

    def __post_init__(self):
        for f in FIELDS:
            v = getattr(self, f.name)
            if not isinstance(v, int) or not 0 <= v <= f.mask:
                raise IsaError(f"field {f.name}={v!r} does not fit in {f.width} bits")

    # -- views
    @property
    def spec(self) -> OpSpec:
        """The operation (the book's, or a loaded extension's on the book's sizes)."""
        spec = known_spec(self.op)
        if spec is None:
            raise IsaError(f"undefined op code {self.op}")
        return spec

    @property
    def mnemonic(self) -> str:
        return self.spec.mnemonic

    @property
    def fields(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in OPERAND_FIELDS}

    def __getattr__(self, name):
        # Only called for names that are not dataclass fields: operand names.
        spec = known_spec(object.__getattribute__(self, "op"))
        where = None if spec is None else spec.operand_bits.get(name)
        if where is None:
            raise AttributeError(name)
        field_name, lsb, mask = where
        return (object.__getattribute__(self, field_name) >> lsb) & mask

    def operands(self) -> dict[str, int]:
        return {o.name: o.get(self.fields) for o in self.spec.operands}

    # -- encoding
    def encode(self) -> int:
        word = 0
        for f in FIELDS:
            word |= getattr(self, f.name) << f.lsb
        return word

    @classmethod
    def decode(cls, word: int) -> "Instruction":
        if not 0 <= word < (1 << INSTR_BITS):
            raise IsaError(f"instruction word {word:#x} is not a 128-bit value")
        return cls(**{f.name: (word >> f.lsb) & f.mask for f in FIELDS})

    # -- timing
    def busy(self) -> int:
        """The executing unit's busy time in cycles (0 for HALT)."""
        return self.spec.busy(self)

    def cycles(self) -> int:
        """Fetch + issue + busy time."""
        return FETCH_ISSUE_CYCLES + self.busy()

    def __str__(self) -> str:
        from_op = known_spec(self.op)
        if from_op is None:
            return f"<undefined op {self.op}>"
        return " ".join([from_op.mnemonic] + [f"{k}={v}" for k, v in self.operands().items()])


def make(mnemonic: str, **operands: int) -> Instruction:
    """Build an instruction from its operation's own operand names.

    ``make("MM", dst=0, A=100, B=200, M=4, K=16, N=4)``; missing operands take
    the operation's defaults (``lda=K``, ``ldb=N``, ``ldc=N``, flags 0), or 0.
    """
    try:
        spec = OP_BY_NAME[mnemonic.upper()]
    except KeyError:
        raise IsaError(f"unknown operation {mnemonic!r} (the book's operations: {', '.join(OP_BY_NAME)}; "
                       f"an extension's: instruction_set(config).make)") from None
    return _make(spec, operands)


def _make(spec: OpSpec, operands: Mapping[str, int]) -> Instruction:
    names = {o.name for o in spec.operands}
    unknown = set(operands) - names
    if unknown:
        raise IsaError(f"{spec.mnemonic} has no operand {', '.join(sorted(unknown))} "
                       f"(operands: {', '.join(o.name for o in spec.operands) or 'none'})")
    values = dict(operands)
    for name, default in spec.defaults.items():
        if name not in values:
            values[name] = values[default] if isinstance(default, str) else default
    fields = {f: 0 for f in OPERAND_FIELDS}
    for o in spec.operands:
        v = values.get(o.name, 0)
        if not isinstance(v, int) or not 0 <= v < (1 << o.bits):
            raise IsaError(f"{spec.mnemonic} operand {o.name}={v!r} does not fit in {o.bits} bits")
        fields[o.field] |= v << o.lsb
    return Instruction(spec.code, **fields)


HALT = Instruction(0)


# --------------------------------------------------------------------------
# Legality: what halts the machine with an error code
# --------------------------------------------------------------------------

def check(ins: Instruction, ext_words: int = EXT_WORDS_DEFAULT) -> tuple[ErrorCode, str]:
    """The error the book chip raises at issue for ``ins``, and why (``(OK, "")`` if legal).

    Checked in this order, the first failure wins: op code; operand ranges (MM's
    shape, :attr:`Operand.legal`); zero lengths; memory ranges (in the order of
    the operation's regions); overlap.  Another configuration's:
    ``instruction_set(config).check(ins)``.
    """
    return _BOOK_SET.check(ins, ext_words)


def _check(iset: InstructionSet, ins: Instruction, ext_words: int) -> tuple[ErrorCode, str]:
    spad_words = iset.config.spad_words
    spec = iset.by_code.get(ins.op)
    if spec is None:
        return ErrorCode.BAD_OPCODE, f"undefined op code {ins.op}"
    if any(not o.legal[0] <= getattr(ins, o.name) <= o.legal[1] for o in spec.ranged):
        values = " ".join(f"{o.name}={getattr(ins, o.name)}" for o in spec.ranged)
        return ErrorCode.BAD_SHAPE, f"{spec.mnemonic} shape {values}: must be {spec.ranges_text()}"
    for name in spec.lengths:
        if getattr(ins, name) == 0:
            return ErrorCode.ZERO_LENGTH, f"{spec.mnemonic} {name}=0"
    regions = spec.regions(ins)
    for r in regions:
        size = spad_words if r.memory == "spad" else ext_words
        if r.end > size:
            code = ErrorCode.SPAD_RANGE if r.memory == "spad" else ErrorCode.EXT_RANGE
            return code, (f"{spec.mnemonic} {r.role} words {r.start}..{r.end - 1} lie outside the "
                          f"{'scratchpad' if r.memory == 'spad' else 'external memory'} of {size} words")
    if spec.disjoint_or_same:
        spad = [r for r in regions if r.memory == "spad"]
        for i, p in enumerate(spad):
            for q in spad[i + 1:]:
                if p.start != q.start and p.start < q.end and q.start < p.end:
                    return ErrorCode.OVERLAP, (f"{spec.mnemonic} {p.role} {p.start}..{p.end - 1} and "
                                               f"{q.role} {q.start}..{q.end - 1} overlap without being identical")
    return ErrorCode.OK, ""


# --------------------------------------------------------------------------
# Timing of whole programs
# --------------------------------------------------------------------------

def program_counters(program: Sequence[Instruction]) -> Counters:
    """The five counters of a legal program on the book chip.

    Instructions run one at a time in order up to the first HALT; each costs
    fetch + issue + its unit's busy time; HALT costs fetch + issue and is not
    counted as an executed instruction.  Another configuration's:
    ``instruction_set(config).counters(program)``.
    """
    return _counters(_BOOK_SET, program)


def _counters(iset: InstructionSet, program: Sequence[Instruction]) -> Counters:
    timer = iset.timer()
    for ins in program:
        if ins.op == 0:
            return timer.halt()
        timer.issue(ins)
    raise IsaError("program has no HALT")


class IssueTimer:
    """The timing rule of a chip, applied one instruction at a time, in program order.

    Cycle 0 is the first FETCH.  Every instruction is fetched in one cycle and
    issued, at the earliest, in the next (:data:`FETCH_ISSUE_CYCLES`); an
    instruction issued (its unit started) in cycle t with busy time W keeps its
    unit busy in cycles t+1 .. t+W, and its last scratchpad write is complete at
    the end of cycle t+W.

    Without overlap (the book's chip) the sequencer waits for the unit: the next
    instruction is fetched in cycle t+W+1 and issued in t+W+2.

    With overlap (``config.overlap``), the next instruction is fetched in cycle
    t+1, the cycle after the issue, and its issue waits, one cycle at a time, until
    neither of these holds for any instruction j still in flight (issued at t_j,
    W_j, in flight up to and including cycle t_j+W_j):

    * j runs on the new instruction's unit (a unit runs one instruction at a time);
    * a scratchpad region of j and one of the new instruction share a word and at
      least one of the two writes it (read-after-write, write-after-read,
      write-after-write; :meth:`OpSpec.accesses`, whole spans from first to last word).

    So an instruction i is issued in cycle
    ``max(issue(i-1) + 2, max(t_j + W_j + 1 for every earlier j it conflicts with))``.
    External-memory regions need no check: only the DMA touches the external
    memory, and it runs one instruction at a time, in order.

    HALT, an instruction failing its check (:func:`check`) and a fetch beyond the
    instruction memory are decided at issue like any instruction, and all wait
    until every unit is idle (every in-flight instruction has completed, so the
    memory is final): the halting issue is in cycle
    ``max(issue(i-1) + 2, max(t_j + W_j + 1 for every j))``.  A faulting
    instruction does not execute; everything issued before it completes.

    Counters: TOTAL, every cycle from the first fetch up to and including the
    halting issue; MATRIX, DMA, VECTOR, the busy cycles of each unit (the sum of
    its instructions' busy times, as without overlap); INSTRUCTIONS, the
    instructions issued (not HALT, not a faulting one).  Without overlap the rule
    reduces to the book's: each instruction costs fetch + issue + its busy time.
    """

    def __init__(self, iset: InstructionSet):
        self.iset = iset
        self.overlap = iset.config.overlap
        self.counters = [0] * len(Counter)
        self.last_issue = -1                 # cycle of the last issue (-1: the first fetch is cycle 0)
        self.free = {}                       # unit -> first cycle it may be started again
        self.in_flight: list[tuple[int, tuple[Region, ...]]] = []   # (first free cycle, spad accesses)

    def _earliest(self, spec: OpSpec, spad: tuple[Region, ...]) -> int:
        t = max(self.last_issue + FETCH_ISSUE_CYCLES, self.free.get(spec.unit, 0))
        for end, regions in self.in_flight:
            if end > t and any(p.conflicts(q) for p in spad for q in regions):
                t = max(t, end)
        return t

    @staticmethod
    def spad_accesses(spec: OpSpec, ins: Instruction) -> tuple[Region, ...]:
        """The scratchpad regions the hazard check compares for ``ins``."""
        return tuple(r for r in spec.accesses(ins) if r.memory == "spad")

    def earliest(self, ins: Instruction, spad: tuple[Region, ...] | None = None) -> int:
        """The cycle ``ins`` would issue in if it came next (nothing changes); ``spad``:
        its :meth:`spad_accesses`, if the caller has them."""
        spec = self.iset.spec(ins.op)
        if not self.overlap:
            return self.last_issue + FETCH_ISSUE_CYCLES
        return self._earliest(spec, self.spad_accesses(spec, ins) if spad is None else spad)

    def issue(self, ins: Instruction, spad: tuple[Region, ...] | None = None) -> int:
        """Issue the legal, non-HALT instruction ``ins``; returns its issue cycle (``spad``: as
        for :meth:`earliest`)."""
        spec = self.iset.spec(ins.op)
        busy = spec.busy(ins)
        if self.overlap:
            spad = self.spad_accesses(spec, ins) if spad is None else spad
            t = self._earliest(spec, spad)
            self.in_flight = [(end, regions) for end, regions in self.in_flight if end > t]
            self.in_flight.append((t + busy + 1, spad))
            self.free[spec.unit] = t + busy + 1
        else:
            t = self.last_issue + FETCH_ISSUE_CYCLES
            self.free = {spec.unit: t + busy + 1}
        self.last_issue = t if self.overlap else t + busy
        self.counters[UNIT_COUNTER[spec.unit]] += busy
        self.counters[Counter.INSTRUCTIONS] += 1
        return t

    def halt(self) -> Counters:
        """Halt (HALT, a faulting instruction or a fetch past the end) after the instructions
        issued so far: the final counters."""
        t = max([self.last_issue + FETCH_ISSUE_CYCLES, *self.free.values()])
        self.counters[Counter.TOTAL] = t + 1
        return Counters(*self.counters)


# --------------------------------------------------------------------------
# Arithmetic primitives (shared by the golden model and the RTL unit tests)
# --------------------------------------------------------------------------

def to_signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def int8_of(word: int) -> int:
    """The int8 an operand word holds: its low byte, signed."""
    return to_signed(word, 8)


def int32_of(word: int) -> int:
    return to_signed(word, 32)


def word_of(value: int) -> int:
    """A Python int as a 32-bit memory word (two's complement)."""
    return value & WORD_MASK


def clamp(v: int, lo: int, hi: int) -> int:
    return lo if v < lo else hi if v > hi else v


def round_half_away(num: int, shift: int) -> int:
    """round(num / 2**shift), ties away from zero, in integers."""
    if shift == 0:
        return num
    mag = abs(num)
    q = (mag + (1 << (shift - 1))) >> shift
    return q if num >= 0 else -q


def requantize(acc: int, mantissa: int, shift: int, relu: bool = False) -> int:
    """The requantizer: clamp(round_half_away(acc * m / 2**s), -127 (or 0), 127)."""
    return clamp(round_half_away(acc * mantissa, shift), 0 if relu else INT8_MIN, INT8_MAX)


def divide_u40(num: int, den: int) -> tuple[int, int]:
    """The 40-bit unsigned divider: (quotient, remainder).

    A zero divisor gives the all-ones quotient and the numerator as remainder,
    which is what a restoring divider naturally produces.
    """
    mask = (1 << DIV_BITS) - 1
    if not (0 <= num <= mask and 0 <= den <= mask):
        raise ValueError("divider operands are 40-bit unsigned")
    if den == 0:
        return mask, num
    return num // den, num % den


def softmax_q16(scores: Iterable[int]) -> list[int]:
    """The softmax unit on int8 scores (real value x/16): Q0.16 probabilities."""
    xs = list(scores)
    m = max(xs)
    e = [EXP_TABLE[m - x] for x in xs]
    r, _ = divide_u40(SOFTMAX_NUMERATOR, sum(e))
    half = 1 << (SOFTMAX_OUT_SHIFT - 1)
    return [(ei * r + half) >> SOFTMAX_OUT_SHIFT for ei in e]


def mantissa_shift(ratio: float) -> tuple[int, int]:
    """A positive real ratio as (m, s) with 2**23 <= m < 2**24 and ratio ~ m / 2**s."""
    if not ratio > 0:
        raise ValueError(f"requantization ratio must be positive, got {ratio}")
    s = 23 - math.floor(math.log2(ratio))
    m = round(ratio * (1 << s))
    if m >= 1 << 24:
        m >>= 1
        s -= 1
    if not ((1 << 23) <= m < (1 << 24) and 0 <= s < (1 << FIELD["e"].width)):
        raise ValueError(f"ratio {ratio} cannot be represented as a 24-bit mantissa and a 6-bit shift")
    return m, s
