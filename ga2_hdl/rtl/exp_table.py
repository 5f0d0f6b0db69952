"""The softmax unit's exponential table: a 256 x 16-bit ROM.

Entry ``d`` holds ``isa.EXP_TABLE[d] = round(65535 * exp(-d/16))``: the
weight of a score ``d`` sixteenths below the row's maximum, in units of
1/65535.  The contents come from the ISA module and nowhere else, so the
golden model, the tests and this ROM cannot drift apart.

The ROM is a ``lib.memory.Memory`` without a write port and with one
synchronous read port: the address presented in cycle k gives its entry in
cycle k + :attr:`ExpTable.LATENCY` (1), like a block RAM.
"""
from amaranth.hdl import Module
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from .. import isa

ADDR_BITS = (isa.EXP_TABLE_SIZE - 1).bit_length()      #: 8
DATA_BITS = max(isa.EXP_TABLE).bit_length()             #: 16 (T[0] = 65535)


class ExpTable(wiring.Component):
    """Synchronous-read ROM of ``isa.EXP_TABLE``.

    Ports
    -----
    addr : In(8)
        The distance ``d = max - x`` (cycle k).
    data : Out(16)
        ``EXP_TABLE[d]`` (cycle k + LATENCY).
    """

    LATENCY = 1

    addr: In(ADDR_BITS)
    data: Out(DATA_BITS)

    def __init__(self):
        super().__init__()
        assert len(isa.EXP_TABLE) == 1 << ADDR_BITS
        self.rom = memory.Memory(shape=DATA_BITS, depth=len(isa.EXP_TABLE), init=isa.EXP_TABLE)

    def elaborate(self, platform):
        m = Module()
        m.submodules.rom = self.rom
        port = self.rom.read_port()
        m.d.comb += [port.addr.eq(self.addr), self.data.eq(port.data)]
        return m
