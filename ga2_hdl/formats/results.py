"""What a run of a GA-2 program produces, and how two runs are compared.

Every simulator (golden model, Amaranth, Icarus, Verilator) returns a
:class:`RunResult`; :func:`first_mismatch` names the first difference between
an expected and an observed result exactly: the counter or the address, the
expected value and the value got.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..isa import COUNTER_NAMES, Counters, ErrorCode


@dataclass
class RunResult:
    """The observable end state of one program.

    ``counters`` are the five counters (:class:`ga2_hdl.isa.Counters`; any
    sequence of five is converted); ``ext`` is the whole final external memory
    as unsigned 32-bit words, or None when the simulator did not observe it (a
    Verilog bundle replay reads the memory back only for a mismatching program;
    for the others its testbench compared it word by word itself): an unobserved
    memory is never filled in from the expectation, and :func:`first_mismatch`
    refuses to compare it; ``error`` is the halt status (``ErrorCode.OK`` for a
    normal HALT) and ``error_pc`` the address of the faulting instruction (or of
    the HALT).
    """
    counters: Counters
    ext: list[int] | None
    error: ErrorCode = ErrorCode.OK
    error_pc: int = 0
    message: str = ""
    spad: list[int] | None = field(default=None, repr=False)  # only simulators that can see it

    def __post_init__(self):
        if not isinstance(self.counters, Counters):
            self.counters = Counters(*self.counters)

    def to_json(self) -> dict:
        d = {"counters": list(self.counters), "ext": None if self.ext is None else list(self.ext)}
        if self.error != ErrorCode.OK:
            d["error"] = {"code": int(self.error), "name": self.error.name, "pc": self.error_pc,
                          "message": self.message}
        return d


@dataclass(frozen=True)
class Mismatch:
    """The first difference between an expected and an observed run."""
    what: str          # "counter", "memory" or "status"
    where: str         # counter name, "ext[ADDR]" or "error"
    expected: int | str
    got: int | str
    program: int | None = None   # index in a bundle, when known

    def __str__(self) -> str:
        prog = f"program {self.program}: " if self.program is not None else ""
        if self.what == "memory":
            exp = f"{self.expected:#010x}" if isinstance(self.expected, int) else self.expected
            got = f"{self.got:#010x}" if isinstance(self.got, int) else self.got
            return f"{prog}{self.where}: expected {exp}, got {got}"
        return f"{prog}{self.what} {self.where}: expected {self.expected}, got {self.got}"


def first_mismatch(expected: RunResult, got: RunResult, program: int | None = None, *,
                   memory: bool = True) -> Mismatch | None:
    """The first difference: halt status, then counters in order, then memory by address
    (``memory=False``: status and counters only, for a run whose memory was not observed)."""
    if (expected.error, expected.error_pc) != (got.error, got.error_pc):
        return Mismatch("status", "error", f"{expected.error.name}@{expected.error_pc}",
                        f"{ErrorCode(got.error).name}@{got.error_pc}", program)
    for name, e, g in zip(COUNTER_NAMES, expected.counters, got.counters):
        if e != g:
            return Mismatch("counter", name, e, g, program)
    if not memory:
        return None
    if expected.ext is None or got.ext is None:
        raise ValueError(f"{'program ' + str(program) + ': ' if program is not None else ''}the final memory "
                         f"was not observed, so it cannot be compared (status and counters only: memory=False)")
    if len(expected.ext) != len(got.ext):
        return Mismatch("memory", "ext size", len(expected.ext), len(got.ext), program)
    if expected.ext == got.ext:        # whole lists in C, or two sparse images by their runs
        return None
    for addr, (e, g) in enumerate(zip(expected.ext, got.ext)):
        if e != g:
            return Mismatch("memory", f"ext[{addr}]", e, g, program)
    return None

