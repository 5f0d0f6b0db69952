"""The unit-contract bench, for the project's unit tests: it lives in the package, gen/sim/unit_bench.py
(public, documented for a user's engine: docs/extending.md)."""
from gen.sim.unit_bench import (IDLE_CYCLES_AFTER, ContractError, Job, SpadHarness, UnitBench,  # noqa: F401
                                _lanes, port_words, run_jobs, run_program)
