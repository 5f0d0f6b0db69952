"""Where two simulators first disagree: the same program's waveform in both, compared cycle by cycle.

``ga2 diff-sims`` runs one program in two simulators through the simulator
interface (``run_program(..., vcd=PATH)``), reads both VCD files and names the
first clock cycle at which a signal of the chip has different values, with the
signal's hierarchical name in the Amaranth design (``matrix.array.acc``) and
both values.

Matching the signals.  Each simulator writes the chip's hierarchy under its
own top scopes (Amaranth: ``bench.top.chip``, Icarus: ``ga2_tb_icarus.tb.dut``,
Verilator: ``TOP.ga2_tb.dut``, CXXRTL: ``dut``); the chip's scope is found as
the deepest one that holds the chip's ports (:data:`CHIP_PORTS`; Verilator
also dumps the testbench, whose nets have the ports' names).  Below it the scopes
are the Amaranth submodule names in every simulator (Yosys keeps them; CXXRTL
writes its ``hdlname``).  A signal's name is cleaned of what a back end adds:
a Verilog escape (``\\``), a bit range (``[15:0]``) and the ``$N`` suffix that
Amaranth gives a name used twice in one module (the number depends on the
whole design, so it differs between the chip exported alone and the chip in
Amaranth's simulation).  A cleaned name that stands for two different signals
in one module is ambiguous and not compared, nor are names only one simulator
has (Amaranth's generated ``$N`` intermediates, memories, signals a back end
optimised away).  The report says how many signals were compared.

Aligning the cycles.  The waveforms start at different times (Amaranth's
holds the whole run, the testbenches' only the program), so cycles are counted
from the program's start: cycle 0 is the clock cycle in which the chip's
``start`` input is high, i.e. the values just before the rising edge that
samples it (the edge before ``running`` rises); cycle n is n rising edges later.  At every cycle each signal's
value is the one it had just before that edge (its settled value).
"""
from __future__ import annotations

import bisect
import os
import re
import tempfile
from dataclasses import dataclass, field
from typing import Sequence

from ga2_hdl.config import Config
from ga2_hdl.formats.results import first_mismatch

from .simulator import RTL_SIMULATORS, SimulatorError, get_simulator

#: the chip's ports by which its scope is recognised in any simulator's waveform
CHIP_PORTS = ("start", "running", "halted", "cnt_total", "imem_we")
_SUFFIX = re.compile(r"\$\d+(?=$|[.\[])")


def clean_name(ref: str) -> str:
    """A VCD reference as the Amaranth name: no escape, no bit range, no ``$N`` suffixes.

    ``\\ins$62.op [3:0]`` -> ``ins.op``; an element index stays (``acc[3]``): the bit range
    is the separate token after the name.
    """
    name = ref.strip().split(" ")[0]
    if name.startswith("\\"):
        name = name[1:]
    return _SUFFIX.sub("", name)


@dataclass
class Waveform:
    """The chip's signals from one VCD file: value changes per cleaned hierarchical name."""
    path: str
    chip_scope: str
    widths: dict[str, int]
    changes: dict[str, list[tuple[int, str]]]      #: name -> [(time, value)] in time order
    ambiguous: set[str] = field(default_factory=set)

    def rising_edges(self) -> list[int]:
        """Times of the rising edges of the chip's clock."""
        return [t for (t, v), (_, before) in zip(self.changes["clk"][1:], self.changes["clk"])
                if v == "1" and before != "1"]

    def value_before(self, name: str, time: int) -> str | None:
        """The signal's value just before ``time`` (None: not yet dumped)."""
        ch = self.changes[name]
        i = bisect.bisect_left(ch, (time, "")) - 1
        return ch[i][1] if i >= 0 else None


def _value(text: str, width: int) -> str:
    """A VCD value as a canonical string: hex when defined, else the binary digits as written."""
    text = text.lower()
    if all(c in "01" for c in text):
        return format(int(text, 2), "x")
    return text.rjust(width, text[0] if text[0] in "xz" else "0")


