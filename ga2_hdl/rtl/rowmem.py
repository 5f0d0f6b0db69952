"""Operand row memories: where the matrix unit stages its tiles.

The array needs one value per lane per cycle (a whole column of A, a whole
row of B), but the scratchpad gives one word per cycle.  So the matrix unit
first copies the A tile (lane m = row m of A) and the B tile (lane n =
column n of B) into these memories, one value per cycle, and then reads all
lanes of step k at once while it streams.

One bank holds ``depth`` rows of ``lanes`` int8 values: row k is step k of
every lane.  Staging writes one lane of one row; streaming reads a whole row.
The read is synchronous (address in cycle t, data in cycle t+1).

Implementation: a ``lib.memory.Memory`` of ``depth`` words of ``lanes`` bytes,
with a byte-granular write port (one enable bit per lane) and a synchronous,
non-transparent read port (why a memory and not a register: docs/verilog.md,
"Structure and simulator speed").  The storage is not cleared by reset (it starts at zero): what the
matrix unit reads of lanes it has not staged for the current MM (rows of A
beyond M, columns of B beyond N) reaches only processing elements whose sums
the write-back never selects.
"""
from amaranth.hdl import Cat, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out

from ..config import Config

__all__ = ["OperandRowMemory", "BankedOperandRowMemory"]


def _check_positive(**sizes: int) -> None:
    """ValueError naming the first of ``sizes`` (argument name -> value) below 1."""
    for name, value in sizes.items():
        if value < 1:
            raise ValueError(f"{name}={value}: an operand row memory needs at least 1")


