"""The arithmetic primitives the units implement bit for bit (requantizer, exp table, 40-bit divider,
fixed-point softmax), shared by the golden model, the compiler and the RTL unit tests."""
from __future__ import annotations

import math
from typing import Iterable

from .constants import DIV_BITS, EXP_TABLE, INT8_MAX, INT8_MIN, SOFTMAX_NUMERATOR, SOFTMAX_OUT_SHIFT, WORD_MASK
from .fields import FIELD

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
