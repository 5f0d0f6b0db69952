"""Hardware shapes shared by the GA-2 units, derived from the ISA module.

``INSTRUCTION`` is the 128-bit instruction word as an Amaranth struct whose
members are the ISA's fields (``ins.op``, ``ins.a`` ... ``ins.x``), so the
decoder never restates a bit position.  ``SpadPort`` is the scratchpad port
every execution unit drives (as the master: ``Out(SpadPort())``).
"""
from amaranth.hdl import unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from . import isa

# StructLayout places members from the least significant bit up, in order.
assert [f.lsb for f in sorted(isa.FIELDS, key=lambda f: f.lsb)] == \
    [sum(f.width for f in sorted(isa.FIELDS, key=lambda f: f.lsb)[:i]) for i in range(len(isa.FIELDS))]

INSTRUCTION = data.StructLayout({f.name: unsigned(f.width) for f in sorted(isa.FIELDS, key=lambda f: f.lsb)})
assert INSTRUCTION.size == isa.INSTR_BITS

SPAD_ADDR_BITS = (isa.SPAD_WORDS - 1).bit_length()


class SpadPort(wiring.Signature):
    """One unit's view of the scratchpad: a synchronous read port and a write port.

    Read: ``rd_en`` and ``rd_addr`` in cycle t give ``rd_data`` in cycle t+1.
    Write: ``wr_en``, ``wr_addr`` and ``wr_data`` in cycle t update the word at
    the end of cycle t.  Directions are from the unit's (master's) side.
    """

    def __init__(self):
        super().__init__({
            "rd_en": Out(1),
            "rd_addr": Out(SPAD_ADDR_BITS),
            "rd_data": In(isa.WORD_BITS),
            "wr_en": Out(1),
            "wr_addr": Out(SPAD_ADDR_BITS),
            "wr_data": Out(isa.WORD_BITS),
        })
