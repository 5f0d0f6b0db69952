"""The one mutation engine: break copies of our sources one change at a time, see the checks notice.

Plain Python with no import of ours, so every layer may use it (the compiler,
the speculative loop, the RTL); each of them supplies its own mutants and its
own *judge* (the verdict: which checks run against the broken copy).

* :class:`Mutant` describes one change: a file, the exact source text
  replaced, its replacement, and where (a character offset, or "the one
  occurrence"), plus a human description and, for a change argued to be
  equivalent, the argument.
* :func:`apply` makes the change on a copy of the text (never on the file) and
  refuses a mutant whose text is not where it says: the source moved and the
  mutant must be regenerated or updated.
* :func:`run_mutants` judges every mutant in a child process of its own
  (forked, a process group of its own, ``jobs`` at a time), with a time limit:
  a child that overruns is killed with everything it started.  The judge
  returns ``None`` (every check passed) or a :class:`Finding` (which check
  caught it and how); it may also return an :class:`Outcome` with status
  ``error`` (the broken copy could not even be built).
* Statuses: ``caught`` (with ``caught_by``), ``survived``, ``equivalent`` (the
  checks pass *and* the repository holds an argument that the change cannot
  alter behaviour; never assumed: a mutant argued equivalent that a check
  catches is reported ``caught`` with the argument flagged as wrong),
  ``timeout`` (no verdict in time: counted apart, never as caught) and
  ``error`` (the judge or the build failed: counted apart).  A judge may find
  that a copy does not build before running any check (``Outcome(...,
  before_judging=True)``): still an ``error``, and counted as such in the totals
  (``error_before_judging``).
* A target that folds two edits making the same copy of the source into one
  mutant records the others in ``Mutant.duplicates``: judged once, reported
  with the mutant (and counted in the totals as ``duplicate_edits``).
* :func:`report` turns the results into the JSON every ``ga2 mutate`` target
  writes (atomically, through ga2_hdl.support.safe_io): one entry per mutant under
  ``"mutants"`` and the totals.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from .reporter import Reporter, or_quiet

STATUSES = ("caught", "survived", "equivalent", "timeout", "error")


@dataclass(frozen=True)
class Mutant:
    """One change to one source file.

    ``old`` must occur at ``offset`` in the file's text, or, when ``offset``
    is None, exactly once in it.  ``equivalent`` holds the written argument
    when the change is claimed not to alter behaviour ("" otherwise).
    """
    file: str                 #: path relative to the repository root, e.g. "ga2_hdl/rtl/dma.py"
    old: str                  #: the exact text replaced
    new: str                  #: its replacement
    name: str = ""            #: what the change breaks, in words (default: the change itself)
    line: int = 0             #: 1-based line of the change (0: computed from the text)
    offset: int | None = None  #: character offset of ``old`` (None: its one occurrence)
    operator: str = ""        #: the kind of change (RTL: compare, constant, width, swap, drop, enable, next)
    context: str = ""         #: where: enclosing function and the source line, for keys and reports
    equivalent: str = ""      #: the argument that the change is equivalent ("" when it is not claimed)
    #: other edits (``[operator] old -> new``) that make the very same copy of the source: judged with this one
    duplicates: tuple[str, ...] = ()

    @property
    def change(self) -> str:
        return f"{_one_line(self.old)} -> {_one_line(self.new)}"

    @property
    def label(self) -> str:
        return self.name or f"{self.file}:{self.line}: {self.change}"


class MutantError(ValueError):
    """A mutant that cannot be applied: its text is not where it says (the source changed under it)."""


def locate(source: str, mutant: Mutant) -> int:
    """The offset of the mutant's text in ``source``; refuses a missing or ambiguous anchor."""
    if mutant.offset is not None:
        if source[mutant.offset:mutant.offset + len(mutant.old)] != mutant.old:
            raise MutantError(f"mutant {mutant.label!r}: {mutant.old!r} is not at offset {mutant.offset} "
                              f"of {mutant.file} (regenerate the mutants)")
        return mutant.offset
    count = source.count(mutant.old)
    if count != 1:
        raise MutantError(f"mutant {mutant.label!r}: its text occurs {count} times in {mutant.file} "
                          f"(it must occur exactly once; update the mutant):\n    {mutant.old!r}")
    return source.index(mutant.old)


