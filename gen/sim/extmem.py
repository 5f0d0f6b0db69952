"""The external-memory model of docs/chip.md, as Amaranth hardware (simulation only).

At every rising edge: if ``ext_we``, ``mem[ext_addr] <= ext_wdata``; a
pipeline of ``LAT`` stages of (valid, data) advances, with stage 0 taking
(``ext_re``, the word at ``ext_addr`` as it was *before* this edge's write);
the outputs ``ext_rvalid``/``ext_rdata`` are the last stage.  A request
sampled at edge n is therefore seen by the chip at edge n + LAT.

Built from a non-transparent synchronous read port (which *is* stage 0: it
captures the old word at the edge) and one register holding stages 1 ..
LAT-1.  Being hardware, the model costs the Python testbench nothing per
cycle; a testbench loads and reads the contents through
:attr:`ExternalMemoryModel.memory` (``data[i]``).  The Verilog testbenches
implement the same behaviour in Verilog.

A wide port (``Config.ext_port_words`` = w > 1, the master has ``ext_mask``):
a request reads the words ``ext_addr + i`` of the lanes i that ``ext_mask``
selects (w read ports), a write writes those lanes (w write ports), and a
stage holds w words; lanes not selected touch nothing (their read data is undefined).

On an FPGA the w ports of one memory cannot be block RAM; ``banked=True`` (the
board top's memory, :mod:`gen.fpga.board.bridge`) stores a wide port's memory as w banks
instead, word a in bank ``a mod w`` at row ``a div w``, so the w consecutive
words of a request are in w different banks, each with one read and one write
port (a block RAM each).  The lanes are rotated into the banks by the address's
low bits, and the read data back into lanes by the same bits registered for the
read's cycle: lane for lane the same answers as the w-port model.

The model is attached to its master (the chip, or a DMA under test) by
reference: it reads the master's ``ext_addr``/``ext_re``/``ext_we``/
``ext_wdata`` and drives its ``ext_rdata``/``ext_rvalid`` directly, which
spares Amaranth's simulator a layer of forwarding logic.

:class:`WriteMonitor` records which blocks of a memory were written during a
run, so that a testbench reads back or wipes only those.
"""
from amaranth.hdl import Array, Cat, Module, Signal, unsigned
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In

from ga2_hdl import isa
from ga2_hdl.config import Config
from ga2_hdl.rtl.layout import ExtPort

__all__ = ["ExternalMemoryModel", "WriteMonitor"]


