"""An external-memory image held as its non-zero runs, so that it costs what the program touches.

A bundle of 3,000 programs for a 65,536-word external memory holds 6,000
images (initial and expected final); as Python lists they took gigabytes.  A
:class:`MemoryImage` keeps only the maximal runs of non-zero words (4 bytes a
word, in ``array('I')``) and behaves as the read-only sequence of all ``size``
words: ``len``, indexing, slicing, iteration, ``==`` with another image or any
sequence, ``tolist``.  Comparing two images compares their runs.
"""
from __future__ import annotations

import bisect
from array import array
from typing import Iterable, Iterator, Sequence

import numpy as np

from .. import isa

__all__ = ["MemoryImage", "as_image"]

_TYPECODE = "I" if array("I").itemsize == 4 else "L"


class MemoryImage(Sequence[int]):
    """``size`` unsigned 32-bit words, zero except for the stored runs.

    Words are set one at a time with ``image[i] = v`` (a test corrupting an expectation);
    every other change makes a new image (:meth:`overlay`).
    """

    __slots__ = ("size", "_starts", "_runs")

    def __init__(self, size: int, runs: Iterable[tuple[int, Sequence[int]]] = ()):
        self.size = int(size)
        self._starts: list[int] = []
        self._runs: list[array] = []
        end = 0
        for start, words in runs:        # in increasing order, not overlapping; zeros inside are split out
            words = np.asarray(words, dtype=np.int64) & isa.WORD_MASK
            if start < end or start < 0 or start + len(words) > self.size:
                raise ValueError(f"run at {start} of {len(words)} words does not fit a {self.size}-word image "
                                 f"after the previous run (ending at {end})")
            self._add(start, words)
            end = start + len(words)

    def _add(self, start: int, words: np.ndarray) -> None:
        nz = np.flatnonzero(words)
        if nz.size == 0:
            return
        breaks = np.flatnonzero(np.diff(nz) > 1)
        firsts = np.concatenate(([nz[0]], nz[breaks + 1]))
        lasts = np.concatenate((nz[breaks], [nz[-1]]))
        for a, b in zip(firsts.tolist(), lasts.tolist()):
            chunk = array(_TYPECODE, words[a:b + 1].tolist())
            if self._starts and self._starts[-1] + len(self._runs[-1]) == start + a:
                self._runs[-1].extend(chunk)              # touches the previous run: one maximal run
            else:
                self._starts.append(start + a)
                self._runs.append(chunk)

    # --------------------------------------------------------------- making
    @classmethod
    def from_words(cls, words: Sequence[int] | np.ndarray, size: int | None = None) -> "MemoryImage":
        """The image of ``words`` (zero-padded to ``size`` if given)."""
        arr = np.asarray(words if isinstance(words, np.ndarray) else list(words), dtype=np.int64)
        size = len(arr) if size is None else size
        if len(arr) > size:
            raise ValueError(f"{len(arr)} words do not fit an image of {size} words")
        return cls(size, [(0, arr)])

    def overlay(self, start: int, words: Sequence[int]) -> "MemoryImage":
        """A copy with ``words`` written from address ``start``."""
        if not len(words):
            return self
        stop = start + len(words)
        before = [(s, r) for s, r in self.runs() if s < start]
        after = [(s, r) for s, r in self.runs() if s + len(r) > stop]
        pieces: list[tuple[int, Sequence[int]]] = []
        for s, r in before:
            pieces.append((s, r[:max(0, start - s)]))
        pieces.append((start, list(words)))
        for s, r in after:
            cut = max(0, stop - s)
            pieces.append((s + cut, r[cut:]))
        return MemoryImage(self.size, pieces)

    # ------------------------------------------------------------- reading
    def runs(self) -> list[tuple[int, array]]:
        """The maximal runs of non-zero words, as (start, words), in address order."""
        return list(zip(self._starts, self._runs))

    @property
    def stored_words(self) -> int:
        return sum(len(r) for r in self._runs)

    def tolist(self) -> list[int]:
        out = [0] * self.size
        for s, r in zip(self._starts, self._runs):
            out[s:s + len(r)] = r.tolist()
        return out

    def to_numpy(self) -> np.ndarray:
        out = np.zeros(self.size, dtype=np.int64)
        for s, r in zip(self._starts, self._runs):
            out[s:s + len(r)] = np.frombuffer(r, dtype=np.uint32)
        return out

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self.tolist()[index]
        i = index.__index__()
        if i < 0:
            i += self.size
        if not 0 <= i < self.size:
            raise IndexError(f"address {index} outside an image of {self.size} words")
        k = bisect.bisect_right(self._starts, i) - 1
        if k >= 0 and i - self._starts[k] < len(self._runs[k]):
            return self._runs[k][i - self._starts[k]]
        return 0

    def __setitem__(self, index: int, value: int) -> None:
        i = index.__index__()
        if i < 0:
            i += self.size
        if not 0 <= i < self.size:
            raise IndexError(f"address {index} outside an image of {self.size} words")
        new = self.overlay(i, [value])
        self._starts, self._runs = new._starts, new._runs

    def __iter__(self) -> Iterator[int]:
        return iter(self.tolist())

    def __eq__(self, other) -> bool:
        if isinstance(other, MemoryImage):
            return self.size == other.size and self._starts == other._starts and self._runs == other._runs
        if isinstance(other, (list, tuple, np.ndarray)):
            return len(other) == self.size and self.tolist() == [int(x) for x in other]
        return NotImplemented

    __hash__ = None     # type: ignore[assignment]

    def first_difference(self, other: Sequence[int]) -> int | None:
        """The lowest address where ``other`` differs (None if equal; sizes must match)."""
        if self == other:
            return None
        a = self.to_numpy()
        b = other.to_numpy() if isinstance(other, MemoryImage) else np.asarray(list(other), dtype=np.int64)
        diff = np.flatnonzero(a != b)
        return int(diff[0]) if diff.size else None

    def __repr__(self) -> str:
        return f"MemoryImage(size={self.size}, {len(self._runs)} runs, {self.stored_words} non-zero words)"


def as_image(words: Sequence[int] | None, size: int) -> MemoryImage:
    """``words`` as an image of ``size`` words (an image of that size is returned as it is)."""
    if isinstance(words, MemoryImage) and words.size == size:
        return words
    return MemoryImage.from_words([] if words is None else words, size)