def apply(source: str, mutant: Mutant) -> str:
    """``source`` (the text of ``mutant.file``) with the one change made."""
    at = locate(source, mutant)
    return source[:at] + mutant.new + source[at + len(mutant.old):]


def line_of(source: str, mutant: Mutant) -> int:
    return mutant.line or source.count("\n", 0, locate(source, mutant)) + 1


@dataclass
class Finding:
    """What a judge reports when a check notices the change."""
    check: str                #: the check that caught it (a test id, a check's name, "directed suite" ...)
    detail: str = ""          #: its first problem, one line


@dataclass
class Outcome:
    """A judge's explicit verdict (for statuses other than caught / survived)."""
    status: str
    caught_by: str = ""
    detail: str = ""
    before_judging: bool = False  #: found before any check ran (e.g. the copy does not elaborate)


@dataclass
class Result:
    mutant: Mutant
    status: str               #: one of STATUSES
    caught_by: str = ""
    detail: str = ""          #: the problem found, or why there is no verdict, or the survivor's reason
    seconds: float = 0.0
    line: int = 0
    argument_refuted: bool = False   #: argued equivalent, yet a check caught it
    before_judging: bool = False     #: the verdict came before any check ran (a copy that does not build)

    def summary(self) -> str:
        """The verdict in one line: the mutant (its name, or where and what it changes), status, by what, time."""
        m = self.mutant
        what = m.name or (f"{m.file}:{self.line or m.line}" + (f" [{m.operator}]" if m.operator else "")
                          + f" {m.change[:70]}")
        by = f" by {self.caught_by}" if self.caught_by else ""
        return f"{what}: {self.status}{by} ({self.seconds:.0f} s)"

    def as_dict(self) -> dict:
        d = {"file": self.mutant.file, "line": self.line or self.mutant.line, "change": self.mutant.change,
             "status": self.status, "caught_by": self.caught_by or None, "detail": self.detail,
             "seconds": round(self.seconds, 2)}
        if self.mutant.name:
            d["name"] = self.mutant.name
        if self.mutant.operator:
            d["operator"] = self.mutant.operator
        if self.mutant.context:
            d["context"] = self.mutant.context
        if self.mutant.equivalent:
            d["equivalence_argument"] = self.mutant.equivalent
        if self.argument_refuted:
            d["argument_refuted"] = True
        if self.before_judging:
            d["before_judging"] = True
        if self.mutant.duplicates:
            d["same_source_as"] = list(self.mutant.duplicates)
        return d


Judge = Callable[[Mutant], "Finding | Outcome | None"]


def _classify(mutant: Mutant, verdict, crash_status: str) -> tuple[str, str, str, bool, bool]:
    """(status, caught_by, detail, argument refuted, before judging) for what the child sent back."""
    kind, value = verdict
    if kind == "crash":
        if crash_status == "caught":
            return "caught", "crash", value, bool(mutant.equivalent), False
        return "error", "", value, False, False
    if isinstance(value, Outcome):
        refuted = value.status == "caught" and bool(mutant.equivalent)
        return value.status, value.caught_by, value.detail, refuted, value.before_judging
    if isinstance(value, Finding):
        return "caught", value.check, value.detail, bool(mutant.equivalent), False
    if mutant.equivalent:
        return "equivalent", "", "every check passes, as argued: " + _one_line(mutant.equivalent), False, False
    return "survived", "", "every check passed", False, False