class ExternalMemoryModel(wiring.Component):
    """``words`` x 32-bit external memory with read latency ``lat``, serving ``master``.

    Parameters
    ----------
    master : object with the members of :class:`ga2_hdl.rtl.layout.ExtPort`
        The chip (or a DMA, or ``ExtPort().create()`` in a test).
    words, lat : int, optional
        Size and read latency: by default the configuration's ``ext_words`` and ``lat``.
    init :
        Initial contents.
    config : Config
        The chip the memory serves (required: its ``ext_words``, ``lat`` and port width).

    Attribute ``memory``: the storage (``memory.data[i]``).
    """

    def __init__(self, master, words: int | None = None, lat: int | None = None, init=(), *,
                 config: Config, banked: bool = False):
        words = config.ext_words if words is None else words
        lat = config.lat if lat is None else lat
        problem = isa.ext_words_problem(words)
        if problem:
            raise ValueError(f"external memory of {words} words: {problem}")
        if lat < 1:
            raise ValueError(f"latency {lat}: the model needs at least one stage")
        for name in ExtPort().members:
            if not hasattr(master, name):
                raise TypeError(f"the external memory's master has no {name} port")
        self.master = master
        self.words = words
        self.lat = lat
        self.port_words = len(master.ext_mask) if hasattr(master, "ext_mask") else 1
        self.banked = banked and self.port_words > 1
        if self.banked:
            w, init = self.port_words, list(init)
            if words % w:
                raise ValueError(f"external memory of {words} words in {w} banks: a multiple of {w} words")
            #: the storage of a banked memory, one memory per bank (``memory`` is None then)
            self.banks = [memory.Memory(shape=unsigned(isa.WORD_BITS), depth=words // w, init=init[b::w])
                          for b in range(w)]
            self.memory = None
        else:
            self.memory = memory.Memory(shape=unsigned(isa.WORD_BITS), depth=words, init=list(init))
        super().__init__({})
        if self.port_words > 1:
            #: the last address a write this cycle may reach (for a WriteMonitor)
            self.write_last = Signal(len(master.ext_addr) + 1, name="write_last")

    def _elaborate_wide(self, m):
        port, w = self.master, self.port_words
        lane_data = []
        for i in range(w):
            rd = self.memory.read_port()
            wr = self.memory.write_port()
            addr_bits = len(rd.addr)
            addr = port.ext_addr + i
            m.d.comb += [
                rd.addr.eq(addr[:addr_bits]),
                rd.en.eq(port.ext_re & port.ext_mask[i]),
                wr.addr.eq(addr[:addr_bits]),
                wr.data.eq(port.ext_wdata[i]),
                wr.en.eq(port.ext_we & port.ext_mask[i]),
            ]
            lane_data.append(rd.data)
        m.d.comb += self.write_last.eq(port.ext_addr + (w - 1))
        return Cat(*lane_data)

    def _elaborate_banked(self, m):
        port, w = self.master, self.port_words
        k = w.bit_length() - 1
        offset = port.ext_addr[:k]                      # the bank of lane 0
        row = port.ext_addr[k:]                         # lane 0's row
        offset_read = Signal(k, name="read_offset")     # the offset of the read answered next cycle
        m.d.sync += offset_read.eq(offset)
        wdata = Array(port.ext_wdata[i] for i in range(w))
        mask = Array(port.ext_mask[i] for i in range(w))
        bank_data = []
        for b, bank in enumerate(self.banks):
            m.submodules[f"bank{b}"] = bank
            rd = bank.read_port()                       # non-transparent, like the model's
            wr = bank.write_port()
            lane = Signal(k, name=f"bank{b}_lane")     # bank b serves lane (b - offset) mod w
            m.d.comb += lane.eq(b - offset)
            bank_row = Signal(len(row), name=f"bank{b}_row")
            m.d.comb += bank_row.eq(row + (b < offset))  # banks below the offset hold the next row
            addr_bits = len(rd.addr)
            m.d.comb += [
                rd.addr.eq(bank_row[:addr_bits]), rd.en.eq(port.ext_re & mask[lane]),
                wr.addr.eq(bank_row[:addr_bits]), wr.data.eq(wdata[lane]), wr.en.eq(port.ext_we & mask[lane]),
            ]
            bank_data.append(rd.data)
        banks = Array(bank_data)
        out = []
        for i in range(w):                              # lane i came from bank (offset + i) mod w
            lane_data = Signal(isa.WORD_BITS, name=f"lane{i}_data")
            m.d.comb += lane_data.eq(banks[(offset_read + i)[:k]])
            out.append(lane_data)
        m.d.comb += self.write_last.eq(port.ext_addr + (w - 1))
        return Cat(*out)

    def elaborate(self, platform):
        m = Module()
        port = self.master
        if self.banked:
            read_data = self._elaborate_banked(m)
        elif self.port_words > 1:
            m.submodules.memory = self.memory
            read_data = self._elaborate_wide(m)
        else:
            m.submodules.memory = self.memory
            rd = self.memory.read_port()           # non-transparent: the word before this edge's write
            wr = self.memory.write_port()
            addr_bits = len(rd.addr)
            m.d.comb += [
                rd.addr.eq(port.ext_addr[:addr_bits]),
                rd.en.eq(port.ext_re),             # stage 0 data only matters when it is valid
                wr.addr.eq(port.ext_addr[:addr_bits]),
                wr.data.eq(port.ext_wdata),
                wr.en.eq(port.ext_we),
            ]
            read_data = rd.data
        # stage 0 is (a registered ext_re, the read port's data); stages 1 .. LAT-1 are one
        # register (an array of (valid, data)) that shifts by one stage per cycle
        stage = data.StructLayout({"valid": 1, "data": unsigned(isa.WORD_BITS * self.port_words)})
        first_valid = Signal(name="stage0_valid")
        m.d.sync += first_valid.eq(port.ext_re)
        if self.lat == 1:
            m.d.comb += [port.ext_rvalid.eq(first_valid), port.ext_rdata.eq(read_data)]
            return m
        later = Signal(data.ArrayLayout(stage, self.lat - 1), name="stages")
        entering = Cat(first_valid, read_data)
        m.d.sync += later.eq(Cat(entering, later.as_value()[:-stage.size]))
        m.d.comb += [port.ext_rvalid.eq(later[-1].valid), port.ext_rdata.eq(later[-1].data)]
        return m


class WriteMonitor(wiring.Component):
    """Which blocks of each watched memory were written since ``clear`` (simulation aid).

    Parameters
    ----------
    ports : dict name -> (en, addr, words)
        The write enable, address and memory size of each watched write port.
    block_words : int
        Block size (a power of two): one bit per block of this many words.

    Ports
    -----
    clear : In(1)
        Forget everything (at the clock edge).

    Attributes
    ----------
    blocks : dict
        ``blocks[name]`` is a bitmap, bit b set if a word in ``b*block_words ..
        (b+1)*block_words - 1`` was written; :meth:`written_ranges` turns it into
        address ranges.  All bitmaps live in one register (one simulator process,
        one update per cycle).
    """

    def __init__(self, ports: dict, block_words: int = 64):
        if block_words < 1 or block_words & (block_words - 1):
            raise ValueError(f"block_words={block_words}: a power of two")
        self.ports = dict(ports)
        self.block_words = block_words
        self.shift = block_words.bit_length() - 1
        self.layout = data.StructLayout({
            name: -(-words // block_words) for name, (_en, _addr, words) in self.ports.items()})
        self.state = Signal(self.layout, name="written_blocks")
        self.blocks = {name: self.state[name] for name in self.ports}
        super().__init__({"clear": In(1)})

    def written_ranges(self, bitmap: int, words: int) -> list[range]:
        """The address ranges (merged, clipped to ``words``) of the blocks set in ``bitmap``."""
        out: list[range] = []
        b = 0
        while bitmap >> b:
            if bitmap >> b & 1:
                start = b
                while bitmap >> b & 1:
                    b += 1
                lo, hi = start * self.block_words, min(b * self.block_words, words)
                if lo < hi:
                    out.append(range(lo, hi))
            else:
                b += 1
        return out

    def elaborate(self, platform):
        m = Module()
        with m.If(self.clear):
            m.d.sync += self.state.eq(0)
        with m.Else():
            for name, (en, addr, _words) in self.ports.items():
                with m.If(en):
                    m.d.sync += self.blocks[name].bit_select(addr >> self.shift, 1).eq(1)
        return m


class AccessMonitor(wiring.Component):
    """The first access outside a memory since ``clear`` (simulation aid).

    A read or a write outside a memory is undefined on the chip (a four-state simulator gives x,
    Amaranth's simulator a zero): the monitor watches memory ports and latches the first such
    access, so that a run can report it instead of the value it happened to give.

    Parameters
    ----------
    ports : list of (memory, kind, en, addr, mask, words)
        Each watched port: the memory's name (``"scratchpad"``), ``"read"`` or ``"write"``, its
        enable and address, its lane mask (None for a one-word port; lane i reaches ``addr + i``
        when bit i is set) and the memory's size in words.
    cycle : Value
        What to latch as the access's time (the chip's ``cnt_total``).

    Attributes
    ----------
    seen, port, address, cycle : Signal
        Whether an access outside was seen; which port (an index of ``ports``), the first word
        address outside the memory, and ``cycle`` then.
    """

    def __init__(self, ports, cycle):
        self.ports = list(ports)
        self.time = cycle
        self.seen = Signal(name="outside_seen")
        self.port = Signal(range(max(2, len(self.ports))), name="outside_port")
        self.address = Signal(max(len(p[3]) for p in self.ports) + 8, name="outside_address")
        self.cycle = Signal(len(cycle), name="outside_cycle")
        super().__init__({"clear": In(1)})

    def describe(self, port: int, address: int, cycle: int) -> str:
        memory_name, kind, _en, _addr, _mask, words = self.ports[port]
        return (f"{memory_name} {kind} of word {address}, outside the {words}-word {memory_name}, "
                f"at total={cycle}")

    def elaborate(self, platform):
        m = Module()
        with m.If(self.clear):
            m.d.sync += self.seen.eq(0)
        with m.Elif(~self.seen):
            first = True
            for index, (_name, _kind, en, addr, mask, words) in enumerate(self.ports):
                lanes = 1 if mask is None else len(mask)
                for lane in range(lanes):
                    hit = en & ((addr + lane) >= words)
                    if mask is not None:
                        hit = hit & mask[lane]
                    with (m.If if first else m.Elif)(hit):
                        m.d.sync += [self.seen.eq(1), self.port.eq(index), self.address.eq(addr + lane),
                                     self.cycle.eq(self.time)]
                    first = False
        return m
