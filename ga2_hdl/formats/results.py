"""What a run of a GA-2 program produces, and how two runs are compared.

Every simulator (golden model, Amaranth, Icarus, Verilator) returns a
:class:`RunResult`; :func:`first_mismatch` names the first difference between
an expected and an observed result exactly: the counter or the address, the
expected value and the value got.

Unknown values are a result, not a zero.  A four-state simulator (Icarus) can end
with x or z in a memory word or a counter; a simulator that watches the chip's
memory ports (Amaranth's, :class:`gen.sim.extmem.AccessMonitor`) can see an access
outside a memory.  A :class:`RunResult` carries both (``unknown``,
``unknown_counters``, ``outside``), its JSON shows an unknown word as ``null`` and
lists it, and :func:`first_mismatch` fails on them with that reason: an unknown
value is printed as :class:`Unknown` (``unknown (xxxxxxxx)``), never as a number.
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
    #: external-memory words the simulator could not give a value (x or z): address -> its text
    #: (``ext`` holds 0 there, a placeholder that is never compared or printed as a value)
    unknown: dict[int, str] = field(default_factory=dict)
    #: counters that were x or z: name -> the simulator's text
    unknown_counters: dict[str, str] = field(default_factory=dict)
    #: accesses outside a memory the simulator saw, each a sentence (the first is named in a mismatch)
    outside: list[str] = field(default_factory=list)

    def __post_init__(self):
        if not isinstance(self.counters, Counters):
            self.counters = Counters(*self.counters)

    def to_json(self) -> dict:
        """The counters and the memory; an unknown word or counter is ``null`` (and listed under
        ``unknown``), an access outside a memory is listed under ``outside``."""
        d = {"counters": [None if n in self.unknown_counters else c for n, c in zip(COUNTER_NAMES, self.counters)],
             "ext": None if self.ext is None else list(self.ext)}
        if d["ext"] is not None:
            for addr in self.unknown:
                d["ext"][addr] = None
        if self.unknown or self.unknown_counters:
            d["unknown"] = {"ext": {str(a): t for a, t in sorted(self.unknown.items())},
                            "counters": dict(self.unknown_counters)}
        if self.outside:
            d["outside"] = list(self.outside)
        if self.error != ErrorCode.OK:
            d["error"] = {"code": int(self.error), "name": self.error.name, "pc": self.error_pc,
                          "message": self.message}
        return d


@dataclass(frozen=True)
class Unknown:
    """A value a simulator could not give (x or z), shown as such: ``unknown (xxxxxxxx)``."""
    text: str = "x"

    def __str__(self) -> str:
        return f"unknown ({self.text})"


@dataclass(frozen=True)
class Mismatch:
    """The first difference between an expected and an observed run."""
    what: str          # "counter", "memory", "status" or "access"
    where: str         # counter name, "ext[ADDR]", "error" or the memory accessed
    expected: int | str
    got: int | str | Unknown
    program: int | None = None   # index in a bundle, when known

    def __str__(self) -> str:
        prog = f"program {self.program}: " if self.program is not None else ""
        if self.what == "memory":
            exp = f"{self.expected:#010x}" if isinstance(self.expected, int) else self.expected
            got = f"{self.got:#010x}" if isinstance(self.got, int) else self.got
            return f"{prog}{self.where}: expected {exp}, got {got}"
        if self.what == "access":
            return f"{prog}access outside a memory: {self.got}"
        return f"{prog}{self.what} {self.where}: expected {self.expected}, got {self.got}"


def first_mismatch(expected: RunResult, got: RunResult, program: int | None = None, *,
                   memory: bool = True) -> Mismatch | None:
    """The first difference: halt status, then counters in order (an unknown counter is a
    difference), then an access outside a memory, then memory by address (an unknown word is a
    difference) (``memory=False``: status and counters only, for a run whose memory was not
    observed)."""
    if (expected.error, expected.error_pc) != (got.error, got.error_pc):
        return Mismatch("status", "error", f"{expected.error.name}@{expected.error_pc}",
                        f"{ErrorCode(got.error).name}@{got.error_pc}", program)
    for name, e, g in zip(COUNTER_NAMES, expected.counters, got.counters):
        if name in got.unknown_counters:
            return Mismatch("counter", name, e, Unknown(got.unknown_counters[name]), program)
        if e != g:
            return Mismatch("counter", name, e, g, program)
    if got.outside and not expected.outside:
        return Mismatch("access", "outside", "none", got.outside[0], program)
    if not memory:
        return None
    if expected.ext is None or got.ext is None:
        raise ValueError(f"{'program ' + str(program) + ': ' if program is not None else ''}the final memory "
                         f"was not observed, so it cannot be compared (status and counters only: memory=False)")
    if len(expected.ext) != len(got.ext):
        return Mismatch("memory", "ext size", len(expected.ext), len(got.ext), program)
    first_unknown = min(got.unknown, default=None)
    if expected.ext == got.ext:        # whole lists in C, or two sparse images by their runs
        found = None
    else:
        found = next((addr for addr, (e, g) in enumerate(zip(expected.ext, got.ext)) if e != g), None)
    if first_unknown is not None and (found is None or first_unknown <= found):
        return Mismatch("memory", f"ext[{first_unknown}]", expected.ext[first_unknown],
                        Unknown(got.unknown[first_unknown]), program)
    if found is not None:
        return Mismatch("memory", f"ext[{found}]", expected.ext[found], got.ext[found], program)
    return None

