"""The tiny language model that GA-2 decodes, and its floating-point reference.

One transformer layer, one attention head, no normalisation (the compiler has
no such operation)::

    x = E[token]
    q, k, v = x Wq, x Wk, x Wv            (k, v appended to the KV cache)
    a = softmax(q K^T / sqrt(D)) V
    h = x + a Wo
    y = h + relu(h W1) W2
    logits = y Wout,   next token = argmax(logits)

with a vocabulary of V = 16 tokens, width D = 16 and a feed-forward width of
HID = 32.

Two kinds of model:

* ``structured``: constructed, not trained.  The embeddings are the rows of a
  16 x 16 Hadamard matrix divided by 4 (unit norm, mutually orthogonal) and
  Wout is built so that the logit of token j is large exactly when the input
  token is the preimage of j under ``next_token_rule``; greedy decoding
  therefore follows f(t) = (5 t + 3) mod 16.  Attention and the feed-forward
  block have small random weights (standard deviation ``noise / sqrt(fan-in)``)
  that perturb the logits without deciding them.
* ``random``: every weight random; a generic target.

Reproducibility: the book's figures (tokens, acceptance counts, cycles) are
reproduced only if the weights are bit-identical to the book's, so the
Gaussian draws come from ``random.Random(seed).gauss`` in one fixed order:
(random models only) E then Wout, then Wq, Wk, Wv, Wo, W1, W2; each matrix
row by row.  ``gauss`` caches every second value, so the order of the calls,
not only their number, matters.

Float order: sums are accumulated left to right from zero in the index order
written here (the order the figures were produced with); a near-tie between
two logits can depend on it.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np

#: vocabulary size, model width, feed-forward width
V = 16
D = 16
HID = 32

Matrix = list[list[float]]
Vector = list[float]

#: the weight matrices of the layer, in the order the Gaussian draws fill them
LAYER_WEIGHTS = ("Wq", "Wk", "Wv", "Wo", "W1", "W2")


def next_token_rule(token: int) -> int:
    """The structured model's greedy successor: f(t) = (5 t + 3) mod 16 (one cycle of length 16)."""
    return (5 * token + 3) % V


def hadamard(n: int) -> list[list[int]]:
    """The n x n Sylvester-Hadamard matrix (n a power of two) of +-1 entries."""
    if n < 1 or n & (n - 1):
        raise ValueError(f"hadamard: n must be a power of two, got {n}")
    rows = [[1]]
    while len(rows) < n:
        rows = [r + r for r in rows] + [r + [-x for x in r] for r in rows]
    return rows


@dataclass(frozen=True)
class TinyLM:
    """The weights of one model.  Matrices are lists of rows (row vector times matrix)."""

    kind: str                    #: "structured" or "random"
    E: Matrix                    #: V x D embedding rows
    Wq: Matrix                   #: D x D
    Wk: Matrix                   #: D x D
    Wv: Matrix                   #: D x D
    Wo: Matrix                   #: D x D
    W1: Matrix                   #: D x HID
    W2: Matrix                   #: HID x D
    Wout: Matrix                 #: D x V
    seed: int = field(default=1, compare=False)

    def weight(self, name: str) -> Matrix:
        """A weight matrix by its graph name ("Wq", ..., "Wout")."""
        if name not in LAYER_WEIGHTS + ("Wout",):
            raise KeyError(f"no weight named {name!r}")
        return getattr(self, name)

    def array(self, name: str) -> np.ndarray:
        """A weight matrix by its graph name as a float64 array, made once per model (a model's
        weights are never changed in place: :meth:`with_sharp_attention` makes a new model)."""
        arrays = self.__dict__.setdefault("_arrays", {})      # not a field: not compared, not replaced
        if name not in arrays:
            arrays[name] = np.array(self.weight(name), dtype=np.float64)
        return arrays[name]

    def embedding(self, token: int) -> Vector:
        if not 0 <= token < V:
            raise ValueError(f"token {token} outside the vocabulary 0..{V - 1}")
        return self.E[token]

    def with_sharp_attention(self, factor: float = 4.0) -> "TinyLM":
        """The same model with Wq and Wk multiplied by ``factor``: scores grow by factor**2,
        so attention concentrates on few keys and a wrong mask or query shows in the outputs."""
        scale = lambda w: [[factor * x for x in row] for row in w]  # noqa: E731
        return replace(self, Wq=scale(self.Wq), Wk=scale(self.Wk))


def _gauss_matrix(rng: random.Random, rows: int, cols: int, sd: float) -> Matrix:
    # Row by row, left to right: the draw order of the reference figures.
    return [[rng.gauss(0, sd) for _ in range(cols)] for _ in range(rows)]


