"""The host side of the board's UART bridge: the byte protocol, and a host that speaks it.

The bridge (:class:`gen.fpga.board.bridge.HostBridge`) takes its command codes, the
acknowledge byte and the status record's layout from here, so the hardware and
the host cannot disagree.  Every integer is little-endian.

==========  ============================================  ===================================
command     host sends                                    bridge answers
==========  ============================================  ===================================
LOAD_IMEM   code, addr u16, count u16, count x 16 bytes   ACK after the last word is written
WRITE_EXT   code, addr u16, count u16, count x 4 bytes    ACK after the last word is written
READ_EXT    code, addr u16, count u16                     count x 4 bytes
START       code                                          ACK (the chip starts its program)
STATUS      code                                          the status record (STATUS_BYTES)
==========  ============================================  ===================================

``count`` is 1 .. 65535 (0 is refused by the host).  The status record is
``flags`` (bit 0 running, bit 1 halted), ``status`` (an
:class:`ga2_hdl.isa.ErrorCode`), ``status_pc`` u16 and the five counters u32 in
the ISA's counter order.  The bridge serves memory commands only while the chip
is not running (the instruction memory ignores writes then anyway); the host
polls STATUS until ``halted``.

:class:`Host` is written once against a *link* with ``async send(bytes)`` and
``async recv(n) -> bytes``: the simulated test drives it over Amaranth's
simulated UART, and ``ga2 board run`` over a serial port (:class:`SerialLink`,
pyserial).
"""
from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass
from typing import Protocol, Sequence

from ga2_hdl import isa
from ga2_hdl.isa import ErrorCode
from ga2_hdl.formats.results import RunResult

__all__ = ["Command", "ACK", "STATUS_BYTES", "Status", "Host", "SerialLink", "ProtocolError"]


class Command:
    """Command codes (one byte)."""
    LOAD_IMEM = 0x49        # 'I'
    WRITE_EXT = 0x45        # 'E'
    READ_EXT = 0x52         # 'R'
    START = 0x53            # 'S'
    STATUS = 0x51           # 'Q'


ACK = 0x06
INSTR_BYTES = isa.INSTR_BITS // 8
WORD_BYTES = isa.WORD_BITS // 8
COUNTER_BYTES = 4
#: flags, status, status_pc (2), counters
STATUS_BYTES = 1 + 1 + 2 + COUNTER_BYTES * len(isa.COUNTER_NAMES)
MAX_COUNT = 0xFFFF


class ProtocolError(RuntimeError):
    """The board answered something the protocol does not allow (or nothing)."""


class Link(Protocol):
    async def send(self, data: bytes) -> None: ...
    async def recv(self, n: int) -> bytes: ...


@dataclass
class Status:
    running: bool
    halted: bool
    status: ErrorCode
    status_pc: int
    counters: isa.Counters      # any sequence of five is converted

    def __post_init__(self):
        self.counters = isa.Counters(*self.counters)

    @classmethod
    def decode(cls, raw: bytes) -> "Status":
        if len(raw) != STATUS_BYTES:
            raise ProtocolError(f"status record of {len(raw)} bytes, expected {STATUS_BYTES}")
        flags, status, pc = struct.unpack_from("<BBH", raw)
        counters = isa.Counters(*struct.unpack_from(f"<{len(isa.COUNTER_NAMES)}I", raw, 4))
        try:
            code = ErrorCode(status)
        except ValueError:
            raise ProtocolError(f"status record with unknown status code {status}") from None
        return cls(bool(flags & 1), bool(flags & 2), code, pc, counters)

    def encode(self) -> bytes:
        """The record as the bridge sends it (used to check the decoder)."""
        return struct.pack(f"<BBH{len(self.counters)}I", int(self.running) | int(self.halted) << 1,
                           int(self.status), self.status_pc, *self.counters)


def _header(code: int, addr: int, count: int) -> bytes:
    if not 0 <= addr <= 0xFFFF:
        raise ValueError(f"address {addr}: the bridge addresses 0 .. 65535")
    if not 1 <= count <= MAX_COUNT:
        raise ValueError(f"count {count}: 1 .. {MAX_COUNT} words per command")
    return struct.pack("<BHH", code, addr, count)


