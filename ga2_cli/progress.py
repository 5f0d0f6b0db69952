"""The one progress reporter of the commands that replay programs in simulators.

Progress goes to stderr (stdout carries the result): on a terminal one line
that updates in place, otherwise a line each time a simulator passes another
tenth of its programs, so a log stays short.
"""
from __future__ import annotations

import sys
import time


class Progress:
    """Called as ``progress(sim, done, total)`` as programs finish; :meth:`close` ends the line.

    Parameters
    ----------
    what : str
        What the command is doing, in front of each line ("replaying", "running").
    stream : file, optional
        Where to write (stderr, looked up when the reporter is made: a stream bound at
        import time may be one a caller has since closed).
    """

    def __init__(self, what: str = "replaying", stream=None):
        self.what = what
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty()
        self.state: dict[str, tuple[int, int]] = {}
        self.reported: dict[str, int] = {}
        self.t0 = time.perf_counter()

    def __call__(self, sim: str, done: int, total: int) -> None:
        self.state[sim] = (done, total)
        elapsed = time.perf_counter() - self.t0
        if self.tty:
            text = "  ".join(f"{name} {d}/{t}" for name, (d, t) in self.state.items())
            self.stream.write(f"\r  {self.what}: {text}  ({elapsed:.0f} s)\x1b[K")
            self.stream.flush()
            return
        tenth = done * 10 // max(1, total)
        if tenth > self.reported.get(sim, -1):
            self.reported[sim] = tenth
            self.stream.write(f"  {self.what}: {sim} {done}/{total} programs ({elapsed:.0f} s)\n")
            self.stream.flush()

    def of(self, sim: str):
        """The reporter of one simulator, called as ``report(done, total)``."""
        return lambda done, total: self(sim, done, total)

    def close(self) -> None:
        """End the updating line (on a terminal); the next report starts a new one."""
        if self.tty and self.state:
            self.stream.write("\n")
            self.stream.flush()
        self.state.clear()