def make_model(kind: str = "structured", seed: int = 1, noise: float = 0.45) -> TinyLM:
    """Build a model.  ``noise`` scales the random layer weights of the structured model
    (a random model always uses 1.0)."""
    rng = random.Random(seed)
    if kind == "structured":
        E = [[x / 4 for x in row] for row in hadamard(V)]
        preimage = {next_token_rule(t): t for t in range(V)}
        # Column j of Wout is 8 times the embedding of j's preimage: the embeddings are
        # orthonormal, so E[t] Wout is 8 at f(t) and 0 elsewhere (before the perturbations).
        Wout = [[8.0 * E[preimage[j]][d] for j in range(V)] for d in range(D)]
        sd = noise
    elif kind == "random":
        E = [[x / 4 for x in row] for row in _gauss_matrix(rng, V, D, 1.0)]
        Wout = _gauss_matrix(rng, D, V, 1 / math.sqrt(D))
        sd = 1.0
    else:
        raise ValueError(f"unknown model kind {kind!r} (expected 'structured' or 'random')")
    fan_in = {"Wq": D, "Wk": D, "Wv": D, "Wo": D, "W1": D, "W2": HID}
    shape = {"Wq": (D, D), "Wk": (D, D), "Wv": (D, D), "Wo": (D, D), "W1": (D, HID), "W2": (HID, D)}
    layer = {name: _gauss_matrix(rng, *shape[name], sd / math.sqrt(fan_in[name])) for name in LAYER_WEIGHTS}
    return TinyLM(kind=kind, E=E, Wout=Wout, seed=seed, **layer)


# ---------------------------------------------------------------------------
# Floating-point reference (no graph IR: written directly, to check the compiler against)
# ---------------------------------------------------------------------------

def dot(a: Sequence[float], b: Sequence[float]) -> float:
    """sum_i a[i] b[i], accumulated left to right."""
    acc = 0.0
    for x, y in zip(a, b):
        acc += x * y
    return acc


def vecmat(x: Sequence[float], W: Matrix | np.ndarray) -> Vector:
    """Row vector times matrix; each output accumulated over the rows of W in order, from 0.0.

    numpy computes every output at once, but each one is still the same left-to-right sum of the
    same rounded products: the products ``x[i] * W[i][j]`` are formed first (as the scalar loop
    forms each before adding it), then ``np.add.accumulate`` adds them row after row, which is
    sequential by definition (never pairwise).  Starting from the first product instead of 0.0
    can only change the sign of a zero sum, and the final ``+ 0.0`` gives it the scalar loop's
    +0.0.  So the result is bit for bit the loop's, on any machine (no BLAS, no fused multiply-add).
    """
    W = np.asarray(W, dtype=np.float64)
    if len(x) == 0:
        return [0.0] * W.shape[1]
    products = np.asarray(x, dtype=np.float64)[:, None] * W[:len(x)]
    return (np.add.accumulate(products, axis=0)[-1] + 0.0).tolist()


def argmax(xs: Sequence[float]) -> int:
    """Index of the first largest value (ties go to the lower index)."""
    values = list(xs)
    return values.index(max(values))


def feed_forward_and_logits(model: TinyLM, x: Sequence[float], attn: Sequence[float]) -> Vector:
    """Everything after attention: h = x + a Wo;  y = h + relu(h W1) W2;  logits = y Wout."""
    h = [xi + oi for xi, oi in zip(x, vecmat(attn, model.array("Wo")))]
    f = vecmat([max(0.0, t) for t in vecmat(h, model.array("W1"))], model.array("W2"))
    return vecmat([hi + fi for hi, fi in zip(h, f)], model.array("Wout"))


@dataclass
class StepResult:
    logits: Vector
    key: Vector        #: the new token's key row (to append to the cache)
    value: Vector      #: the new token's value row
    attn: Vector       #: the attention output a


def float_step(model: TinyLM, token: int, keys: Sequence[Vector], values: Sequence[Vector]) -> StepResult:
    """One decode step: ``token`` attends to the cached keys/values and to itself.
    The cache is not modified; the caller appends ``key`` and ``value``."""
    x = model.embedding(token)
    q, k, v = vecmat(x, model.array("Wq")), vecmat(x, model.array("Wk")), vecmat(x, model.array("Wv"))
    all_keys = list(keys) + [k]
    all_values = list(values) + [v]
    scores = [dot(q, key) / math.sqrt(D) for key in all_keys]
    top = max(scores)
    weights = [math.exp(s - top) for s in scores]
    total = 0.0
    for w in weights:
        total += w
    attn = []
    for i in range(D):
        acc = 0.0
        for p, w in enumerate(weights):
            acc += w / total * all_values[p][i]
        attn.append(acc)
    return StepResult(feed_forward_and_logits(model, x, attn), k, v, attn)


class FloatKVCache:
    """Keys and values of the tokens seen so far (one row each)."""

    def __init__(self) -> None:
        self.keys: list[Vector] = []
        self.values: list[Vector] = []

    def __len__(self) -> int:
        return len(self.keys)

    def append(self, key: Vector, value: Vector) -> None:
        self.keys.append(key)
        self.values.append(value)


def float_generate(model: TinyLM, start: int, n: int) -> list[int]:
    """Greedy decoding in floating point: ``start`` followed by n generated tokens."""
    tokens = [start]
    cache = FloatKVCache()
    for _ in range(n):
        step = float_step(model, tokens[-1], cache.keys, cache.values)
        cache.append(step.key, step.value)
        tokens.append(argmax(step.logits))
    return tokens


def rule_tokens(start: int, n: int) -> list[int]:
    """``start`` followed by n applications of the structured model's rule."""
    tokens = [start]
    for _ in range(n):
        tokens.append(next_token_rule(tokens[-1]))
    return tokens
