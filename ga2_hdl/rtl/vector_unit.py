"""The vector unit: RQ, SM, VADD and AMAX on one scratchpad master port.

:class:`VectorUnit` is what the chip instantiates.  It holds one engine per
operation and routes ``start`` to the engine whose op code ``ins.op`` names;
the engines share the instruction, the scratchpad read data and (through a
multiplexer on ``ins.op``) the unit's single scratchpad port.  Only one
instruction runs at a time and ``ins`` is held from the start cycle until
done, so the multiplexer never switches under a running engine; every idle
engine drives ``rd_en = wr_en = 0``, so the unit is quiet whenever it is idle.

Every engine streams its operands through a short pipeline: the read of
element i is issued in cycle t+1+i (t = the start cycle; one element per
cycle, or per two cycles for VADD; one cycle earlier for RQ and VADD, below), its data comes back the next cycle (the
scratchpad read is synchronous), and the element's result is written a fixed
number of cycles later.  ``done`` is high in the cycle of the last write, so
the busy time W is the number of read cycles plus the pipeline depth:

=====  ==============================================================  ===========
op     pipeline after the read of the last element                     W
=====  ==============================================================  ===========
RQ     data arrives: sign and magnitude registered (the read is        len + 2
       issued one cycle early, in the start cycle); multiply
       (registered); round, saturate and write
VADD   2 reads per element (src1[i], then src2[i]: one read port;      2*len + 2
       the first in the start cycle); src2[i] arrives and is
       registered; added to src1[i] and clamped (registered); write
AMAX   data arrives and is registered (the SRAM output feeds no        len + 3
       logic); compare with the best so far; write the index
SM     see :mod:`ga2_hdl.rtl.softmax`: three passes and a division     3*len + 47
=====  ==============================================================  ===========

Identical source and destination regions work for RQ, SM and VADD: each
element is read before it is written and no cycle reads and writes the same
address (RQ writes element i while reading i+3; VADD writes element i while
reading src1[i+2]).  RQ and VADD read their first word in the start cycle (the
unit contract allows a read there: the scratchpad is free, and a read changes
nothing), which gives each a register after the scratchpad's output at the
same busy times (docs/fpga.md).  AMAX writes its single result word after its last read,
so its destination may lie anywhere, inside the source too.

Operands come from ``ins`` through the ISA's operand definitions
(``decoder.operand``), op codes from the configuration's instruction set
(:func:`ga2_hdl.isa.instruction_set`), whose extensions bring engines of their
own (``docs/extending.md``).  Lengths are at
least 1 (the sequencer refuses 0).

Wide scratchpad port (``Config.spad_ports`` = P > 1).  RQ, VADD and AMAX have one
engine each (:class:`RequantizeEngine`, :class:`AddEngine`, :class:`ArgmaxEngine`),
as wide as the chip's port: on a P-word port each streams *chunks* of P consecutive
words, one chunk per cycle (per two for VADD), the last chunk masked to the words
below ``len``; on the book's one-word port it builds the one-word pipeline above.
Each reads its first chunk in the start cycle and registers every chunk as it
arrives (RQ's requantizers with their magnitude stage, VADD's src2 chunk before
the adders, AMAX's chunk before its lane tree), so no bank output feeds logic.
AMAX reduces the P lanes in log2(P) registered levels of pairwise compares
before comparing the chunk's winner with the best so far.  With R = ceil(len/P)
the busy times are R + 2 (RQ), 2*R + 2 (VADD) and R + 2 + log2(P) (AMAX).  The
same-region argument holds chunk for chunk (RQ writes chunk i while reading
chunk i+3, VADD writes chunk i while reading src1's chunk i+2), and the masks
make "the words read" exact, so the never-the-same-address rule holds too.  SM
keeps its one-word engine, on lane 0 of the wide port (W = 3*len + 47 whatever
P).  Hardware cost over P = 1: P requantizers (P 32 x 24 multipliers), P 8-bit
adders with clamps, and AMAX's P - 1 comparators in a registered tree.
"""
import gc
import warnings
from types import SimpleNamespace

from amaranth.hdl import Cat, Module, Mux, Signal, UnusedElaboratable, signed
from amaranth.lib import data, wiring

from .. import isa
from ..config import Config
from .decoder import operand
from .layout import SpadPort, UnitSignature, contract_ports, off_contract, spad_addr_bits, spad_read_word
from .requant import Requantizer
from .softmax import SoftmaxUnit


def _index(config: Config) -> range:
    """An element counter's values: 0 .. len, len <= the configuration's ``spad_words``."""
    return range(config.spad_words + 1)


def _int8(word):
    """The int8 a word holds: its low byte, signed."""
    return word[:8].as_signed()


