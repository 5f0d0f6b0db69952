"""Operations defined outside the package: :class:`Extension`, loading one, and the registry of loaded operations."""
from __future__ import annotations

import importlib
import functools
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from ..config import Config
from .constants import BOOK
from .fields import FIELD, FIELDS, IsaError, OPERAND_FIELDS, Unit, ext_words_problem
from .ops import OpSpec, RESERVED_OP_CODES

# --------------------------------------------------------------------------
# Extensions: operations defined outside the package
# --------------------------------------------------------------------------

#: The name an extension module gives its :class:`Extension`.
EXTENSION_ATTRIBUTE = "EXTENSION"


@dataclass(frozen=True, eq=False)
class Extension:
    """Operations a user's own module adds to the instruction set (``docs/extending.md``).

    A module named in ``Config(extensions=(...))`` defines ``EXTENSION = isa.Extension(...)``;
    every tool that works on that configuration (assembler, golden model, issue check,
    the chip's dispatch, the random programs and their coverage, docs/isa.md, Verilog)
    picks its operations up from there.

    Parameters
    ----------
    ops : callable
        ``ops(config)``: the extension's :class:`OpSpec` objects on the chip ``config``
        (busy-time and legality functions may close over its sizes, as the book's do).
        Their op codes must be free (not the book's, not another extension's, not one of
        :data:`RESERVED_OP_CODES`); their mnemonics, their operands and the unit must be
        the same on every configuration.  They run on the vector unit.
    golden : mapping
        Mnemonic -> ``semantics(machine, ins)``: what the operation does to the golden
        model's state (:class:`ga2_hdl.golden.Machine`: ``machine.spad`` and ``machine.ext``
        are numpy arrays of unsigned 32-bit word values; read every operand before
        writing anything).
    engines : mapping
        Mnemonic -> the RTL engine's class: a ``wiring.Component`` on the unit contract
        (:class:`ga2_hdl.rtl.layout.UnitSignature`), built as ``engine(config=config)``, whose
        busy time is the OpSpec's.
    """
    ops: Callable[[Config], Sequence[OpSpec]]
    golden: Mapping[str, Callable] = field(default_factory=dict)
    engines: Mapping[str, Callable] = field(default_factory=dict)
    #: the module it came from (set when it is loaded)
    module: str = ""


#: op code -> (module, OpSpec on the book's sizes) of every extension operation this process
#: has loaded: what lets an :class:`Instruction` name the operands of an extension's operation
_LOADED_OPS: dict[int, tuple[str, OpSpec]] = {}

#: attributes an operand name would hide (Instruction's own fields and methods)
_RESERVED_NAMES = frozenset(f.name for f in FIELDS) | {"op", "spec", "mnemonic", "fields", "operands",
                                                        "encode", "decode", "busy", "cycles"}


def _layout(spec: OpSpec) -> tuple:
    """What must not change between configurations: code, mnemonic, unit, operand bits."""
    return (spec.code, spec.mnemonic, spec.unit,
            tuple((o.name, o.field, o.lsb, o.bits) for o in spec.operands))


def _extension_ops(ext: Extension, config: Config) -> tuple[OpSpec, ...]:
    """``ext.ops(config)``, checked on its own terms (clashes are the instruction set's to find)."""
    where = f"extension {ext.module}"
    try:
        ops = tuple(ext.ops(config))
    except IsaError:
        raise
    except Exception as e:
        raise IsaError(f"{where}: ops(config) failed on configuration {config.name!r}: "
                       f"{type(e).__name__}: {e}") from None
    if not ops:
        raise IsaError(f"{where}: ops(config) defines no operation")
    top = FIELD["op"].mask
    for spec in ops:
        if not isinstance(spec, OpSpec):
            raise IsaError(f"{where}: ops(config) must give OpSpec objects, not {type(spec).__name__}")
        what = f"{where}: {spec.mnemonic}"
        if not (isinstance(spec.code, int) and 0 <= spec.code <= top):
            raise IsaError(f"{what}: op code {spec.code!r} is not a {FIELD['op'].width}-bit value (0..{top})")
        if spec.code in RESERVED_OP_CODES:
            raise IsaError(f"{what}: op code {spec.code} is reserved (no configuration may define "
                           f"{', '.join(map(str, RESERVED_OP_CODES))}: it is the undefined op of the tests)")
        if not (isinstance(spec.mnemonic, str) and spec.mnemonic.isidentifier()
                and spec.mnemonic == spec.mnemonic.upper()):
            raise IsaError(f"{where}: mnemonic {spec.mnemonic!r} must be an upper-case identifier")
        if spec.unit is not Unit.VECTOR:
            raise IsaError(f"{what}: runs on the {spec.unit.value} unit; an extension's operations run on "
                           f"the vector unit (the unit that holds one engine per operation)")
        names = [o.name for o in spec.operands]
        for o in spec.operands:
            if o.field not in FIELD or o.field == "op":
                raise IsaError(f"{what}: operand {o.name} names no operand field ({', '.join(OPERAND_FIELDS)})")
            if o.lsb < 0 or o.bits < 1 or o.lsb + o.bits > FIELD[o.field].width:
                raise IsaError(f"{what}: operand {o.name} (bits {o.lsb}..{o.lsb + o.bits - 1}) does not fit "
                               f"field {o.field} of {FIELD[o.field].width} bits")
            if o.name in _RESERVED_NAMES or not o.name.isidentifier():
                raise IsaError(f"{what}: an operand cannot be called {o.name!r} (an Instruction attribute)")
        if len(set(names)) != len(names):
            raise IsaError(f"{what}: two operands share a name")
        taken = [(p.name, q.name) for i, p in enumerate(spec.operands) for q in spec.operands[i + 1:]
                 if p.field == q.field and p.lsb < q.lsb + q.bits and q.lsb < p.lsb + p.bits]
        if taken:
            raise IsaError(f"{what}: operands {taken[0][0]} and {taken[0][1]} share bits of field "
                           f"{spec.operand(taken[0][0]).field}")
    mnemonics = {spec.mnemonic for spec in ops}
    for kind, table in (("golden", ext.golden), ("engines", ext.engines)):
        unknown = sorted(set(table) - mnemonics)
        if unknown:
            raise IsaError(f"{where}: {kind} names {', '.join(unknown)}, which ops(config) does not define "
                           f"(it defines {', '.join(sorted(mnemonics))})")
    return ops


