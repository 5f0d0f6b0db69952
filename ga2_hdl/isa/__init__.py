"""The GA-2 instruction set, defined once.

Everything that knows about GA-2 instructions takes it from here: the golden
model, the assembler and disassembler, the Amaranth decoder, the compiler and
the generated documentation.  This module is plain data and integer arithmetic:
it imports nothing of the project's but the configuration (:mod:`ga2_hdl.config`,
which sits below it) and no Amaranth, so anyone may read it.

What lives here
  * the instruction set of a configuration (:func:`instruction_set`): the
    operations, their legality and busy times for that chip's sizes, the
    book's eight and those of the configuration's extensions (:class:`Extension`,
    defined in a user's own module: ``docs/extending.md``); the module-level
    names (``SPAD_WORDS``, ``OPS``, :func:`check` ...) are the book's chip,
    :data:`BOOK`;
  * the constants no configuration changes (word width, instruction word);
  * the 128-bit instruction word: its fields and their bit positions;
  * one :class:`OpSpec` per operation: op code, assembly operands (and which
    bits of which field each one occupies), the unit that executes it, the
    busy-time formula, and the legality rules whose failure halts the machine;
  * the arithmetic primitives the units implement bit for bit (requantizer,
    exp table, 40-bit divider, fixed-point softmax), which the golden model
    and the RTL unit tests share.

Adding an instruction: an extension, in a module of your own (``docs/extending.md``).

The modules, bottom to top (each imports only those above it; this package re-exports every
public name, so ``isa.NAME`` is the one way to read any of them):

* :mod:`~ga2_hdl.isa.constants`: widths, fixed-point formats, the exp table, the book's sizes;
* :mod:`~ga2_hdl.isa.fields`: the instruction word's fields, units, counters, error codes;
* :mod:`~ga2_hdl.isa.arith`: the arithmetic primitives;
* :mod:`~ga2_hdl.isa.ops`: operands, regions and the book's operations (:class:`OpSpec`);
* :mod:`~ga2_hdl.isa.extensions`: operations from a module of your own (:class:`Extension`);
* :mod:`~ga2_hdl.isa.instruction`: one decoded instruction (:class:`Instruction`, :func:`make`);
* :mod:`~ga2_hdl.isa.iset`: a configuration's instruction set, the legality check, the timing
  of whole programs; the book's set is built here, when the package is imported.
"""
from __future__ import annotations

# The names of every module, re-exported (a star import takes each module's public names).
from .constants import *     # noqa: F401,F403
from .fields import *        # noqa: F401,F403
from .arith import *         # noqa: F401,F403
from .ops import *           # noqa: F401,F403
from .extensions import *    # noqa: F401,F403
from .instruction import *   # noqa: F401,F403
from .iset import *          # noqa: F401,F403