def read_vcd(path: str) -> Waveform:
    """The chip's signals from ``path`` (any of our simulators' VCD files)."""
    with open(path, "rb") as f:
        data = f.read().decode("ascii", "replace")
    end = data.find("$enddefinitions")
    if end < 0:
        raise SimulatorError(f"{path}: not a VCD file (no $enddefinitions)")
    scope: list[str] = []
    variables: list[tuple[str, str, str, int]] = []      # (scope path, cleaned name, id, width)
    for token in re.finditer(r"\$(scope|upscope|var)\b(.*?)\$end", data[:end], re.S):
        kind, body = token.group(1), token.group(2).split()
        if kind == "scope":
            scope.append(body[1] if len(body) > 1 else "")
        elif kind == "upscope":
            scope.pop()
        elif body[0] in ("wire", "reg", "integer", "logic"):
            variables.append((".".join(scope), clean_name(" ".join(body[3:])), body[2], int(body[1])))
    names_by_scope: dict[str, set[str]] = {}
    for sc, name, _, _ in variables:
        names_by_scope.setdefault(sc, set()).add(name)
    chips = [sc for sc, names in names_by_scope.items() if set(CHIP_PORTS) <= names]
    # a testbench that names its nets after the chip's ports (Verilator dumps it too) holds
    # the chip: the chip is the deepest such scope
    deepest = max((sc.count(".") for sc in chips), default=0)
    chips = [sc for sc in chips if sc.count(".") == deepest]
    if len(chips) != 1:
        raise SimulatorError(f"{path}: cannot find the chip in the waveform ({len(chips)} scopes hold its ports "
                             f"{', '.join(CHIP_PORTS)})")
    chip = chips[0]
    ids: dict[str, list[str]] = {}
    widths: dict[str, int] = {}
    ids_of_name: dict[str, set[str]] = {}
    for sc, name, ident, width in variables:
        if sc != chip and not sc.startswith(chip + "."):
            continue
        full = ".".join(filter(None, [sc[len(chip) + 1:], name]))
        ids.setdefault(ident, []).append(full)
        ids_of_name.setdefault(full, set()).add(ident)
        widths[full] = width
    ambiguous = {n for n, i in ids_of_name.items() if len(i) > 1}
    changes: dict[str, list[tuple[int, str]]] = {n: [] for n in ids_of_name if n not in ambiguous}
    wanted = {i: [n for n in names if n not in ambiguous] for i, names in ids.items()}
    time = 0
    for line in data[end:].splitlines()[1:]:
        line = line.strip()
        if not line or line.startswith("$"):
            continue
        c = line[0]
        if c == "#":
            time = int(line[1:])
            continue
        if c in "bBrR":
            value, _, ident = line[1:].partition(" ")
            ident = ident.strip()
        else:
            value, ident = c, line[1:].strip()
        for name in wanted.get(ident, ()):
            v = _value(value, widths[name])
            ch = changes[name]
            if ch and ch[-1][0] == time:
                ch[-1] = (time, v)
            elif not ch or ch[-1][1] != v:
                ch.append((time, v))
    if "clk" not in changes or "running" not in changes:
        raise SimulatorError(f"{path}: the chip's clk and running are not in the waveform")
    return Waveform(path, chip, widths, changes, ambiguous)


@dataclass
class Difference:
    cycle: int
    signal: str
    values: tuple[str, str]
    time: tuple[int, int]          #: the edge's time in each waveform

    def line(self, names: Sequence[str]) -> str:
        a, b = names
        return (f"cycle {self.cycle}: {self.signal} differs: {a} {_show(self.values[0])}, "
                f"{b} {_show(self.values[1])}")


def _show(value: str | None) -> str:
    if value is None:
        return "(not dumped)"
    return value if any(c in "xz" for c in value) else "0x" + value


