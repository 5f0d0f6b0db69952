"""Functional coverage of GA-2 programs, with bins derived from the ISA (``ga2_hdl/isa/__init__.py``).

Nothing here names an operation, an operand or an error code: every bin comes
from the instruction set of the campaign's configuration (:func:`isa.instruction_set`:
the operations' operands, regions and legality rules, probed through its
``check``; an extension's operations included), :class:`isa.ErrorCode` and the
memory sizes.  The
bins of a :class:`CoverageModel` are

* ``operand``: for every operation and every operand, the operand at the
  smallest and the largest value a legal instruction can give it (probed with
  :func:`isa.check` for the campaign's external-memory size), and a value
  strictly between them (an operand with only two legal values has no middle);
* ``error``: every :class:`isa.ErrorCode` the program ends with (``OK`` is a
  normal HALT);
* ``pair``: every pair of consecutive operations in the executed stream
  (``X>HALT`` is the last instruction before a normal halt; a faulting
  instruction does not execute, so it ends the stream without a pair);
* ``region``: every memory region of every operation starting at word 0 of its
  memory (``low``) or ending at its last word (``high``), for the scratchpad
  and for external memory.

A bin is *unreachable by construction* when no program the campaign may make
can hit it, with the reason: an instruction that alone needs more cycles than
the per-program budget, a pair that would follow a HALT, an error code no
instruction raises at issue.  Counts are plain ``{bin: count}`` dictionaries,
so pieces of a campaign add up with :func:`merge`.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from ga2_hdl import isa
from ga2_hdl.config import Config
from ga2_hdl.isa import ErrorCode, Instruction, OpSpec

HALT_CODE = isa.HALT.op
LEVELS = ("min", "mid", "max")


# ----------------------------------------------------------------------------- probing the ISA

def _instruction(spec: OpSpec, values: Mapping[str, int], *, config: Config) -> Instruction:
    """The instruction of ``spec`` with exactly these operand values (no assembly defaults)."""
    return isa.instruction_set(config).make(spec.mnemonic, **{o.name: values[o.name] for o in spec.operands})


def _legal(spec: OpSpec, values: Mapping[str, int], ext_words: int, *, config: Config) -> bool:
    iset = isa.instruction_set(config)
    return iset.check(_instruction(spec, values, config=config), ext_words)[0] == ErrorCode.OK


def legal_base(spec: OpSpec, ext_words: int, *, config: Config) -> dict[str, int]:
    """The smallest legal operand values of ``spec``: each operand at its least legal value,
    the others at 1 (every operation of the ISA is legal with all operands 1)."""
    ones = {o.name: 1 for o in spec.operands}
    if spec.operands and not _legal(spec, ones, ext_words, config=config):
        raise ValueError(f"{spec.mnemonic} with every operand 1 is illegal: the coverage probe needs a new base")
    base = {}
    for o in spec.operands:
        base[o.name] = 0 if _legal(spec, {**ones, o.name: 0}, ext_words, config=config) else 1
    if spec.operands and not _legal(spec, base, ext_words, config=config):
        raise ValueError(f"{spec.mnemonic} at its operands' least values {base} is illegal")
    return base


def operand_range(spec: OpSpec, operand: str, ext_words: int, *, config: Config) -> tuple[int, int]:
    """The least and the largest value of ``operand`` in a legal ``spec`` instruction
    (the other operands at their least values, which leave it the most room)."""
    base = legal_base(spec, ext_words, config=config)
    lo = base[operand]
    top = (1 << spec.operand(operand).bits) - 1
    if _legal(spec, {**base, operand: top}, ext_words, config=config):
        return lo, top
    a, b = lo, top                  # legal at a, illegal at b
    while b - a > 1:
        m = (a + b) // 2
        if _legal(spec, {**base, operand: m}, ext_words, config=config):
            a = m
        else:
            b = m
    return lo, a


def raisable_errors(ext_words: int, *, config: Config) -> set[ErrorCode]:
    """The error codes one instruction can raise at issue, found by probing the instruction
    set's ``check`` with every operand of every operation at its range's edges and just past
    them, and with every undefined op code."""
    iset = isa.instruction_set(config)
    found = {ErrorCode.OK}
    for op in iset.undefined_codes():
        found.add(iset.check(Instruction(op), ext_words)[0])
    for spec in iset.ops:
        if not spec.operands:
            continue
        base = legal_base(spec, ext_words, config=config)
        for o in spec.operands:
            lo, hi = operand_range(spec, o.name, ext_words, config=config)
            top = (1 << o.bits) - 1
            for v in {0, lo, hi, min(hi + 1, top), top}:
                found.add(iset.check(_instruction(spec, {**base, o.name: v}, config=config), ext_words)[0])
        # two regions of one memory, one word apart: the overlap rule
        spad = [o.name for o in spec.operands if o.field in ("a", "b", "c")]
        lengths = {name: 2 for name in spec.lengths}
        for name in spad[1:]:
            found.add(iset.check(_instruction(spec, {**base, **lengths, name: base[name] + 1}, config=config),
                                 ext_words)[0])
    return found


# ----------------------------------------------------------------------------- the model

@dataclass(frozen=True)
class OperandBins:
    op: str
    operand: str
    lo: int
    hi: int

    def level(self, value: int) -> str:
        return "min" if value == self.lo else "max" if value == self.hi else "mid"

    def key(self, level: str) -> str:
        return f"operand {self.op}.{self.operand} {level}"

    @property
    def levels(self) -> tuple[str, ...]:
        return LEVELS if self.hi - self.lo >= 2 else ("min", "max")


@dataclass
class CoverageModel:
    """The bins for a campaign on ``ext_words`` words of external memory with a cycle budget
    of ``max_cycles`` per program (None: no budget), on the chip ``config``."""
    ext_words: int = isa.EXT_WORDS_DEFAULT
    max_cycles: int | None = None
    config: Config = field(kw_only=True)
    operands: list[OperandBins] = field(init=False)
    bins: list[str] = field(init=False)                 #: every bin, in table order
    groups: dict[str, list[str]] = field(init=False)    #: bins per group
    unreachable: dict[str, str] = field(init=False)     #: bin -> why no program can hit it
    regions: dict[str, list[tuple[str, str]]] = field(init=False)   #: op -> [(role, memory)]

    def __post_init__(self):
        self.operands, self.unreachable, self.regions = [], {}, {}
        groups: dict[str, list[str]] = {"operand": [], "error": [], "pair": [], "region": []}
        budget = self.max_cycles
        config = self.config
        iset = self._iset = isa.instruction_set(config)
        for spec in iset.ops:
            if not spec.operands:
                continue
            base = legal_base(spec, self.ext_words, config=config)
            for o in spec.operands:
                lo, hi = operand_range(spec, o.name, self.ext_words, config=config)
                ob = OperandBins(spec.mnemonic, o.name, lo, hi)
                self.operands.append(ob)
                for level in ob.levels:
                    key = ob.key(level)
                    groups["operand"].append(key)
                    value = {"min": lo, "mid": lo + 1, "max": hi}[level]
                    cycles = iset.cycles(_instruction(spec, {**base, o.name: value}, config=config)) \
                        + isa.FETCH_ISSUE_CYCLES
                    if budget is not None and cycles > budget:
                        self.unreachable[key] = (f"{spec.mnemonic} with {o.name}={value} alone takes {cycles} "
                                                 f"cycles with its HALT, more than the budget of {budget} "
                                                 f"cycles per program")
            ins = _instruction(spec, base, config=config)
            self.regions[spec.mnemonic] = [(r.role, r.memory) for r in spec.regions(ins)]
            for role, memory in self.regions[spec.mnemonic]:
                for end in ("low", "high"):
                    groups["region"].append(f"region {spec.mnemonic}.{role} {memory} {end}")
        raisable = raisable_errors(self.ext_words, config=config)
        for code in ErrorCode:
            key = f"error {code.name}"
            groups["error"].append(key)
            if code not in raisable:
                self.unreachable[key] = (f"no instruction raises {code.name} at issue (probed over every "
                                         f"operation's operand ranges and the undefined op codes), and every "
                                         f"program ends with the HALT the loaders require")
        for a in iset.ops:
            for b in iset.ops:
                key = f"pair {a.mnemonic}>{b.mnemonic}"
                if a.code == HALT_CODE:
                    continue            # nothing executes after a HALT: not a bin at all
                groups["pair"].append(key)
        self.groups = groups
        self.bins = [k for g in groups.values() for k in g]
        self._by_op = {}
        for ob in self.operands:
            self._by_op.setdefault(ob.op, []).append(ob)

    # -- collecting
    def count(self, code: Sequence[Instruction], error: int, error_pc: int, into: Counter | None = None) -> Counter:
        """Add one program's bins (its code and how it ended, from the golden model) to ``into``."""
        c = Counter() if into is None else into
        error = ErrorCode(error)
        c[f"error {error.name}"] += 1
        executed = list(code[:error_pc])
        stream = [ins.op for ins in executed] + ([HALT_CODE] if error == ErrorCode.OK else [])
        for a, b in zip(stream, stream[1:]):
            c[f"pair {self._iset.by_code[a].mnemonic}>{self._iset.by_code[b].mnemonic}"] += 1
        for ins in executed:
            spec = self._iset.by_code[ins.op]
            values = ins.operands()
            for ob in self._by_op.get(spec.mnemonic, ()):
                c[ob.key(ob.level(values[ob.operand]))] += 1
            for r in spec.regions(ins):
                size = self.config.spad_words if r.memory == "spad" else self.ext_words
                if r.start == 0:
                    c[f"region {spec.mnemonic}.{r.role} {r.memory} low"] += 1
                if r.end == size:
                    c[f"region {spec.mnemonic}.{r.role} {r.memory} high"] += 1
        return c

    def count_bundle(self, bundle, into: Counter | None = None) -> Counter:
        c = Counter() if into is None else into
        for p in bundle.programs:
            self.count(p.code, p.expected.error, p.expected.error_pc, c)
        return c

    # -- reporting
    def summary(self, counts: Mapping[str, int]) -> dict:
        """The JSON form: every bin's count, the bins never hit, the unreachable ones and why."""
        unknown = sorted(set(counts) - set(self.bins))
        if unknown:
            raise ValueError(f"counts name bins this model does not have: {', '.join(unknown[:3])}")
        empty = [k for k in self.bins if not counts.get(k) and k not in self.unreachable]
        hit = sum(1 for k in self.bins if counts.get(k))
        return {"bins": {k: int(counts.get(k, 0)) for k in self.bins},
                "total_bins": len(self.bins), "hit": hit,
                "reachable": len(self.bins) - len(self.unreachable),
                "empty": empty,
                "unreachable": dict(self.unreachable),
                "ranges": {f"{ob.op}.{ob.operand}": [ob.lo, ob.hi] for ob in self.operands},
                "ext_words": self.ext_words, "max_cycles": self.max_cycles,
                **({"config": self.config.to_dict()} if self.config != isa.BOOK else {})}

    def table(self, counts: Mapping[str, int]) -> str:
        """The coverage as text: operands, error codes, pairs, region ends, and the verdict."""
        def n(key: str) -> str:
            v = counts.get(key, 0)
            if v:
                return f"{v:,}"
            return "unreach." if key in self.unreachable else "EMPTY"

        lines = ["operands: count at the least legal value / strictly between / the largest",
                 f"  {'op':5} {'operand':8} {'legal range':>16} {'min':>10} {'middle':>10} {'max':>10}"]
        for ob in self.operands:
            mid = n(ob.key("mid")) if "mid" in ob.levels else "-"
            lines.append(f"  {ob.op:5} {ob.operand:8} {f'{ob.lo}..{ob.hi}':>16} {n(ob.key('min')):>10} "
                         f"{mid:>10} {n(ob.key('max')):>10}")
        lines.append("error codes (how programs ended): " + ", ".join(
            f"{code.name} {n(f'error {code.name}')}" for code in ErrorCode))
        names = [s.mnemonic for s in self._iset.ops]
        lines.append("pairs of consecutive executed operations (row: first, column: second)")
        lines.append("  " + " " * 5 + "".join(f"{b:>9}" for b in names))
        for a in names:
            if self._iset.by_name[a].code == HALT_CODE:
                continue
            lines.append(f"  {a:5}" + "".join(f"{n(f'pair {a}>{b}'):>9}" for b in names))
        lines.append("memory regions touching the ends of their memory (low: start at word 0; high: end at the "
                     "last word)")
        for op, regions in self.regions.items():
            parts = [f"{role} {memory} {n(f'region {op}.{role} {memory} low')}/"
                     f"{n(f'region {op}.{role} {memory} high')}" for role, memory in regions]
            lines.append(f"  {op:5} " + ", ".join(parts))
        s = self.summary(counts)
        lines.append(f"coverage: {s['hit']} of {s['total_bins']} bins hit; {len(s['unreachable'])} unreachable "
                     f"by construction; {len(s['empty'])} reachable bin{'s' if len(s['empty']) != 1 else ''} "
                     f"never hit")
        for k in s["empty"]:
            lines.append(f"  EMPTY: {k}")
        for k, why in s["unreachable"].items():
            lines.append(f"  unreachable: {k}: {why}")
        return "\n".join(lines)


