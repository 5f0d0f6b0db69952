"""docs/config.md, generated from :class:`ga2_hdl.config.Config` so that the page cannot drift from the code.

``ga2 configdoc -o docs/config.md`` (or ``python -m ga2_hdl.config_doc > docs/config.md``) regenerates
it; a test fails when the committed page differs from :func:`render_config_markdown`.

Nothing here states a rule.  Each field's type and book value are the dataclass's; what it changes is
the :class:`~ga2_hdl.config.Config` docstring's entry for it, and the operations whose busy time or
legal operands change with it, asked of the instruction set (:func:`isa_effects`); its limits are found by asking the
validation itself (:meth:`Config.problems <ga2_hdl.config.Config.problems>`, then the instruction
word's :func:`ga2_hdl.isa.config_problems`) about probe values, one field at a time with every other
field at the book's value, and each limit is given with the validation's own words for the first value
past it (:func:`field_limits`).
"""
from __future__ import annotations

import dataclasses
import inspect
import re
import sys
from typing import NamedTuple

from . import isa
from .config import PRESETS, Config, ConfigError

__all__ = ["FieldLimits", "field_docs", "field_limits", "isa_effects", "problems_of", "render_config_markdown"]

#: the largest value probed for an integer field: above it a field is "unbounded"
PROBE_TOP = 1 << 62

#: fields probed on the book's chip with other fields changed too, because they mean something only
#: then (the validation refuses them otherwise, and says so): field -> the other fields' values
PROBE_WITH = {"spad_partitions": {"overlap": True}}




def problems_of(name: str, value) -> list[str]:
    """What the validation says about the book's configuration with field ``name`` set to ``value``:
    :meth:`Config.problems`'s complaints, else the instruction word's (:func:`isa.config_problems`);
    empty when the chip can be built.  Each complaint is given without the ``field=value`` in front."""
    try:
        config = Config.book().replace(**{**PROBE_WITH.get(name, {}), name: value})
    except ConfigError as e:
        text = str(e).split(": ", 1)[1]            # "configuration 'book': A; B"
        said = text.split("; ")
    else:
        said = isa.config_problems(config)
    return [_reason(name, value, s) for s in said]


def _reason(name: str, value, text: str) -> str:
    """``array=0 must be ...`` -> ``must be ...``; ``spad_words=70000: scratchpad ...`` -> ``scratchpad ...``."""
    for head in (f"{name}={value!r}", f"{name}={value}", name):
        if text.startswith(head):
            return text[len(head):].lstrip(": ")
    return text


def _accepts(name: str, value) -> bool:
    return not problems_of(name, value)


class FieldLimits(NamedTuple):
    """The values one integer field accepts (the others at the book's values), found by probing."""
    least: int
    most: int | None           # None: no limit up to PROBE_TOP
    power_of_two: bool
    below: str                 # the validation's words for least - 1
    above: str                 # ... for most + 1 ("" when unbounded)
    between: str               # ... for a value in range that is not a power of two ("" otherwise)

    def text(self) -> str:
        """``1 .. 255``, ``a power of two, 1 .. 65536``, ``1 or more``."""
        span = f"{self.least} .. {self.most}" if self.most is not None else f"{self.least} or more"
        return f"a power of two, {span}" if self.power_of_two else span


