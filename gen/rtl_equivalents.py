"""Arguments that an RTL mutant is equivalent: the change cannot alter what the chip does.

`ga2 mutate rtl` reports a mutant ``equivalent`` only when every check passes
*and* an argument for it is written here; it never assumes one.  Each entry
is keyed by content, not by a line number, so it survives edits around it:
the file, the enclosing function, the (stripped) source line the change is
on, and the change itself (``old -> new``, as the report prints it).  An entry
that no longer matches any mutant is reported by the tests (the argument went
stale and must be rewritten for the new code).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Equivalence:
    file: str          #: "ga2_hdl/<unit>.py"
    function: str      #: the enclosing function, Class.method
    line: str          #: the stripped source line the change starts on
    change: str        #: "old -> new", exactly as the report prints it
    argument: str      #: why no program can tell the difference


_DMA_COUNTER = ("the DMA's word counters only count to len, and the issue check refuses an LD or ST whose "
                "scratchpad region passes the end of the 4096-word scratchpad (SPAD_RANGE), so len <= 4096 "
                "needs 13 bits; the len field is 16 bits wide, so a 15-bit counter never wraps and every "
                "comparison with len (zero-extended) gives the same answer")

EQUIVALENT: tuple[Equivalence, ...] = (
    Equivalence("ga2_hdl/dma.py", "DMA.elaborate", "requested = Signal(len(length))",
                "len(length) -> len(length) - 1", _DMA_COUNTER),
    Equivalence("ga2_hdl/dma.py", "DMA.elaborate", "completed = Signal(len(length))",
                "len(length) -> len(length) - 1", _DMA_COUNTER),
    Equivalence("ga2_hdl/softmax.py", "SoftmaxUnit.elaborate.next_pass",
                "m.d.sync += [rd_index.eq(0), wr_index.eq(0), v2.eq(0), v3.eq(0), last2.eq(0), last3.eq(0)]",
                "last2.eq(0), -> ",
                "last2 is read only under v2 (EXP's write, `with m.If(v2)` then `m.If(last2)`) and copied into "
                "last3, read only under v3 (SCALE).  Without the clear, the stale last2 = 1 left by MAX's last "
                "element lives one cycle with v2 = 0 (still cleared), and its copy in last3 one cycle more "
                "with v3 = 0; by SCALE both have been overwritten by the pipeline (last2 <= last1, last3 <= "
                "last2 every cycle) and cleared again by next_pass at the end of EXP, so no write, no done "
                "and no state change differs"),
)


def key_of(mutant) -> tuple[str, str, str, str]:
    function, _, line = mutant.context.partition(": ")
    return (mutant.file, function, line, mutant.change)


_BY_KEY = {(e.file, e.function, e.line, e.change): e for e in EQUIVALENT}


def argument_for(mutant) -> str:
    """The written argument for ``mutant`` ("" when there is none)."""
    entry = _BY_KEY.get(key_of(mutant))
    return entry.argument if entry else ""
