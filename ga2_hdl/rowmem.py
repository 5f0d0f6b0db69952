"""Operand row memories: where the matrix unit stages its tiles.

The array needs one value per lane per cycle (a whole column of A, a whole
row of B), but the scratchpad gives one word per cycle.  So the matrix unit
first copies the A tile (lane m = row m of A) and the B tile (lane n =
column n of B) into these memories, one value per cycle, and then reads all
lanes of step k at once while it streams.

One bank is ``lanes`` memories of ``depth`` int8 values.  It is built as a
single memory whose row k holds step k of every lane, with a per-lane write
enable (write granularity of one element): staging writes one lane's value,
streaming reads the whole row.  The read is synchronous (address in cycle t,
data in cycle t+1), as a block RAM's would be.
"""
from amaranth.hdl import Const, Module, Mux, signed
from amaranth.lib import data, memory, wiring
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
    while ``rd_en`` is low).
    """

    def __init__(self, lanes: int = 4, depth: int = 64):
        if lanes < 1 or depth < 1:
            raise ValueError(f"operand memory of {lanes} lanes x {depth}: both must be positive")
        self.lanes = lanes
        self.depth = depth
        self.row = data.ArrayLayout(signed(8), lanes)
        self.memory = memory.Memory(shape=self.row, depth=depth, init=[])
        super().__init__({
            "wr_en": In(1), "wr_lane": In(range(lanes)), "wr_addr": In(range(depth)),
            "wr_data": In(signed(8)),
            "rd_en": In(1), "rd_addr": In(range(depth)),
            "rd_data": Out(self.row),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.memory = self.memory
        wr = self.memory.write_port(granularity=1)     # one enable bit per lane
        rd = self.memory.read_port()
        m.d.comb += [
            wr.addr.eq(self.wr_addr),
            wr.en.eq(Mux(self.wr_en, Const(1, self.lanes) << self.wr_lane, 0)),
            rd.addr.eq(self.rd_addr),
            rd.en.eq(self.rd_en),
            self.rd_data.eq(rd.data),
        ]
        for lane in range(self.lanes):
            m.d.comb += wr.data[lane].eq(self.wr_data)
        return m
