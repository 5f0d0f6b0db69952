"""The GA-2 unit contract and the hardware shapes every unit shares, derived from the ISA.

This module is the one place a reader looks to learn how an execution unit
talks to the rest of the chip:

* :data:`INSTRUCTION`: the 128-bit instruction word as an Amaranth struct
  whose members are the ISA's fields (``ins.op``, ``ins.a`` ... ``ins.x``), so
  no unit restates a bit position;
* :class:`SpadPort`: one master port of the scratchpad;
* :class:`ExtPort`: the external-memory master port (the DMA's, and the chip's);
* :class:`UnitSignature`: the unit contract itself (``start``, ``ins``,
  ``done``, ``busy`` and a ``spad`` master port), on which every execution unit
  (:class:`~ga2_hdl.rtl.dma.DMA`, :class:`~ga2_hdl.rtl.matrix_unit.MatrixUnit`,
  :class:`~ga2_hdl.rtl.vector_unit.VectorUnit` and its engines, including
  :class:`~ga2_hdl.rtl.softmax.SoftmaxUnit`) is built.

Sizes come from the chip's configuration (:class:`ga2_hdl.config.Config`): every
signature requires it as the keyword ``config`` (no silent book default), so the
address widths of a port are derived from the configuration's ``spad_words``
and from nowhere else.
"""
from amaranth.hdl import Mux, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .. import isa
from ..config import Config

__all__ = ["INSTRUCTION", "SPAD_ADDR_BITS", "spad_addr_bits", "spad_forwards", "spad_read_word",
           "SpadPort", "ExtPort", "UnitSignature", "contract_ports", "off_contract"]

# StructLayout places members from the least significant bit up, in order.
assert [f.lsb for f in sorted(isa.FIELDS, key=lambda f: f.lsb)] == \
    [sum(f.width for f in sorted(isa.FIELDS, key=lambda f: f.lsb)[:i]) for i in range(len(isa.FIELDS))]

INSTRUCTION = data.StructLayout({f.name: unsigned(f.width) for f in sorted(isa.FIELDS, key=lambda f: f.lsb)})
assert INSTRUCTION.size == isa.INSTR_BITS



def spad_addr_bits(config: Config) -> int:
    """Width of a scratchpad address on the chip ``config``: enough for ``spad_words - 1``."""
    return max(1, (config.spad_words - 1).bit_length())


#: the book chip's scratchpad address width (12)
SPAD_ADDR_BITS = spad_addr_bits(isa.BOOK)


def spad_forwards(config: Config) -> bool:
    """Whether the scratchpad ports of ``config`` carry the forward (``rd_hit``, ``rd_forward``):
    the chips whose scratchpad is one memory read every cycle by its owner (no overlap, one bank:
    the book's).  Its block RAM returns the old word when a read meets a write of the same word
    (Yosys then adds no compare of its own, docs/fpga.md, eighteenth session); the scratchpad says
    so on ``rd_hit`` and gives the word written on ``rd_forward``."""
    return not config.overlap and config.spad_banks == 1


def spad_read_word(port):
    """The word a read on the scratchpad port ``port`` returned: ``rd_data``, or ``rd_forward``
    when the port carries the forward and ``rd_hit`` is high (:func:`spad_forwards`)."""
    if port.signature.forward:
        return Mux(port.rd_hit, port.rd_forward, port.rd_data)
    return port.rd_data

class _MemoryPort(wiring.Signature):
    """A memory port's signature, described by its address width, word width and words per access:
    two ports with the same three compare equal (and print them), as Amaranth's own signatures do."""

    #: whether the port carries the scratchpad's forward (``rd_hit``, ``rd_forward``; :class:`SpadPort`)
    forward = False

    def __init__(self, what: str, addr_bits: int, data_bits: int, words: int, members):
        if words < 1 or words & (words - 1):
            raise ValueError(f"words={words}: {what} moves a power of two words")
        self.addr_bits = addr_bits
        self.data_bits = data_bits
        self.words = words
        super().__init__(members(unsigned(data_bits) if words == 1 else data.ArrayLayout(unsigned(data_bits), words)))

    @property
    def wide(self) -> bool:
        """Whether the port moves more than one word an access (it then has masks)."""
        return self.words > 1

    def _key(self):
        return type(self), self.addr_bits, self.data_bits, self.words, self.forward

    def __eq__(self, other):
        return isinstance(other, _MemoryPort) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return (f"{type(self).__name__}(addr_bits={self.addr_bits}, data_bits={self.data_bits}, words={self.words}"
                + (", forward" if self.forward else "") + ")")