def _clamp(total):
    """A sum clamped into [INT8_MIN, INT8_MAX] (VADD's saturation, one lane)."""
    return Mux(total > isa.INT8_MAX, isa.INT8_MAX, Mux(total < isa.INT8_MIN, isa.INT8_MIN, total))


def _delay(m, value, name):
    """``value`` one cycle later (a register)."""
    out = Signal.like(value, name=name)
    m.d.sync += out.eq(value)
    return out


def _signature(config: Config) -> UnitSignature:
    """The unit contract on the chip ``config``, its port as wide as ``spad_ports``: the book's one-word
    port (no masks) when ``spad_ports`` = 1."""
    return (UnitSignature(config=config) if config.spad_ports == 1
            else UnitSignature(spad=SpadPort(words=config.spad_ports, config=config), config=config))


class _Engine(wiring.Component):
    """One operation's engine, on the unit contract (:class:`ga2_hdl.rtl.layout.UnitSignature`), its
    scratchpad port as wide as the chip's (``config.spad_ports`` = P words).

    Each engine's ``elaborate`` builds the book's one-word pipeline when P = 1 and, when P > 1,
    one that streams *chunks* of P consecutive words (one chunk per cycle, per two for VADD, the
    last chunk masked to the words below ``len``).  The two share the operands, the start, the
    lanes' arithmetic and the write (:meth:`_write`); they differ where the book's chip needs its
    own registers (an element counter beside the address; the chunk pipeline keeps the address
    itself in a register and reads its first chunk in the start cycle).

    Parameters
    ----------
    config : Config
        The chip (required; ``isa.BOOK`` is the book's): the scratchpad's size sets the address and
        counter widths, ``spad_ports`` the port's width.
    """

    def __init__(self, *, config: Config):
        self.config = config
        #: P, the words per access (the port's width), and log2(P)
        self.ports = config.spad_ports
        self.shift = self.ports.bit_length() - 1
        super().__init__(_signature(config))

    def _addr(self, base, index):
        """A scratchpad address: base + index, within the scratchpad's address space."""
        return (base + index)[:spad_addr_bits(self.config)]

    def _pointer(self, m, name, first, step):
        """A read address in a register (no adder between a field and the block RAM's address):
        ``first`` in the start cycle, then one word further in each cycle of ``step``."""
        pointer = Signal(spad_addr_bits(self.config), name=name)
        with m.If(self.start):
            m.d.sync += pointer.eq(first)
        with m.Elif(step):
            m.d.sync += pointer.eq(pointer + 1)
        return pointer

    def _write(self, m, valid, last, addr, counter, lanes, mask=None):
        """Write ``lanes`` (one value per lane, sign-extended to the word) to ``addr`` when ``valid``,
        under ``mask`` on a wide port; ``counter`` then steps by P (one-word port: the element index
        ``addr`` is ``base + counter`` of; wide: :meth:`_write_address`'s register, ``addr`` itself).
        With ``last`` that write is the engine's done cycle (None: the engine says when it is done)."""
        with m.If(valid):
            m.d.comb += [self.spad.wr_en.eq(1), self.spad.wr_addr.eq(addr)]
            if self.ports == 1:
                [value] = lanes
                m.d.comb += self.spad.wr_data.eq(value)
            else:
                m.d.comb += self.spad.wr_mask.eq(mask)
                for j, v in enumerate(lanes):
                    m.d.comb += self.spad.wr_data[j].eq(v)
            m.d.sync += counter.eq(counter + self.ports)
            if last is not None:
                with m.If(last):
                    self._finish(m)

    def _finish(self, m):
        """This cycle is the last busy cycle: ``done`` now, idle from the next cycle."""
        m.d.comb += self.done.eq(1)
        m.d.sync += self.busy.eq(0)

    def _write_result(self, m, finish, dst, value):
        """Write the single word ``value`` to ``dst`` when ``finish`` (lane 0 of a wide port), with done."""
        with m.If(finish):
            m.d.comb += [self.spad.wr_en.eq(1),
                         self.spad.wr_addr.eq(self._addr(dst, 0))]
            if self.ports == 1:
                m.d.comb += self.spad.wr_data.eq(value)
            else:
                m.d.comb += [self.spad.wr_mask.eq(1), self.spad.wr_data[0].eq(value)]
            self._finish(m)

    # ------------------------------------------------------------------ chunks (P > 1)
    def _mask(self, m, length, chunk):
        """Lanes j of chunk ``chunk`` below ``length``: ``chunk*P + j < length``."""
        remaining = Signal(len(length) + 1)
        m.d.comb += remaining.eq(length - (chunk << self.shift))
        return Cat(*(remaining > j for j in range(self.ports)))

    def _read_chunks(self, m, src, length):
        """Read ``length`` words from ``src`` on, one chunk per cycle: chunk 0 in the start cycle,
        chunk i in cycle t+i (the last chunk masked to the words below ``length``).  Returns the
        chunk index read this cycle (``chunk``), whether a read is made (``reading``), whether it
        is the last chunk's (``last``) and its lane mask (``mask``)."""
        ahead, last_chunk = Signal(_index(self.config), name="rd_chunk"), Signal(_index(self.config))
        reading = Signal()
        first_last = (length - 1) >> self.shift             # the last chunk's index (len >= 1)
        with m.If(self.start):
            m.d.sync += [ahead.eq(1), last_chunk.eq(first_last)]
        with m.Elif(reading):
            m.d.sync += ahead.eq(ahead + 1)
        # the chunk read: ahead while busy, chunk 0 while idle (the start cycle's), so the address
        # comes from registers and start (late in its cycle) reaches only the enables
        chunk = Mux(self.busy, ahead, 0)
        mask = self._mask(m, length, chunk)
        m.d.comb += [
            reading.eq(self.start | (self.busy & (ahead <= last_chunk))),
            self.spad.rd_en.eq(reading),
            self.spad.rd_addr.eq(self._addr(src, chunk << self.shift)),
            self.spad.rd_mask.eq(Mux(reading, mask, 0)),
        ]
        last = reading & Mux(self.start, first_last == 0, ahead == last_chunk)
        return SimpleNamespace(chunk=chunk, reading=reading, last=last, mask=mask)

    def _write_address(self, m, base):
        """The address of the next chunk written, a register (no adder after the instruction
        register): ``base`` while the engine is idle (the start cycle's is the instruction's, held
        from then on), P words further after each write (:meth:`_write`)."""
        addr = Signal(spad_addr_bits(self.config), name="wr_addr_next")
        with m.If(~self.busy):
            m.d.sync += addr.eq(base)
        return addr


