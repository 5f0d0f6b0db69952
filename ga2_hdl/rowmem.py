"""Operand row memories: where the matrix unit stages its tiles.

The array needs one value per lane per cycle (a whole column of A, a whole
row of B), but the scratchpad gives one word per cycle.  So the matrix unit
first copies the A tile (lane m = row m of A) and the B tile (lane n =
column n of B) into these memories, one value per cycle, and then reads all
lanes of step k at once while it streams.

One bank holds ``depth`` rows of ``lanes`` int8 values: row k is step k of
every lane.  Staging writes one lane of one row; streaming reads a whole row.
The read is synchronous (address in cycle t, data in cycle t+1).

Implementation: a register file (64 x 4 x 8 bits = 256 bytes per bank), not
a ``lib.memory.Memory``.  At this size the storage is flip-flops either way
(the book's synthesis mapped its row memories to registers too), and
Amaranth's simulator handles a register file much faster than a memory
whose write port it re-evaluates bit by bit every cycle.
"""
from amaranth.hdl import Module, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["OperandRowMemory"]


class OperandRowMemory(wiring.Component):
    """``lanes`` x ``depth`` int8 operand memory: one-lane writes, all-lane reads.

    Parameters
    ----------
    lanes : int
        Number of lanes (rows of A or columns of B): the array size.
    depth : int
        Values per lane: the largest K (64).

    Ports
    -----
    ``wr_en``: In(1), ``wr_lane``: In(range(lanes)), ``wr_addr``: In(range(depth)),
    ``wr_data``: In(signed(8)): store one value at the end of the cycle.
    ``rd_en``: In(1), ``rd_addr``: In(range(depth)): read step ``rd_addr`` of every lane;
    ``rd_data``: Out(ArrayLayout(signed(8), lanes)) has it in the next cycle (and holds it
    while ``rd_en`` is low).  A read of the row being written returns the old row.

    Attribute ``storage``: the register file (a Signal of ``depth`` rows), for tests.
    """

    def __init__(self, lanes: int = 4, depth: int = 64):
        if lanes < 1 or depth < 1:
            raise ValueError(f"operand memory of {lanes} lanes x {depth}: both must be positive")
        self.lanes = lanes
        self.depth = depth
        self.row = data.ArrayLayout(signed(8), lanes)
        self.storage = Signal(data.ArrayLayout(self.row, depth), name="rows")
        super().__init__({
            "wr_en": In(1), "wr_lane": In(range(lanes)), "wr_addr": In(range(depth)),
            "wr_data": In(signed(8)),
            "rd_en": In(1), "rd_addr": In(range(depth)),
            "rd_data": Out(self.row),
        })

    def elaborate(self, platform):
        m = Module()
        with m.If(self.wr_en):
            m.d.sync += self.storage[self.wr_addr][self.wr_lane].eq(self.wr_data)
        with m.If(self.rd_en):
            m.d.sync += self.rd_data.eq(self.storage[self.rd_addr])
        return m
