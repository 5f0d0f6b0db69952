"""The golden model behind the simulator interface (name ``golden``).

It runs programs at instruction level (``ga2_hdl.golden``), so it has no
waveform: asking it for a VCD is an error rather than a silently missing file.
Replaying a bundle in it checks that the bundle's expectations are what the
current golden model predicts.
"""
from __future__ import annotations

from typing import Sequence

from ga2_hdl import golden, isa
from ga2_hdl.config import Config
from ga2_hdl.isa import Instruction
from ga2_hdl.formats.results import RunResult
from ga2_hdl.support.reporter import Reporter

from .simulator import BundleReport, SimulatorError, check_bundle_chip, external_memory_words, replay_with


class GoldenSimulator:
    name = "golden"

    def __init__(self, ext_words: int | None = None, *, config: Config):
        self.ext_words = ext_words
        self.config = config

    @staticmethod
    def _no_vcd(vcd) -> None:
        if vcd:
            raise SimulatorError("the golden model runs at instruction level and cannot write a waveform; "
                                 "use the amaranth, icarus or verilator simulator for a VCD")

    def run_program(self, program: Sequence[Instruction], ext: Sequence[int], *,
                    ext_words: int | None = None, vcd: str | None = None) -> RunResult:
        self._no_vcd(vcd)
        words = external_memory_words(ext_words, self.ext_words, config=self.config)
        return golden.run(program, ext, ext_words=words, config=self.config)

    def run_bundle(self, bundle, *, vcd: str | None = None, vcd_program: int | None = None,
                   reporter: Reporter | None = None) -> BundleReport:
        self._no_vcd(vcd)
        check_bundle_chip(self, bundle)

        def run_one(i: int) -> RunResult:
            entry = bundle.programs[i]
            return golden.run(entry.code, entry.ext, ext_words=bundle.ext_words, sparse=True, config=self.config)

        return replay_with(self, bundle, run_one, reporter)