class RequantizeEngine(_Engine):
    """RQ dst src len m s relu: dst[i] = requantize(int32 src[i]).  W = ceil(len/P) + 2.

    One-word port (P = 1): cycle t+i: read src[i] (the first in the start cycle t itself: the
    scratchpad is free then, since nothing else runs, and a read changes nothing);  t+1+i: the
    data arrives and the Requantizer's magnitude stage registers it;  then its multiply stages;
    then its rounding stage, and the write of dst[i].  On a chip without overlap the multiply
    takes two stages (``Requantizer(split_multiply=True)``), so dst[i] is written in t+4+i: the
    last write, in t+W+1, is the trailing write :func:`ga2_hdl.isa.trailing_write_cycles` allows
    (the next instruction's FETCH cycle), and done comes with the last result's multiply, in t+W.
    With overlap the multiply is one stage, dst[i] written in t+3+i, done with the last write.
    (Reading one cycle before the first busy cycle and writing one after the last buy the
    registers after the scratchpad's output and inside the multiply, in the same cycles:
    docs/fpga.md.)

    P-word port: P requantizers, chunk i read in cycle t+i (chunk 0 in the start cycle), each
    lane's word registered as it arrives, chunk i written in t+4+i (t+3+i with overlap), done
    as above.  In place, chunk i is written while chunk i+3 (i+4 with the split multiply) is read.
    """

    def elaborate(self, platform):
        m = Module()
        trailing = isa.trailing_write_cycles(self.config, isa.Unit.VECTOR)
        dst, src, length = (operand(self.ins, "RQ", n) for n in ("dst", "src", "len"))
        # the write of element (chunk) i: 1 (the read) + the requantizer's latency cycles after its
        # read; done with the last write or, trailing, the cycle before it
        depth = 2 + trailing + 1
        if self.ports == 1:
            valid, last = self._words(m, trailing, depth, dst, src, length)
        else:
            valid, last = self._chunks(m, trailing, depth, dst, src, length)
        with m.If(last[depth - trailing]):
            self._finish(m)
        return m

    def _words(self, m, trailing, depth, dst, src, length):
        """The book's one-word pipeline: (valid, last) by pipeline stage."""
        m.submodules.requantizer = rq = Requantizer(magnitude_stage=True, split_multiply=trailing > 0)
        assert rq.LATENCY == depth - 1
        rd_index, wr_index = Signal(_index(self.config)), Signal(_index(self.config))
        reading = Signal()
        # valid[k], last[k]: element i's read data is on rd_data in k = 1, its q in k = LATENCY + 1
        valid = [reading] + [Signal(name=f"v{k}") for k in range(1, depth + 1)]
        last = [Signal(name="last0")] + [Signal(name=f"last{k}") for k in range(1, depth + 1)]

        rd_ptr = self._pointer(m, "rd_ptr", self._addr(src, 1), reading)     # src + rd_index
        with m.If(self.start):
            m.d.sync += [self.busy.eq(1), rd_index.eq(1), wr_index.eq(0)]
        index = Mux(self.start, 0, rd_index)
        m.d.comb += [
            reading.eq(self.start | (self.busy & (rd_index < length))),   # (len >= 1: the issue check)
            last[0].eq(reading & (index == length - 1)),
            self.spad.rd_en.eq(reading),
            # the address from registers only: idle (the start cycle), the first element's; start
            # (late in its cycle) reaches only the read enable
            self.spad.rd_addr.eq(Mux(self.busy, rd_ptr, self._addr(src, 0))),
            rq.acc.eq(self.spad.rd_data.as_signed()),
        ]
        # m, s and relu from registers of the engine's own, loaded from the instruction every cycle:
        # the requantizer takes them with the first element's data, a cycle after the start (the
        # instruction is held while busy), and its constants from s then start beside it, not at
        # the sequencer's instruction register
        for port, name in ((rq.mantissa, "m"), (rq.shift, "s"), (rq.relu, "relu")):
            value = operand(self.ins, "RQ", name)
            local = Signal(value.shape(), name=f"ins_{name}")
            m.d.sync += local.eq(value)
            m.d.comb += port.eq(local)
        m.d.sync += [valid[k].eq(valid[k - 1]) for k in range(1, depth + 1)]
        m.d.sync += [last[k].eq(last[k - 1]) for k in range(1, depth + 1)]
        with m.If(reading & ~self.start):
            m.d.sync += rd_index.eq(rd_index + 1)

        # the write of each q
        self._write(m, valid[depth], None, self._addr(dst, wr_index), wr_index, [rq.q])
        return valid, last

    def _chunks(self, m, trailing, depth, dst, src, length):
        """P requantizers on chunks: (valid, last) by pipeline stage."""
        wr_addr = self._write_address(m, dst)
        with m.If(self.start):
            m.d.sync += self.busy.eq(1)
        rd = self._read_chunks(m, src, length)
        valids, lasts, masks = [rd.reading], [rd.last], [rd.mask]
        for k in range(1, depth + 1):
            valids.append(_delay(m, valids[-1], f"valid{k}"))
            masks.append(_delay(m, masks[-1], f"mask{k}"))
            lasts.append(_delay(m, lasts[-1], f"last{k}"))
        operands = {name: operand(self.ins, "RQ", name) for name in ("m", "s", "relu")}
        outs = []
        for j in range(self.ports):
            rq = Requantizer(magnitude_stage=True, split_multiply=trailing > 0)
            assert rq.LATENCY == depth - 1
            m.submodules[f"requantizer{j}"] = rq
            lane = operands
            if trailing:
                # m, s and relu from registers of the lane's own, loaded while idle (the start
                # cycle's are the instruction's, held from then on) and with each chunk whose lane j
                # is read (mask1: the same values), so that no two lanes' registers are alike: Yosys
                # keeps each lane's m for its multipliers and each lane's s for its rounding window
                # (and their registers in the requantizer), not one register for every lane
                lane = {name: Signal.like(value, name=f"lane{j}_{name}") for name, value in operands.items()}
                with m.If(~self.busy | masks[1][j]):
                    m.d.sync += [lane[name].eq(value) for name, value in operands.items()]
            m.d.comb += [
                rq.acc.eq(self.spad.rd_data[j].as_signed()),
                rq.mantissa.eq(lane["m"]),
                rq.shift.eq(lane["s"]),
                rq.relu.eq(lane["relu"]),
            ]
            outs.append(rq.q)
        self._write(m, valids[depth], None, wr_addr, wr_addr, outs, masks[depth])
        return valids, lasts


