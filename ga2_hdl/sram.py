"""The scratchpad: one ``spad_words`` x 32-bit memory (4096 on the book chip) shared by the execution units.

The memory has one synchronous read port and one write port (the shape of a
single dual-port block RAM).  Every execution unit owns a master port
(:class:`ga2_hdl.layout.SpadPort`); the chip runs one instruction at a time,
so at most one unit drives its enables in any cycle.  The arbitration is
therefore not a priority scheme but a plain AND-OR multiplexer: each master's
address and data are masked with its own enable and the results are ORed.
An idle unit (enables low) contributes nothing, whatever its address lines
hold, and no "which unit is busy" signal is needed.

The scratchpad's masters are members of its signature,
``masters: In(SpadPort()).array(n)``; the chip connects each unit's ``spad``
port to one of them with ``wiring.connect``.  Two enables high in the same
cycle would be a bug in the chip's control; :attr:`Scratchpad.conflict` flags
it (a read-only debug signal that tests check; it changes nothing in the
datapath).

With overlap (``config.overlap``) several units run at once, so every master
has a read port and a write port of its own on the one word array (a memory
of ``n_masters`` read and ``n_masters`` write ports).  The sequencer's hazard
rule (:class:`ga2_hdl.isa.IssueTimer`) guarantees that no two units in flight
write the same word, and that no unit reads a word another in-flight unit
writes, so the ports never race; :attr:`Scratchpad.conflict` then flags two
writes of one address in one cycle.
"""
from __future__ import annotations

import functools
import operator

from amaranth.hdl import Module, Mux, unsigned
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from . import isa
from .config import Config
from .layout import SpadPort, refuse_beyond, spad_addr_bits

__all__ = ["Scratchpad"]


class Scratchpad(wiring.Component):
    """The shared scratchpad and its port multiplexer.

    Parameters
    ----------
    n_masters : int
        How many master ports (the chip has one per execution unit).
    config : Config
        The chip (the book's by default): its ``spad_words`` are the memory's words and
        set the address width; with ``config.overlap`` every master has its own read and
        write port.
    depth : int, optional
        Words of memory, if fewer than the configuration's (for unit tests).
    init : sequence of int
        Initial contents (default all zero).

    Behaviour of every master port: read: ``rd_en``/``rd_addr`` in cycle t
    give ``rd_data`` in cycle t+1 (``rd_data`` is broadcast to all masters and
    holds its value while no read is enabled).  Write: ``wr_en``/``wr_addr``/
    ``wr_data`` in cycle t update the word at the end of cycle t.  A read and a
    write of one address in the same cycle return the old word (never relied upon).

    Ports
    -----
    masters : In(SpadPort()).array(n_masters)
        The master ports (a unit's ``spad`` connects to one with ``wiring.connect``).
    conflict : Out(1)
        High in a cycle where more than one master enables a read or more than one
        enables a write (with overlap: where two masters write one address).
    write_en : Out(1)
    write_addr : Out(spad_addr_bits(config))
        The write the memory takes this cycle (read-only debug outputs, for
        testbenches that track writes).

    Attributes
    ----------
    memory : amaranth.lib.memory.Memory
        The storage (testbenches may read or set ``memory.data[i]``).
    """

    def __init__(self, n_masters: int, *, config: Config = isa.BOOK, depth: int | None = None, init=()):
        refuse_beyond(config, "the scratchpad", ("spad_ports",))
        if not n_masters >= 1:
            raise ValueError("the scratchpad needs at least one master port")
        if depth is None:
            depth = config.spad_words
        addr_bits = spad_addr_bits(config)
        if not 1 <= depth <= 1 << addr_bits:
            raise ValueError(f"scratchpad depth {depth} does not fit a {addr_bits}-bit address")
        self.config = config
        self.depth = depth
        self.memory = memory.Memory(shape=unsigned(isa.WORD_BITS), depth=depth, init=list(init))
        super().__init__({
            "masters": In(SpadPort(config=config)).array(n_masters),
            "conflict": Out(1),
            "write_en": Out(1),
            "write_addr": Out(addr_bits),
        })

    #: the storage's submodule name (Verilog export names the word array after it)
    MEMORY_NAME = "memory"

    def elaborate(self, platform):
        if self.config.overlap:
            return self._elaborate_ported()
        m = Module()
        m.submodules[self.MEMORY_NAME] = self.memory
        rd = self.memory.read_port()          # synchronous, not transparent
        wr = self.memory.write_port()

        ports = list(self.masters)
        rd_addr = 0
        wr_addr = 0
        wr_data = 0
        for p in ports:
            # Mux(en, x, 0) rather than x & en.replicate(n): the same gates, but Amaranth's
            # simulator evaluates a replicate bit by bit
            rd_addr = rd_addr | Mux(p.rd_en, p.rd_addr, 0)
            wr_addr = wr_addr | Mux(p.wr_en, p.wr_addr, 0)
            wr_data = wr_data | Mux(p.wr_en, p.wr_data, 0)
        any_of = functools.partial(functools.reduce, operator.or_)
        rd_ens = [p.rd_en for p in ports]
        wr_ens = [p.wr_en for p in ports]
        two_of = lambda ens: any_of([a & b for i, a in enumerate(ens) for b in ens[i + 1:]] or [0])
        m.d.comb += [
            rd.en.eq(any_of(rd_ens)),
            rd.addr.eq(rd_addr),
            wr.en.eq(any_of(wr_ens)),
            wr.addr.eq(wr_addr),
            wr.data.eq(wr_data),
            self.conflict.eq(two_of(rd_ens) | two_of(wr_ens)),
            self.write_en.eq(wr.en),
            self.write_addr.eq(wr.addr),
        ]
        # The read data goes back to every master from a submodule of its own: in Amaranth's
        # simulator that is a separate process, which runs only when the memory's output changes.
        m.submodules.read_fanout = fanout = Module()
        for p in ports:
            fanout.d.comb += p.rd_data.eq(rd.data)
        return m

    def _elaborate_ported(self):
        """One read port and one write port per master (the overlapped chip's scratchpad)."""
        m = Module()
        m.submodules[self.MEMORY_NAME] = self.memory
        ports = list(self.masters)
        writes = []
        for p in ports:
            rd = self.memory.read_port()         # synchronous, not transparent
            wr = self.memory.write_port()
            m.d.comb += [
                rd.en.eq(p.rd_en), rd.addr.eq(p.rd_addr), p.rd_data.eq(rd.data),
                wr.en.eq(p.wr_en), wr.addr.eq(p.wr_addr), wr.data.eq(p.wr_data),
            ]
            writes.append((p.wr_en, p.wr_addr))
        same = [ea & eb & (aa == ab) for i, (ea, aa) in enumerate(writes) for eb, ab in writes[i + 1:]]
        m.d.comb += [
            self.conflict.eq(functools.reduce(operator.or_, same, 0)),
            self.write_en.eq(functools.reduce(operator.or_, [p.wr_en for p in ports])),
            self.write_addr.eq(functools.reduce(operator.or_, [Mux(p.wr_en, p.wr_addr, 0) for p in ports])),
        ]
        return m
