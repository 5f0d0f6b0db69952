"""The scratchpad: one ``spad_words`` x 32-bit memory (4096 on the book chip) shared by the execution units.

The memory has one synchronous read port and one write port (the shape of a
single dual-port block RAM).  Every execution unit owns a master port
(:class:`ga2_hdl.rtl.layout.SpadPort`); the chip runs one instruction at a time,
so at most one unit drives its enables in any cycle.  The arbitration is
therefore not a priority scheme but a plain AND-OR multiplexer: each master's
address and data are masked with its own enable and the results are ORed.
An idle unit (enables low) contributes nothing, whatever its address lines
hold, and no "which unit is busy" signal is needed.  The book's chip instead names the
owner, the unit of the instruction it runs, from a register (``owned``): address and data
are the owner's, the memory reads every cycle, so a unit's start (decided late in its
cycle) reaches only the write enable; its writes are registered before the memory (a write
stage), and a read of the word being written gets it from the forward: the memory's read port
returns the old word, and the scratchpad tells the masters so (``rd_hit``, with the word on
``rd_forward``, :func:`ga2_hdl.rtl.layout.spad_forwards`), each master choosing between the two
itself.  The wide chips without overlap do the same
for their banked storage (below): every bank reads the owner's address every cycle, and each
master's write is registered before the master multiplexer and the write rotator.

The scratchpad's masters are members of its signature,
``masters: In(SpadPort()).array(n)``; the chip connects each unit's ``spad``
port to one of them with ``wiring.connect``.  Two enables high in the same
cycle would be a bug in the chip's control; :attr:`Scratchpad.conflict` flags
it (a read-only debug signal that tests check; it changes nothing in the
datapath).

With overlap (``config.overlap``) several units run at once.  With one partition
(``config.spad_partitions`` = 1) the overlapped issue rule lets no two instructions touching the
scratchpad run together, so the memory and its multiplexer are the ones above.  With N > 1
partitions the storage is N memories of ``spad_words / N`` contiguous words (with wide ports, N
times the banks below: memory (p, b) holds bank b's rows of partition p), each with one read and
one write port, the shape of a dual-port block RAM.  The issue rule
(:func:`ga2_hdl.isa.partitions_meet`) lets no two instructions in flight touch a common
partition, so at most one master addresses a partition in any cycle: each memory's ports take
the request of the master whose address lies in it (an AND-OR multiplexer per memory, selected by
the address's partition bits, per bank with wide ports), and each master's read data comes back
from the memory it read, through the partition index registered in its read cycle (a per-master
N:1 multiplexer per bank).  :attr:`Scratchpad.conflict` then flags two masters addressing one
memory's read port, or one memory's write port, in one cycle.
Wide ports (``Config.spad_ports`` or ``Config.ext_port_words`` above 1).  A
master port may move ``w`` consecutive words per cycle from any address
(:class:`~ga2_hdl.rtl.layout.SpadPort` with ``words=w``).  The storage is then
*banked*: B = the widest master's ``w`` banks of ``ceil(depth/B)`` words, word a
in bank ``a mod B`` at row ``a div B``, so any B consecutive words lie in B
different banks and one access reaches them all in one cycle, whatever the
start address.  Bank b serves lane ``(b - a) mod B`` of an access at address a,
at row ``a div B`` (plus one when ``b < a mod B``); a barrel rotator turns the
lanes into banks for writes and the banks back into lanes for reads (with the
address's low bits registered for the read's cycle).  Each bank reads and
writes only the lanes the master's masks select.  Hardware cost over the book's
single memory: the same storage split into B memories, each with its own row
adder (B adders of ``addr_bits - log2 B`` bits), two B-word barrel rotators of
32-bit lanes (log2 B levels of 32*B multiplexers each, one for the write data,
one for the read data) plus the masks' rotators, and a master multiplexer B
words wide.  With B = 1 the scratchpad is the book's, gate for gate.
"""
from __future__ import annotations

import functools
import operator

from amaranth.hdl import C, Cat, Module, Mux, Signal, unsigned
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from .. import isa
from ..config import Config
from .layout import SpadPort, spad_addr_bits, spad_forwards

__all__ = ["Scratchpad"]


