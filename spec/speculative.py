"""The host loop of (greedy) speculative decoding.

One block:

1. the draft guesses k tokens, each from the previous guess;
2. the target verifies [last committed token, guess 0, ..., guess k-1]
   (m = k + 1 rows) in one pass and returns its greedy choice after every row,
   plus the new key and value rows;
3. the longest prefix of guesses equal to the target's choices is accepted
   (say a guesses), and the target's choice after row a -- its genuine next
   token, computed from accepted tokens only -- is appended for free;
4. the cache keeps the rows of the committed inputs (rows 0 .. a) only.

Every emitted token is one the target chose from a prefix of committed tokens,
so the output equals the target's own greedy decoding whatever the draft
guesses; the draft only changes how many tokens each pass yields (1 .. k+1).

The loop is independent of where the target runs: ``verify`` and ``draft`` are
callables (float reference, or programs on the chip).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

from .tiny_lm import TinyLM
from .verifier import float_block

#: verify(cache_len, block_tokens, cached_keys, cached_values) -> (choices, new_keys, new_values)
Verify = Callable[[int, list[int], list[list[float]], list[list[float]]],
                  tuple[Sequence[int], Sequence[Sequence[float]], Sequence[Sequence[float]]]]
#: draft(token) -> the guess that follows it
Draft = Callable[[int], int]


@dataclass
class SpecStats:
    blocks: int = 0       #: verifier passes
    proposed: int = 0     #: guesses made (k per block)
    accepted: int = 0     #: guesses accepted
    emitted: int = 0      #: tokens produced (before trimming to n)
    cache: int = 0        #: rows in the KV cache at the end

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class SpecRun:
    tokens: list[int]                      #: start token and n generated tokens
    stats: SpecStats
    calls: list[tuple] = field(default_factory=list)   #: ("draft",) / ("verify", c, m) in order


def speculate(start: int, n: int, k: int, verify: Verify, draft: Draft) -> SpecRun:
    """Generate n tokens after ``start`` with k guesses per block."""
    if k < 1:
        raise ValueError(f"speculate: k must be at least 1, got {k}")
    if n < 0:
        raise ValueError(f"speculate: n must be >= 0, got {n}")
    tokens = [start]
    keys: list[list[float]] = []
    values: list[list[float]] = []
    stats = SpecStats()
    calls: list[tuple] = []
    while len(tokens) - 1 < n:
        guesses = []
        guess = tokens[-1]
        for _ in range(k):
            guess = draft(guess)
            guesses.append(guess)
            calls.append(("draft",))
        block = [tokens[-1]] + guesses
        choices, new_keys, new_values = verify(len(keys), block, list(keys), list(values))
        calls.append(("verify", len(keys), len(block)))
        agreed = 0
        while agreed < k and guesses[agreed] == choices[agreed]:
            agreed += 1
        tokens += guesses[:agreed] + [choices[agreed]]
        keys += [list(r) for r in new_keys[:agreed + 1]]
        values += [list(r) for r in new_values[:agreed + 1]]
        stats.blocks += 1
        stats.proposed += k
        stats.accepted += agreed
    stats.emitted = len(tokens) - 1
    stats.cache = len(keys)
    return SpecRun(tokens[:n + 1], stats, calls)


def float_verifier(model: TinyLM) -> Verify:
    """The target in floating point, as a ``verify`` callable."""
    def verify(cache_len, block, keys, values):
        result = float_block(model, block, keys, values)
        return result.choices(), result.keys, result.values
    return verify
