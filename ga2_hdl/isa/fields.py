"""The 128-bit instruction word and its fields; the machine's units, counters and error codes."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import NamedTuple

from .constants import EXT_ADDR_BITS, EXT_WORDS_MAX, INSTR_BITS

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