class Host:
    """The bridge's host: load, start, poll, read back, over any link."""

    def __init__(self, link: Link, *, chunk: int = 256):
        self.link = link
        self.chunk = chunk

    async def _ack(self, what: str) -> None:
        got = await self.link.recv(1)
        if got != bytes([ACK]):
            raise ProtocolError(f"{what}: expected the acknowledge byte {ACK:#04x}, got {got.hex() or 'nothing'}")

    async def load_program(self, words: Sequence[int], addr: int = 0) -> None:
        """Write 128-bit instruction words into the instruction memory from ``addr``."""
        for lo in range(0, len(words), self.chunk):
            part = words[lo:lo + self.chunk]
            payload = b"".join(int(w).to_bytes(INSTR_BYTES, "little") for w in part)
            await self.link.send(_header(Command.LOAD_IMEM, addr + lo, len(part)) + payload)
            await self._ack(f"LOAD_IMEM at {addr + lo}")

    async def write_ext(self, words: Sequence[int], addr: int = 0) -> None:
        """Write 32-bit words into the external memory from ``addr``."""
        for lo in range(0, len(words), self.chunk):
            part = words[lo:lo + self.chunk]
            payload = b"".join((int(w) & 0xFFFFFFFF).to_bytes(WORD_BYTES, "little") for w in part)
            await self.link.send(_header(Command.WRITE_EXT, addr + lo, len(part)) + payload)
            await self._ack(f"WRITE_EXT at {addr + lo}")

    async def read_ext(self, addr: int, count: int) -> list[int]:
        """Read ``count`` words of external memory from ``addr``."""
        out: list[int] = []
        for lo in range(0, count, self.chunk):
            n = min(self.chunk, count - lo)
            await self.link.send(_header(Command.READ_EXT, addr + lo, n))
            raw = await self.link.recv(n * WORD_BYTES)
            if len(raw) != n * WORD_BYTES:
                raise ProtocolError(f"READ_EXT at {addr + lo}: {len(raw)} of {n * WORD_BYTES} bytes came back")
            out += list(struct.unpack(f"<{n}I", raw))
        return out

    async def start(self) -> None:
        await self.link.send(bytes([Command.START]))
        await self._ack("START")

    async def status(self) -> Status:
        await self.link.send(bytes([Command.STATUS]))
        return Status.decode(await self.link.recv(STATUS_BYTES))

    async def run(self, program: Sequence[int], ext: Sequence[int], ext_words: int, *,
                  wait=None, max_polls: int = 1_000_000) -> RunResult:
        """Load ``program`` (encoded words) and the whole external image, run, read everything back.

        ``wait``: an async callable awaited between two status polls (a delay on a real board).
        """
        image = list(ext) + [0] * (ext_words - len(ext))
        if len(image) != ext_words:
            raise ValueError(f"external image of {len(ext)} words for a memory of {ext_words}")
        first = await self.status()
        if first.running:
            raise ProtocolError("the chip is running a program; wait for it to halt")
        await self.load_program(program)
        await self.write_ext(image)
        await self.start()
        for _ in range(max_polls):
            st = await self.status()
            if st.halted and not st.running:
                break
            if wait is not None:
                await wait()
        else:
            raise ProtocolError(f"the chip did not halt within {max_polls} status polls")
        memory = await self.read_ext(0, ext_words)
        return RunResult(counters=st.counters, ext=memory, error=st.status, error_pc=st.status_pc)


class SerialLink:
    """A :class:`Link` over a serial port (pyserial, in the ``fpga`` extra)."""

    def __init__(self, port: str, baud: int, timeout: float = 2.0):
        try:
            import serial
        except ImportError:
            raise ProtocolError("talking to a board needs pyserial: pip install -e '.[fpga]' "
                                "(or pip install pyserial)") from None
        self.port = serial.Serial(port, baud, timeout=timeout)

    async def send(self, data: bytes) -> None:
        self.port.write(data)
        self.port.flush()

    async def recv(self, n: int) -> bytes:
        data = self.port.read(n)
        if len(data) != n:
            raise ProtocolError(f"{self.port.port}: {len(data)} of {n} bytes came back before the timeout")
        return data

    def close(self) -> None:
        self.port.close()


def run_sync(coro):
    """Run one of :class:`Host`'s coroutines outside a simulator."""
    return asyncio.run(coro)