def _to_banks(value, offset, lane_bits: int, n_banks: int):
    """Lanes -> banks: bank b takes lane ``(b - offset) mod n_banks``, i.e. the lanes rotated by -offset."""
    shift = n_banks.bit_length() - 1
    twice = Cat(value, value)
    return twice.bit_select(Cat(C(0, (lane_bits - 1).bit_length()) if lane_bits > 1 else C(0, 0),
                                (-offset)[:shift]), n_banks * lane_bits)


def _from_banks(bank_data, offset, word_bits: int):
    """Banks -> lanes: lane i is bank ``(offset + i) mod B`` (``offset`` the access's, registered)."""
    both = Cat(*bank_data, *bank_data)
    return both.bit_select(Cat(C(0, (word_bits - 1).bit_length()), offset), len(bank_data) * word_bits)


class Scratchpad(wiring.Component):
    """The shared scratchpad and its port multiplexer.

    Parameters
    ----------
    n_masters : int
        How many master ports (the chip has one per execution unit).
    config : Config
        The chip (required; ``isa.BOOK`` is the book's): its ``spad_words`` are the memory's words and
        set the address width; with ``config.overlap`` and ``config.spad_partitions`` above 1
        the storage is one memory per partition (and bank), routed to the master addressing it.
    depth : int, optional
        Words of memory, if fewer than the configuration's (for unit tests).
    words : int
        Words per access of the widest master (a power of two): the number of banks.
    init : sequence of int
        Initial contents (default all zero).
    words : int
        Words per access of the master ports (a power of two, default 1); the
        storage has that many banks.  The chip's is ``max(spad_ports,
        ext_port_words)``; it connects a narrower unit's port to lanes 0 .. w-1.

    Behaviour of every master port: read: ``rd_en``/``rd_addr`` in cycle t
    give ``rd_data`` in cycle t+1 (``rd_data`` is broadcast to all masters and
    holds its value while no read is enabled; partitioned, each master's comes from the
    memory it read and holds while no master reads that memory).  Write: ``wr_en``/``wr_addr``/
    ``wr_data`` in cycle t update the word at the end of cycle t.  A read and a
    write of one address in the same cycle return the old word (never relied upon).

    Ports
    -----
    masters : In(SpadPort()).array(n_masters)
        The master ports (a unit's ``spad`` connects to one with ``wiring.connect``).
    owner : In(n_masters)
        ``owned=True`` only (no overlap: the chips without overlap): one-hot, the master whose
        address and write data reach the memory this cycle (the chip names the unit of the
        instruction it runs, from a register); the memory then reads the owner's address in
        every cycle (a master's ``rd_data`` is valid the cycle after its read, as always, and
        holds nothing between reads) and writes when a master enables a write, as without it.
        A master that enables an access must be the owner.  Banked (``words`` > 1), only the read
        address is the owner's, and every bank reads in every cycle whatever the read mask (a
        master takes only the lanes it asked for); writes are those without ``owned``, each master's
        registered before the master multiplexer and taken a cycle later, behind read ports
        transparent to them (the write stage), so the masters see what they see without it.
    conflict : Out(1)
        High in a cycle where more than one master enables a read or more than one
        enables a write (partitioned: where two masters address one memory's read port, or
        one memory's write port).
    write_en : Out(1)
    write_addr : Out(spad_addr_bits(config))
        The write the memory takes this cycle (read-only debug outputs, for
        testbenches that track writes); banked, the write the masters make this cycle (owned,
        the banks take it a cycle later).

    Attributes
    ----------
    write_last : Out(spad_addr_bits(config))
        Banked storage only: the last address the write this cycle may reach
        (``write_addr + B - 1``).

    Attributes
    ----------
    banks : list of amaranth.lib.memory.Memory
        The storage, one memory per bank (of each partition: memory ``p * B + b``);
        :meth:`cell` gives the word at an address.
    memory : amaranth.lib.memory.Memory
        The storage when it is one bank (testbenches may read or set ``memory.data[i]``).
    """

    def __init__(self, n_masters: int, *, config: Config, depth: int | None = None, init=(),
                 words: int = 1, owned: bool = False):
        if not n_masters >= 1:
            raise ValueError("the scratchpad needs at least one master port")
        if depth is None:
            depth = config.spad_words
        addr_bits = self.addr_bits = spad_addr_bits(config)
        if not 1 <= depth <= 1 << addr_bits:
            raise ValueError(f"scratchpad depth {depth} does not fit a {addr_bits}-bit address")
        if words < 1 or words & (words - 1):
            raise ValueError(f"scratchpad ports of {words} words: a power of two")
        self.config = config
        self.depth = depth
        self.n_banks = words
        if owned and config.overlap:
            raise ValueError("an owned scratchpad (one master at a time, named by owner) is one without overlap")
        self.owned = owned
        if self.n_banks > 1 << addr_bits:
            raise ValueError(f"{self.n_banks} banks for a {addr_bits}-bit address")
        init = list(init)
        self.n_partitions = config.spad_partitions if config.overlap else 1
        if self.n_partitions > 1 and depth != config.spad_words:
            raise ValueError("a partitioned scratchpad has the configuration's spad_words")
        # memory p * B + b: bank b's rows of partition p (bank b: every B-th word from b)
        rows = -(-depth // self.n_banks)
        part_rows = rows // self.n_partitions
        # the owned one-memory scratchpad's collisions are the forward's (the masters' rd_hit), not
        # Yosys's to emulate: without the attribute Yosys builds an address compare and a
        # multiplexer after the block RAM for any read-during-write behaviour (docs/fpga.md,
        # eighteenth session)
        self.forwards = owned and words == 1 and spad_forwards(config)
        attrs = {"no_rw_check": 1} if self.forwards else None
        self.banks = [memory.Memory(shape=unsigned(isa.WORD_BITS), attrs=attrs,
                                    depth=part_rows if self.n_banks > 1 or self.n_partitions > 1 else depth,
                                    init=init[b::self.n_banks][p * part_rows:(p + 1) * part_rows])
                      for p in range(self.n_partitions) for b in range(self.n_banks)]
        self.memory = self.banks[0] if len(self.banks) == 1 else None
        super().__init__({
            "masters": In(SpadPort(words=words, config=config)).array(n_masters),
            "conflict": Out(1),
            "write_en": Out(1),
            "write_addr": Out(addr_bits),
            **({"write_last": Out(addr_bits)} if self.n_banks > 1 else {}),
            **({"owner": In(n_masters)} if owned else {}),
        })

    #: the storage's submodule name (Verilog export names the word array after it)
    MEMORY_NAME = "memory"
    #: a banked storage's submodule names (bank b: ``BANK_NAME.format(b)``)
    BANK_NAME = "bank{}"
    #: a partitioned storage's submodule names (partition p, and bank b with wide ports)
    PARTITION_NAME = "part{}"

    @classmethod
    def memory_names(cls, banks: int, partitions: int = 1) -> list[str]:
        """The storage submodules' names, memory ``p * banks + b`` first to last: ``memory`` (one
        memory), ``bank0`` .. (banks), ``part0`` .. (partitions), ``part0_bank0`` .. (both)."""
        if banks == partitions == 1:
            return [cls.MEMORY_NAME]
        if partitions == 1:
            return [cls.BANK_NAME.format(b) for b in range(banks)]
        if banks == 1:
            return [cls.PARTITION_NAME.format(p) for p in range(partitions)]
        return [f"{cls.PARTITION_NAME.format(p)}_{cls.BANK_NAME.format(b)}"
                for p in range(partitions) for b in range(banks)]

    def bank_names(self) -> list[str]:
        """This storage's submodule names (:meth:`memory_names`)."""
        return self.memory_names(self.n_banks, self.n_partitions)

    def cell(self, addr: int):
        """The word at ``addr``, for a testbench's ``ctx.get``/``ctx.set``."""
        if not 0 <= addr < self.depth:
            raise IndexError(f"scratchpad address {addr} outside 0 .. {self.depth - 1}")
        row, b = divmod(addr, self.n_banks)
        p, row = divmod(row, self.banks[0].depth) if self.n_partitions > 1 else (0, row)
        return self.banks[p * self.n_banks + b].data[row]

    def elaborate(self, platform):
        if self.n_partitions > 1:
            return self._elaborate_partitioned()
        if self.n_banks > 1:
            return self._elaborate_banked()
        m = Module()
        m.submodules[self.MEMORY_NAME] = self.memory
        wr = self.memory.write_port()
        # synchronous and not transparent: owned, the forward (_forward) gives a read the word
        # written in its cycle
        rd = self.memory.read_port()

        ports = list(self.masters)
        rd_addr = 0
        wr_addr = 0
        wr_data = 0
        for i, p in enumerate(ports):
            # Mux(en, x, 0) rather than x & en.replicate(n): the same gates, but Amaranth's
            # simulator evaluates a replicate bit by bit.  Owned: the master named by ``owner`` (a
            # register of the chip's) drives address and data, so a late enable (a unit's start
            # cycle) reaches only the memory's enables
            rd_sel, wr_sel = (self.owner[i], self.owner[i]) if self.owned else (p.rd_en, p.wr_en)
            rd_addr = rd_addr | Mux(rd_sel, p.rd_addr, 0)
            wr_addr = wr_addr | Mux(wr_sel, p.wr_addr, 0)
            wr_data = wr_data | Mux(wr_sel, p.wr_data, 0)
        any_of = functools.partial(functools.reduce, operator.or_)
        rd_ens = [p.rd_en for p in ports]
        wr_ens = [p.wr_en for p in ports]
        two_of = lambda ens: any_of([a & b for i, a in enumerate(ens) for b in ens[i + 1:]] or [0])
        m.d.comb += [rd.addr.eq(rd_addr), self.conflict.eq(two_of(rd_ens) | two_of(wr_ens))]
        if self.owned:
            # the memory reads the owner's address every cycle (a read changes nothing, and a unit
            # takes read data only the cycle after its own read), so no unit's enable, start or
            # busy logic reaches the block RAM's clock enables
            m.d.comb += rd.en.eq(1)
            self._write_stage(m, wr, any_of(wr_ens), wr_addr, wr_data)
        else:
            m.d.comb += [rd.en.eq(any_of(rd_ens)), wr.en.eq(any_of(wr_ens)), wr.addr.eq(wr_addr),
                         wr.data.eq(wr_data)]
        m.d.comb += [self.write_en.eq(wr.en), self.write_addr.eq(wr.addr)]
        # The read data goes back to every master from a submodule of its own: in Amaranth's
        # simulator that is a separate process, which runs only when the memory's output changes.
        m.submodules.read_fanout = fanout = Module()
        hit, written = self._forward(m, rd, wr) if self.forwards else (None, None)
        for p in ports:
            fanout.d.comb += p.rd_data.eq(rd.data)
            if hit is not None:
                fanout.d.comb += [p.rd_hit.eq(hit), p.rd_forward.eq(written)]
        return m

    @staticmethod
    def _forward(m, rd, wr):
        """The forward of a port ``rd`` that reads every cycle, not transparent to ``wr``: (hit,
        word), hit high in the cycle after a read of the word ``wr`` wrote in the read's cycle (the
        block RAM's data is then the old word), and the word written.  The read's address and the
        write (enable, address, data) are registered in that cycle and compared in the next, while
        the block RAM's data comes out, so the compare starts from registers and not from the
        units' address logic (a transparent port's compare, as Yosys builds it, takes the address
        before it is registered).  Each master chooses between the two words itself
        (:func:`~ga2_hdl.rtl.layout.spad_read_word`)."""
        read_addr = Signal.like(rd.addr, name="read_addr_r")
        written_en = Signal(name="written_en_r")
        written_addr = Signal.like(wr.addr, name="written_addr_r")
        written_data = Signal.like(wr.data, name="written_data_r")
        m.d.sync += [read_addr.eq(rd.addr), written_en.eq(wr.en), written_addr.eq(wr.addr),
                     written_data.eq(wr.data)]
        hit = Signal(name="forward_hit")
        m.d.comb += hit.eq(written_en & (read_addr == written_addr))
        return hit, written_data

    @staticmethod
    def _registered_write(m, prefix, en, addr, mask, data):
        """A master's write (``en``, ``addr``, ``mask``, ``data``) one cycle later: the owned banked
        scratchpad's write stage (registers named ``{prefix}write_en_r`` and so on)."""
        regs = [Signal.like(v, name=f"{prefix}write_{name}_r")
                for name, v in (("en", en), ("addr", addr), ("mask", mask), ("data", data))]
        m.d.sync += [r.eq(v) for r, v in zip(regs, (en, addr, mask, data))]
        return regs

    @staticmethod
    def _write_stage(m, wr, en, addr, data, prefix=""):
        """A memory's write stage (the owned one-bank scratchpad's, and each memory of a partitioned
        one; registers named ``{prefix}write_en_r`` and so on): a write (``en``, ``addr``, ``data``
        in cycle t) is registered and reaches the memory in cycle t+1, so the block RAMs' write
        inputs come from registers and not from the units' multiplexers.  A read in cycle t+1 of the word
        being written then must see the new word, as it would without the stage: the memory's
        read port is transparent to its write port (a read and a write of one memory word in one
        cycle give the word written; the one-memory scratchpad: the forward, :meth:`_forward`,
        instead), so a master sees exactly what it sees without the stage (a
        master's read and write of one address in one cycle still return the old word: the
        memory takes that write a cycle later)."""
        pending_en = Signal(name=f"{prefix}write_en_r")
        pending_addr = Signal(len(wr.addr), name=f"{prefix}write_addr_r")
        pending_data = Signal(len(wr.data), name=f"{prefix}write_data_r")
        m.d.sync += [pending_en.eq(en), pending_addr.eq(addr), pending_data.eq(data)]
        m.d.comb += [wr.en.eq(pending_en), wr.addr.eq(pending_addr), wr.data.eq(pending_data)]

    def _elaborate_banked(self):
        m = Module()
        B = self.n_banks
        W = isa.WORD_BITS
        for name, bank in zip(self.bank_names(), self.banks):
            m.submodules[name] = bank
        ports = list(self.masters)

        # owned, the write stage: each master's write (enable, address, mask, data) is registered
        # and reaches the master multiplexer, the write rotator and the banks a cycle later, so a
        # unit's write data (RQ's rounding, the matrix unit's output) ends in a register beside
        # the unit, and the banks' read ports are transparent to their write ports (below)
        writes = [(p.wr_en, p.wr_addr, p.wr_mask, p.wr_data.as_value()) for p in ports]
        if self.owned:
            writes = [self._registered_write(m, f"m{i}_", *write) for i, write in enumerate(writes)]
        # the master multiplexer (AND-OR, as the book's), B lanes wide; owned, the read address is
        # the owner's (as the one-bank scratchpad's)
        rd_addr = wr_addr = wr_data = rd_mask = wr_mask = 0
        for i, (p, (en, addr, mask, data)) in enumerate(zip(ports, writes)):
            rd_addr = rd_addr | Mux(self.owner[i] if self.owned else p.rd_en, p.rd_addr, 0)
            rd_mask = rd_mask | Mux(p.rd_en, p.rd_mask, 0)
            wr_addr = wr_addr | Mux(en, addr, 0)
            wr_mask = wr_mask | Mux(en, mask, 0)
            wr_data = wr_data | Mux(en, data, 0)
        any_of = functools.partial(functools.reduce, operator.or_)
        rd_ens = [p.rd_en for p in ports]
        wr_ens = [p.wr_en for p in ports]
        two_of = lambda ens: any_of([a & b for i, a in enumerate(ens) for b in ens[i + 1:]] or [0])

        rd_en, r_addr, r_mask = Signal(), Signal(self.addr_bits), Signal(B)
        wr_en, w_addr, w_mask, w_data = Signal(), Signal(self.addr_bits), Signal(B), Signal(B * W)
        if self.owned:
            # every bank reads the owner's address every cycle (a read changes nothing, and a unit
            # takes read data only the cycle after its own read, its lanes under its own mask), so
            # no unit's enable, mask, start or busy logic reaches the block RAMs' clock enables
            m.d.comb += [rd_en.eq(1), r_mask.eq(-1)]            # every bank (-1: all B bits set)
        else:
            m.d.comb += [rd_en.eq(any_of(rd_ens)), r_mask.eq(rd_mask)]
        # the debug outputs name the masters' writes of this cycle (owned: the banks take them a
        # cycle later)
        master_addr = any_of([Mux(p.wr_en, p.wr_addr, 0) for p in ports]) if self.owned else w_addr
        m.d.comb += [
            r_addr.eq(rd_addr),
            wr_en.eq(any_of([en for en, *_ in writes])), w_addr.eq(wr_addr), w_mask.eq(wr_mask),
            w_data.eq(wr_data),
            self.conflict.eq(two_of(rd_ens) | two_of(wr_ens)),
            self.write_en.eq(any_of(wr_ens)),
            self.write_addr.eq(master_addr),
            self.write_last.eq(master_addr + (B - 1)),
        ]

        read_data, _ = self._bank_access(m, rd_en, r_addr, r_mask, wr_en, w_addr, w_mask, w_data,
                                         transparent=self.owned)
        read_lanes = Signal(B * W)
        m.d.comb += read_lanes.eq(read_data)
        m.submodules.read_fanout = fanout = Module()
        for p in ports:
            fanout.d.comb += p.rd_data.eq(read_lanes)
        return m

    def _bank_requests(self, m, rd_en, r_addr, r_mask, wr_en, w_addr, w_mask, w_data, *, prefix=""):
        """One (masked, any-address) read and write of up to B words as a request to each bank.

        Lanes -> banks through the rotators; bank ``b`` takes the next row when ``b`` is below the
        address's offset.  Returns, per bank, ``(read enable, read row, write enable, write row,
        write data)`` (rows before truncation: a row past the last wraps to row 0), and the read's
        offset (to register for :func:`_from_banks`).
        """
        B = self.n_banks
        shift = B.bit_length() - 1
        W = isa.WORD_BITS
        r_off, w_off = r_addr[:shift], w_addr[:shift]
        r_row, w_row = r_addr[shift:], w_addr[shift:]
        r_bank_mask, w_bank_mask = Signal(B, name=f"{prefix}rd_banks"), Signal(B, name=f"{prefix}wr_banks")
        w_bank_data = Signal(B * W, name=f"{prefix}wr_bank_data")
        m.d.comb += [r_bank_mask.eq(_to_banks(r_mask, r_off, 1, B)),
                     w_bank_mask.eq(_to_banks(w_mask, w_off, 1, B)),
                     w_bank_data.eq(_to_banks(w_data, w_off, W, B))]
        requests = []
        for b in range(B):
            # bank b holds a word of the next row when b < the offset (never for the last bank)
            r_next, w_next = ((b < r_off), (b < w_off)) if b < B - 1 else (0, 0)
            requests.append((rd_en & r_bank_mask[b], r_row + r_next, wr_en & w_bank_mask[b], w_row + w_next,
                             w_bank_data[b * W:(b + 1) * W]))
        return requests, r_off

    def _bank_access(self, m, rd_en, r_addr, r_mask, wr_en, w_addr, w_mask, w_data, *, prefix="",
                     transparent=False):
        """One access path into the banks: a read and a write port in every bank, driven by one
        (masked, any-address) read and write of up to B words (:meth:`_bank_requests`).

        With ``transparent`` (the owned banked scratchpad, behind its write stage) each bank's
        read port is transparent to its write port: a read and a write of one row in one cycle
        give the word written.  The write stage then delays every write a cycle, so a master sees
        exactly what it sees without the stage (a read in cycle t+1 of a word written in cycle t
        gives the new word; a read and a write of one word in one cycle still give the old word).

        Returns the read data as lanes (one cycle later, rotated back by the registered offset)
        and, per bank, the ``(enable, row)`` of the write port.
        """
        requests, r_off = self._bank_requests(m, rd_en, r_addr, r_mask, wr_en, w_addr, w_mask, w_data,
                                              prefix=prefix)
        bank_data, writes = [], []
        for bank, (r_en, r_row, w_en, w_row, w_word) in zip(self.banks, requests):
            wr = bank.write_port()
            # synchronous; not transparent, except behind the write stage
            rd = bank.read_port(transparent_for=(wr,) if transparent else ())
            row_bits = len(rd.addr)
            m.d.comb += [rd.en.eq(r_en), rd.addr.eq(r_row[:row_bits]),
                         wr.en.eq(w_en), wr.addr.eq(w_row[:row_bits]), wr.data.eq(w_word)]
            bank_data.append(rd.data)
            writes.append((wr.en, wr.addr))
        return _from_banks(bank_data, self._read_offset(m, rd_en, r_off, prefix), isa.WORD_BITS), writes

    @staticmethod
    def _read_offset(m, rd_en, r_off, prefix):
        """The read's offset, registered for its data's cycle: banks -> lanes, lane i is bank
        ``(offset + i) mod B``."""
        read_off = Signal(len(r_off), name=f"{prefix}read_offset")
        with m.If(rd_en):
            m.d.sync += read_off.eq(r_off)
        return read_off

    def _elaborate_partitioned(self):
        """N partitions (each B banks with wide ports): one read and one write port per memory.

        Each master's access becomes a request per bank (one bank without wide ports), whose row's
        top bits name the partition; memory (p, b) takes the request of the master addressing it
        (an AND-OR multiplexer: the issue rule leaves at most one), its write a cycle later
        through a write stage (:meth:`_write_stage`, the read port transparent to it).  Each master
        registers, per bank, the partition it read, and takes its read data from that memory the
        next cycle.
        """
        m = Module()
        B, N, W = self.n_banks, self.n_partitions, isa.WORD_BITS
        for name, mem in zip(self.bank_names(), self.banks):
            m.submodules[name] = mem
        ports = list(self.masters)
        local_bits = (self.banks[0].depth - 1).bit_length()      # a memory's row (a power of two rows)
        part_bits = N.bit_length() - 1
        requests, offsets = [], []          # per master: per bank (rd_en, rd_row, wr_en, wr_row, wr_data)
        for j, p in enumerate(ports):
            if B > 1:
                reqs, off = self._bank_requests(m, p.rd_en, p.rd_addr, p.rd_mask, p.wr_en, p.wr_addr,
                                                p.wr_mask, p.wr_data.as_value(), prefix=f"m{j}_")
            else:
                reqs, off = [(p.rd_en, p.rd_addr, p.wr_en, p.wr_addr, p.wr_data)], None
            requests.append(reqs)
            offsets.append(off)
        partition = lambda row: row[local_bits:local_bits + part_bits]
        any_of = functools.partial(functools.reduce, operator.or_)
        two_of = lambda ens: any_of([a & b for i, a in enumerate(ens) for b in ens[i + 1:]] or [0])
        read_data = [[None] * B for _ in range(N)]
        conflicts = []
        for part in range(N):
            for b in range(B):
                mem = self.banks[part * B + b]
                # the write stage of a memory: the write its masters make in cycle t (the AND-OR
                # multiplexer's enable, row and word) is registered and taken in cycle t+1, so the
                # block RAM's write inputs come from registers beside it; its read port is
                # transparent to its write port, so a master sees what it sees without the stage
                # (as the owned banked scratchpad's, :meth:`_write_stage`)
                wr = mem.write_port()
                rd = mem.read_port(transparent_for=(wr,))
                r_sel, w_sel = [], []
                r_addr = w_addr = w_data = 0
                for reqs in requests:
                    r_en, r_row, w_en, w_row, w_word = reqs[b]
                    rs = Signal(name=f"part{part}_bank{b}_rd_m{len(r_sel)}")
                    ws = Signal(name=f"part{part}_bank{b}_wr_m{len(w_sel)}")
                    m.d.comb += [rs.eq(r_en & (partition(r_row) == part)), ws.eq(w_en & (partition(w_row) == part))]
                    r_sel.append(rs)
                    w_sel.append(ws)
                    r_addr = r_addr | Mux(rs, r_row[:local_bits], 0)
                    w_addr = w_addr | Mux(ws, w_row[:local_bits], 0)
                    w_data = w_data | Mux(ws, w_word, 0)
                m.d.comb += [rd.en.eq(any_of(r_sel)), rd.addr.eq(r_addr)]
                self._write_stage(m, wr, any_of(w_sel), w_addr, w_data, prefix=f"part{part}_bank{b}_")
                conflicts += [two_of(r_sel), two_of(w_sel)]
                read_data[part][b] = rd.data
        for j, (p, reqs, off) in enumerate(zip(ports, requests, offsets)):
            lanes = []
            for b, (r_en, r_row, *_write) in enumerate(reqs):
                came_from = Signal(part_bits, name=f"m{j}_rd_part{b}")     # the partition bank b read
                with m.If(r_en):
                    m.d.sync += came_from.eq(partition(r_row))
                lanes.append(Cat(*(read_data[q][b] for q in range(N))).word_select(came_from, W))
            if B > 1:
                m.d.comb += p.rd_data.eq(_from_banks(lanes, self._read_offset(m, p.rd_en, off, f"m{j}_"), W))
            else:
                m.d.comb += p.rd_data.eq(lanes[0])
        write_addr = any_of([Mux(p.wr_en, p.wr_addr, 0) for p in ports])
        m.d.comb += [
            self.conflict.eq(any_of(conflicts)),
            self.write_en.eq(any_of([p.wr_en for p in ports])),
            self.write_addr.eq(write_addr),
            *([self.write_last.eq(write_addr + (B - 1))] if B > 1 else []),
        ]
        return m
