"""The board top: the GA2 chip behind a UART host bridge, with its external memory in block RAM.

::

    rx --> UARTReceiver --> HostBridge --> UARTTransmitter --> tx
                              |  start, imem_we/addr/wdata          +---------+
                              |  running, halted, status, counters  | GA2Chip |
                              |                                     +---------+
                              |  ext_* (while the chip is idle)         | ext_*
                              +-----------------> mux <-----------------+ (while running)
                                                   |
                                          ExternalMemoryModel (block RAM, latency isa.LAT)

The protocol (command codes, acknowledge byte, status record) is
:mod:`gen.fpga.board.protocol`; the host that speaks it is :class:`gen.fpga.board.protocol.Host`,
driven by the simulated test over the simulated UART and by ``ga2 board run``
over a serial port.  The external memory is :class:`gen.sim.extmem.ExternalMemoryModel`
(the contract's memory: a synchronous read port and ``LAT - 1`` registers), so the
chip sees on the board exactly the latency it sees in every simulator; the bridge
reads and writes it through the same port while the chip is idle.

The top is built for a configuration (:class:`ga2_hdl.config.Config`, ``config=``):
the chip of that configuration, its external memory of the configuration's size
(or ``ext_words``), latency and port width.  A wide external port
(``ext_port_words`` = w > 1) gets a memory of w banks (``banked=True``: block RAM
on the FPGA); the bridge itself moves one word at a time, on lane 0 of the
port with only lane 0's mask bit set.  The protocol addresses instruction and
external memory with 16 bits and reports a 16-bit pc and an 8-bit status:
:func:`bridge_problems` says what of a configuration it cannot carry, and
:class:`BoardTop` refuses such a configuration before anything is built.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Elaboratable, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ga2_hdl import isa
from ga2_hdl.rtl.chip import COUNTER_PORTS, GA2Chip
from ga2_hdl.config import Config
from ga2_hdl.rtl.decoder import STATUS_BITS
from ga2_hdl.rtl.layout import ExtPort

from .protocol import ACK, INSTR_BYTES, STATUS_BYTES, WORD_BYTES, Command
from ...sim.extmem import ExternalMemoryModel
from .uart import UARTReceiver, UARTTransmitter, divisor_for

__all__ = ["HostBridge", "BoardTop", "DEFAULT_BAUD", "bridge_problems"]

#: the protocol's address fields (gen.fpga.board.protocol: addr u16, count u16)
PROTOCOL_ADDR_BITS = 16

DEFAULT_BAUD = 115_200
#: bytes in the largest record the bridge sends in one go
_SEND_BYTES = max(STATUS_BYTES, WORD_BYTES)


class HostBridge(wiring.Component):
    """Serves the host's commands (gen.fpga.board.protocol) on the chip's control and memory ports.

    Ports: ``rx_data`` (In stream of bytes from the receiver, always ready) and ``tx_data``
    (Out stream of bytes to the transmitter); the chip's control ports seen from outside
    (``start``, ``imem_*`` out; ``running``, ``halted``, ``status``, ``status_pc``, ``cnt_*`` in);
    the external-memory master ports of :class:`ga2_hdl.rtl.layout.ExtPort` (used only while the chip is
    not running; the top multiplexes them with the chip's).
    """

    def __init__(self, imem_addr_bits: int):
        if not 1 <= imem_addr_bits <= PROTOCOL_ADDR_BITS:
            raise ValueError(f"the bridge addresses the instruction memory with {PROTOCOL_ADDR_BITS} bits, "
                             f"not {imem_addr_bits}")
        self.imem_addr_bits = imem_addr_bits
        super().__init__({
            "rx_data": In(stream.Signature(8, always_ready=True)),
            "tx_data": Out(stream.Signature(8)),
            "start": Out(1),
            "imem_we": Out(1), "imem_addr": Out(imem_addr_bits), "imem_wdata": Out(isa.INSTR_BITS),
            "running": In(1), "halted": In(1), "status": In(STATUS_BITS), "status_pc": In(16),
            **{name: In(32) for name in COUNTER_PORTS},
            **ExtPort().members,
        })

    def elaborate(self, platform):
        m = Module()
        rx, tx = self.rx_data, self.tx_data
        cmd = Signal(8)
        header = Signal(32)                       # addr u16, count u16 (little-endian)
        got = Signal(range(max(INSTR_BYTES, 4) + 1))
        addr = Signal(16)
        count = Signal(16)
        word = Signal(isa.INSTR_BITS)             # the word being received (bytes enter at the top)
        out = Signal(8 * _SEND_BYTES)             # the record being sent, LSB first
        out_left = Signal(range(_SEND_BYTES + 1))
        reading = Signal()                        # sending a READ_EXT word (more may follow)

        # the record of gen.fpga.board.protocol.Status: flags, status, status_pc, counters
        status_record = Cat(self.running, self.halted, Const(0, 6), self.status, Const(0, 8 - STATUS_BITS),
                            self.status_pc, *[getattr(self, name) for name in COUNTER_PORTS])
        assert len(status_record) == 8 * STATUS_BYTES

        m.d.comb += [tx.payload.eq(out[:8])]
        m.d.comb += [self.ext_addr.eq(addr), self.ext_wdata.eq(word[-32:]),
                     self.imem_addr.eq(addr[:self.imem_addr_bits]), self.imem_wdata.eq(word)]

        def send(record, nbytes, next_reading=0):
            m.d.sync += [out.eq(record), out_left.eq(nbytes), reading.eq(next_reading)]
            m.next = "SEND"

        with m.FSM(name="bridge"):
            with m.State("CMD"):
                with m.If(rx.valid):
                    m.d.sync += [cmd.eq(rx.payload), got.eq(0)]
                    with m.Switch(rx.payload):
                        with m.Case(Command.START):
                            m.next = "START"
                        with m.Case(Command.STATUS):
                            send(status_record, STATUS_BYTES)
                        with m.Case(Command.LOAD_IMEM, Command.WRITE_EXT, Command.READ_EXT):
                            m.next = "HEADER"
                        # any other byte is ignored: the bridge waits for a command
            with m.State("START"):
                m.d.comb += self.start.eq(~self.running)
                send(ACK, 1)
            with m.State("HEADER"):
                with m.If(rx.valid):
                    m.d.sync += [header.eq(Cat(header[8:], rx.payload)), got.eq(got + 1)]
                    with m.If(got == 3):
                        m.d.sync += got.eq(0)
                        m.next = "DECODE"
            with m.State("DECODE"):
                m.d.sync += [addr.eq(header[:16]), count.eq(header[16:])]
                with m.If(header[16:] == 0):                    # the host never sends 0: ignore
                    m.next = "CMD"
                with m.Elif(cmd == Command.READ_EXT):
                    m.next = "READ"
                with m.Else():
                    m.next = "DATA"
            with m.State("DATA"):
                need = Signal(range(INSTR_BYTES + 1))
                m.d.comb += need.eq(INSTR_BYTES)
                with m.If(cmd == Command.WRITE_EXT):
                    m.d.comb += need.eq(WORD_BYTES)
                with m.If(rx.valid):
                    m.d.sync += [word.eq(Cat(word[8:], rx.payload)), got.eq(got + 1)]
                    with m.If(got + 1 == need):
                        m.d.sync += got.eq(0)
                        m.next = "WRITE"
            with m.State("WRITE"):
                with m.If(cmd == Command.LOAD_IMEM):
                    m.d.comb += self.imem_we.eq(1)
                with m.Else():
                    m.d.comb += self.ext_we.eq(~self.running)
                m.d.sync += [addr.eq(addr + 1), count.eq(count - 1)]
                with m.If(count == 1):
                    send(ACK, 1)
                with m.Else():
                    m.next = "DATA"
            with m.State("READ"):
                m.d.comb += self.ext_re.eq(~self.running)
                m.next = "READ_WAIT"
            with m.State("READ_WAIT"):
                with m.If(self.ext_rvalid | self.running):      # running: nothing comes back; send 0
                    send(self.ext_rdata & ~self.running.replicate(32), WORD_BYTES, next_reading=1)
                    m.d.sync += [addr.eq(addr + 1), count.eq(count - 1)]
            with m.State("SEND"):
                m.d.comb += tx.valid.eq(1)
                with m.If(tx.ready):
                    m.d.sync += [out.eq(out >> 8), out_left.eq(out_left - 1)]
                    with m.If(out_left == 1):
                        with m.If(reading & (count != 0)):
                            m.next = "READ"
                        with m.Else():
                            m.next = "CMD"
        return m


class _ExtMux:
    """The external-memory master the memory sees: the chip while it runs, else the bridge.

    Its members are the chip's port's (``ports``: a wide port has ``ext_mask`` and lane arrays)."""

    def __init__(self, ports):
        self.members = ports
        for name, member in ports.items():
            setattr(self, name, Signal(member.shape, name=f"ext_mux_{name}"))


def bridge_problems(config: Config, ext_words: int | None = None) -> list[str]:
    """What of the chip ``config`` (with ``ext_words`` of external memory, default the configuration's)
    the bridge's protocol cannot carry; empty when it carries all of it."""
    from ga2_hdl.rtl.chip import STATUS_PC_BITS
    from ga2_hdl.rtl.decoder import STATUS_BITS as status_bits
    ext_words = config.ext_words if ext_words is None else ext_words
    out = []
    if ext_words > 1 << PROTOCOL_ADDR_BITS:
        out.append(f"external memory of {ext_words} words: the protocol's addresses reach {1 << PROTOCOL_ADDR_BITS}")
    if config.imem_words > 1 << PROTOCOL_ADDR_BITS:
        out.append(f"imem_words={config.imem_words}: the protocol's addresses reach {1 << PROTOCOL_ADDR_BITS}")
    if STATUS_PC_BITS > 8 * 2 or status_bits > 8:
        out.append(f"the chip's status ({status_bits} bits) and pc ({STATUS_PC_BITS} bits) do not fit the "
                   f"status record's byte and u16")
    return out


class BoardTop(Elaboratable):
    """The chip, its external memory and the UART bridge.

    Parameters
    ----------
    divisor : int or None
        Clock cycles per UART bit; None: from the platform's default clock and ``baud``.
    baud : int
        The serial rate on a board (used when ``divisor`` is None).
    ext_words : int, optional
        External memory size in words (block RAM on the FPGA); default the configuration's.
    config : Config
        The chip (required; ``isa.BOOK`` is the book's): the chip's sizes, the memory's latency and port width.

    Raises ValueError (before anything is built) when the bridge cannot carry the configuration
    (:func:`bridge_problems`) or the chip cannot be built for it.

    Attributes: ``rx`` (drive it in a simulation), ``tx``, ``chip``, ``ext`` (the memory model),
    ``bridge``.  On a platform, ``rx``/``tx`` are connected to the platform's ``uart`` resource.
    """

    def __new__(cls, *, divisor: int | None = None, baud: int = DEFAULT_BAUD,
                ext_words: int | None = None, config: Config):
        # Refused before the board exists, so that a refusal leaves no elaboratable behind (no
        # UnusedElaboratable warning on top of the error): the bridge's limits, then the chip
        # (which refuses before it exists too).
        ext_words = config.ext_words if ext_words is None else ext_words
        problems = bridge_problems(config, ext_words)
        if problems:
            raise ValueError(f"the UART bridge cannot carry the configuration {config.name!r}: "
                             + "; ".join(problems))
        chip = GA2Chip(config=config, ext_words=ext_words)
        self = super().__new__(cls, src_loc_at=1)     # (Amaranth's notes name the caller's line)
        self.chip = chip
        return self

    def __init__(self, *, divisor: int | None = None, baud: int = DEFAULT_BAUD,
                 ext_words: int | None = None, config: Config):
        ext_words = config.ext_words if ext_words is None else ext_words
        self.config = config
        self.divisor = divisor
        self.baud = baud
        self.ext_words = ext_words
        self.rx = Signal(init=1)
        self.tx = Signal(init=1)
        self.mux = _ExtMux({name: self.chip.signature.members[name]
                            for name in ExtPort(words=config.ext_port_words).members})
        self.ext = ExternalMemoryModel(self.mux, ext_words, config=config, banked=True)
        self.bridge = HostBridge(len(self.chip.imem_addr))

    def elaborate(self, platform):
        m = Module()
        divisor = self.divisor
        if divisor is None:
            if platform is None:
                raise ValueError("BoardTop needs a divisor when there is no platform")
            divisor = divisor_for(platform.default_clk_frequency, self.baud)
        m.submodules.chip = chip = self.chip
        m.submodules.ext = self.ext
        m.submodules.bridge = bridge = self.bridge
        m.submodules.uart_rx = urx = UARTReceiver(divisor)
        m.submodules.uart_tx = utx = UARTTransmitter(divisor)
        wiring.connect(m, urx.data, bridge.rx_data)
        wiring.connect(m, bridge.tx_data, utx.data)
        m.d.comb += [urx.rx.eq(self.rx), self.tx.eq(utx.tx)]

        m.d.comb += [chip.start.eq(bridge.start), chip.imem_we.eq(bridge.imem_we),
                     chip.imem_addr.eq(bridge.imem_addr), chip.imem_wdata.eq(bridge.imem_wdata),
                     bridge.running.eq(chip.running), bridge.halted.eq(chip.halted),
                     bridge.status.eq(chip.status), bridge.status_pc.eq(chip.status_pc)]
        m.d.comb += [getattr(bridge, name).eq(getattr(chip, name)) for name in COUNTER_PORTS]
        mux = self.mux
        wide = self.config.ext_port_words > 1

        def from_bridge(name):
            """The bridge's one-word request on the port: lane 0, with only lane 0 asked for."""
            if name == "ext_mask":
                return Const(1, len(mux.ext_mask))
            return getattr(bridge, name)          # ext_wdata: lane 0 (the other lanes are masked off)

        for name, member in mux.members.items():
            if member.flow == wiring.Out:         # requests: the chip while it runs, else the bridge
                with m.If(chip.running):
                    m.d.comb += getattr(mux, name).eq(getattr(chip, name))
                with m.Else():
                    m.d.comb += getattr(mux, name).eq(from_bridge(name))
            else:                                 # answers go to both (the bridge takes lane 0)
                m.d.comb += getattr(chip, name).eq(getattr(mux, name))
                if name == "ext_rdata" and wide:
                    m.d.comb += bridge.ext_rdata.eq(mux.ext_rdata[0])
                else:
                    m.d.comb += getattr(bridge, name).eq(getattr(mux, name))

        if platform is not None:
            uart = platform.request("uart", 0)
            m.d.comb += [self.rx.eq(uart.rx.i), uart.tx.o.eq(self.tx)]
        return m