class OperandRowMemory(wiring.Component):
    """``lanes`` x ``depth`` int8 operand memory: one-lane writes, all-lane reads.

    Parameters
    ----------
    lanes : int, optional
        Number of lanes (rows of A or columns of B): by default the configuration's array size.
    depth : int, optional
        Values per lane: by default the configuration's largest K (``max_k``).
    config : Config
        The chip (required; ``isa.BOOK`` is the book's).

    Ports
    -----
    wr_en : In(1)
    wr_lane : In(range(lanes))
    wr_addr : In(range(depth))
    wr_data : In(signed(8))
        Store one value at the end of the cycle.
    rd_en : In(1)
    rd_addr : In(range(depth))
        Read step ``rd_addr`` of every lane.
    rd_data : Out(ArrayLayout(signed(8), lanes))
        The row read, in the next cycle (held while ``rd_en`` is low).  A read of the row
        being written returns the old row.

    Attributes
    ----------
    storage : amaranth.lib.memory.Memory
        ``storage.data[k]`` is row k, lane i in bits 8i .. 8i+7 (for tests).
    """

    def __new__(cls, lanes: int | None = None, depth: int | None = None, *, config: Config):
        # refused before the memory exists: nothing left for Amaranth to warn about
        _check_positive(lanes=config.array if lanes is None else lanes, depth=config.max_k if depth is None else depth)
        return super().__new__(cls, src_loc_at=1)

    def __init__(self, lanes: int | None = None, depth: int | None = None, *, config: Config):
        lanes = config.array if lanes is None else lanes
        depth = config.max_k if depth is None else depth
        self.lanes = lanes
        self.depth = depth
        self.row = data.ArrayLayout(signed(8), lanes)
        self.storage = memory.Memory(shape=unsigned(8 * lanes), depth=depth, init=[])
        super().__init__({
            "wr_en": In(1), "wr_lane": In(range(lanes)), "wr_addr": In(range(depth)),
            "wr_data": In(signed(8)),
            "rd_en": In(1), "rd_addr": In(range(depth)),
            "rd_data": Out(self.row),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.storage = self.storage
        wr = self.storage.write_port(granularity=8)
        rd = self.storage.read_port()          # synchronous, not transparent
        m.d.comb += [
            wr.en.eq(Mux(self.wr_en, 1 << self.wr_lane, 0)),
            wr.addr.eq(self.wr_addr),
            wr.data.eq(Cat([self.wr_data] * self.lanes)),
            rd.en.eq(self.rd_en),
            rd.addr.eq(self.rd_addr),
            self.rd_data.eq(rd.data),
        ]
        return m


class BankedOperandRowMemory(wiring.Component):
    """An operand row memory that takes ``banks`` values per cycle (the matrix unit with wide ports).

    Steps are spread over ``banks`` memories like :class:`OperandRowMemory`, step k in bank
    ``k mod banks`` at row ``k div banks``.  A write stores up to ``banks`` values of one
    scratchpad access in one cycle, in one of two shapes:

    * along k (``wr_along_k``): values j to lane ``wr_lane``, steps ``wr_k + j`` (``wr_k`` a
      multiple of ``banks``: a chunk of a row of A, or of B stored transposed), one per bank;
    * across lanes: values j to lanes ``wr_lane + j``, step ``wr_k`` (a chunk of a row of B):
      one bank, several byte lanes.

    Only the values whose bit of ``wr_mask`` is set are stored (lanes beyond ``lanes`` never
    are).  Reads are those of :class:`OperandRowMemory` (step ``rd_addr`` of every lane, the
    next cycle); the bank is chosen by the registered low bits of the address.

    Cost over :class:`OperandRowMemory`: the same storage in ``banks`` memories, a
    ``banks``-way multiplexer of ``8*lanes`` bits on the read data, and the write steering
    (a shifter of ``8*banks`` bits by the lane).
    """

    def __new__(cls, lanes: int = 4, depth: int = 64, banks: int = 2):
        # refused before the memory exists: nothing left for Amaranth to warn about
        _check_positive(lanes=lanes, depth=depth)
        if banks < 2 or banks & (banks - 1):
            raise ValueError(f"banks={banks}: a power of two, at least 2 (one bank is OperandRowMemory)")
        return super().__new__(cls, src_loc_at=1)

    def __init__(self, lanes: int = 4, depth: int = 64, banks: int = 2):
        self.lanes = lanes
        self.depth = depth
        self.n_banks = banks
        self.row = data.ArrayLayout(signed(8), lanes)
        rows = -(-depth // banks)
        self.banks = [memory.Memory(shape=unsigned(8 * lanes), depth=rows, init=[]) for _ in range(banks)]
        super().__init__({
            "wr_en": In(1), "wr_along_k": In(1), "wr_lane": In(range(lanes)), "wr_k": In(range(depth)),
            "wr_mask": In(banks), "wr_data": In(data.ArrayLayout(signed(8), banks)),
            "rd_en": In(1), "rd_addr": In(range(depth)),
            "rd_data": Out(self.row),
        })

    def elaborate(self, platform):
        m = Module()
        B, lanes = self.n_banks, self.lanes
        shift = B.bit_length() - 1
        values = self.wr_data.as_value()
        # across lanes: value j to byte lane wr_lane + j (a shift of the values and of the mask)
        across_data = Signal(8 * lanes)
        across_en = Signal(lanes)
        m.d.comb += [across_data.eq((values << (self.wr_lane * 8))[:8 * lanes]),
                     across_en.eq((self.wr_mask << self.wr_lane)[:lanes])]
        read_bank = Signal(range(B))
        with m.If(self.rd_en):
            m.d.sync += read_bank.eq(self.rd_addr[:shift])
        outs = []
        for b, bank in enumerate(self.banks):
            m.submodules[f"bank{b}"] = bank
            wr = bank.write_port(granularity=8)
            rd = bank.read_port()                    # synchronous, not transparent
            along_en = Mux(self.wr_mask[b], 1 << self.wr_lane, 0)
            across_here = self.wr_k[:shift] == b
            m.d.comb += [
                wr.en.eq(Mux(self.wr_en,
                             Mux(self.wr_along_k, along_en, Mux(across_here, across_en, 0)), 0)),
                wr.addr.eq(self.wr_k >> shift),
                wr.data.eq(Mux(self.wr_along_k, Cat([self.wr_data[b]] * lanes), across_data)),
                rd.en.eq(self.rd_en & (self.rd_addr[:shift] == b)),
                rd.addr.eq(self.rd_addr >> shift),
            ]
            outs.append(rd.data)
        with m.Switch(read_bank):
            for b, out in enumerate(outs):
                with m.Case(b):
                    m.d.comb += self.rd_data.eq(out)
        return m
