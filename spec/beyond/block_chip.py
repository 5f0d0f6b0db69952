"""The host on the chip beyond the chapter: blocks of any size, trees of guesses, sampling heads.

``BlockChip`` compiles, on first use, one program per shape:

* ``linear``: the chapter's verifier (``graphs.verifier_graph``) for any
  (cache length, block length), so that a host can change k from block to block;
* ``tree``: ``tree_graphs.tree_graph`` for a parent list (greedy head);
* ``sample``: ``tree_graph`` of a chain with the sampling head at a temperature
  (a chain of one node is the plain sampling step);
* the bigram draft: the chapter's ``draft_graph`` (greedy, logits) and
  ``sampling_draft_graph`` (probabilities at a temperature).

Calibration does not depend on what the host will do: every shape is
calibrated on the float target's greedy runs from every start token (the cache
is the run's first c tokens, the block the next tokens; a tree's second leg and
a second set of samples take another start's run, so that blocks with wrong
guesses are seen too).  The new key and value rows depend on the token only
(the model has no positions), so their ranges are the maxima over the
vocabulary: one scale for the cache in every program.  The draft is calibrated
on the embedding of every token, all the inputs it can ever get.

Every program executed is logged as a ``chip.ProgramRun``.
"""
from __future__ import annotations

from typing import Sequence

from compiler import compile_graph, execute, ext_image
from ga2_hdl.config import Config

from ..on_chip import ProgramRun, _cache_inputs, _max_abs, float_prefix_cache
from ..graphs import draft_graph, verifier_graph
from ..tiny_lm import V, Matrix, TinyLM, float_generate, vecmat
from .tree_graphs import chain_parents, sampling_draft_graph, tree_graph, tree_layout

#: the second calibration sample of a shape takes its block from the run of start (s + OTHER_START) mod V
OTHER_START = 7


