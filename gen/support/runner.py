"""The one way GA2 runs many independent tasks: a local pool, or a Dask cluster when asked.

Campaign pieces, the design space's configurations, the work beyond the chapter and the
synthesis of many chips all hand a function and its items to a runner and take the results as
they come (:meth:`LocalRunner.map_unordered`, :meth:`DaskRunner.map_unordered`: ``(index,
result)`` pairs, in the order the tasks finish). :func:`runner_for` picks one from the command
line's ``--scheduler`` and ``--jobs``.

* :class:`LocalRunner`: ``jobs`` forked worker processes that never outlive the work
  (:func:`gen.support.workers.fork_pool`), at most two tasks queued per worker; one job runs the
  tasks in this process, in order.
* :class:`DaskRunner`: the tasks on a Dask distributed scheduler (an optional extra:
  ``pip install -e '.[cluster]'``); each worker has its own file system and so its own caches
  (exports, builds, synthesis results). Tasks not finished when the caller stops are cancelled.

A task's exception is the caller's: it is raised from the iteration, and the remaining tasks
are cancelled.
"""
from __future__ import annotations

import os
import time
from concurrent.futures import FIRST_COMPLETED, wait
from typing import Any, Callable, Iterator, Sequence

from .workers import fork_pool

DASK_MISSING = ("--scheduler needs Dask's distributed scheduler, an optional extra: "
                "pip install -e '.[cluster]' (or pip install 'dask[distributed]')")


class RunnerError(RuntimeError):
    """A runner that cannot be used: Dask missing, a scheduler that cannot be reached."""


class LocalRunner:
    """Tasks in a pool of ``jobs`` worker processes on this machine (1: in this process)."""

    def __init__(self, jobs: int | None = None):
        self.jobs = max(1, jobs or os.cpu_count() or 1)

    def describe(self) -> str:
        return f"{self.jobs} local process{'es' if self.jobs != 1 else ''}" if self.jobs > 1 else "this process"

    def map_unordered(self, fn: Callable[[Any], Any], items: Sequence, *, name: str = "ga2") -> Iterator[tuple[int, Any]]:
        """``(i, fn(items[i]))`` for every item, as the tasks finish."""
        if self.jobs == 1 or len(items) <= 1:
            for i, item in enumerate(items):
                yield i, fn(item)
            return
        todo = list(enumerate(items))
        pending: dict = {}
        with fork_pool(min(self.jobs, len(items))) as pool:
            while todo or pending:
                while todo and len(pending) < 2 * self.jobs:        # a few queued, not a million futures
                    i, item = todo.pop(0)
                    pending[pool.submit(fn, item)] = i
                done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                for f in done:
                    yield pending.pop(f), f.result()

    def close(self) -> None:
        pass


class DaskRunner:
    """Tasks of a Dask distributed scheduler at ``address`` (or on a ``distributed.Client``)."""

    def __init__(self, address, timeout: float = 30):
        try:
            from dask.distributed import Client
        except ImportError:
            raise RunnerError(DASK_MISSING) from None
        if isinstance(address, str):
            try:
                self.client = Client(address, timeout=timeout)
            except Exception as e:      # OSError, TimeoutError, ValueError: all mean "cannot use it"
                raise RunnerError(f"--scheduler {address}: cannot reach the Dask scheduler ({e})") from None
            self.own = True
        else:
            self.client, self.own = address, False
        self.address = getattr(self.client.scheduler, "address", str(address))

    def describe(self) -> str:
        workers = self.client.scheduler_info().get("workers", {})
        threads = sum(w.get("nthreads", 1) for w in workers.values())
        return f"Dask scheduler {self.address} ({len(workers)} workers, {threads} threads)"

    def map_unordered(self, fn: Callable[[Any], Any], items: Sequence, *, name: str = "ga2") -> Iterator[tuple[int, Any]]:
        """``(i, fn(items[i]))`` for every item, as the cluster finishes them."""
        from dask.distributed import as_completed
        stamp = f"{os.getpid()}-{time.time_ns()}"
        futures = {self.client.submit(fn, item, pure=False, key=f"{name}-{i}-{stamp}"): i
                   for i, item in enumerate(items)}
        try:
            for f in as_completed(list(futures)):
                yield futures[f], f.result()
        finally:
            for f in futures:
                if not f.done():
                    f.cancel()

    def close(self) -> None:
        if self.own:
            self.client.close()


def runner_for(scheduler: str | None, jobs: int | None = None) -> LocalRunner | DaskRunner:
    """A :class:`DaskRunner` for ``scheduler`` (an address), else a :class:`LocalRunner` of ``jobs``."""
    return DaskRunner(scheduler) if scheduler else LocalRunner(jobs)
