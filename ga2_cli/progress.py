"""The printing reporters of the ``ga2`` command (the :class:`~ga2_hdl.support.reporter.Reporter`
protocol of the packages, printed).

* :class:`Progress` keeps a count per ``what`` (a simulator's programs replayed): on a terminal one
  line that updates in place, otherwise a line each time a count passes another tenth, so a log
  stays short.
* :class:`Lines` prints one line per step (``[done/total] what``), for jobs whose every step is
  news (a mutant's verdict, a configuration's figures, a proof), optionally at most one every
  ``every`` seconds and with the time left.

Both print notes as they come. Steps go to ``stream`` (stderr unless told), notes to ``notes``
(stdout unless told: they are the command's text).
"""
from __future__ import annotations

import sys
import time


def _duration(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


class _Printer:
    def __init__(self, stream=None, notes=None):
        # looked up when the reporter is made: a stream bound at import time may be one a caller has since closed
        self.stream = stream if stream is not None else sys.stderr
        self.notes = notes if notes is not None else sys.stdout
        self.t0 = time.perf_counter()

    def note(self, message: str) -> None:
        self.notes.write(message + "\n")
        self.notes.flush()

    def close(self) -> None:
        """Nothing to end (see :meth:`Progress.close`)."""


class Progress(_Printer):
    """Counts per ``what``; :meth:`close` ends the updating line.

    Parameters
    ----------
    what : str
        What the command is doing, in front of each line ("replaying", "running").
    stream : file, optional
        Where steps go (stderr).
    notes : file, optional
        Where notes go (stdout).
    """

    def __init__(self, what: str = "replaying", stream=None, notes=None):
        super().__init__(stream, notes)
        self.what = what
        self.tty = self.stream.isatty()
        self.state: dict[str, tuple[int, int]] = {}
        self.reported: dict[str, int] = {}

    def step(self, done: int, total: int, what: str = "") -> None:
        self.state[what] = (done, total)
        elapsed = time.perf_counter() - self.t0
        if self.tty:
            text = "  ".join(f"{name} {d}/{t}" for name, (d, t) in self.state.items())
            self.stream.write(f"\r  {self.what}: {text}  ({elapsed:.0f} s)\x1b[K")
            self.stream.flush()
            return
        tenth = done * 10 // max(1, total)
        if tenth > self.reported.get(what, -1):
            self.reported[what] = tenth
            self.stream.write(f"  {self.what}: {what} {done}/{total} programs ({elapsed:.0f} s)\n")
            self.stream.flush()

    def note(self, message: str) -> None:
        if self.tty and self.state and self.notes.isatty():      # the note on a line of its own
            self.stream.write("\r\x1b[K")
            self.stream.flush()
        super().note(message)

    def close(self) -> None:
        """End the updating line (on a terminal); the next step starts a new one."""
        if self.tty and self.state:
            self.stream.write("\n")
            self.stream.flush()
        self.state.clear()


class Lines(_Printer):
    """One line per step, ``  [done/total] what`` (``  done/total UNIT, what`` with ``unit``).

    Parameters
    ----------
    stream, notes : file, optional
        Where steps (stderr) and notes (stdout) go.
    every : float
        At most one line every ``every`` seconds (the last step, and every step of a job of at
        most 20, always printed); 0: every step.
    eta : bool
        Add the time left, from the mean time per step so far.
    unit : str
        What is counted ("pieces"), said after the count.
    """

    def __init__(self, stream=None, notes=None, *, every: float = 0.0, eta: bool = False, unit: str = ""):
        super().__init__(stream, notes)
        self.every, self.eta, self.unit = every, eta, unit
        self.last = float("-inf")

    def step(self, done: int, total: int, what: str = "") -> None:
        now = time.perf_counter()
        if self.every and not (done >= total or total <= 20 or now - self.last >= self.every):
            return
        self.last = now
        left = ""
        if self.eta and done:
            left = f" (eta {_duration((now - self.t0) / done * (total - done))})"
        count = f"{done}/{total} {self.unit}," if self.unit else f"[{done}/{total}]"
        self.stream.write(f"  {count} {what}{left}\n")
        self.stream.flush()