def _child(judge: Judge, mutant: Mutant, conn) -> None:
    try:
        os.setsid()                       # a process group of its own: a timeout kills all it started
    except OSError:
        pass
    try:
        conn.send(("ok", judge(mutant)))
    except BaseException as exc:          # the broken copy raised: the judge decides what that means
        tb = traceback.format_exc(limit=4).strip().splitlines()
        conn.send(("crash", f"{type(exc).__name__}: {_one_line(str(exc))} ({tb[-3].strip() if len(tb) > 2 else ''})"))
    finally:
        conn.close()


def _kill(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.kill()
    proc.join()


def run_mutants(mutants: Sequence[Mutant], judge: Judge, *, jobs: int = 2, timeout: float = 600.0,
                timeouts: Sequence[float] | None = None, crash_status: str = "caught",
                reporter: Reporter | None = None) -> list[Result]:
    """Judge every mutant in a forked child, ``jobs`` at a time; results in the mutants' order.

    ``crash_status``: what an exception escaping the judge means ("caught" when
    the judge runs the broken code itself, so a crash is a detection; "error"
    when it only drives other processes).  ``timeouts`` (one per mutant)
    overrides ``timeout``.  ``reporter`` gets ``step(done, mutants, the verdict's line)``
    (:meth:`Result.summary`) as each ends.
    """
    if jobs < 1:
        raise ValueError("jobs must be at least 1")
    ctx = multiprocessing.get_context("fork")
    results: list[Result | None] = [None] * len(mutants)
    pending = list(range(len(mutants)))
    running: dict[int, tuple] = {}
    done = 0
    reporter = or_quiet(reporter)
    try:
        while pending or running:
            while pending and len(running) < jobs:
                i = pending.pop(0)
                parent, child = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_child, args=(judge, mutants[i], child), daemon=True)
                proc.start()
                child.close()
                limit = timeouts[i] if timeouts is not None else timeout
                running[i] = (proc, parent, time.monotonic(), limit)
            time.sleep(0.05)
            for i, (proc, conn, started, limit) in list(running.items()):
                elapsed = time.monotonic() - started
                answered = conn.poll()
                if not answered and proc.is_alive() and elapsed <= limit:
                    continue
                m = mutants[i]
                if answered:
                    try:
                        verdict = conn.recv()
                    except EOFError:
                        verdict = ("crash", f"the child ended (exit status {proc.exitcode}) without a verdict")
                    status, by, detail, refuted, early = _classify(m, verdict, crash_status)
                elif not proc.is_alive():
                    status, by, detail, refuted, early = "error", "", f"the child ended (exit status " \
                                                                      f"{proc.exitcode}) without a verdict", False, False
                else:
                    status, by, detail, refuted, early = "timeout", "", f"no verdict after {limit:.0f} s", False, False
                _kill(proc)
                conn.close()
                del running[i]
                results[i] = Result(m, status, by, detail, elapsed, m.line, refuted, early)
                done += 1
                reporter.step(done, len(mutants), results[i].summary())
    finally:
        for proc, conn, _, _ in running.values():
            _kill(proc)
    return [r for r in results if r is not None]


def totals(results: Iterable[Result]) -> dict:
    results = list(results)
    counts = {s: sum(r.status == s for r in results) for s in STATUSES}
    judged = counts["caught"] + counts["survived"]
    return {"mutants": len(results), **counts,
            "non_equivalent_judged": judged,
            "caught_percent": round(100.0 * counts["caught"] / judged, 2) if judged else None,
            "arguments_refuted": sum(r.argument_refuted for r in results),
            "error_before_judging": sum(r.status == "error" and r.before_judging for r in results),
            "duplicate_edits": sum(len(r.mutant.duplicates) for r in results)}


def report(results: Sequence[Result], **extra) -> dict:
    """The JSON of a mutation run: ``extra`` fields, ``totals`` and one entry per mutant."""
    return {**extra, "totals": totals(results), "mutants": [r.as_dict() for r in results]}


def _one_line(text: str) -> str:
    return " ".join(text.split())
