"""The softmax unit: ``SM dst src len``, bit-exact with ``isa.softmax_q16``.

Scores are the int8 low bytes of ``src[0..len)`` (real value x/16); the unit
writes Q0.16 probabilities to ``dst[0..len)``:

    m = max x;  e_i = EXP_TABLE[m - x_i];  S = sum e_i;
    r = floor(2**38 / S)  (the 40-bit divider);  p_i = (e_i * r + 2**21) >> 22

Structure: four phases, one after the other, on the unit's single scratchpad
port (one read and one write per cycle at most).

============  =============================================================  ============
phase         what happens                                                   cycles
============  =============================================================  ============
MAX           read src[i] (from the start cycle on, one element ahead);      len + 1
              register it; the next cycle compare with the running max
EXP           read src[i] (from MAX's last cycle on, one element ahead);     len + 2
              register it; next cycle look up T[m - x] in the ROM (sync
              read); the cycle after, register e; then write it to dst[i]
              and add it to S (the last word in DIV_START)
DIV           start the divider on (2**38, S) (and write EXP's last e);      1 + 40
              it answers 40 cycles later
              (one quotient bit per cycle); r is latched in that cycle.
              With ``Config.short_division``: 1 + 24 (the 23 bits r can
              have, after a start cycle that loads the state the first
              17 steps would reach: S >= T[0] > 2**38 >> 23)
SCALE         read e from dst[i] (from the division's last cycle on, one     len + 3
              element ahead); register it; next cycle multiply e * r
              (registered); next cycle add 2**21 and shift by 22
              (registered); then write p to dst[i]
============  =============================================================  ============

Each pass streams ``len`` reads in consecutive cycles through a pipeline of
depth 1, 2 or 3 and ends in the cycle its last element leaves the pipeline,
so a pass costs ``len`` + its depth.  The busy time is therefore

    (len + 1) + (len + 2) + 41 + (len + 3) = 3*len + 41 + 6

with 41 the division (its start cycle and the divider's 40) and 6 = 1 + 2 + 3
the three passes' pipeline depths.  ``done`` is the cycle of the last write.

The exponentials are parked in ``dst`` between EXP and SCALE, which is what
lets ``dst == src`` work: every score is read (twice) before its slot is
overwritten, and in no cycle are the same address read and written (in EXP
the write trails the read by four elements, in SCALE by four).  Disjoint
regions work the same way; partially overlapping ones are illegal (the
sequencer refuses them).

Widths: S >= T[0] = 65535 (the maximum's own term) and S <= spad_words * 65535
(:func:`sum_bits`: 28 bits on the book's 4096-word scratchpad, at most 32), and
r = 2**38 // S < 2**23; the multiplier is 16 x 23 bits.
``len`` must be at least 1 (the sequencer refuses 0).
"""
from types import SimpleNamespace

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import wiring

from .. import isa
from ..config import Config
from .divider import Divider
from .exp_table import DATA_BITS as E_BITS, ExpTable
from .layout import UnitSignature, spad_addr_bits
from .decoder import operand


def sum_bits(config: Config) -> int:
    """Width of S: at most ``spad_words`` terms of at most T[0]."""
    return (config.spad_words * isa.EXP_TABLE[0]).bit_length()