@functools.lru_cache(maxsize=None)
def load_extension(module: str) -> Extension:
    """The :class:`Extension` of an importable module (``EXTENSION = isa.Extension(...)`` in it).

    Its operations on the book's sizes are registered for this process, so that an
    :class:`Instruction` of one of them names its operands (``ins.dst``).  Two loaded
    extensions may not share an op code or a mnemonic.
    """
    try:
        mod = importlib.import_module(module)
    except Exception as e:
        raise IsaError(f"extension {module!r} cannot be imported ({type(e).__name__}: {e}); "
                       f"is its directory on PYTHONPATH?") from None
    ext = getattr(mod, EXTENSION_ATTRIBUTE, None)
    if not isinstance(ext, Extension):
        raise IsaError(f"extension {module!r}: the module defines no {EXTENSION_ATTRIBUTE} = isa.Extension(...)")
    ext = Extension(ext.ops, dict(ext.golden), dict(ext.engines), module)
    ops = _extension_ops(ext, BOOK)
    for spec in ops:
        owner = OP_BY_CODE.get(spec.code) or OP_BY_NAME.get(spec.mnemonic)
        if owner is not None:
            raise IsaError(f"extension {module}: {spec.mnemonic} (op code {spec.code}) clashes with the book's "
                           f"{owner.mnemonic} (op code {owner.code})")
        for code, (other, known) in _LOADED_OPS.items():
            if other != module and (code == spec.code or known.mnemonic == spec.mnemonic):
                raise IsaError(f"extension {module}: {spec.mnemonic} (op code {spec.code}) clashes with "
                               f"{known.mnemonic} (op code {code}) of extension {other}, also loaded")
    for spec in ops:
        _LOADED_OPS[spec.code] = (module, spec)
    return ext


def known_spec(key: int | str) -> OpSpec | None:
    """The operation of op code (or mnemonic) ``key`` among the book's and every loaded
    extension's, on the book's sizes (None if there is none)."""
    if isinstance(key, str):
        spec = OP_BY_NAME.get(key)
        return spec or next((s for _, s in _LOADED_OPS.values() if s.mnemonic == key), None)
    spec = OP_BY_CODE.get(key)
    if spec is None and key in _LOADED_OPS:
        spec = _LOADED_OPS[key][1]
    return spec


def config_problems(config: Config) -> list[str]:
    """What stops ``config`` from fitting the instruction word (empty if it fits)."""
    out = []
    for name, what, fld in (("array", "M and N", "f"), ("max_k", "K", "g")):
        top = FIELD[fld].mask
        if getattr(config, name) > top:
            out.append(f"{name}={getattr(config, name)}: {what} are {FIELD[fld].width}-bit fields (at most {top})")
    spad_top = 1 << FIELD["a"].width
    if config.spad_words > spad_top:
        out.append(f"spad_words={config.spad_words}: scratchpad addresses are {FIELD['a'].width}-bit fields "
                   f"(at most {spad_top} words)")
    problem = ext_words_problem(config.ext_words)
    if problem:
        out.append(f"ext_words={config.ext_words}: {problem}")
    return out



OP_BY_CODE: dict[int, OpSpec] = {}       # the book's operations and the loaded extensions' (filled by iset)
OP_BY_NAME: dict[str, OpSpec] = {}
