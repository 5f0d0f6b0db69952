"""The RTL mutants' build check: a mutant whose chip cannot even be elaborated is found before any test.

About one mutant in nineteen (71 of the 1,315 of 4 December) is an edit that can never build: a width changed on a
Python number that is not a shape, an operator applied to something that is not a
signal, a port-width test turned so that a wide branch names ports a one-word unit
does not have.  Running a unit's tests to learn that costs the tests that pass before
the first one that builds the mutated code.  Elaborating the chip (``Fragment.get``:
every unit's ``elaborate``, no netlist, no simulation; 0.1-0.4 s for a preset) finds
them first.

Which configurations to elaborate: of :data:`CONFIGS`, those whose elaboration runs
the mutant's line, the cheapest one and the cheapest with wide ports (:func:`chosen`).
:func:`reach` traces the unbroken chip's construction and elaboration once per run,
for each of them, and records the lines of the RTL files it executes; a mutant on a line none of them runs (code only other configurations build,
such as a unit port narrower than the scratchpad's) is left to the tests, whose
verdict already tells an elaboration failure apart (gen/mutation/rtl.py).

A mutant that raises while its chip is elaborated is an ``error`` (it does not build),
marked ``before_judging`` in the report: counted with the others that do not build, as
before, and apart from the verdicts of the checks.
"""
from __future__ import annotations

import sys
from pathlib import Path

#: the presets elaborated, cheapest first: the book's chip, the overlapped one, the narrowest wide
#: ports, the widest with overlap (banks with ports per master) and the 8 x 8 array on 8-word ports
CONFIGS = ("book", "overlap", "wide2", "wide8_overlap", "fast")


def _build(name: str):
    import warnings

    from amaranth.hdl import Fragment

    from ga2_hdl.config import PRESETS
    from ga2_hdl.rtl.chip import GA2Chip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Fragment.get(GA2Chip(config=PRESETS[name]), None)


def reach(root: Path) -> dict[tuple[str, int], tuple[str, ...]]:
    """(file relative to ``root``, line) -> the configurations of :data:`CONFIGS` whose chip, built and
    elaborated from ``root``'s ``ga2_hdl`` (imported now), runs that line of an RTL file."""
    rtl_dir = str(Path(root) / "ga2_hdl" / "rtl")
    out: dict[tuple[str, int], list[str]] = {}
    for name in CONFIGS:
        lines: set[tuple[str, int]] = set()

        def local(frame, event, arg, lines=lines):
            if event == "line":
                lines.add((frame.f_code.co_filename, frame.f_lineno))
            return local

        def tracer(frame, event, arg):
            return local if frame.f_code.co_filename.startswith(rtl_dir) else None

        before = sys.gettrace()
        sys.settrace(tracer)
        try:
            _build(name)
        finally:
            sys.settrace(before)
        for path, line in lines:
            out.setdefault((str(Path(path).relative_to(root)), line), []).append(name)
    return {k: tuple(v) for k, v in out.items()}


def first_failure(configs) -> str | None:
    """Elaborate the chip (as imported now: the mutant's copy) for the first of ``configs``; None if it
    builds, else what was raised, and where in our RTL."""
    import traceback
    for name in chosen(configs):
        try:
            _build(name)
        except Exception as e:              # any exception: the design cannot be elaborated
            where = [f"{Path(f.filename).name}:{f.lineno} in {f.name}"
                     for f in traceback.extract_tb(e.__traceback__) if "/ga2_hdl/rtl/" in f.filename]
            at = f" ({where[-1]})" if where else ""
            return f"the {name} chip does not elaborate{at}: {type(e).__name__}: {' '.join(str(e).split())}"[:300]
    return None


def chosen(configs) -> list[str]:
    """Of the configurations that run a mutant's line (in :data:`CONFIGS` order), the ones elaborated:
    the cheapest, and the cheapest with wide scratchpad ports if that is another (a port-width test
    turned breaks one or the other)."""
    from ga2_hdl.config import PRESETS
    out = list(configs[:1])
    wide = [c for c in configs if PRESETS[c].spad_ports > 1]
    if wide and wide[0] not in out:
        out.append(wide[0])
    return out
