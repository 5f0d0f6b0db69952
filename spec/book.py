"""The chapter's published figures, written once: what every comparison with the book reads.

Nothing here is computed by us: these are the book's own numbers (chapter 16's table, running
example A, example B's sweep and serving arithmetic), against which ``ga2 ch16``, ``ga2 example``,
``ga2 beyond`` and ``ga2 explore`` mark every figure of ours that differs. A figure that follows
from others is derived here, not restated.
"""
from __future__ import annotations

from dataclasses import dataclass

#: tokens decoded in each of the chapter's runs (its table, example B's sweep)
TOKENS = 32


@dataclass(frozen=True)
class BookRow:
    """One row of the chapter's table (:data:`TOKENS` tokens)."""
    accepted: int | None
    proposed: int | None
    blocks: int | None
    programs: int
    cycles: int
    speedup: float


#: the chapter's table, keyed by the labels of ``spec.runs`` (:data:`TOKENS` tokens)
BOOK_TABLE: dict[str, BookRow] = {
    "plain greedy decoding": BookRow(None, None, None, 32, 268_346, 1.00),
    "k=3, draft noise 0": BookRow(24, 24, 8, 32, 138_858, 1.93),
    "k=3, draft noise 3": BookRow(26, 27, 9, 36, 158_818, 1.69),
    "k=3, draft noise 4": BookRow(18, 45, 15, 60, 266_098, 1.01),
    "random model: plain decoding": BookRow(None, None, None, 32, 268_346, 1.00),
    "random model: k=1": BookRow(15, 17, 17, 34, 192_165, 1.40),
    "random model: k=3": BookRow(24, 30, 10, 40, 172_210, 1.56),
}

BOOK_A = {
    "reference": [0, 5, 3, 13, 9, 1, 11, 11, 11, 11, 11, 11, 11, 11],
    # (block, choices, accepted, new tokens)
    "blocks": [([0, 5, 3, 13], [5, 3, 13, 9], 3, [5, 3, 13, 9]),
               ([9, 10, 9, 10], [1, 11, 10, 11], 0, [1]),
               ([1, 11, 11, 11], [11, 11, 11, 11], 3, [11, 11, 11, 11])],
    "tokens": [0, 5, 3, 13, 9, 1, 11, 11, 11, 11],
    "ops": {"LD": 10, "MM": 56, "RQ": 23, "SM": 4, "ST": 5, "VADD": 2, "AMAX": 4, "HALT": 1},
    "words": 2496,
    "verifier": {"total": 12330, "matrix": 7732, "dma": 2856, "vector": 1532},
    "singles": [7378, 7457, 7536, 7615],
    "single_words": [2448, 2480, 2512, 2544],
    "ratio": 0.41,
    "draft": 810,
    # block -> the first five integer logits of each row
    "causality": {
        (1, 2, 3, 4): [[31, 0, 3, -8, -26], [-37, 22, 39, 5, 6], [18, 14, -30, -39, -43], [-3, -2, 24, 12, 14]],
        (1, 2, 3, 12): [[31, 0, 3, -8, -26], [-37, 22, 39, 5, 6], [18, 14, -30, -39, -43], [3, -4, 17, -16, -24]],
        (1, 2, 9, 4): [[31, 0, 3, -8, -26], [-37, 22, 39, 5, 6], [-24, 8, 3, 4, -1], [4, -6, 21, 9, 17]],
        (5, 2, 3, 4): [[-24, 34, 26, -4, -24], [-35, 32, 35, 3, 6], [17, 18, -30, -38, -40], [-3, 1, 20, 13, 18]],
    },
}

#: example B's sweep: (noise, k) -> (acceptance in whole percent, speedup), 32 tokens
BOOK_SWEEP: dict[tuple[float, int], tuple[int, float]] = {}
for _noise, _cells in ((0, "100 1.47 100 1.69 100 1.93 100 1.59 100 1.64"),
                       (3, "94 1.38 83 1.56 96 1.69 78 1.42 80 1.43"),
                       (4, "74 1.23 47 1.09 40 1.01 30 0.74 31 0.76"),
                       (5, "43 1.02 29 0.88 25 0.80 24 0.66 19 0.58"),
                       (6, "32 0.94 22 0.81 14 0.66 11 0.48 9 0.43")):
    _v = _cells.split()
    for _k in range(1, 6):
        BOOK_SWEEP[(float(_noise), _k)] = (int(_v[2 * _k - 2]), float(_v[2 * _k - 1]))
BOOK_PLAIN_CYCLES = BOOK_TABLE["plain greedy decoding"].cycles
BOOK_UNIT_COSTS = {"draft": 810, "plain_average": BOOK_PLAIN_CYCLES // TOKENS, "verifier": {4: 12330, 12: 14410, 24: 17530}}
#: (noise, k) -> (acceptance to 2 places, predicted speedup, measured speedup)
BOOK_MODEL = {(0.0, 3): (1.00, 1.92, 1.93), (3.0, 3): (0.96, 1.82, 1.69), (4.0, 3): (0.40, 0.78, 1.01)}
SERVE_ACCEPTANCE = (0.6, 0.8, 0.9)
SERVE_K = (2, 4, 8)
SERVE_C = (0.01, 0.05, 0.15)
_SERVE_BOOK_TEXT = ("1.92 1.78 1.51 2.22 1.92 1.44 2.29 1.77 1.12 2.39 2.22 1.88 3.23 2.80 2.10 4.01 3.09 1.97 "
                    "2.66 2.46 2.08 3.94 3.41 2.56 5.67 4.38 2.78").split()
BOOK_SERVE: dict[tuple[float, int, float], float] = {
    (a, k, c): float(_SERVE_BOOK_TEXT[9 * i + 3 * j + m])
    for i, a in enumerate(SERVE_ACCEPTANCE) for j, k in enumerate(SERVE_K) for m, c in enumerate(SERVE_C)}