class AddEngine(_Engine):
    """VADD dst src1 src2 len: dst[i] = clamp(int8 src1[i] + int8 src2[i], -127, 127).
    W = 2*ceil(len/P) + 2.

    One read port, so element (chunk) i takes two read slots: cycle t+2i reads src1's (the first
    in the start cycle t itself, as the RQ engine), t+1+2i reads src2's; each word (chunk) is
    registered when it arrives; the cycle after src2's arrives, the sums are clamped into a
    register, written in t+4+2i (while src1's element i+2 is read).  done with the last write.
    On the one-word port src1[i] is moved on when src2[i] arrives; on a P-word port src1's chunk
    is held for src2's, P adders.
    """

    def elaborate(self, platform):
        m = Module()
        dst, src1, src2 = (operand(self.ins, "VADD", n) for n in ("dst", "src1", "src2"))
        length = operand(self.ins, "VADD", "len")
        if self.ports == 1:
            self._words(m, dst, src1, src2, length)
        else:
            self._chunks(m, dst, src1, src2, length)
        return m

    def _words(self, m, dst, src1, src2, length):
        """The book's one-word pipeline."""
        slot = Signal(range(2 * self.config.spad_words + 1))    # read slots issued: 2 per element
        wr_index = Signal(_index(self.config))
        reading = Signal()
        v1, second1, last1 = Signal(), Signal(), Signal()   # data on rd_data; it is src2's; the last
        v2, last2 = Signal(), Signal()                      # both operands of an element registered
        v3, last3 = Signal(), Signal()                      # a sum is ready to write
        first_operand = Signal(signed(8))
        second_operand = Signal(signed(8))
        total = Signal(signed(9))
        clamped = Signal(signed(8))

        # each source's next address (src1 + i, src2 + i) in a register: only their choice before
        # the block RAM's address
        p1 = self._pointer(m, "rd_ptr1", self._addr(src1, 1), reading & ~slot[0])
        p2 = self._pointer(m, "rd_ptr2", self._addr(src2, 0), reading & slot[0])
        with m.If(self.start):
            m.d.sync += [self.busy.eq(1), slot.eq(1), wr_index.eq(0)]
        now = Mux(self.start, 0, slot)                      # the slot read this cycle
        m.d.comb += [
            reading.eq(self.start | (self.busy & (slot < 2 * length))),
            self.spad.rd_en.eq(reading),
            # the address from registers only: idle (the start cycle), src1[0]'s; start (late in its
            # cycle) reaches only the read enable
            self.spad.rd_addr.eq(Mux(self.busy, Mux(slot[0], p2, p1), self._addr(src1, 0))),
        ]
        m.d.sync += [v1.eq(reading), second1.eq(now[0]), last1.eq(reading & (now == 2 * length - 1))]
        with m.If(reading & ~self.start):
            m.d.sync += slot.eq(slot + 1)

        m.d.comb += [
            total.eq(first_operand + second_operand),
            clamped.eq(_clamp(total)),
        ]
        m.d.sync += [v2.eq(v1 & second1), last2.eq(last1), v3.eq(v2), last3.eq(last2)]
        # every word read is registered as it arrives, in a register without an enable (the block
        # RAM's output reaches a flip-flop through no multiplexer): src2[i]'s arrival moves src1[i]
        # on into first_operand, and the sum is formed the cycle after, from the two registers
        m.d.sync += second_operand.eq(_int8(self.spad.rd_data))
        with m.If(v1 & second1):
            m.d.sync += first_operand.eq(second_operand)
        result = Signal(signed(8))
        with m.If(v2):
            m.d.sync += result.eq(clamped)

        self._write(m, v3, last3, self._addr(dst, wr_index), wr_index, [result])

    def _chunks(self, m, dst, src1, src2, length):
        """A chunk of src1, then the same chunk of src2, P adders: read slot k = 2i (src1's chunk
        i) or 2i+1 (src2's) in cycle t+k (slot 0 in the start cycle t)."""
        P = self.ports
        ahead = Signal(range(2 * self.config.spad_words + 1))          # the next slot after the start's
        last_slot = Signal(range(2 * self.config.spad_words + 1), name="last_slot")     # the last read slot
        wr_addr = self._write_address(m, dst)
        reading = Signal()
        first = Signal(data.ArrayLayout(signed(8), P))      # src1's chunk, held for src2's
        second = Signal(data.ArrayLayout(signed(8), P))     # src2's chunk, registered as it arrives
        result = Signal(data.ArrayLayout(signed(8), P))
        first_last = (((length - 1) >> self.shift) << 1) + 1
        with m.If(self.start):
            m.d.sync += [self.busy.eq(1), ahead.eq(1), last_slot.eq(first_last)]
        with m.Elif(reading):
            m.d.sync += ahead.eq(ahead + 1)
        slot = Mux(self.busy, ahead, 0)                     # from registers (as _read_chunks' chunk)
        chunk = slot[1:]
        rd_mask = self._mask(m, length, chunk)
        m.d.comb += [
            reading.eq(self.start | (self.busy & (ahead <= last_slot))),
            self.spad.rd_en.eq(reading),
            self.spad.rd_addr.eq(self._addr(Mux(slot[0], src2, src1), chunk << self.shift)),
            self.spad.rd_mask.eq(Mux(reading, rd_mask, 0)),
        ]
        # v1: a chunk on rd_data (second1: src2's); v2: both chunks registered; v3: sums to write
        v1, second1, mask1 = _delay(m, reading, "v1"), _delay(m, slot[0], "second1"), _delay(m, rd_mask, "mask1")
        last1 = _delay(m, reading & ~self.start & (ahead == last_slot), "last1")     # slot 0 is src1's
        v2, last2, mask2 = _delay(m, v1 & second1, "v2"), _delay(m, last1 & second1, "last2"), _delay(m, mask1, "mask2")
        v3, last3, mask3 = _delay(m, v2, "v3"), _delay(m, last2, "last3"), _delay(m, mask2, "mask3")
        for j in range(P):
            x = _int8(self.spad.rd_data[j])
            total = Signal(signed(9), name=f"total{j}")
            m.d.comb += total.eq(first[j] + second[j])
            with m.If(v1 & ~second1):
                m.d.sync += first[j].eq(x)
            with m.If(v1 & second1):
                m.d.sync += second[j].eq(x)
            with m.If(v2):
                m.d.sync += result[j].eq(_clamp(total))
        self._write(m, v3, last3, wr_addr, wr_addr, [result[j] for j in range(P)], mask3)


