"""The machine's constants: word and instruction widths, fixed-point formats, the exp table, the book chip's sizes."""
from __future__ import annotations

import math

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
SM_SCORE_DIVISOR = 16          #: SM reads an int8 score x as the real value x / 16
DIV_BITS = 40                  #: width of the softmax unit's unsigned divider
SOFTMAX_NUMERATOR = 1 << 38    #: r = floor(2**38 / S)
SOFTMAX_OUT_SHIFT = 22         #: p = (e * r + 2**21) >> 22


def _exp_table() -> tuple[int, ...]:
    # T[d] = round(65535 * exp(-d/16)), ties up (no entry is near a tie).
    return tuple(int(math.floor(65535 * math.exp(-d / SM_SCORE_DIVISOR) + 0.5)) for d in range(EXP_TABLE_SIZE))


EXP_TABLE: tuple[int, ...] = _exp_table()

#: bits of the softmax's quotient r = 2**38 // S: the sum S holds the maximum's own term T[0], so
#: S >= T[0] and r < 2**SM_QUOTIENT_BITS (23); a short division (``Config.short_division``) finds only these
SM_QUOTIENT_BITS = (SOFTMAX_NUMERATOR // EXP_TABLE[0]).bit_length()
assert SOFTMAX_NUMERATOR >> SM_QUOTIENT_BITS < EXP_TABLE[0]       # the short division's precondition, for every S


def sm_division_cycles(config: Config) -> int:
    """SM's division phase: the cycle that starts the divider, then the divider's time to its result:
    one cycle per quotient bit (DIV_BITS), or with ``config.short_division`` the SM_QUOTIENT_BITS bits
    that can be 1 and the start cycle that loads the state after the others (``Divider``'s
    ``quotient_bits``)."""
    return 1 + (SM_QUOTIENT_BITS + 1 if config.short_division else DIV_BITS)

# The book chip's sizes (a configuration's own are on its Config).
SPAD_WORDS = BOOK.spad_words           #: scratchpad size in words
IMEM_WORDS = BOOK.imem_words           #: instruction memory, in 128-bit words
EXT_WORDS_DEFAULT = BOOK.ext_words     #: external memory size in words (the book's early chapters use 2048)
LAT = BOOK.lat                         #: external-memory latency in cycles, paid once per load
MM_MAX_MN = BOOK.array                 #: the systolic array is 4 x 4
MM_MAX_K = BOOK.max_k                  #: the operand row memories hold 64 values
