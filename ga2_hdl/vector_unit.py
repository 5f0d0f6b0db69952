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
cycle, or per two cycles for VADD), its data comes back the next cycle (the
scratchpad read is synchronous), and the element's result is written a fixed
number of cycles later.  ``done`` is high in the cycle of the last write, so
the busy time W is the number of read cycles plus the pipeline depth:

=====  ===========================================================  ==========
op     pipeline after the read of the last element                  W
=====  ===========================================================  ==========
RQ     data arrives, multiply (Requantizer stage 1, registered);     len + 2
       round, saturate and write (stage 2)
VADD   2 reads per element (src1[i], then src2[i]: one read port);  2*len + 2
       src2[i] arrives and is added to src1[i] and clamped
       (registered); write
AMAX   data arrives and is registered (the SRAM output feeds no     len + 3
       logic); compare with the best so far; write the index
SM     see :mod:`ga2_hdl.softmax`: three passes and a division      3*len + 47
=====  ===========================================================  ==========

Identical source and destination regions work for RQ, SM and VADD: each
element is read before it is written and no cycle reads and writes the same
address (RQ writes element i while reading i+2; VADD writes element i while
reading src2[i+1]).  AMAX writes its single result word after its last read,
so its destination may lie anywhere, inside the source too.

Operands come from ``ins`` through the ISA's operand definitions
(``decoder.operand``), op codes from the configuration's instruction set
(:func:`ga2_hdl.isa.instruction_set`), whose extensions bring engines of their
own (``docs/extending.md``).  Lengths are at
least 1 (the sequencer refuses 0).
"""
from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import wiring

from . import isa
from .config import Config
from .decoder import operand
from .layout import UnitSignature, refuse_beyond, spad_addr_bits
from .requant import Requantizer
from .softmax import SoftmaxUnit


def _index(config: Config) -> range:
    """An element counter's values: 0 .. len, len <= the configuration's ``spad_words``."""
    return range(config.spad_words + 1)


def _int8(word):
    """The int8 a word holds: its low byte, signed."""
    return word[:8].as_signed()


class _Engine(wiring.Component):
    """One operation's engine, on the unit contract (:class:`ga2_hdl.layout.UnitSignature`).

    Parameters
    ----------
    config : Config
        The chip (the book's by default): the scratchpad's size sets the address and
        counter widths.
    """

    def __init__(self, *, config: Config = isa.BOOK):
        self.config = refuse_beyond(config, f"the {type(self).__name__}", ("spad_ports",))
        super().__init__(UnitSignature(config=config))

    def _addr(self, base, index):
        """A scratchpad address: base + index, within the scratchpad's address space."""
        return (base + index)[:spad_addr_bits(self.config)]

    def _write(self, m, valid, last, base, index, value):
        """Write ``value`` to ``base + index`` when ``valid`` (``index`` then steps);
        with ``last`` that write is the engine's done cycle."""
        with m.If(valid):
            m.d.comb += [self.spad.wr_en.eq(1),
                         self.spad.wr_addr.eq(self._addr(base, index)),
                         self.spad.wr_data.eq(value)]           # sign-extended to the word
            m.d.sync += index.eq(index + 1)
            with m.If(last):
                self._finish(m)

    def _finish(self, m):
        """This cycle is the last busy cycle: ``done`` now, idle from the next cycle."""
        m.d.comb += self.done.eq(1)
        m.d.sync += self.busy.eq(0)


class RequantizeEngine(_Engine):
    """RQ dst src len m s relu: dst[i] = requantize(int32 src[i]).  W = len + 2.

    cycle t+1+i: read src[i];  t+2+i: the Requantizer's multiply stage;
    t+3+i: its rounding stage, and the write of dst[i].  done with the last write.
    """

    def elaborate(self, platform):
        m = Module()
        m.submodules.requantizer = rq = Requantizer()
        assert Requantizer.LATENCY == 1
        dst, src, length = (operand(self.ins, "RQ", n) for n in ("dst", "src", "len"))

        rd_index, wr_index = Signal(_index(self.config)), Signal(_index(self.config))
        reading = Signal()
        v1, last1, v2, last2 = Signal(), Signal(), Signal(), Signal()  # data on rd_data; q valid

        with m.If(self.start):
            m.d.sync += [self.busy.eq(1), rd_index.eq(0), wr_index.eq(0)]
        m.d.comb += [
            reading.eq(self.busy & (rd_index < length)),
            self.spad.rd_en.eq(reading),
            self.spad.rd_addr.eq(self._addr(src, rd_index)),
            rq.acc.eq(self.spad.rd_data.as_signed()),
            rq.mantissa.eq(operand(self.ins, "RQ", "m")),
            rq.shift.eq(operand(self.ins, "RQ", "s")),
            rq.relu.eq(operand(self.ins, "RQ", "relu")),
        ]
        m.d.sync += [v1.eq(reading), last1.eq(reading & (rd_index == length - 1)),
                     v2.eq(v1), last2.eq(last1)]
        with m.If(reading):
            m.d.sync += rd_index.eq(rd_index + 1)

        self._write(m, v2, last2, dst, wr_index, rq.q)
        return m


class AddEngine(_Engine):
    """VADD dst src1 src2 len: dst[i] = clamp(int8 src1[i] + int8 src2[i], -127, 127).  W = 2*len + 2.

    One read port, so element i takes two read slots: cycle t+1+2i reads
    src1[i], t+2+2i reads src2[i]; src1[i] is held when it arrives; when
    src2[i] arrives the sum is clamped into a register, written in t+4+2i.
    done with the last write.
    """

    def elaborate(self, platform):
        m = Module()
        dst, src1, src2 = (operand(self.ins, "VADD", n) for n in ("dst", "src1", "src2"))
        length = operand(self.ins, "VADD", "len")

        slot = Signal(range(2 * self.config.spad_words + 1))    # read slots issued: 2 per element
        wr_index = Signal(_index(self.config))
        reading = Signal()
        v1, second1, last1 = Signal(), Signal(), Signal()   # data on rd_data; it is src2's; the last
        v2, last2 = Signal(), Signal()                      # a sum is ready to write
        first_operand = Signal(signed(8))
        total = Signal(signed(9))
        clamped = Signal(signed(8))

        with m.If(self.start):
            m.d.sync += [self.busy.eq(1), slot.eq(0), wr_index.eq(0)]
        m.d.comb += [
            reading.eq(self.busy & (slot < 2 * length)),
            self.spad.rd_en.eq(reading),
            self.spad.rd_addr.eq(self._addr(Mux(slot[0], src2, src1), slot[1:])),
        ]
        m.d.sync += [v1.eq(reading), second1.eq(slot[0]), last1.eq(reading & (slot == 2 * length - 1))]
        with m.If(reading):
            m.d.sync += slot.eq(slot + 1)

        m.d.comb += [
            total.eq(first_operand + _int8(self.spad.rd_data)),
            clamped.eq(Mux(total > isa.INT8_MAX, isa.INT8_MAX, Mux(total < isa.INT8_MIN, isa.INT8_MIN, total))),
        ]
        m.d.sync += [v2.eq(v1 & second1), last2.eq(last1)]
        with m.If(v1 & ~second1):
            m.d.sync += first_operand.eq(_int8(self.spad.rd_data))
        result = Signal(signed(8))
        with m.If(v1 & second1):
            m.d.sync += result.eq(clamped)

        self._write(m, v2, last2, dst, wr_index, result)
        return m


class ArgmaxEngine(_Engine):
    """AMAX dst src len: dst[0] = index of the first maximum of int32 src[0..len).  W = len + 3.

    cycle t+1+i: read src[i];  t+2+i: the word is registered with its index;
    t+3+i: compared with the best so far (strictly greater replaces it, so
    ties keep the first index);  t+len+3: the index is written, with done.
    """

    def elaborate(self, platform):
        m = Module()
        dst, src, length = (operand(self.ins, "AMAX", n) for n in ("dst", "src", "len"))

        rd_index = Signal(_index(self.config))
        reading = Signal()
        v1, last1, idx1 = Signal(), Signal(), Signal(spad_addr_bits(self.config))    # data on rd_data
        v2, last2, idx2 = Signal(), Signal(), Signal(spad_addr_bits(self.config))    # data registered
        value2 = Signal(signed(isa.WORD_BITS))
        best = Signal(signed(isa.WORD_BITS))
        best_index = Signal(spad_addr_bits(self.config))
        finish = Signal()                                              # all compared: write

        with m.If(self.start):
            m.d.sync += [self.busy.eq(1), rd_index.eq(0),
                         best.eq(-(1 << (isa.WORD_BITS - 1))), best_index.eq(0)]
        m.d.comb += [
            reading.eq(self.busy & (rd_index < length)),
            self.spad.rd_en.eq(reading),
            self.spad.rd_addr.eq(self._addr(src, rd_index)),
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

        with m.If(finish):
            m.d.comb += [self.spad.wr_en.eq(1),
                         self.spad.wr_addr.eq(self._addr(dst, 0)),
                         self.spad.wr_data.eq(best_index)]
            self._finish(m)
        return m


def _ports(signature: wiring.Signature) -> dict:
    """Every port of a signature: path -> (flow, shape) (signatures compare by identity)."""
    return {path: (m.flow, m.shape) for path, m in signature.members.flatten() if m.is_port}


class VectorUnit(wiring.Component):
    """The GA-2 vector unit: RQ, SM, VADD, AMAX, and the vector operations of the
    configuration's extensions (each with its own engine).

    Parameters
    ----------
    config : Config
        The chip (the book's by default): its instruction set says which operations the
        unit runs; every engine is given it.

    Ports
    -----
    The unit contract (:class:`ga2_hdl.layout.UnitSignature`), which each engine
    also has; ``busy`` is high while any engine is.  A ``start`` with an
    ``ins.op`` that is not a vector operation is ignored.
    """

    #: the engine of each of the book's operations
    ENGINES = {"RQ": RequantizeEngine, "SM": SoftmaxUnit, "VADD": AddEngine, "AMAX": ArgmaxEngine}

    def __init__(self, *, config: Config = isa.BOOK):
        self.config = refuse_beyond(config, "the vector unit", ("spad_ports",))
        contract = _ports(UnitSignature(config=config))
        #: mnemonic -> engine, in op-code order; every engine is given the configuration
        self.engines: dict[str, wiring.Component] = {}
        try:
            for name, cls in self.engines_of(config).items():
                engine = self.engines[name] = cls(config=config)
                if not isinstance(engine, wiring.Component) or _ports(engine.signature) != contract:
                    raise ValueError(f"the engine of {name} ({getattr(cls, '__name__', cls)}) is not a "
                                     f"wiring.Component on the unit contract (ga2_hdl.layout.UnitSignature)")
        except Exception:
            for unused in (self, *self.engines.values()):   # no warnings about them on top of the error
                unused._MustUse__silence = True
            raise
        super().__init__(UnitSignature(config=config))

    @classmethod
    def engines_of(cls, config: Config) -> dict[str, type]:
        """Mnemonic -> engine class of every vector operation of ``config``, in op-code order;
        :class:`ValueError` naming the operation that has none."""
        iset = isa.instruction_set(config)
        out = {}
        for code in iset.unit_ops(isa.Unit.VECTOR):
            spec = iset.by_code[code]
            ext = iset.extension_of.get(code)
            engine = cls.ENGINES.get(spec.mnemonic) if ext is None else ext.engines.get(spec.mnemonic)
            if engine is None:
                where = (f"VectorUnit.ENGINES" if ext is None
                         else f"the engines mapping of {ext.module}'s EXTENSION")
                raise ValueError(f"vector operation {spec.mnemonic} (op code {code}, {iset.origin(code)}) "
                                 f"has no RTL engine: add one to {where}")
            out[spec.mnemonic] = engine
        return out

    def elaborate(self, platform):
        m = Module()
        iset = isa.instruction_set(self.config)

        # Only the engine the instruction names sees the scratchpad's read data; the others see
        # 0.  An engine uses read data only between its start and its done, while ins.op names
        # it, so nothing changes for the engines, but an idle engine's logic no longer follows
        # every read of the other units (the matrix unit reads the scratchpad almost every
        # cycle): event-driven simulators (Icarus, Amaranth's) skip that work.  The gating has a
        # submodule of its own, so that in Amaranth's simulator a read by another unit runs only
        # that small process, not the whole unit's.
        m.submodules.read_gate = read_gate = Module()
        engines = self.engines
        for name, engine in engines.items():
            m.submodules[name.lower()] = engine
            selected = self.ins.op == iset.by_name[name].code
            m.d.comb += [
                engine.ins.eq(self.ins),
                engine.start.eq(self.start & selected),
            ]
            read_gate.d.comb += engine.spad.rd_data.eq(Mux(selected, self.spad.rd_data, 0))
            with m.If(engine.done):
                m.d.comb += self.done.eq(1)
            with m.If(engine.busy):
                m.d.comb += self.busy.eq(1)

        # The engine named by the instruction owns the port (idle engines drive the enables low).
        with m.Switch(self.ins.op):
            for name, engine in engines.items():
                with m.Case(iset.by_name[name].code):
                    m.d.comb += [
                        self.spad.rd_en.eq(engine.spad.rd_en),
                        self.spad.rd_addr.eq(engine.spad.rd_addr),
                        self.spad.wr_en.eq(engine.spad.wr_en),
                        self.spad.wr_addr.eq(engine.spad.wr_addr),
                        self.spad.wr_data.eq(engine.spad.wr_data),
                    ]
        return m