class ArgmaxEngine(_Engine):
    """AMAX dst src len: dst[0] = index of the first maximum of int32 src[0..len).
    W = ceil(len/P) + 2 + log2(P) (len + 3 on the one-word port).

    One-word port: cycle t+1+i: read src[i];  t+2+i: the word is registered with its index;
    t+3+i: compared with the best so far (strictly greater replaces it, so ties keep the first
    index);  t+len+3: the index is written, with done.

    P-word port: cycle t+i: read chunk i (chunk 0 in the start cycle t);  t+1+i: its words arrive
    and are registered (a masked lane as the smallest int32, so it never wins);  t+2+i ..
    t+1+i+log2(P): one level of pairwise compares per cycle, each registered: the right (higher)
    half of a pair replaces the left only when strictly greater, so each level keeps the first
    index of its maximum;  t+2+i+log2(P): the chunk's winner against the best so far (strictly
    greater replaces: the chunk's indices all come after the best's), so the first maximum wins
    overall;  t+R+2+log2(P) (R = ceil(len/P)): the index is written, with done.
    """

    def elaborate(self, platform):
        m = Module()
        dst, src, length = (operand(self.ins, "AMAX", n) for n in ("dst", "src", "len"))
        best = Signal(signed(isa.WORD_BITS))
        best_index = Signal(spad_addr_bits(self.config))
        finish = Signal()                                              # all compared: write
        smallest = -(1 << (isa.WORD_BITS - 1))          # the best's start value, below every word
        if self.ports == 1:
            self._words(m, src, length, best, best_index, smallest, finish)
        else:
            self._chunks(m, src, length, best, best_index, smallest, finish)
        self._write_result(m, finish, dst, best_index)
        return m

    def _words(self, m, src, length, best, best_index, smallest, finish):
        """The book's one-word pipeline."""
        rd_index = Signal(_index(self.config))
        reading = Signal()
        v1, last1, idx1 = Signal(), Signal(), Signal(spad_addr_bits(self.config))    # data on rd_data
        v2, last2, idx2 = Signal(), Signal(), Signal(spad_addr_bits(self.config))    # data registered
        value2 = Signal(signed(isa.WORD_BITS))

        rd_ptr = self._pointer(m, "rd_ptr", src, reading)                    # src + rd_index
        with m.If(self.start):
            m.d.sync += [self.busy.eq(1), rd_index.eq(0), best.eq(smallest), best_index.eq(0)]
        m.d.comb += [
            reading.eq(self.busy & (rd_index < length)),
            self.spad.rd_en.eq(reading),
            self.spad.rd_addr.eq(rd_ptr),
        ]
        m.d.sync += [
            v1.eq(reading), last1.eq(reading & (rd_index == length - 1)), idx1.eq(rd_index),
            v2.eq(v1), last2.eq(last1), idx2.eq(idx1), value2.eq(self.spad.rd_data),
            finish.eq(v2 & last2),
        ]
        with m.If(reading):
            m.d.sync += rd_index.eq(rd_index + 1)
        with m.If(v2 & (value2 > best)):
            m.d.sync += [best.eq(value2), best_index.eq(idx2)]

    def _chunks(self, m, src, length, best, best_index, smallest, finish):
        """A chunk per cycle, its lanes reduced by a registered tree, the chunk's winner compared
        with the best so far."""
        P, L = self.ports, self.shift
        with m.If(self.start):
            m.d.sync += [self.busy.eq(1), best.eq(smallest), best_index.eq(0)]
        rd = self._read_chunks(m, src, length)
        v, last, base = rd.reading, rd.last, (rd.chunk << self.shift)[:spad_addr_bits(self.config)]
        mask = _delay(m, rd.mask, "mask1")
        v, last, base = _delay(m, v, "v1"), _delay(m, last, "last1"), _delay(m, base, "base1")   # on rd_data
        # level 0: the chunk registered; level k: 2**(L-k) candidates (value, offset in its group)
        values = [_delay(m, Mux(mask[j], self.spad.rd_data[j].as_signed(), smallest), f"value0_{j}")
                  for j in range(P)]
        offsets = [None] * P                                       # no bits yet (level 1 makes one)
        v, last, base = _delay(m, v, "v_level0"), _delay(m, last, "last_level0"), _delay(m, base, "base_level0")
        for k in range(1, L + 1):
            pairs = zip(values[0::2], values[1::2], offsets[0::2], offsets[1::2])
            values, offsets = [], []
            for a, (left, right, left_off, right_off) in enumerate(pairs):
                take = right > left                          # ties keep the left (first) index
                values.append(_delay(m, Mux(take, right, left), f"value{k}_{a}"))
                offset = take if k == 1 else Cat(Mux(take, right_off, left_off), take)
                offsets.append(_delay(m, offset, f"offset{k}_{a}"))
            v, last, base = (_delay(m, v, f"v_level{k}"), _delay(m, last, f"last_level{k}"),
                             _delay(m, base, f"base_level{k}"))
        [winner], [offset] = values, offsets
        with m.If(v & (winner > best)):
            m.d.sync += [best.eq(winner), best_index.eq(base | offset)]
        m.d.sync += finish.eq(v & last)


