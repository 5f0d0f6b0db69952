"""Many syntheses as tasks of one runner: every unit, target and seed of ``ga2 synth``, every chip
of ``ga2 explore --synth``, on this machine or on a Dask cluster (``--scheduler``).

A :class:`Job` is everything one run of :func:`gen.fpga.synth.synthesize` needs, the Verilog
export included (exported once, by the caller, before the first long run), so a worker on
another machine needs nothing but the tools; each worker keeps its own synthesis cache.
:func:`run_job` turns the run into an :class:`Outcome` that crosses a process or a network as
plain data: a result, a misfit (the part is too small: a verdict, not a failure), a cache miss
(``cached_only``), a run stopped at its time limit, or a failure in one line. :func:`run_jobs`
runs a list of jobs on a runner (:mod:`gen.support.runner`) and yields the outcomes as they
finish. Place and route on one machine is best run one at a time (two runs on two cores slow each
other and every run-time figure), so the local default is one job at a time.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from ga2_hdl.support.reporter import Reporter

from ..support.runner import LocalRunner
from . import synth


@dataclass(frozen=True)
class Job:
    """One synthesis: ``unit`` (its export ``exported``) on ``target`` with nextpnr's ``seed``."""
    unit: str
    target: str
    seed: int
    exported: object                    #: :class:`gen.verilog.export.Export`
    use_cache: bool = True
    cached_only: bool = False
    keep_dir: str | None = None
    tag: str = ""                       #: the caller's name for the job (a configuration, say)
    placer: str = synth.PLACER          #: nextpnr's placer (:data:`gen.fpga.synth.PLACERS`)
    pnr_limit: float | None = None      #: stop nextpnr after this many seconds (None: no limit)


@dataclass(frozen=True)
class Outcome:
    """What one job gave: ``kind`` is ``result``, ``misfit``, ``not_cached``, ``over_time`` (nextpnr
    stopped at the job's limit) or ``error``."""
    job: Job
    kind: str
    result: synth.SynthResult | None = None     #: for ``result``
    misfit: dict | None = None                  #: for ``misfit``: DoesNotFit.to_json() with ``cached``
    message: str = ""                           #: one line, for every kind but ``result``


def run_job(job: Job, reporter: Reporter | None = None) -> Outcome:
    """Run one job (in this process: a worker calls this); never raises for a tool's failure."""
    try:
        r = synth.synthesize(job.unit, job.target, exported=job.exported, use_cache=job.use_cache,
                             cached_only=job.cached_only, seed=job.seed, placer=job.placer,
                             pnr_limit=job.pnr_limit, reporter=reporter,
                             keep_dir=Path(job.keep_dir) if job.keep_dir else None)
    except synth.NotCached as e:
        return Outcome(job, "not_cached", message=str(e))
    except synth.OverTime as e:
        return Outcome(job, "over_time", message=str(e))
    except synth.DoesNotFit as e:
        return Outcome(job, "misfit", misfit={**e.to_json(), "cached": e.cached}, message=str(e))
    except synth.ToolsMissing:
        raise                                   # not the design's fault: the caller stops
    except synth.SynthError as e:
        return Outcome(job, "error", message=str(e).splitlines()[0] if str(e) else type(e).__name__)
    return Outcome(job, "result", result=r)


def run_jobs(jobs: Sequence[Job], runner=None, *,
             reporter: Reporter | None = None) -> Iterator[Outcome]:
    """Every job's outcome, as the runner finishes them (default: one at a time in this process,
    with the tools' notes to ``reporter``; on a pool or a cluster the notes stay with the workers)."""
    runner = runner or LocalRunner(1)
    in_process = isinstance(runner, LocalRunner) and runner.jobs == 1     # (a one-job pool runs in order, here)
    task = functools.partial(run_job, reporter=reporter) if in_process else run_job
    for _, outcome in runner.map_unordered(task, jobs, name="ga2-synth"):
        yield outcome
