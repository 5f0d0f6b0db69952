"""A plain 8N1 UART (receiver and transmitter) for the board's host bridge.

``divisor`` clock cycles per bit (the board's clock over the baud rate, at least
4).  The receiver synchronises its input with two registers, waits for a start
bit, samples every bit in its middle and checks the stop bit (a byte with a bad
stop bit is dropped and counted in ``framing_errors``).  The transmitter takes a
byte whenever it is idle (a stream with ``ready``).
"""
from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

__all__ = ["UARTReceiver", "UARTTransmitter", "MIN_DIVISOR", "divisor_for"]

MIN_DIVISOR = 4


def _check_divisor(divisor: int) -> int:
    if divisor < MIN_DIVISOR:
        raise ValueError(f"UART divisor {divisor}: at least {MIN_DIVISOR} clock cycles per bit")
    return divisor


class UARTReceiver(wiring.Component):
    """8N1 receiver.

    Ports: ``rx``: In(1) (idle high); ``data``: Out(stream of 8 bits, no back-pressure:
    a byte is valid for one cycle); ``framing_errors``: Out(8), wrapping count.
    """

    def __init__(self, divisor: int):
        self.divisor = _check_divisor(divisor)
        super().__init__({"rx": In(1, init=1),
                          "data": Out(stream.Signature(8, always_ready=True)),
                          "framing_errors": Out(8)})

    def elaborate(self, platform):
        m = Module()
        rx = Signal(init=1)
        m.submodules.sync_rx = FFSynchronizer(self.rx, rx, init=1)
        timer = Signal(range(self.divisor + self.divisor // 2 + 1))
        bits = Signal(range(10))
        shift = Signal(8)
        m.d.sync += self.data.valid.eq(0)
        with m.FSM(name="uart_rx"):
            with m.State("IDLE"):
                with m.If(~rx):
                    # first sample in the middle of data bit 0: one and a half bits from here
                    m.d.sync += [timer.eq(self.divisor + self.divisor // 2 - 1), bits.eq(0)]
                    m.next = "BITS"
            with m.State("BITS"):
                with m.If(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                with m.Elif(bits == 8):                  # the stop bit
                    with m.If(rx):
                        m.d.sync += [self.data.payload.eq(shift), self.data.valid.eq(1)]
                    with m.Else():
                        m.d.sync += self.framing_errors.eq(self.framing_errors + 1)
                    m.next = "STOP"
                with m.Else():
                    m.d.sync += [shift.eq(Cat(shift[1:], rx)), bits.eq(bits + 1),
                                 timer.eq(self.divisor - 1)]
            with m.State("STOP"):                        # wait for the line to be idle again
                with m.If(rx):
                    m.next = "IDLE"
        return m


class UARTTransmitter(wiring.Component):
    """8N1 transmitter.

    Ports: ``data``: In(stream of 8 bits; taken when ``valid & ready``); ``tx``: Out(1)
    (idle high).
    """

    def __init__(self, divisor: int):
        self.divisor = _check_divisor(divisor)
        super().__init__({"data": In(stream.Signature(8)), "tx": Out(1, init=1)})

    def elaborate(self, platform):
        m = Module()
        timer = Signal(range(self.divisor))
        frame = Signal(10, init=(1 << 10) - 1)         # start bit, 8 data bits, stop bit (LSB first)
        left = Signal(range(11))
        m.d.comb += [self.tx.eq(frame[0]), self.data.ready.eq(left == 0)]
        with m.If(self.data.valid & self.data.ready):
            m.d.sync += [frame.eq(Cat(Const(0, 1), self.data.payload, Const(1, 1))),
                         left.eq(10), timer.eq(self.divisor - 1)]
        with m.Elif(left != 0):
            with m.If(timer != 0):
                m.d.sync += timer.eq(timer - 1)
            with m.Else():
                m.d.sync += [frame.eq(Cat(frame[1:], Const(1, 1))), left.eq(left - 1),
                             timer.eq(self.divisor - 1)]
        return m


def divisor_for(clock_hz: float, baud: int) -> int:
    """Clock cycles per bit for ``baud`` at ``clock_hz`` (ValueError if the rate is off by over 2%)."""
    div = round(clock_hz / baud)
    _check_divisor(div)
    if abs(clock_hz / div - baud) / baud > 0.02:
        raise ValueError(f"{baud} baud at {clock_hz / 1e6:g} MHz is off by more than 2% (divisor {div})")
    return div

