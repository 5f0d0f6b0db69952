"""Operands, regions and operations (:class:`OpSpec`): the book's eight, with their busy-time formulas and legality rules."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Mapping

from ..config import Config
from .constants import DIV_BITS, EXP_TABLE, EXP_TABLE_SIZE, SOFTMAX_OUT_SHIFT, sm_division_cycles
from .fields import FIELD, Unit

if TYPE_CHECKING:
    from .instruction import Instruction

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
    transposed) and writes C row by row (``M*ceil(N/P)``); with
    ``config.stream_while_staging`` the stream of a B not transposed starts as B's
    rows land, ``K - 1`` cycles earlier.  SM keeps one word per
    cycle.  AMAX on a wide port reduces a chunk's P lanes in a tree of log2(P)
    registered levels: ``ceil(len/P) + 2 + log2(P)``.  With W = P = 1 every
    formula and its text is the book's.  Each formula text is a Python expression
    of the operands, ``LAT`` and ``ceil`` (a test evaluates it against the busy
    function).
    """
    _O = Operand
    LAT = config.lat
    P, W = config.spad_ports, config.ext_port_words
    cd = ceil_div
    # the stream: K+M+N-2 cycles of skew after the whole of B is staged; with stream_while_staging
    # a B not transposed streams as its rows land, so the stream's K steps hide under B's staging
    if config.stream_while_staging:
        stream_text, stream = "(K+M+N-2 if tb else M+N-1)", lambda i: i.K + i.M + i.N - 2 if i.tb else i.M + i.N - 1
    else:
        stream_text, stream = "(K+M+N-2)", lambda i: i.K + i.M + i.N - 2
    # the control cycles: 7 on the book's chip, 6 with done in the cycle of the last write
    ctl = 6 if config.mm_done_with_write else 7
    if P == 1:
        mm_text = f"M*K + K*N + {stream_text} + M*N + {ctl}"
        mm_busy = lambda i: i.M * i.K + i.K * i.N + stream(i) + i.M * i.N + ctl
    else:
        mm_text = (f"M*{_per('K', P)} + (N*{_per('K', P)} if tb else K*{_per('N', P)}) "
                   f"+ {stream_text} + M*{_per('N', P)} + {ctl}")
        mm_busy = lambda i: (i.M * cd(i.K, P) + (i.N * cd(i.K, P) if i.tb else i.K * cd(i.N, P))
                             + stream(i) + i.M * cd(i.N, P) + ctl)
    # AMAX after its last read: the book's engine registers the word, compares it with the best
    # so far and writes (3); a wide engine reads its first chunk in the start cycle, registers
    # the chunk, reduces its P lanes in log2(P) registered levels of pairwise compares, compares
    # the winner with the best so far and writes (2 + log2(P): 3 for P = 2, 5 for P = 8)
    amax_tail = 3 if P == 1 else 2 + (P.bit_length() - 1)
    # SM's division phase: 41 on the book's chip, 25 with the short division
    div = sm_division_cycles(config)
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
               f"3*len + {div} + 6", lambda i: 3 * i.len + div + 6,
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
               f"{_per('len', P)} + {amax_tail}", lambda i: cd(i.len, P) + amax_tail,
               lambda i: (Region("spad", i.dst, 1, "dst"), Region("spad", i.src, i.len, "src")),
               lengths=("len",), arithmetic="index of the first maximum of the signed 32-bit words."),
    )

#: Op codes no configuration may define: the undefined op that tests and the
#: directed suite use to provoke BAD_OPCODE.
RESERVED_OP_CODES = (15,)
