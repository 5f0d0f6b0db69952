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


EQUIVALENT: tuple[Equivalence, ...] = (
)


def key_of(mutant) -> tuple[str, str, str, str]:
    function, _, line = mutant.context.partition(": ")
    return (mutant.file, function, line, mutant.change)


_BY_KEY = {(e.file, e.function, e.line, e.change): e for e in EQUIVALENT}


def argument_for(mutant) -> str:
    """The written argument for ``mutant`` ("" when there is none)."""
    entry = _BY_KEY.get(key_of(mutant))
    return entry.argument if entry else ""
