"""A pool of local worker processes that never outlives its work (campaigns, the design-space sweep).

:func:`fork_pool` is a ``ProcessPoolExecutor`` whose workers are forked (they
share the parent's imported modules), end quietly on SIGTERM and leave Ctrl-C
to the parent.  When the block using it ends by an exception (Ctrl-C, SIGTERM
turned into an exception, a failed task) or the generator holding it is
closed, the queued tasks are cancelled and every worker still running is
terminated and joined: a task in flight is lost, never left running.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import signal
from concurrent.futures import ProcessPoolExecutor
from typing import Iterator

__all__ = ["fork_pool"]


def _worker_init() -> None:
    """A worker ends quietly when terminated and leaves Ctrl-C to the parent, which then ends it."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


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
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"),
                               initializer=_worker_init)
    try:
        yield pool
    except BaseException:
        _end(pool)
        raise
    pool.shutdown(wait=True)
