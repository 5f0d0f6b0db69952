"""The softmax unit's divider: 40-bit unsigned restoring division, one
quotient bit per cycle.

Interface and timing (``CYCLES`` = ``width`` = 40 by default)
  * ``start`` is high for one cycle u, with ``numerator`` and ``denominator``
    on the inputs in that cycle only (they are not needed afterwards).
  * ``done`` is high for exactly one cycle, u + CYCLES; from that cycle on
    ``quotient`` and ``remainder`` hold the result until the next ``start``.
  * ``busy`` is high in cycles u+1 .. u+CYCLES-1 (the start cycle and the done
    cycle are not busy, so a new start may come with done).

The algorithm is schoolbook long division in base 2.  One register holds the
numerator bits not yet consumed (at its top) and the quotient bits already
found (at its bottom); a second holds the partial remainder.  Each step
shifts the next numerator bit into the remainder, and subtracts the divisor
when it fits, recording a 1 in the quotient.  The first step happens in the
start cycle itself, on the operands straight from the inputs, so the 40
steps occupy cycles u .. u+39 and the registered result is there at u+40.

Zero divisor: the subtraction always "fits", so every quotient bit is 1 and
the remainder collects the numerator: quotient = 2**width - 1, remainder =
numerator, exactly ``isa.divide_u40``'s definition.  Nothing special-cases it.

A short division (``quotient_bits`` = q below ``width``) is for a caller that
knows the quotient fits in q bits: ``numerator >> q < denominator``.  Then the
first ``width - q`` steps find no quotient bit and leave ``numerator >> q`` as
the partial remainder, so the start cycle loads that state directly (no step:
the denominator reaches only the divisor register), the q steps occupy cycles
u+1 .. u+q and ``done`` is in u+q+1: ``CYCLES`` = q + 1.  The quotient and
remainder are the full division's (the skipped quotient bits are 0).  Outside
the precondition the result means nothing.
"""
from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .. import isa


class Divider(wiring.Component):
    """Multi-cycle unsigned divider (restoring, radix 2).

    Parameters
    ----------
    width : int
        Operand width (``isa.DIV_BITS`` = 40 unless given).
    quotient_bits : int or None
        None (the default): every quotient bit, ``CYCLES`` = ``width``.  Else q, with
        ``1 <= q < width``: the caller guarantees ``numerator >> q < denominator`` and the
        division takes ``CYCLES`` = q + 1 (see the module's documentation).

    Ports
    -----
    start : In(1)
    numerator, denominator : In(width)
        Sampled in the start cycle only.
    busy : Out(1)
    done : Out(1)
        One cycle, CYCLES after start.
    quotient, remainder : Out(width)
        Valid from done until the next start.
    """

    def __new__(cls, width: int = isa.DIV_BITS, quotient_bits: int | None = None):
        # refused before the divider exists: nothing left for Amaranth to warn about
        if width < 2:
            raise ValueError(f"width={width}: the divider needs at least 2 bits")
        if quotient_bits is not None and not (isinstance(quotient_bits, int) and 1 <= quotient_bits < width):
            raise ValueError(f"quotient_bits={quotient_bits!r}: a short division needs 1 <= quotient_bits < "
                             f"width = {width} (None for the whole division)")
        return super().__new__(cls, src_loc_at=1)

    def __init__(self, width: int = isa.DIV_BITS, quotient_bits: int | None = None):
        self.width = width
        self.quotient_bits = quotient_bits
        #: cycles from start to done: one per quotient bit (a short division: one more, its start
        #: cycle loads the state after the steps it skips)
        self.CYCLES = width if quotient_bits is None else quotient_bits + 1
        super().__init__({
            "start": In(1),
            "numerator": In(width),
            "denominator": In(width),
            "busy": Out(1),
            "done": Out(1),
            "quotient": Out(width),
            "remainder": Out(width),
        })

    def elaborate(self, platform):
        m = Module()
        w = self.width

        # Registers: partial remainder; numerator bits (top) / quotient bits (bottom); divisor.
        rem = Signal(w)
        num_quot = Signal(w)
        divisor = Signal(w)
        steps_left = Signal(range(w))         # steps still to do after the current one

        # One step on the registers: bring down the next numerator bit, subtract if it fits.
        brought_down = Signal(w + 1)
        fits = Signal()
        m.d.comb += [
            brought_down.eq(Cat(num_quot[w - 1], rem)),
            fits.eq(brought_down >= divisor),
        ]
        next_rem = Mux(fits, brought_down - divisor, brought_down)   # < 2**w, see module doc
        next_num_quot = Cat(fits, num_quot[:w - 1])

        # The first step, in the start cycle, on the inputs: the remainder is 0, so the number
        # brought down is the numerator's top bit, and the divisor fits only if it is 0, or 1 with
        # that bit set; the remainder is then that bit less the divisor.  No compare of the
        # denominator's w bits (the start cycle's operands reach the registers through a few gates).
        top = self.numerator[w - 1]
        first_fits = (self.denominator[1:] == 0) & (top | ~self.denominator[0])
        first_rem = top & ~(first_fits & self.denominator[0])
        first_num_quot = Cat(first_fits, self.numerator[:w - 1])

        m.d.sync += self.done.eq(0)
        q = self.quotient_bits
        with m.If(self.start):
            if q is None:
                m.d.sync += [
                    rem.eq(first_rem), num_quot.eq(first_num_quot), divisor.eq(self.denominator),
                    steps_left.eq(w - 1), self.busy.eq(1),
                ]
            else:   # the state after the w - q steps that find no quotient bit: q steps to go
                m.d.sync += [
                    rem.eq(self.numerator >> q), num_quot.eq(self.numerator[:q] << (w - q)),
                    divisor.eq(self.denominator), steps_left.eq(q), self.busy.eq(1),
                ]
        with m.Elif(self.busy):
            m.d.sync += [rem.eq(next_rem), num_quot.eq(next_num_quot), steps_left.eq(steps_left - 1)]
            with m.If(steps_left == 1):
                m.d.sync += [self.busy.eq(0), self.done.eq(1)]

        m.d.comb += [self.quotient.eq(num_quot), self.remainder.eq(rem)]
        return m