@dataclass
class Comparison:
    compared: list[str]             #: signals compared (in both waveforms, unambiguous, same width)
    cycles: tuple[int, int]         #: cycles from the start in each waveform
    difference: Difference | None
    #: (signal, cycle) pairs not counted: x or z on one side where the chip does not read it (see
    #: :func:`compare`: a register not written since reset, a port whose enable is low)
    undefined: int = 0
    #: the first of those, when there is one (``--strict-x`` makes it the difference)
    first_undefined: Difference | None = None


def program_edges(w: Waveform) -> list[int]:
    """The rising edges from the one that samples ``start`` (cycle 0) to the end of the waveform.

    That edge is found as the one before ``running`` is first high: ``start`` itself is a
    name Amaranth's simulator gives to several signals of the chip's module (see the module's
    docstring), ``running`` to one.
    """
    edges = w.rising_edges()
    for i, t in enumerate(edges):
        if w.value_before("running", t) == "1":
            if i == 0:
                raise SimulatorError(f"{w.path}: the chip is already running where the waveform begins")
            return edges[i - 1:]
    raise SimulatorError(f"{w.path}: the chip never runs in the waveform")


def _undefined(value: str | None) -> bool:
    return value is None or any(c in "xz" for c in value)


#: a data port and the enable that says it is read in a cycle: (data suffix, enable suffix, the
#: enable's delay in cycles): a synchronous read's data is read the cycle after its enable
DATA_ENABLES = (("rd__data", "rd__en", 1), ("rd_data", "rd_en", 1), ("wr__data", "wr__en", 0),
                ("wr_data", "wr_en", 0), ("ext_wdata", "ext_we", 0), ("ext_rdata", "ext_rvalid", 0),
                ("imem_wdata", "imem_we", 0))


def _enable_of(name: str, names) -> tuple[str, int] | None:
    """The enable (and its delay) of a data port ``name`` when the waveform has it, else None."""
    for data, enable, delay in DATA_ENABLES:
        if name.endswith(data) and name[:-len(data)] + enable in names:
            return name[:-len(data)] + enable, delay
    return None


def compare(a: Waveform, b: Waveform, ignore: Sequence[str] = (), strict_x: bool = False) -> Comparison:
    """The first cycle (then the first signal in name order) at which ``a`` and ``b`` differ.

    Two defined values that differ are a difference.  An x or z on one side (Icarus' four-state
    logic) is a difference where the chip reads it: on a data port in a cycle its enable says it
    is read (:data:`DATA_ENABLES`: a memory's read data the cycle after its read enable, write
    data with its write enable, the external port's data with its valid or write enable), so
    that the read of a word outside a memory is found where the x enters the chip.  Any other x
    (a register not written since reset, a port nobody reads in that cycle, a combinational value
    computed from one) is not a difference unless ``strict_x``: such cases are counted in
    ``undefined``, the first kept in ``first_undefined``.
    """
    ea, eb = program_edges(a), program_edges(b)
    n = min(len(ea), len(eb))
    patterns = [re.compile(p) for p in ignore]
    names = sorted(s for s in set(a.changes) & set(b.changes)
                   if a.widths[s] == b.widths[s] and s != "clk" and not any(p.search(s) for p in patterns))
    best: Difference | None = None
    first_undefined: Difference | None = None
    undefined = 0

    def read(w: Waveform, edges: list[int], name: str, k: int) -> bool:
        enable = _enable_of(name, w.changes)
        if enable is None or k - enable[1] < 0:
            return False
        return w.value_before(enable[0], edges[k - enable[1]]) == "1"

    for s in names:
        # the first edge at which the values differ must be an edge at or just after a change
        # in one of them, so only those edges are looked at
        candidates = {0}
        for w, edges in ((a, ea), (b, eb)):
            for t, _ in w.changes[s]:
                k = bisect.bisect_right(edges, t)
                if k < n:
                    candidates.add(k)
        for k in sorted(candidates):
            if best is not None and k > best.cycle:
                break
            va, vb = a.value_before(s, ea[k]), b.value_before(s, eb[k])
            if va == vb:
                continue
            found = Difference(k, s, (va, vb), (ea[k], eb[k]))
            unknown = [_undefined(va), _undefined(vb)]
            if any(unknown) and not strict_x and not any(
                    u and read(w, edges, s, k) for u, w, edges in zip(unknown, (a, b), (ea, eb))):
                undefined += 1
                if first_undefined is None or (k, s) < (first_undefined.cycle, first_undefined.signal):
                    first_undefined = found
                continue
            if best is None or k < best.cycle:
                best = found
            break
    return Comparison(names, (len(ea), len(eb)), best, undefined, first_undefined)