class SpadPort(_MemoryPort):
    """One master's port on the scratchpad: a synchronous read port and a write port.

    Read: ``rd_en`` and ``rd_addr`` in cycle t give ``rd_data`` in cycle t+1.
    Write: ``wr_en``, ``wr_addr`` and ``wr_data`` in cycle t update the word at
    the end of cycle t.  Directions are from the master's (the unit's) side;
    the scratchpad takes its masters as ``In(SpadPort()).array(n)``.

    On the chips of :func:`spad_forwards` (the book's) the port also carries the forward:
    ``rd_data`` is then the block RAM's word, which is the old one when the read met a write of
    the same word in its cycle, and ``rd_hit`` says so, with the word written on ``rd_forward``.
    The word read is :func:`spad_read_word` (a master builds that multiplexer itself, near its
    own logic: the port's one multiplexer shared by every master was a critical path).  A
    testbench that drives only ``rd_data`` drives the word read (``rd_hit`` stays 0).

    A port ``words`` wide (a power of two, ``Config.spad_ports`` or
    ``Config.ext_port_words``) moves that many *consecutive* words per cycle from
    any address: lane i of ``rd_data`` is the word at ``rd_addr + i`` when bit i
    of ``rd_mask`` is set (the other lanes hold no defined value), and lane i of
    ``wr_data`` goes to ``wr_addr + i`` when bit i of ``wr_mask`` is set
    (addresses wrap at ``2**addr_bits``).  A unit sets the masks to the words it
    uses, so "the words read" and "the words written" are exact.  A one-word
    port (the book's) has no masks and plain words for data: exactly the book's port.

    Parameters
    ----------
    addr_bits : int, optional
        Width of the addresses (the scratchpad holds ``2**addr_bits`` words at most);
        by default :func:`spad_addr_bits` of ``config``.
    data_bits : int
        Width of a word.
    words : int
        Words per access (1: the book's port).
    config : Config
        The chip (required; ``isa.BOOK`` is the book's).

    Members
    -------
    rd_en : Out(1)
    rd_addr : Out(addr_bits)
    rd_data : In(data_bits), or In(ArrayLayout(data_bits, words))
    wr_en : Out(1)
    wr_addr : Out(addr_bits)
    wr_data : Out(data_bits), or Out(ArrayLayout(data_bits, words))
    rd_mask, wr_mask : Out(words) (wide ports only)
    rd_hit : In(1), rd_forward : In(data_bits) (:func:`spad_forwards` chips only)
    """

    def __init__(self, addr_bits: int | None = None, data_bits: int = isa.WORD_BITS, words: int = 1, *,
                 config: Config):
        if addr_bits is None:
            addr_bits = spad_addr_bits(config)
        self.forward = words == 1 and spad_forwards(config)
        super().__init__("a scratchpad port", addr_bits, data_bits, words, lambda word: {
            "rd_en": Out(1),
            "rd_addr": Out(addr_bits),
            "rd_data": In(word),
            "wr_en": Out(1),
            "wr_addr": Out(addr_bits),
            "wr_data": Out(word),
            **({"rd_mask": Out(words), "wr_mask": Out(words)} if words > 1 else {}),
            **({"rd_hit": In(1), "rd_forward": In(word)} if self.forward else {}),
        })