def merge(counts: Iterable[Mapping[str, int]]) -> Counter:
    total: Counter = Counter()
    for c in counts:
        total.update(c)
    return total


def plot(summary: Mapping, results: Mapping[str, Mapping], path: str, title: str = "") -> None:
    """The campaign as a PNG: the pair matrix, every operand's min / middle / max counts, the
    error codes and region ends, and programs per CPU second per simulator.

    ``summary`` is :meth:`CoverageModel.summary`; ``results`` the report's per-simulator entries.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    bins, unreachable = summary["bins"], summary["unreachable"]
    fig = plt.figure(figsize=(15, 10))
    grid = fig.add_gridspec(2, 3, width_ratios=[1.1, 1.6, 1.0])

    # pairs: rows first op, columns second op
    pairs = [k.split(" ", 1)[1].split(">") for k in bins if k.startswith("pair ")]
    names = list(dict.fromkeys(b for _, b in pairs))        # every operation (columns: HALT too)
    rows = list(dict.fromkeys(a for a, _ in pairs))         # every operation after which one runs
    m = np.array([[bins.get(f"pair {a}>{b}", 0) for b in names] for a in rows], dtype=float)
    ax = fig.add_subplot(grid[0, 0])
    ax.imshow(np.log10(m + 1), cmap="viridis")
    ax.set_xticks(range(len(names)), names, rotation=90)
    ax.set_yticks(range(len(rows)), rows)
    for i in range(len(rows)):
        for j in range(len(names)):
            ax.text(j, i, f"{int(m[i, j])}" if m[i, j] else "0", ha="center", va="center", fontsize=6,
                    color="white" if m[i, j] < m.max() / 10 else "black")
    ax.set_title("consecutive operations (row, then column)")

    # operands: three bars each
    ax = fig.add_subplot(grid[:, 1])
    labels = [k for k in summary["ranges"]]
    for j, level in enumerate(LEVELS):
        vals, colors = [], []
        for k in labels:
            op, operand = k.split(".")
            key = f"operand {op}.{operand} {level}"
            vals.append(bins.get(key, 0) if key in bins else 0)
            colors.append("none" if key not in bins else "lightgrey" if key in unreachable else
                          "black" if not bins[key] else f"C{j}")
        ax.barh(np.arange(len(labels)) + (j - 1) * 0.27,
                [max(v, 0.8) if c != "none" else 0 for v, c in zip(vals, colors)], height=0.27,
                color=colors, label=level)
    ax.set_yticks(range(len(labels)), [f"{k} {summary['ranges'][k][0]}..{summary['ranges'][k][1]}"
                                       for k in labels], fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("instructions in the bin (log); grey: unreachable by construction, black: empty")
    ax.legend(loc="lower right")
    ax.set_title("each operand at its least / a middle / its largest legal value")

    # error codes and region ends
    ax = fig.add_subplot(grid[1, 0])
    keys = [k for k in bins if k.startswith(("error", "region"))]
    vals = [max(bins[k], 0.8) for k in keys]
    colors = ["lightgrey" if k in unreachable else "black" if not bins[k] else
              ("C5" if k.startswith("error") else "C4") for k in keys]
    ax.barh(range(len(keys)), vals, color=colors)
    ax.set_yticks(range(len(keys)), [k.split(" ", 1)[1] for k in keys], fontsize=6)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_title("how programs ended; regions at memory ends")

    # speed per simulator
    ax = fig.add_subplot(grid[:, 2])
    sims = list(results)
    per_cpu = [(results[s]["programs_run"] / results[s]["cpu_seconds"]) if results[s].get("cpu_seconds") else 0
               for s in sims]
    ax.bar(sims, per_cpu, color=[f"C{i}" for i in range(len(sims))])
    for i, v in enumerate(per_cpu):
        ax.text(i, v, f"{v:,.1f}", ha="center", va="bottom")
    ax.set_yscale("log")
    ax.set_ylabel("programs per CPU second (one process)")
    ax.set_title("speed of each simulator")
    fig.suptitle(title or f"coverage: {summary['hit']} of {summary['total_bins']} bins hit, "
                 f"{len(unreachable)} unreachable, {len(summary['empty'])} empty")
    fig.tight_layout()
    from ga2_hdl.support.safe_io import write_figure
    write_figure(fig, path, format="png", dpi=90)       # a failed write leaves the old figure, no half file