@dataclass
class DiffReport:
    simulators: tuple[str, str]
    comparison: Comparison
    vcds: tuple[str, str]
    results: tuple                     #: each simulator's RunResult

    @property
    def end_difference(self):
        """The first difference of the two end states (status, counters, memory; unknown values
        included), or None."""
        return first_mismatch(self.results[0], self.results[1])

    @property
    def differs(self) -> bool:
        """The two simulators differ: in a signal, or in the end state."""
        return self.comparison.difference is not None or self.end_difference is not None

    def lines(self) -> list[str]:
        a, b = self.simulators
        c = self.comparison
        out = [f"compared {len(c.compared)} signals of the chip over {min(c.cycles)} cycles from the start "
               f"({a}: {c.cycles[0]} cycles in its waveform, {b}: {c.cycles[1]})"]
        if c.undefined:
            out.append(f"{c.undefined} times a signal was x or z in one waveform where the chip does not read it (not "
                       f"written since reset, or a port whose enable is low): not counted as differences "
                       f"(--strict-x counts them; the first: {c.first_undefined.line(self.simulators)})")
        if c.difference is None:
            out.append(f"no difference in any compared signal: each has the same value at every cycle in {a} and {b}")
        else:
            out.append(c.difference.line(self.simulators))
        end = self.end_difference
        out.append(f"end state: the same in {a} and {b} (status, counters, memory)" if end is None else
                   f"end state differs: {end} (expected: {a}, got: {b})")
        if end is not None and c.difference is None:
            out.append("the waveforms show no difference in the signals compared, but the end states differ: "
                       "the cause is in a signal not compared (see --ignore, and the names only one simulator has)")
        for name, result in zip(self.simulators, self.results):
            for line in getattr(result, "outside", []):
                out.append(f"{name}: access outside a memory: {line}")
        return out


def diff_sims(program, ext: Sequence[int], simulators: Sequence[str], *, ext_words: int | None = None,
              keep: str | None = None, ignore: Sequence[str] = (), strict_x: bool = False,
              sim_objects: dict | None = None, config: Config) -> DiffReport:
    """Run ``program`` in two simulators of the chip ``config`` with waveforms
    and compare them cycle by cycle.

    ``keep``: a directory where the two VCD files stay (NAME.vcd); otherwise they are deleted.
    ``sim_objects``: simulators to use instead of ``get_simulator(name)`` (tests plant a difference).
    """
    if len(simulators) != 2 or simulators[0] == simulators[1]:
        raise SimulatorError(f"diff-sims compares two different simulators, not {', '.join(simulators) or 'none'}")
    if "golden" in simulators:
        raise SimulatorError("the golden model has no signals to compare: name two of "
                             + ", ".join(RTL_SIMULATORS))
    sims = [(sim_objects or {}).get(n) or get_simulator(n, config=config) for n in simulators]
    with tempfile.TemporaryDirectory(prefix="ga2_diff_") as tmp:
        directory = keep or tmp
        os.makedirs(directory, exist_ok=True)
        vcds = tuple(os.path.join(directory, f"{n}.vcd") for n in simulators)
        results = tuple(sim.run_program(program, ext, ext_words=ext_words, vcd=path)
                        for sim, path in zip(sims, vcds))
        waves = [read_vcd(p) for p in vcds]
        comparison = compare(*waves, ignore=ignore, strict_x=strict_x)
    return DiffReport(tuple(simulators), comparison, vcds if keep else ("", ""), results)
