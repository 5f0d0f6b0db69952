"""One decoded instruction (:class:`Instruction`): its fields, its operands by name, encoding and decoding."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from .constants import FETCH_ISSUE_CYCLES, INSTR_BITS
from .fields import FIELDS, IsaError, OPERAND_FIELDS
from .ops import OpSpec
from .extensions import OP_BY_NAME, known_spec

# --------------------------------------------------------------------------
# Instructions
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Instruction:
    """One decoded instruction: its op code and the raw value of every field.

    Operand names of the operation are attributes: ``ins.dst``, ``ins.len``,
    ``ins.M`` ... (see :data:`OPS`; an extension's operation once it is loaded,
    :func:`known_spec`).  Build one with :func:`make`, or with
    :meth:`decode` from a 128-bit word.
    """
    op: int
    a: int = 0
    b: int = 0
    c: int = 0
    d: int = 0
    e: int = 0
    f: int = 0
    g: int = 0
    h: int = 0
    fl: int = 0
    x: int = 0

    def __post_init__(self):
        for f in FIELDS:
            v = getattr(self, f.name)
            if not isinstance(v, int) or not 0 <= v <= f.mask:
                raise IsaError(f"field {f.name}={v!r} does not fit in {f.width} bits")

    # -- views
    @property
    def spec(self) -> OpSpec:
        """The operation (the book's, or a loaded extension's on the book's sizes)."""
        spec = known_spec(self.op)
        if spec is None:
            raise IsaError(f"undefined op code {self.op}")
        return spec

    @property
    def mnemonic(self) -> str:
        return self.spec.mnemonic

    @property
    def fields(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in OPERAND_FIELDS}

    def __getattr__(self, name):
        # Only called for names that are not dataclass fields: operand names.
        spec = known_spec(object.__getattribute__(self, "op"))
        where = None if spec is None else spec.operand_bits.get(name)
        if where is None:
            raise AttributeError(name)
        field_name, lsb, mask = where
        return (object.__getattribute__(self, field_name) >> lsb) & mask

    def operands(self) -> dict[str, int]:
        return {o.name: o.get(self.fields) for o in self.spec.operands}

    # -- encoding
    def encode(self) -> int:
        word = 0
        for f in FIELDS:
            word |= getattr(self, f.name) << f.lsb
        return word

    @classmethod
    def decode(cls, word: int) -> "Instruction":
        if not 0 <= word < (1 << INSTR_BITS):
            raise IsaError(f"instruction word {word:#x} is not a 128-bit value")
        return cls(**{f.name: (word >> f.lsb) & f.mask for f in FIELDS})

    # -- timing
    def busy(self) -> int:
        """The executing unit's busy time in cycles (0 for HALT)."""
        return self.spec.busy(self)

    def cycles(self) -> int:
        """Fetch + issue + busy time."""
        return FETCH_ISSUE_CYCLES + self.busy()

    def __str__(self) -> str:
        from_op = known_spec(self.op)
        if from_op is None:
            return f"<undefined op {self.op}>"
        return " ".join([from_op.mnemonic] + [f"{k}={v}" for k, v in self.operands().items()])


def make(mnemonic: str, **operands: int) -> Instruction:
    """Build an instruction from its operation's own operand names.

    ``make("MM", dst=0, A=100, B=200, M=4, K=16, N=4)``; missing operands take
    the operation's defaults (``lda=K``, ``ldb=N``, ``ldc=N``, flags 0), or 0.
    """
    try:
        spec = OP_BY_NAME[mnemonic.upper()]
    except KeyError:
        raise IsaError(f"unknown operation {mnemonic!r} (the book's operations: {', '.join(OP_BY_NAME)}; "
                       f"an extension's: instruction_set(config).make)") from None
    return _make(spec, operands)


def _make(spec: OpSpec, operands: Mapping[str, int]) -> Instruction:
    names = {o.name for o in spec.operands}
    unknown = set(operands) - names
    if unknown:
        raise IsaError(f"{spec.mnemonic} has no operand {', '.join(sorted(unknown))} "
                       f"(operands: {', '.join(o.name for o in spec.operands) or 'none'})")
    values = dict(operands)
    for name, default in spec.defaults.items():
        if name not in values:
            values[name] = values[default] if isinstance(default, str) else default
    fields = {f: 0 for f in OPERAND_FIELDS}
    for o in spec.operands:
        v = values.get(o.name, 0)
        if not isinstance(v, int) or not 0 <= v < (1 << o.bits):
            raise IsaError(f"{spec.mnemonic} operand {o.name}={v!r} does not fit in {o.bits} bits")
        fields[o.field] |= v << o.lsb
    return Instruction(spec.code, **fields)


HALT = Instruction(0)