class BlockChip:
    def __init__(self, model: TinyLM, Wd: Matrix | None, n: int, depth: int = 8, *, config: Config):
        """``n``: the longest context the host will reach without the block; ``depth``: the deepest
        block (rows) it will verify.  Shapes beyond n + depth are refused.  Every program is compiled
        for the chip ``config`` and runs on its golden model."""
        self.model, self.Wd, self.n, self.depth = model, Wd, n, depth
        self.config = config
        self.runs = {s: float_generate(model, s, n + 2 * depth + 2) for s in range(V)}
        self.ranges = {"x": _max_abs(model.E),
                       "k": _max_abs(vecmat(e, model.Wk) for e in model.E),
                       "v": _max_abs(vecmat(e, model.Wv) for e in model.E)}
        self.programs: dict[tuple, object] = {}
        self.log: list[ProgramRun] = []
        self._prefix_cache: dict[tuple[int, int], tuple] = {}

    def use_draft(self, Wd: Matrix | None) -> "BlockChip":
        """Swap the draft matrix (the target's programs are kept; the draft's are recompiled)."""
        self.Wd = Wd
        for key in [key for key in self.programs if key[0] == "draft"]:
            del self.programs[key]
        return self

    # ------------------------------------------------------------------ calibration
    def _prefix(self, start: int, c: int):
        key = (start, c)
        if key not in self._prefix_cache:
            self._prefix_cache[key] = float_prefix_cache(self.model, self.runs[start][:c])
        return self._prefix_cache[key]

    def _samples(self, c: int, rows_of) -> list[dict]:
        """One sample per start and per (own, other) block: rows_of(own run tail, other run tail)
        gives the block's tokens in row order."""
        if c + self.depth > self.n + 2 * self.depth:
            raise ValueError(f"no calibration for a cache of {c} rows (calibrated up to {self.n + self.depth})")
        samples = []
        for s in range(V):
            keys, values = self._prefix(s, c)
            own = self.runs[s][c:]
            other = self.runs[(s + OTHER_START) % V][c:]
            for tail_a, tail_b in ((own, other), (other, own)):
                tokens = rows_of(tail_a, tail_b)
                samples.append(_cache_inputs({"x": [list(self.model.embedding(t)) for t in tokens]}, keys, values))
        return samples

    def _compile(self, key, graph, samples):
        if key not in self.programs:
            self.programs[key] = compile_graph(graph, samples, ranges=self.ranges, config=self.config)
        return self.programs[key]

    def linear_program(self, c: int, m: int):
        key = ("linear", c, m)
        if key in self.programs:
            return self.programs[key]
        return self._compile(key, verifier_graph(self.model, m, c), self._samples(c, lambda a, b: a[:1] + b[1:m]))

    def _tree_rows(self, parents, c):
        layout = tree_layout(parents, c)

        depth = [0] * len(parents)
        for i, p in enumerate(parents[1:], 1):
            depth[i] = depth[p] + 1
        second_leg = set(layout.order[layout.left:])

        def rows_of(a, b):
            # the root and the first leg from one run, the second leg from another (shifted)
            return [(b[depth[i]] + i) % V if i in second_leg else a[depth[i]] for i in layout.order]
        return layout, rows_of

    def tree_program(self, parents: Sequence[int], c: int, temperature: float | None = None):
        parents = tuple(parents)
        key = ("tree", parents, c, temperature)
        if key in self.programs:
            return self.programs[key]
        layout, rows_of = self._tree_rows(parents, c)
        return self._compile(key, tree_graph(self.model, parents, c, temperature), self._samples(c, rows_of))

    def draft_program(self, temperature: float | None = None):
        key = ("draft", temperature)
        if self.Wd is None:
            raise ValueError("this chip has no draft matrix")
        graph = draft_graph(self.Wd) if temperature is None else sampling_draft_graph(self.Wd, temperature)
        return self._compile(key, graph, [{"x": [list(e)]} for e in self.model.E])

    # ------------------------------------------------------------------ running
    def _run(self, kind: str, program, inputs: dict, shape: tuple):
        out, golden = execute(program, inputs)
        self.log.append(ProgramRun(kind, program.code, ext_image(program, inputs), shape,
                                   golden.counters, config=self.config))
        return out

    def verify_linear(self, c: int, block: list[int], keys, values):
        """The chapter's verifier for any (c, m): (choices, new keys, new values)."""
        program = self.linear_program(c, len(block))
        inputs = _cache_inputs({"x": [list(self.model.embedding(t)) for t in block]}, keys, values)
        out = self._run("verify", program, inputs, (c, len(block)))
        return ([row[0] for row in out["tok"][0]], [list(r) for r in out["k_new"][1]],
                [list(r) for r in out["v_new"][1]])

    def _tree_run(self, kind, parents, c, tokens, keys, values, temperature):
        parents = tuple(parents)
        layout = tree_layout(parents, c)
        if len(tokens) != len(parents):
            raise ValueError(f"{len(tokens)} tokens for a tree of {len(parents)} nodes")
        program = self.tree_program(parents, c, temperature)
        inputs = _cache_inputs({"x": [list(self.model.embedding(tokens[i])) for i in layout.order]}, keys, values)
        out = self._run(kind, program, inputs, (c, len(parents)))
        new_k = [list(r) for r in out["k_left"][1]] + ([list(r) for r in out["k_right"][1]] if layout.right else [])
        new_v = [list(r) for r in out["v_left"][1]] + ([list(r) for r in out["v_right"][1]] if layout.right else [])
        row_of = {node: r for r, node in enumerate(layout.order)}
        node_rows = [row_of[i] for i in range(len(parents))]
        return out, node_rows, [new_k[r] for r in node_rows], [new_v[r] for r in node_rows]

    def verify_tree(self, parents, c: int, tokens: Sequence[int], keys, values):
        """The target's greedy choice after every node (node order), and the nodes' key and value rows."""
        out, rows, new_k, new_v = self._tree_run("tree", parents, c, tokens, keys, values, None)
        return [out["tok"][0][r][0] for r in rows], new_k, new_v

    def sample_block(self, c: int, block: list[int], keys, values, temperature: float):
        """The target's distributions (integers) after every row of a linear block, and its k, v rows."""
        out, rows, new_k, new_v = self._tree_run("sample", chain_parents(len(block) - 1), c, block, keys, values,
                                                 temperature)
        return [list(out["probs"][0][r]) for r in rows], new_k, new_v

    def draft_guess(self, token: int) -> tuple[int, list[int]]:
        """The draft program after ``token``: its greedy guess and its integer logits."""
        out = self._run("draft", self.draft_program(), {"x": [list(self.model.embedding(token))]}, ())
        return out["tok"][0][0][0], list(out["logits"][0][0])

    def draft_probs(self, token: int, temperature: float) -> list[int]:
        out = self._run("draft", self.draft_program(temperature), {"x": [list(self.model.embedding(token))]}, ())
        return list(out["probs"][0][0])


def top_two(logits: Sequence[int]) -> tuple[int, int]:
    """The largest and the second largest entries' indices (ties to the lower index)."""
    order = sorted(range(len(logits)), key=lambda i: (-logits[i], i))
    return order[0], order[1]
