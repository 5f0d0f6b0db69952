"""The one way a long job says how far it is: the :class:`Reporter` protocol.

Every long job of the packages (a replay in simulators, a fuzzing campaign, a mutation run, a
proof, a design-space exploration, a synthesis, a compilation that tries batches) takes a
keyword argument ``reporter`` and calls two methods on it, nothing else:

* ``reporter.step(done, total, what)``: ``done`` of ``total`` units of work are finished.
  ``what`` is either the name of a count that runs beside others (a simulator's name: each
  simulator counts its own programs) or one line about the unit just finished (a mutant's
  verdict, a configuration's figures);
* ``reporter.note(message)``: one line of text for the user (a stage starting, a tool's
  heartbeat, a part of a result).

The packages never print: the ``ga2`` command makes the printing reporters
(:mod:`ga2_cli.progress`: one that keeps a count per ``what``, one that prints a line per step),
a test passes a :class:`Recorder` and looks at what was reported, and a caller that wants
silence passes nothing (the default :data:`QUIET`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


@runtime_checkable
class Reporter(Protocol):
    """What a long job reports to: steps of a count and lines of text."""

    def step(self, done: int, total: int, what: str = "") -> None:
        """``done`` of ``total`` units are finished; ``what``: the count's name or the unit's line."""

    def note(self, message: str) -> None:
        """One line of text for the user."""


class Quiet:
    """The reporter that says nothing (the default of every long job)."""

    def step(self, done: int, total: int, what: str = "") -> None:
        pass

    def note(self, message: str) -> None:
        pass


#: the reporter that says nothing
QUIET = Quiet()


@dataclass
class Recorder:
    """A reporter that keeps what it is told (for tests, and for a caller that shows it later)."""
    steps: list[tuple[int, int, str]] = field(default_factory=list)   #: ``(done, total, what)`` in order
    notes: list[str] = field(default_factory=list)                    #: the notes in order

    def step(self, done: int, total: int, what: str = "") -> None:
        self.steps.append((done, total, what))

    def note(self, message: str) -> None:
        self.notes.append(message)


@dataclass
class Prefixed:
    """Another reporter's steps and notes, each ``what`` and note with ``prefix`` in front."""
    inner: Reporter
    prefix: str

    def step(self, done: int, total: int, what: str = "") -> None:
        self.inner.step(done, total, self.prefix + what)

    def note(self, message: str) -> None:
        self.inner.note(self.prefix + message)


def or_quiet(reporter: Reporter | None) -> Reporter:
    """``reporter``, or :data:`QUIET` for None."""
    return QUIET if reporter is None else reporter


__all__ = ["Reporter", "Quiet", "QUIET", "Recorder", "Prefixed", "or_quiet"]