assert sum_bits(Config(spad_words=1 << isa.FIELD["c"].width)) <= isa.DIV_BITS   # S always fits the divider
#: r = 2**38 // S with S >= T[0]
R_BITS = (isa.SOFTMAX_NUMERATOR // isa.EXP_TABLE[0]).bit_length()
PRODUCT_BITS = E_BITS + R_BITS
#: p <= (T[0] * r_max + 2**21) >> 22
P_BITS = ((isa.EXP_TABLE[0] * (isa.SOFTMAX_NUMERATOR // isa.EXP_TABLE[0])
           + (1 << (isa.SOFTMAX_OUT_SHIFT - 1))) >> isa.SOFTMAX_OUT_SHIFT).bit_length()
#: the division phase: the cycle that starts the divider, then the divider's own time to done (the
#: book's chip; with ``Config.short_division``, ``isa.sm_division_cycles``)
DIV_PHASE_CYCLES = isa.sm_division_cycles(Config.book())
#: pipeline depths of the three passes (read to write / to last use)
MAX_DEPTH, EXP_DEPTH, SCALE_DEPTH = 1, 2, 3
#: each pass reads its first word this many cycles before the pass begins (MAX in the start cycle, EXP
#: in MAX's last cycle, SCALE in the division phase's last cycle), so its pipeline has a register after
#: the scratchpad's output at the same cycles
READ_AHEAD = 1
SCALE_READ_AHEAD = READ_AHEAD
#: EXP writes each e this many cycles after its pipeline's end (from a register): its last write is in
#: the division phase's first cycle, which does not use the port
EXP_WRITE_LAG = 1


def busy_cycles(length: int, config: Config = Config.book()) -> int:
    """The unit's busy time on ``config``, from its structure (equal to the ISA's 3*len + 41 + 6 on the
    book's chip, 3*len + 25 + 6 with the short division)."""
    return ((length + MAX_DEPTH) + (length + EXP_DEPTH) + isa.sm_division_cycles(config)
            + (length + SCALE_DEPTH))


class SoftmaxUnit(wiring.Component):
    """Executes SM (the vector unit's engine for it).

    Parameters
    ----------
    config : Config
        The chip (required; ``isa.BOOK`` is the book's): the scratchpad's size sets the address,
        counter and sum widths.

    Ports
    -----
    start, ins, done, busy, spad : UnitSignature
        The unit contract (:class:`ga2_hdl.rtl.layout.UnitSignature`); ``spad`` reads src, then
        the exponentials in dst, and writes them, then the probabilities.
    """

    def __init__(self, *, config: Config):
        self.config = config
        super().__init__(UnitSignature(config=config))

    def _read_address(self, m, src, reading):
        """The read address from registers: ``rd_ptr``, the pass's base + rd_index (one further
        with each read), or the instruction's ``src`` while ``from_field`` (IDLE: the start cycle
        reads element 0; MAX's last cycle: EXP's element 0), which the passes set a cycle ahead.
        Returns (rd_ptr, from_field)."""
        addr_bits = spad_addr_bits(self.config)
        rd_ptr = Signal(addr_bits, name="rd_ptr")
        rd_addr = Signal(addr_bits, name="rd_addr_now")
        from_field = Signal(init=1, name="rd_from_field")
        m.d.sync += from_field.eq(0)
        m.d.comb += [rd_addr.eq(Mux(from_field, src, rd_ptr)), self.spad.rd_addr.eq(rd_addr)]
        with m.If(reading):
            m.d.sync += rd_ptr.eq(rd_addr + 1)
        return rd_ptr, from_field

    def elaborate(self, platform):
        m = Module()
        m.submodules.exp_table = exp_table = ExpTable()
        # the short division: S >= T[0], so the quotient fits in SM_QUOTIENT_BITS (the divider's precondition)
        short = isa.SM_QUOTIENT_BITS if self.config.short_division else None
        m.submodules.divider = divider = Divider(quotient_bits=short)
        assert 1 + divider.CYCLES == isa.sm_division_cycles(self.config)

        dst, src, length = (operand(self.ins, "SM", name) for name in ("dst", "src", "len"))

        # ---- the streaming machinery shared by the three passes
        spad_words, addr_bits = self.config.spad_words, spad_addr_bits(self.config)
        rd_index = Signal(range(spad_words + 1))       # next element to read in this pass
        wr_index = Signal(range(spad_words + 1))       # next element to write in this pass
        reading = Signal()                             # a read is issued this cycle
        read_is_last = Signal()
        # stage k valid / carrying the last element: stage 1 = read data on rd_data
        v1, v2, v3, v4 = Signal(), Signal(), Signal(), Signal()
        last1, last2, last3, last4 = Signal(), Signal(), Signal(), Signal()
        rd_now = Signal(range(spad_words + 1))         # the element read this cycle
        m.d.comb += [rd_now.eq(rd_index), read_is_last.eq(rd_now == length - 1)]
        rd_ptr, from_field = self._read_address(m, src, reading)
        m.d.sync += [v1.eq(reading), last1.eq(reading & read_is_last), v2.eq(v1), last2.eq(last1),
                     v3.eq(v2), last3.eq(last2), v4.eq(v3), last4.eq(last3)]
        with m.If(reading):
            m.d.sync += rd_index.eq(rd_now + 1)

        def next_pass():
            # The pass's last element has left its pipeline: restart the counters,
            # and drop what the deeper stages (unused by this pass) copied.
            m.d.sync += [rd_index.eq(0), wr_index.eq(0), v2.eq(0), v3.eq(0), last2.eq(0), last3.eq(0)]
            m.d.sync += [v4.eq(0), last4.eq(0)]

        m.d.comb += [self.spad.rd_en.eq(reading), self.spad.wr_addr.eq((dst + wr_index)[:addr_bits])]

        score = self.spad.rd_data[:8].as_signed()      # stage 1 in MAX and EXP
        score_r = Signal(signed(8))                    # stage 2 in MAX and EXP: the score, registered
        m.d.sync += score_r.eq(score)
        running_max = Signal(signed(8))
        total = Signal(sum_bits(self.config))
        r = Signal(R_BITS)
        e_reg, e_pending = Signal(E_BITS), Signal()   # EXP: the ROM's word, added to S a cycle later
        e_read = Signal(E_BITS)                        # SCALE stage 1: the exponential read back
        product = Signal(PRODUCT_BITS)                 # SCALE stage 2
        prob = Signal(P_BITS)                          # SCALE stage 3
        #: what the value property (ga2_hdl/contracts/softmax.py) reads of this elaboration: the
        #: divider, the exp table, and SCALE's multiplier operands (the exponential read back, r)
        self.datapath = SimpleNamespace(divider=divider, exp_table=exp_table, e_read=e_read, r=r)

        m.d.comb += exp_table.addr.eq((running_max - score_r)[:8])   # 0 .. 255 since max >= x
        # SCALE's operand, registered in every cycle and state (only v2, the cycle after v1, takes
        # it): the block RAM's word reaches it through the read's gate alone, no state's enable
        m.d.sync += e_read.eq(self.spad.rd_data[:E_BITS])

        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += [self.busy.eq(1),
                                 running_max.eq(-(1 << 7)), total.eq(0), e_pending.eq(0),  # the smallest int8
                                 rd_index.eq(0), wr_index.eq(0)]
                    m.d.sync += rd_index.eq(1)         # (the read of element 0, below)
                    m.next = "MAX"
                # MAX reads element 0 in the start cycle (the port is free, a read changes nothing),
                # so each pass has a register after the scratchpad's output at the same cycles
                m.d.comb += reading.eq(self.start)
                m.d.sync += from_field.eq(~self.start)

            with m.State("MAX"):
                # element i: read in cycle i-1 of MAX (element 0 in the start cycle), registered
                # (stage 1), compared with the running max (stage 2): the pass ends in cycle len
                m.d.comb += reading.eq(rd_index < length)
                m.d.sync += from_field.eq(v1 & last1)      # the next cycle is the pass's last
                with m.If(v2 & (score_r > running_max)):
                    m.d.sync += running_max.eq(score_r)
                with m.If(v2 & last2):
                    next_pass()
                    # EXP's first read, in MAX's last cycle (the port is free then)
                    m.d.comb += [reading.eq(1), rd_now.eq(0)]
                    m.d.sync += rd_index.eq(1)
                    m.next = "EXP"

            with m.State("EXP"):
                m.d.comb += reading.eq(rd_index < length)
                # stage 1: the score registered; stage 2: the ROM address is driven above; stage 3: its
                # data, registered (e_reg), written to dst and added to S from the register a cycle
                # later (the ROM's output feeds only that register; the last word is written and
                # added in DIV_START, on its way into the divider)
                m.d.sync += e_pending.eq(v3)
                with m.If(e_pending):
                    m.d.comb += [self.spad.wr_en.eq(1), self.spad.wr_data.eq(e_reg)]
                    m.d.sync += [total.eq(total + e_reg), wr_index.eq(wr_index + 1)]
                with m.If(v3):
                    m.d.sync += e_reg.eq(exp_table.data)
                    with m.If(last3):
                        next_pass()
                        m.d.sync += rd_ptr.eq(dst)          # SCALE reads dst + i
                        m.next = "DIV_START"

            with m.State("DIV_START"):
                m.d.comb += [divider.start.eq(1),
                             divider.numerator.eq(isa.SOFTMAX_NUMERATOR),
                             divider.denominator.eq(total + e_reg),     # e_pending: the last word
                             self.spad.wr_en.eq(1), self.spad.wr_data.eq(e_reg),
                             self.spad.wr_addr.eq((dst + length - 1)[:addr_bits])]
                m.next = "DIV_WAIT"

            with m.State("DIV_WAIT"):
                with m.If(divider.done):
                    # SCALE's first read, a cycle before SCALE: the port is free and the word
                    # needs no r, which buys the register after the scratchpad's output
                    m.d.comb += reading.eq(1)
                    m.d.sync += r.eq(divider.quotient[:R_BITS])
                    m.next = "SCALE"

            with m.State("SCALE"):
                self._scale(m, SimpleNamespace(
                    reading=reading, rd_index=rd_index, wr_index=wr_index, length=length, from_field=from_field,
                    v=(v1, v2, v3, v4), last4=last4, e_read=e_read, product=product, prob=prob, r=r,
                    next_pass=next_pass))
        return m

    def _scale(self, m, s):
        """SCALE: element i read in cycle i-1 of SCALE, registered (v1), multiplied by r (v2),
        rounded (v3), written (v4) in cycle i+3: the same cycles as a pipeline of depth 3 whose
        reads start with SCALE; done with the last write."""
        v1, v2, v3, v4 = s.v
        m.d.comb += s.reading.eq(s.rd_index < s.length)
        with m.If(v2):
            m.d.sync += s.product.eq(s.e_read * s.r)
        with m.If(v3):
            m.d.sync += s.prob.eq((s.product + (1 << (isa.SOFTMAX_OUT_SHIFT - 1))) >> isa.SOFTMAX_OUT_SHIFT)
        with m.If(v4):
            m.d.comb += [self.spad.wr_en.eq(1), self.spad.wr_data.eq(s.prob)]
            m.d.sync += s.wr_index.eq(s.wr_index + 1)
            with m.If(s.last4):
                m.d.comb += self.done.eq(1)
                m.d.sync += self.busy.eq(0)
                s.next_pass()
                m.d.sync += s.from_field.eq(1)
                m.next = "IDLE"
