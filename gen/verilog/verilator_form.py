"""Verilator's form of the exported Verilog: the same design, a shorter build.

The Verilator runner (``gen/sim/verilog_sim.py``) compiles :func:`zero_init_loops` of the export;
``ga2 prove --unit forms`` proves the two equivalent (``gen/formal/equiv.py``).
"""
from __future__ import annotations

import re

__all__ = ["zero_init_loops"]

_ZERO_INIT = re.compile(r"^  initial begin\n((?:    (\\\S+ |[A-Za-z_][\w$]*)\[(\d+)\] = \d+'[dh]0+;\n)+)  end\n", re.M)
_ZERO_WORD = re.compile(r"    (\\\S+ |[A-Za-z_][\w$]*)\[(\d+)\] = \d+'[dh]0+;\n")
ZERO_INDEX = "\\verilator$zero{} "


def zero_init_loops(text: str) -> str:
    """Verilator's form of the exported memories' all-zero initialisers: one loop per array.

    Yosys writes the initial contents of every memory word by word (``imem[0] = 128'h0...;``,
    one statement per word: about 5,500 on the book chip, the instruction memory and the
    scratchpad included), and Verilator compiles each into a C++ statement of the
    constructor-time code, about 1.3 of the build's CPU-seconds.  An ``initial`` block that sets
    words 0 .. N-1 of one array to zero, in that order and nothing else, becomes::

        integer \\verilator$zero1 ;
        initial for (\\verilator$zero1 = 0; \\verilator$zero1 < N; \\verilator$zero1 = \\verilator$zero1 + 1)
          imem[\\verilator$zero1 ] = 0;

    The same meaning (the same words set to zero at time 0); any other initialiser (a ROM's
    table, a partial or non-zero one) is left as it is.
    """
    count = 0

    def loop(block: re.Match) -> str:
        nonlocal count
        words = _ZERO_WORD.findall(block.group(1))
        names = {name for name, _ in words}
        if len(names) != 1 or [int(i) for _, i in words] != list(range(len(words))):
            return block.group(0)
        count += 1
        i = ZERO_INDEX.format(count)
        return (f"  integer {i};\n"
                f"  initial for ({i}= 0; {i}< {len(words)}; {i}= {i}+ 1)\n"
                f"    {names.pop()}[{i}] = 0;\n")

    return _ZERO_INIT.sub(loop, text)
