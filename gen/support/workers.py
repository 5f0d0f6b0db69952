"""A pool of local worker processes that never outlives its work (replays, campaigns, sweeps).

:func:`fork_pool` is a ``ProcessPoolExecutor`` whose workers are forked (they
share the parent's imported modules) and leave Ctrl-C to the parent.  When the
block using it ends by an exception (Ctrl-C, SIGTERM turned into an exception, a
failed task) or the generator holding it is closed, the queued tasks are
cancelled and every worker still running is terminated and joined: a task in
flight is lost, never left running.

A terminated worker (SIGTERM) in the middle of a task unwinds it, so that the
task's ``finally`` blocks run on the way out (``toolchain.child`` ends the
simulator's process group, which would otherwise outlive the worker: it is a
session of its own), then leaves at once without a traceback; a second signal
does not interrupt that way out.  Between tasks there is nothing to end: it
leaves at once.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Iterator

__all__ = ["fork_pool"]

_IN_TASK = False


class _Stopped(KeyboardInterrupt):
    """SIGTERM reached a worker in the middle of a task."""


def _stop(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)       # the way out is not interrupted again
    if not _IN_TASK:
        os._exit(128 + signum)
    raise _Stopped()


def _worker_init() -> None:
    """A worker stops as the module docstring says when terminated, and leaves Ctrl-C to the parent,
    which then ends it."""
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _task(fn: Callable, *args, **kwargs):
    """``fn(*args, **kwargs)`` in a worker, stopped quietly by SIGTERM (see the module docstring)."""
    global _IN_TASK
    _IN_TASK = True
    try:
        return fn(*args, **kwargs)
    except _Stopped:
        os._exit(128 + signal.SIGTERM)
    finally:
        _IN_TASK = False


class _ForkPool(ProcessPoolExecutor):
    """Every task (``map``'s included: it submits) runs through :func:`_task`."""

    def submit(self, fn, /, *args, **kwargs):
        return super().submit(_task, fn, *args, **kwargs)


def _end(pool: ProcessPoolExecutor) -> None:
    processes = list((getattr(pool, "_processes", None) or {}).values())   # before shutdown clears them
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        if p.is_alive():
            p.terminate()
    for p in processes:
        p.join(5)


@contextlib.contextmanager
def fork_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """``workers`` forked worker processes; ended (see the module docstring) if the block fails."""
    pool = _ForkPool(max_workers=workers, mp_context=multiprocessing.get_context("fork"),
                     initializer=_worker_init)
    try:
        yield pool
    except BaseException:
        _end(pool)
        raise
    pool.shutdown(wait=True)