def _drop_refused(engines: dict) -> None:
    """Drop the engines built for a vector unit that is refused (one of them is off the unit
    contract, which only its instance shows): they are discarded on purpose, so Amaranth's
    warning that they were never used is not shown for them (an Elaboratable refers to itself,
    so it is freed by the cycle collector, run here, within the filter)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        engines.clear()
        gc.collect()



class VectorUnit(wiring.Component):
    """The GA-2 vector unit: RQ, SM, VADD, AMAX, and the vector operations of the
    configuration's extensions (each with its own engine).

    Parameters
    ----------
    config : Config
        The chip (required; ``isa.BOOK`` is the book's): its instruction set says which operations the
        unit runs; every engine is given it.

    Ports
    -----
    start, ins, done, busy, spad : UnitSignature
        The unit contract (:class:`ga2_hdl.rtl.layout.UnitSignature`), which each engine
        also has; ``busy`` is high while any engine is, ``spad`` is the port of the engine
        ``ins.op`` names.  A ``start`` with an ``ins.op`` that is not a vector operation is
        ignored.
    """

    #: the engine of each of the book's operations (RQ, VADD and AMAX as wide as the chip's port,
    #: SM one word wide: on lane 0 of a wide port)
    ENGINES = {"RQ": RequantizeEngine, "SM": SoftmaxUnit, "VADD": AddEngine, "AMAX": ArgmaxEngine}

    def __new__(cls, *, config: Config):
        # Everything that can refuse the configuration runs before the unit exists, so that a
        # refusal leaves no elaboratable behind (no UnusedElaboratable warning on top of the error).
        engines = cls._built_engines(config)
        self = super().__new__(cls, src_loc_at=1)     # (Amaranth's notes name the caller's line)
        #: mnemonic -> engine, in op-code order; every engine is given the configuration
        self.engines: dict[str, wiring.Component] = engines
        return self

    def __init__(self, *, config: Config):
        self.config = config
        self.ports = config.spad_ports
        super().__init__(self._signature(config))

    @staticmethod
    def _signature(config: Config) -> UnitSignature:
        """The unit's contract on the chip ``config`` (its port as wide as ``spad_ports``)."""
        return _signature(config)

    @classmethod
    def check(cls, config: Config) -> None:
        """:class:`ValueError` when some vector operation of ``config`` has no engine, or an engine
        class is not a ``wiring.Component``: what can be checked before anything is built."""
        for name, engine_cls in cls.engines_of(config).items():
            if isinstance(engine_cls, type) and not issubclass(engine_cls, wiring.Component):
                raise ValueError(off_contract(name, engine_cls))

    @classmethod
    def _built_engines(cls, config: Config) -> dict[str, wiring.Component]:
        """Every engine of ``config``, built; :class:`ValueError` when one is not on the unit
        contract, which only a built engine can show (a component's signature is its instance's),
        or an engine refuses the configuration: the engines built so far are dropped then."""
        cls.check(config)
        # an engine's port is one word (it runs on lane 0 of a wide port) or the unit's width
        contracts = (contract_ports(UnitSignature(config=config)), contract_ports(cls._signature(config)))
        engines: dict[str, wiring.Component] = {}
        try:
            for name, engine_cls in cls.engines_of(config).items():
                engines[name] = engine_cls(config=config)
                if not isinstance(engines[name], wiring.Component) or contract_ports(engines[name].signature) not in contracts:
                    raise ValueError(off_contract(name, engine_cls))
        except Exception:
            _drop_refused(engines)
            raise
        return engines

    @classmethod
    def engines_of(cls, config: Config) -> dict[str, type]:
        """Mnemonic -> engine class of every vector operation of ``config``, in op-code order;
        :class:`ValueError` naming the operation that has none."""
        iset = isa.instruction_set(config)
        out = {}
        for code in iset.unit_ops(isa.Unit.VECTOR):
            spec = iset.by_code[code]
            ext = iset.extension_of.get(code)
            engine = (cls.ENGINES if ext is None else ext.engines).get(spec.mnemonic)
            if engine is None:
                where = ("VectorUnit.ENGINES" if ext is None
                         else f"the engines mapping of {ext.module}'s EXTENSION")
                raise ValueError(f"vector operation {spec.mnemonic} (op code {code}, {iset.origin(code)}) "
                                 f"has no RTL engine: add one to {where}")
            out[spec.mnemonic] = engine
        return out

    def elaborate(self, platform):
        m = Module()
        iset = isa.instruction_set(self.config)
        wide_port = self.ports > 1

        # Only the engine the instruction names sees the scratchpad's read data; the others see
        # 0.  An engine uses read data only between its start and its done, while ins.op names
        # it, so nothing changes for the engines, but an idle engine's logic no longer follows
        # every read of the other units (the matrix unit reads the scratchpad almost every
        # cycle): event-driven simulators (Icarus, Amaranth's) skip that work.  The gating has a
        # submodule of its own, so that in Amaranth's simulator a read by another unit runs only
        # that small process, not the whole unit's.  On a wide port (spad_ports > 1) a wide engine
        # takes every lane, a one-word engine (SM, an extension's) lane 0.  With the forward
        # (layout.spad_forwards, the book's chip) the engine that sees the data is the one named in
        # the cycle of the read, the cycle before the data.
        m.submodules.read_gate = read_gate = Module()
        engines = self.engines
        for name, engine in engines.items():
            m.submodules[name.lower()] = engine
            selected = self.ins.op == iset.by_name[name].code
            m.d.comb += [
                engine.ins.eq(self.ins),
                engine.start.eq(self.start & selected),
            ]
            read_data = self.spad.rd_data
            if wide_port:
                read_data = read_data.as_value() if engine.spad.signature.wide else read_data[0]
            if self.spad.signature.forward:
                # the forward: each engine its own multiplexer, gated by the engine that read in the
                # cycle before, one LUT per bit beside each engine and not one shared by all
                read_by = Signal(name=f"{name.lower()}_read_by")
                m.d.sync += read_by.eq(selected)
                read_gate.d.comb += engine.spad.rd_data.eq(Mux(read_by, spad_read_word(self.spad), 0))
            else:
                read_gate.d.comb += engine.spad.rd_data.eq(Mux(selected, read_data, 0))
            with m.If(engine.done):
                m.d.comb += self.done.eq(1)
            with m.If(engine.busy):
                m.d.comb += self.busy.eq(1)

        # The engine named by the instruction owns the port (idle engines drive the enables low).
        with m.Switch(self.ins.op):
            for name, engine in engines.items():
                with m.Case(iset.by_name[name].code):
                    p = engine.spad
                    m.d.comb += [
                        self.spad.rd_en.eq(p.rd_en),
                        self.spad.rd_addr.eq(p.rd_addr),
                        self.spad.wr_en.eq(p.wr_en),
                        self.spad.wr_addr.eq(p.wr_addr),
                    ]
                    if not wide_port:
                        m.d.comb += self.spad.wr_data.eq(p.wr_data)
                    elif p.signature.wide:              # a wide engine
                        m.d.comb += [self.spad.rd_mask.eq(p.rd_mask), self.spad.wr_mask.eq(p.wr_mask),
                                     self.spad.wr_data.eq(p.wr_data)]
                    else:                               # a one-word engine on lane 0
                        m.d.comb += [self.spad.rd_mask.eq(p.rd_en), self.spad.wr_mask.eq(p.wr_en),
                                     self.spad.wr_data[0].eq(p.wr_data)]
        return m

