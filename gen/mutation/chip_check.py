"""The RTL mutants' chip-level check (the verdict's stage ``chip (icarus)``, gen/mutation/rtl.py).

The mutated chip, exported to Verilog, runs the directed suite and a fixed set of random programs in
Icarus against the golden model's expectations.  A mutant on a line the book's chip builds is
checked on the book's chip; one on a line only an overlapped or a wide chip builds (the build
check's reach, gen/mutation/build_check.py), on the cheapest preset that builds it, with that
preset's own programs and expectations.
"""
from __future__ import annotations

import os

from ga2_hdl.support.mutation import Finding, Outcome

CHIP_STAGE = "chip (icarus)"
RANDOM_PROGRAMS = 20              #: the fixed set of random programs of the check
RANDOM_SEED = 2026


def chip_bundle(config_name: str = "book"):
    """The directed suite and the fixed random programs of preset ``config_name``'s chip, with the
    golden model's expectations."""
    from ga2_hdl.config import PRESETS
    from ga2_hdl.formats.bundle import Bundle
    from ..fuzz.programs import random_bundle
    from ..fuzz.directed import directed_suite
    config = PRESETS[config_name]
    programs = [(f"directed suite: {name}", code, ext) for name, code, ext in directed_suite(config=config)]
    randoms = random_bundle(RANDOM_PROGRAMS, seed=RANDOM_SEED, config=config)
    programs += [(f"random program {i} (seed {RANDOM_SEED})", p.code, list(p.ext))
                 for i, p in enumerate(randoms.programs)]
    return Bundle.from_programs(programs, config=config)


def chip_config(build: tuple[str, ...]) -> str:
    """The preset whose chip the chip-level check runs for a mutant on a line that the presets
    ``build`` elaborate (gen/mutation/build_check.py's reach, cheapest first): the book's, unless
    its chip never runs that line (code only an overlapped or a wide chip builds), then the
    cheapest that does.  A mutant no preset reaches is checked on the book's chip."""
    return build[0] if build and "book" not in build else "book"


def chip_configs(mutants, reach: dict) -> tuple[str, ...]:
    """The presets whose chips the chip-level check of ``mutants`` runs (:func:`chip_config` of each
    mutant's line in ``reach``, :func:`build_reach`), in order of first use."""
    return tuple(dict.fromkeys(chip_config(reach.get((m.file, m.line), ())) for m in mutants))


def bundle_for(bundle_path: str, config_name: str) -> str:
    """The chip-level check's bundle file of a preset: ``bundle_path`` for the book's chip, beside it
    (``NAME_CONFIG.hex``) for another."""
    if config_name == "book":
        return bundle_path
    stem, ext = os.path.splitext(bundle_path)
    return f"{stem}_{config_name}{ext}"


def write_chip_bundle(path: str, configs: tuple[str, ...] = ("book",)) -> int:
    """Write the chip-level check's programs for each preset of ``configs`` (:func:`bundle_for`
    ``path``); the number of the first one's."""
    counts = []
    for name in configs:
        bundle = chip_bundle(name)
        bundle.write(bundle_for(path, name))
        counts.append(len(bundle.programs))
    return counts[0]


def check(bundle_path: str):
    """The chip (as imported now: the mutant's copy) on the bundle in Icarus: Finding, Outcome or None."""
    from ga2_hdl.formats.bundle import Bundle
    from gen.verilog import export as verilog
    from gen.sim.verilog_sim import IcarusSimulator
    from gen.sim.simulator import SimulatorError
    bundle = Bundle.read(bundle_path)
    try:
        verilog.export("chip", ext_words=bundle.ext_words, config=bundle.config)
    except Exception as e:
        return Outcome("error", "", f"the mutated chip does not export: {type(e).__name__}: "
                                    f"{' '.join(str(e).split())}"[:300])
    try:
        report = IcarusSimulator(config=bundle.config).run_bundle(bundle)
    except SimulatorError as e:
        return Finding(CHIP_STAGE, " ".join(str(e).split())[:300])
    if report.passed:
        return None
    m = report.mismatch
    if m is not None and m.program is not None:
        name = bundle.programs[m.program].name
        kind = "directed suite" if name.startswith("directed") else "random programs"
        return Finding(f"{kind} (icarus)", f"{name}: {m}"[:300])
    return Finding(CHIP_STAGE, report.line()[:300])