class ExtPort(_MemoryPort):
    """The external-memory master port (docs/chip.md, "External-memory protocol").

    A request (``ext_re`` with ``ext_addr``) in cycle c is answered on
    ``ext_rvalid``/``ext_rdata`` in cycle c + LAT; requests pipeline, one per
    cycle, and answers come back in order.  A write (``ext_we``, ``ext_addr``,
    ``ext_wdata``) takes effect at the end of its cycle.  Directions are from
    the master's side.  The member names carry the ``ext_`` prefix because the
    chip's top-level ports are these same names (the DMA's port is the chip's).

    A port ``words`` wide (``Config.ext_port_words``, a power of two) moves up to
    that many consecutive words per request, from any address: lane i of
    ``ext_rdata``/``ext_wdata`` is the word at ``ext_addr + i``, and only the
    lanes whose bit of ``ext_mask`` is set are asked for (read) or written; the
    other lanes' read data is undefined and the memory never sees their
    addresses, so a request never reaches past the words an instruction names.
    A one-word port (the book's) has no ``ext_mask``: exactly the book's port.

    Parameters
    ----------
    addr_bits : int
        Width of ``ext_addr`` (``isa.EXT_ADDR_BITS``).
    data_bits : int
        Width of a word.
    words : int
        Words per request (1: the book's port).

    Members
    -------
    ext_addr : Out(addr_bits)
    ext_re : Out(1)
    ext_we : Out(1)
    ext_wdata : Out(data_bits * words)
    ext_rdata : In(data_bits * words)
    ext_rvalid : In(1)
    ext_mask : Out(words) (wide ports only)
    """

    def __init__(self, addr_bits: int = isa.EXT_ADDR_BITS, data_bits: int = isa.WORD_BITS, words: int = 1):
        super().__init__("the external-memory port", addr_bits, data_bits, words, lambda word: {
            "ext_addr": Out(addr_bits),
            "ext_re": Out(1),
            "ext_we": Out(1),
            "ext_wdata": Out(word),
            "ext_rdata": In(word),
            "ext_rvalid": In(1),
            **({"ext_mask": Out(words)} if words > 1 else {}),
        })


class UnitSignature(wiring.Signature):
    """The unit contract: how the sequencer runs an execution unit.

    With ``start`` high in cycle t (the sequencer's ISSUE cycle):

    * ``ins`` holds the instruction from t until ``done``;
    * ``busy`` is high in cycles t+1 .. t+W exactly, the W = ``ins.busy()``
      cycles the unit's counter counts (:func:`ga2_hdl.isa.Instruction.busy`);
    * ``done`` is high in cycle t+W only; all the unit's scratchpad writes are
      complete by the end of that cycle;
    * the unit drives ``spad.wr_en`` only in its busy cycles and ``spad.rd_en`` only
      in its busy cycles and its start cycle t (an idle unit keeps both low, whatever
      its address lines hold), which is what lets the scratchpad multiplex its
      masters with a plain AND-OR: in the start cycle no other unit runs on the
      book's sequencer (with overlap, none on the unit's scratchpad partitions), and a
      read changes nothing, so a unit may read its first operand then (the RQ
      engine does: docs/fpga.md).

    ``start`` comes only while the unit is idle and only with an op the unit
    executes (a unit holding several engines routes it by ``ins.op``).

    Parameters
    ----------
    spad : SpadPort
        The scratchpad port's signature (default ``SpadPort(config=config)``).
    config : Config
        The chip (required; ``isa.BOOK`` is the book's).
    **extra : Member
        Members a unit adds to the contract (the DMA's external-memory port).

    Members
    -------
    start : In(1)
    ins : In(INSTRUCTION)
    done : Out(1)
    busy : Out(1)
    spad : Out(SpadPort())
    """

    def __init__(self, spad: SpadPort | None = None, *, config: Config, **extra):
        self.spad = spad if spad is not None else SpadPort(config=config)
        self.extra = dict(extra)
        super().__init__({
            "start": In(1),
            "ins": In(INSTRUCTION),
            "done": Out(1),
            "busy": Out(1),
            "spad": Out(self.spad),
            **extra,
        })

    def __eq__(self, other):
        return type(other) is type(self) and self.spad == other.spad and self.extra == other.extra

    def __hash__(self):
        return hash((type(self), self.spad, tuple(self.extra)))

    def __repr__(self):
        extra = "".join(f", {name}={member!r}" for name, member in self.extra.items())
        return f"UnitSignature({self.spad!r}{extra})"


def contract_ports(signature: wiring.Signature) -> dict:
    """Every port of a signature: path -> (flow, shape) (a user's engine may declare the contract's
    ports in a plain Signature of its own, which compares equal to no UnitSignature)."""
    return {path: (m.flow, m.shape) for path, m in signature.members.flatten() if m.is_port}


def off_contract(name: str, engine_cls) -> str:
    """Why the engine ``engine_cls`` of operation ``name`` is refused: it is not on the contract."""
    return (f"the engine of {name} ({getattr(engine_cls, '__name__', engine_cls)}) is not a "
            f"wiring.Component on the unit contract (ga2_hdl.rtl.layout.UnitSignature)")
