"""The RTL mutants' proof stage (`ga2 mutate rtl --judge tests,prove`): the formal contracts as a check.

It lives with the proofs (gen.formal sits above the mutation engine, whose mutants its planted
ones are): the command hands :func:`first_failure` to the engine's verdict
(``gen.mutation.rtl.run_stages(after=...)``), which calls it in the judging child; its imports
are made there, from the mutant's copy.

With ``--judge tests,prove`` a mutant that every test stage passes is then checked
by the formal properties (gen/formal/prove.py, through SymbiYosys) whose specs build
the mutated unit's hardware, on the book's chip, in the judging child (so the specs
are built from the mutant's copy); the first property that fails catches it, and the
verdict names it: ``caught_by`` is ``proof: UNIT.NAME``.  Such a mutant is one caught
*only* by a proof (the tests passed first), and the run reports it as such.  With
``--judge prove`` the proofs alone judge (no test stage, no chip check), for the mutants
of units that have properties.

The proofs run without their covers (which show that the unbroken design's proofs are
not vacuous: ``ga2 prove`` and sim_tests/gen/test_formal.py check them), so a mutant that
made a property vacuous would pass it; with ``tests,prove`` the tests judge every mutant
first.  The unbroken design must pass the proofs too before any mutant is judged.
"""
from __future__ import annotations

#: the RTL units whose hardware each property unit's spec builds (gen/formal/prove.py)
PROPERTIES_OF = {
    "dma": ("dma",),
    "requant": ("requant", "rq"),
    "divider": ("divider", "sm"),
    "softmax": ("sm",),
    "exp_table": ("sm",),
    "vector_unit": ("rq", "vadd", "amax", "sm"),
    "matrix_unit": ("matrix",),
    "systolic": ("matrix", "systolic"),
    "rowmem": ("matrix",),
}
JUDGES = ("tests", "prove")
#: why a mutant the proofs judged survived
HOLDS = "every formal property of its unit (gen/formal/prove.py, the book's chip) holds"


def properties(unit: str) -> list:
    """The properties (gen.formal.prove.Property) that check the hardware of RTL unit ``unit``."""
    from gen.formal import prove
    wanted = PROPERTIES_OF.get(unit, ())
    return [p for p in prove.PROPERTIES if p.unit in wanted]


def first_failure(unit: str, *, timeout: float | None = None, keys: tuple[str, ...] | None = None):
    """The unit's properties on the book's chip, as imported now (the mutant's copy): a Finding for the
    first that fails, an Outcome (error) for one that cannot be checked, or None (all hold).
    ``keys`` (``UNIT.NAME``) keeps only those of them."""
    from ga2_hdl.config import Config
    from ga2_hdl.support.mutation import Finding, Outcome
    from gen.formal import prove
    for prop in properties(unit):
        if keys is not None and prop.key not in keys:
            continue
        try:
            rec = prove.check_property(prop, Config.book(), covers=False, timeout=timeout)
        except Exception as e:                     # the spec around the mutated unit does not build
            return Outcome("error", "", f"proof {prop.key}: the mutated design does not build: "
                                        f"{type(e).__name__}: {' '.join(str(e).split())}"[:300])
        if rec["status"] == "skipped":            # the property does not apply to the chip
            continue
        if rec["status"] == "failed":
            how = f"{rec['mode']}, {rec['depth']} cycles"
            return Finding(f"proof: {prop.key}", f"{prop.key} fails ({how}): {rec.get('detail', '')}"[:300])
        if rec["status"] not in ("proven", "bounded"):
            return Outcome("error", "", f"proof {prop.key}: {rec['status']} {rec.get('detail', '')}"[:300])
    return None


def parse(text: str) -> tuple[str, ...]:
    """``--judge``'s value: ``tests``, ``prove`` or ``tests,prove``."""
    import argparse
    judges = tuple(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    if not judges or any(j not in JUDGES for j in judges):
        raise argparse.ArgumentTypeError(f"{text!r}: a comma-separated list of {', '.join(JUDGES)}")
    return judges