def field_limits(name: str) -> FieldLimits:
    """The limits of integer field ``name``, asked of the validation (never restated here).

    The least accepted value among -1 .. 64; whether, past it, exactly the powers of two are
    accepted; the largest accepted value (a binary search up to :data:`PROBE_TOP`).  The accepted
    values must then form that interval (or its powers of two): spot checks inside and just outside
    it confirm this, and a validation the description does not fit raises ``RuntimeError``.
    """
    least = next((v for v in range(-1, 65) if _accepts(name, v)), None)
    if least is None:
        raise RuntimeError(f"config_doc: field {name} accepts no value in -1 .. 64")
    window = range(least, least + 64)
    accepted = {v for v in window if _accepts(name, v)}
    powers = {v for v in window if v & (v - 1) == 0 and v > 0}
    if accepted == set(window):
        power_of_two = False
    elif accepted == powers and least in powers:
        power_of_two = True
    else:
        raise RuntimeError(f"config_doc: the values field {name} accepts are neither an interval nor its "
                           f"powers of two: {sorted(accepted)[:12]} ...")
    if _accepts(name, PROBE_TOP):
        most = None
    elif power_of_two:
        k = least.bit_length() - 1
        while _accepts(name, 1 << (k + 1)):
            k += 1
        most = 1 << k
    else:
        lo, hi = least, PROBE_TOP                  # lo accepted, hi refused
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if _accepts(name, mid) else (lo, mid)
        most = lo
    top = most if most is not None else least + 1000
    inside = {least, top, (least + top) // 2, least + 1, top - 1} if not power_of_two else \
        {1 << k for k in range(least.bit_length() - 1, top.bit_length())}
    if not all(_accepts(name, v) for v in inside if v >= least):
        raise RuntimeError(f"config_doc: field {name} refuses a value between {least} and {top}")
    if power_of_two and any(_accepts(name, v) for v in (least + 3, top - 1, (least + top) // 2 + 1)
                            if v & (v - 1) and least < v < top):
        raise RuntimeError(f"config_doc: field {name} accepts a value between {least} and {top} "
                           f"that is not a power of two")
    below = "; ".join(problems_of(name, least - 1))
    above = "; ".join(problems_of(name, most * 2 if power_of_two else most + 1)) if most is not None else ""
    between = "; ".join(problems_of(name, least + 2 if least + 2 & least + 1 else least + 5)) \
        if power_of_two else ""
    return FieldLimits(least, most, power_of_two, below, above, between)


#: probes for a field that is not an integer, by its annotation: a value of the wrong kind
_WRONG_KIND = {"str": "", "bool": 1, "tuple[str, ...]": ("",)}


def _other_limit(f: dataclasses.Field) -> str:
    """What the validation says about a value of the wrong kind for a field that is not an integer."""
    if f.type not in _WRONG_KIND:
        raise RuntimeError(f"config_doc: no probe for field {f.name} of type {f.type}: add one to _WRONG_KIND")
    said = problems_of(f.name, _WRONG_KIND[f.type])
    if not said:
        raise RuntimeError(f"config_doc: field {f.name} accepts {_WRONG_KIND[f.type]!r}: the probe is no probe")
    return "; ".join(said)


def _another_value(name: str, limits: FieldLimits) -> int:
    """An accepted value of integer field ``name`` other than the book's (twice it, or the least)."""
    book = getattr(Config.book(), name)
    for v in (book * 2, limits.least, book // 2):
        if v != book and v >= limits.least and (limits.most is None or v <= limits.most) and _accepts(name, v):
            return v
    raise RuntimeError(f"config_doc: field {name} accepts no value but the book's")


def isa_effects(name: str, value) -> list[str]:
    """What setting field ``name`` to ``value`` changes in the instruction set, asked of it: each
    operation whose busy-time formula, busy time (every operand 1) or legal ranges differ from the
    book chip's."""
    book = isa.instruction_set(Config.book())
    other = isa.instruction_set(Config.book().replace(**{**PROBE_WITH.get(name, {}), name: value}))
    out = []
    for spec in book.ops:
        theirs = other.by_name[spec.mnemonic]
        probe = {o.name: 1 for o in spec.operands}
        if spec.busy_formula != theirs.busy_formula:
            out.append(f"{spec.mnemonic}'s busy time: `{spec.busy_formula}` on the book's chip, "
                       f"`{theirs.busy_formula}` with `{name}={value}`")
        elif book.busy(book.make(spec.mnemonic, **probe)) != other.busy(other.make(spec.mnemonic, **probe)):
            out.append(f"{spec.mnemonic}'s busy time `{spec.busy_formula}`: its value")
        if spec.ranges_text() != theirs.ranges_text():
            out.append(f"{spec.mnemonic}'s legal operands: {spec.ranges_text()} on the book's chip, "
                       f"{theirs.ranges_text()} with `{name}={value}`")
    return out


def field_docs() -> dict[str, tuple[str, str]]:
    """Field name -> (type as the docstring says it, what it is) from the Parameters section of
    :class:`Config`'s docstring; ``RuntimeError`` when a field has no entry (or an entry no field)."""
    doc = inspect.getdoc(Config) or ""
    m = re.search(r"^Parameters\n-+\n(.*?)(?:\n\n[A-Z][a-z]+\n-+\n|\Z)", doc, re.S | re.M)
    out: dict[str, tuple[str, str]] = {}
    if m:
        for entry in re.finditer(r"^(\w+) : ([^\n]+)\n((?:    [^\n]*\n?)+)", m.group(1), re.M):
            out[entry.group(1)] = (entry.group(2).strip(), " ".join(entry.group(3).split()))
    names = [f.name for f in dataclasses.fields(Config)]
    missing = [n for n in names if n not in out]
    extra = [n for n in out if n not in names]
    if missing or extra:
        raise RuntimeError("config_doc: Config's docstring must describe every field under Parameters"
                           + (f"; missing: {', '.join(missing)}" if missing else "")
                           + (f"; no such field: {', '.join(extra)}" if extra else ""))
    return out


def _shown(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "[" + ", ".join(f'"{v}"' for v in value) + "]"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def render_config_markdown() -> str:
    """Every field of :class:`Config`: its type, the book's value, its limits and what it changes."""
    book = Config.book()
    docs = field_docs()
    out: list[str] = []
    w = out.append
    w("# Configuration fields")
    w("")
    w("<!-- Generated by `ga2 configdoc` from ga2_hdl/config.py (the Config dataclass, its docstring and "
      "its validation) and the instruction word's limits (ga2_hdl/isa). Do not edit by hand: "
      "sim_tests/cli/test_docs.py fails when docs/config.md and the generator disagree. -->")
    w("")
    w("A chip is one `Config` (`ga2_hdl/config.py`): every command that builds, runs, compiles or exports "
      "takes `--config NAME|FILE`, a preset name or a TOML or JSON file of fields; the fields a file leaves "
      "out take the book's values. `Config.book()` is the book's GA-2.")
    w("")
    w("The limits are what the validation accepts (`Config.problems`, then the instruction word's "
      "`isa.config_problems`), found by asking it about each field with every other field at the book's "
      "value (or, for a field that means something only with another, as that field's section says); the words after a limit are the validation's own for the first value past it.")
    w("")
    w("| field | type | book | limits |")
    w("|---|---|---|---|")
    limits: dict[str, str] = {}
    reasons: dict[str, list[str]] = {}
    for f in dataclasses.fields(Config):
        if f.type == "int":
            lim = field_limits(f.name)
            limits[f.name] = lim.text()
            why = [f"{lim.least - 1}: {lim.below}"]
            if lim.power_of_two:
                why.append(f"a value that is not a power of two: {lim.between}")
            if lim.most is not None:
                why.append(f"{lim.most * 2 if lim.power_of_two else lim.most + 1}: {lim.above}")
            else:
                why.append(f"no upper limit in the configuration (probed up to 2**{PROBE_TOP.bit_length() - 1})")
            reasons[f.name] = why
        else:
            limits[f.name] = _other_limit(f)
            reasons[f.name] = []
        w(f"| `{f.name}` | `{f.type}` | `{_shown(getattr(book, f.name))}` | {limits[f.name]} |")
    w("")
    for f in dataclasses.fields(Config):
        w(f"## `{f.name}`")
        w("")
        doc_type, what = docs[f.name]
        w(what)
        w("")
        shown_type = f"`{f.type}`" + (f" ({doc_type})" if doc_type != f.type else "")
        probed = PROBE_WITH.get(f.name)
        context = (" (probed with " + ", ".join(f"`{k}={_shown(v)}`" for k, v in probed.items()) + ")"
                   if probed else "")
        w(f"Type {shown_type}; the book's value `{_shown(getattr(book, f.name))}`; limits{context}: "
          f"{limits[f.name]}.")
        if reasons[f.name]:
            w("")
            for r in reasons[f.name]:
                w(f"- {r}")
        effects = isa_effects(f.name, _another_value(f.name, field_limits(f.name))) if f.type == "int" else []
        if effects:
            w("")
            w("In the instruction set (asked of it, with another value): " + "; ".join(effects) + ".")
        presets = [(name, getattr(c, f.name)) for name, c in PRESETS.items()
                   if f.name != "name" and getattr(c, f.name) != getattr(book, f.name)]
        if presets:
            w("")
            w("Presets that change it: " + ", ".join(f"`{n}` ({_shown(v)})" for n, v in presets) + ".")
        w("")
    w("## Presets")
    w("")
    w("| preset | the fields it changes |")
    w("|---|---|")
    for name, c in PRESETS.items():
        changed = [f"`{k}={_shown(v)}`" for k, v in c.parameters.items() if book.parameters[k] != v]
        w(f"| `{name}` | {', '.join(changed) if changed else 'none: the book chip'} |")
    w("")
    return "\n".join(out)


if __name__ == "__main__":
    sys.stdout.write(render_config_markdown())
