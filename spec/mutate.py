"""Test the tests: break copies of the spec package one line at a time and see the checks notice.

Each mutant is a text substitution in the source of one module of ``spec``
(it must match exactly once, or the runner refuses it).  The package is then
loaded afresh from the changed sources under a private package name, so the
installed ``spec`` is never touched and every other module sees the broken
one (the chip's host loop calls the broken ``speculate``, and so on).  The
five checks of ``spec.checks`` run against the copy in a child process; the
mutant is *caught* if a check reports a problem, the code raises, or the run
exceeds its time limit.

The mutants and the run are the project's one mutation engine
(:mod:`ga2_hdl.support.mutation`); this module supplies the spec package's mutants and
its judge (the five checks).

The list follows the chapter's nineteen changes: the accept rule, the bonus
token, the cache, the block, the draft chain, the verifier's mask and output
assembly, the float block's mask, and the draft table; then the work beyond
the chapter (``spec.beyond.checks``): speculative sampling, the tree of
guesses, the n-gram and trigram drafts, adaptive k.
"""
from __future__ import annotations

import itertools
import sys
from pathlib import Path
from types import ModuleType

from ga2_hdl.support import mutation
from ga2_hdl.config import Config
from ga2_hdl.support.mutation import Finding, MutantError, Result
from ga2_hdl.support.reporter import Reporter

#: the package's modules that the checks load, in dependency order
MODULE_ORDER = ("tiny_lm", "verifier", "draft", "speculative", "graphs", "on_chip", "beyond.sampling",
                "beyond.tree_graphs", "beyond.block_chip", "beyond.host", "beyond.runs")
PACKAGE_DIR = Path(__file__).resolve().parent


def Mutant(name: str, module: str, old: str, new: str, equivalent: str = "") -> mutation.Mutant:
    """A change to the module ``module`` of spec (dotted below spec, as ``beyond.host``): ``old``
    (which must occur exactly once) becomes ``new``; ``equivalent``: the written argument when the
    change is claimed not to alter behaviour."""
    return mutation.Mutant(f"spec/{module.replace('.', '/')}.py", old, new, name=name, equivalent=equivalent)


def module_of(mutant: mutation.Mutant) -> str:
    """The mutated module, dotted below spec (``spec/beyond/host.py`` -> ``beyond.host``)."""
    return Path(mutant.file).with_suffix("").as_posix().removeprefix("spec/").replace("/", ".")


MUTANTS: tuple[Mutant, ...] = (
    Mutant("accept rule: one more guess is accepted than agreed", "speculative",
           "        tokens += guesses[:agreed] + [choices[agreed]]",
           "        agreed = min(k, agreed + 1)\n        tokens += guesses[:agreed] + [choices[agreed]]"),
    Mutant("accept rule: the first guess is not checked", "speculative",
           "        agreed = 0\n",
           "        agreed = 1 if k > 1 and guesses[0] != choices[0] else 0\n"),
    Mutant("accept rule: guess i is compared with the target's choice after row i+1", "speculative",
           "guesses[agreed] == choices[agreed]:", "guesses[agreed] == choices[agreed + 1]:"),
    Mutant("accept rule: acceptance stops at the first agreement, not the first disagreement", "speculative",
           "guesses[agreed] == choices[agreed]:", "guesses[agreed] != choices[agreed]:"),
    Mutant("bonus token: the draft's token is kept instead of the target's", "speculative",
           "tokens += guesses[:agreed] + [choices[agreed]]",
           "tokens += guesses[:agreed] + [guesses[agreed] if agreed < k else choices[agreed]]"),
    Mutant("bonus token: taken from the previous row", "speculative",
           "tokens += guesses[:agreed] + [choices[agreed]]",
           "tokens += guesses[:agreed] + [choices[max(0, agreed - 1)]]"),
    Mutant("bonus token: not appended", "speculative",
           "tokens += guesses[:agreed] + [choices[agreed]]",
           "tokens += guesses[:agreed] + ([choices[agreed]] if agreed == 0 else [])"),
    Mutant("cache: the rows of rejected guesses are kept", "speculative",
           "new_keys[:agreed + 1]]\n        values += [list(r) for r in new_values[:agreed + 1]]",
           "new_keys]\n        values += [list(r) for r in new_values]"),
    Mutant("cache: the row of the bonus token's input is dropped", "speculative",
           "new_keys[:agreed + 1]]\n        values += [list(r) for r in new_values[:agreed + 1]]",
           "new_keys[:max(1, agreed)]]\n        values += [list(r) for r in new_values[:max(1, agreed)]]"),
    Mutant("cache: values and keys swapped", "speculative",
           "new_keys[:agreed + 1]]\n        values += [list(r) for r in new_values[:agreed + 1]]",
           "new_values[:agreed + 1]]\n        values += [list(r) for r in new_keys[:agreed + 1]]"),
    Mutant("block: the last committed token is left out of the block", "speculative",
           "block = [tokens[-1]] + guesses", "block = guesses + [tokens[-1]]"),
    Mutant("draft chain: every guess is made from the committed token, not the previous guess", "speculative",
           "guess = draft(guess)", "guess = draft(tokens[-1])"),
    Mutant("verifier mask: a row may see one later row", "graphs",
           "visible = cache_len + row + 1", "visible = min(cache_len + block_len, cache_len + row + 2)"),
    Mutant("verifier mask: a row cannot see itself", "graphs",
           "visible = cache_len + row + 1", "visible = max(1, cache_len + row)"),
    Mutant("verifier mask: keys see the prefix but values see everything", "graphs",
           "g.slice_rows(values, 0, visible)", "g.slice_rows(values, 0, cache_len + block_len)"),
    Mutant("verifier: the query of row i is row 0's", "graphs",
           "g.slice_rows(q, row, 1)", "g.slice_rows(q, 0, 1)"),
    Mutant("verifier: the rows of the attention output are concatenated in reverse", "graphs",
           "g.concat_rows(stacked, row_out)", "g.concat_rows(row_out, stacked)"),
    Mutant("verifier float block: the mask lets row i see the whole block", "verifier",
           "j <= cache_len + i for j", "j <= cache_len + block_len - 1 for j"),
    Mutant("draft table: the rule's next token is f(t)+1", "draft",
           "table[t][next_token_rule(t)] = RULE_LOGIT", "table[t][(next_token_rule(t) + 1) % V] = RULE_LOGIT"),
    # ---- beyond the chapter: speculative sampling (spec/beyond/sampling.py)
    Mutant("sampling: a guess is accepted with probability min(1, q/p) instead of min(1, p/q)", "beyond.sampling",
           "a, b = p[x] * sq, q[x] * sp", "a, b = q[x] * sp, p[x] * sq"),
    Mutant("sampling: every guess the target gives some mass is accepted", "beyond.sampling",
           "return (1, 0) if a >= b else (a, b - a)", "return (1, 0) if a > 0 else (a, b - a)"),
    Mutant("sampling: on rejection the token is drawn from p, not from max(0, p - q)", "beyond.sampling",
           "chooser.choose(residual(ps[i], qs[i]))", "chooser.choose(ps[i])"),
    Mutant("sampling: the residual is max(0, q - p)", "beyond.sampling",
           "max(0, pi * sq - qi * sp)", "max(0, qi * sp - pi * sq)"),
    Mutant("sampling: the bonus token is drawn from the last guess's row, not the row after it", "beyond.sampling",
           "guesses + [chooser.choose(ps[k])]", "guesses + [chooser.choose(ps[k - 1])]"),
    Mutant("sampling: guess i is judged by the target's row after guess i", "beyond.sampling",
           "accept_weights(ps[i], qs[i], x)", "accept_weights(ps[i + 1], qs[i], x)"),
    Mutant("sampling: every guess is drafted from the committed token", "beyond.sampling",
           "q = list(draft(token))", "q = list(draft(last))"),
    Mutant("sampling: the cache keeps one row more than the committed inputs", "beyond.sampling",
           "keys += [list(r) for r in rows[\"k\"][:out.accepted + 1]]",
           "keys += [list(r) for r in rows[\"k\"][:out.accepted + 2]]"),
    Mutant("sampling: the seeded chooser gives the boundary value to the wrong token", "beyond.sampling",
           "            if r < w:\n                return i", "            if r <= w:\n                return i"),
    Mutant("sampling: greedy (temperature 0) takes the first choice for every row", "beyond.runs",
           "return [one_hot(t, V) for t in choices], nk, nv", "return [one_hot(choices[0], V) for t in choices], nk, nv"),
    Mutant("sampling head: the target's probabilities are requantized to int8, not the unit's Q0.16 words",
           "beyond.tree_graphs", "weight(\"Wout\"), scale=1.0 / temperature), q16=True)",
           "weight(\"Wout\"), scale=1.0 / temperature), q16=False)"),
    Mutant("sampling draft: its probabilities are requantized to int8, not the unit's Q0.16 words",
           "beyond.tree_graphs", "scale=1.0 / temperature), q16=True), \"probs\")\n    return g",
           "scale=1.0 / temperature), q16=False), \"probs\")\n    return g"),
    Mutant("sampling head: the temperature is ignored", "beyond.tree_graphs",
           "weight(\"Wout\"), scale=1.0 / temperature)", "weight(\"Wout\"), scale=1.0)"),
    # ---- trees of guesses (spec/beyond/tree_graphs.py, spec/beyond/block_chip.py, spec/beyond/host.py)
    Mutant("tree layout: leg 0 is not reversed left of the root", "beyond.tree_graphs",
           "order = tuple(reversed(leg0)) + (0,) + tuple(leg1)", "order = tuple(leg0) + (0,) + tuple(leg1)"),
    Mutant("tree mask: every row but the first sees one key more, left of its run", "beyond.tree_graphs",
           "for row, (lo, hi) in enumerate(layout.visible):",
           "for row, (lo, hi) in enumerate((max(0, a - 1), b) for a, b in layout.visible):"),
    Mutant("tree: the query of every row is the first row's", "beyond.tree_graphs",
           "_attend(g, g.slice_rows(q, row, 1)", "_attend(g, g.slice_rows(q, 0, 1)"),
    Mutant("tree: the new values are computed with the key weights", "beyond.tree_graphs",
           "v_left, v_right = _split_product(g, x, wv, layout, \"v\")",
           "v_left, v_right = _split_product(g, x, wk, layout, \"v\")"),
    Mutant("tree: the cache is laid out before the left rows", "beyond.tree_graphs",
           "g.tag(g.concat_rows(left, tail), tag)", "g.tag(g.concat_rows(tail, left), tag)"),
    # Reading the rows back through the inverse permutation is harmless for trees numbered leg by leg
    # (two_leg_tree's: their layout, one leg reversed, the root, the other leg, is its own inverse);
    # tree_mask_on_chip also verifies a tree numbered level by level, where it is not.
    Mutant("tree host: rows mapped to nodes through the inverse of the layout", "beyond.block_chip",
           "row_of = {node: r for r, node in enumerate(layout.order)}",
           "row_of = {r: node for r, node in enumerate(layout.order)}"),
    Mutant("tree host: the rows read back in layout order, not node order", "beyond.block_chip",
           "node_rows = [row_of[i] for i in range(len(parents))]", "node_rows = list(range(len(parents)))"),
    Mutant("tree draft: the second leg starts with the third best guess", "beyond.block_chip",
           "return order[0], order[1]", "return order[0], order[2]"),
    Mutant("tree accept: a node is judged by the target's choice after itself, not after its parent", "beyond.host",
           "tokens[c] == choices[node]]", "tokens[c] == choices[c]]"),
    Mutant("tree accept: the free token is the choice after the root, not after the path's last node",
           "beyond.host", "[node_tokens[i] for i in path] + [choices[last]]",
           "[node_tokens[i] for i in path] + [choices[0]]"),
    Mutant("tree cache: the first rows are kept, not the path's", "beyond.host",
           "keys += [list(nk[i]) for i in [0] + path]", "keys += [list(nk[i]) for i in range(len(path) + 1)]"),
    # ---- drafts without weights and adaptive k (spec/beyond/host.py)
    Mutant("n-gram draft: proposes the last token of the match, not the one after it", "beyond.host",
           "return tokens[j + size]", "return tokens[j + size - 1]"),
    Mutant("n-gram draft: looks up only the last token", "beyond.host",
           "for size in range(min(max_n, L - 1), 0, -1):", "for size in range(1, 0, -1):"),
    Mutant("trigram draft: the pair's table is ignored", "beyond.host",
           "if len(pair) == 2 and pair in self.table:", "if False:"),
    Mutant("linear blocks: one more guess is accepted than agreed", "beyond.host",
           "        tokens += guesses[:agreed] + [choices[agreed]]",
           "        agreed = min(len(guesses), agreed + 1)\n        tokens += guesses[:agreed] + [choices[agreed]]"),
    Mutant("adaptive k: unexamined guesses are counted as rejected", "beyond.host",
           "for j in range(min(k, accepted + 1)):", "for j in range(k):"),
    Mutant("adaptive k: k may reach the tokens still wanted", "beyond.host",
           "limit = min(self.k_max, r - 1)", "limit = min(self.k_max, r)"),
    Mutant("adaptive k: k may exceed the tokens still wanted minus one, up to K_MAX", "beyond.host",
           "limit = min(self.k_max, r - 1)", "limit = self.k_max"),
    Mutant("adaptive k: the per-token counts are ignored", "beyond.host",
           "return ((self.token_successes.get(token, 0) + w * self.acceptance)",
           "return ((0 + w * self.acceptance)"),
    Mutant("adaptive k: the cheapest block is picked regardless of its gain", "beyond.host",
           "c = self._block_cost(cost[k], accept, F, r)", "c = cost[k]"),
    Mutant("adaptive k: the optimistic prior of before (3 successes, 1 failure), not the neutral one",
           "beyond.host", "GLOBAL_PRIOR = (1.0, 1.0)", "GLOBAL_PRIOR = (3.0, 1.0)"),
    Mutant("adaptive k: the overall rate counts for two observations in a token's rate", "beyond.host",
           "TOKEN_PRIOR_WEIGHT = 1.0", "TOKEN_PRIOR_WEIGHT = 2.0"),
    Mutant("adaptive k: a plain step even after a token whose guesses were never judged", "beyond.host",
           "lowest = 0 if self.token_trials.get(inputs[0], 0) else 1", "lowest = 0"),
    Mutant("adaptive k: never a plain step (k >= 1 as before)", "beyond.host",
           "lowest = 0 if self.token_trials.get(inputs[0], 0) else 1", "lowest = 1"),
    Mutant("adaptive k: the block's cost read at half the tokens wanted, not at the cache it is at",
           "beyond.host", "cost = self._cost_at(done)", "cost = self._cost_at(n // 2)"),
    Mutant("adaptive k: the rest's expected cycles read every cost at the current cache", "beyond.host",
           "cost = self._cost_at(n - r)", "cost = self._cost_at(n - remaining)"),
    Mutant("adaptive k: the rest's expected cycles never take a plain step", "beyond.host",
           "for k in range(0, min(self.k_max, r - 1) + 1))", "for k in range(1, max(1, min(self.k_max, r - 1)) + 1))"),
    Mutant("adaptive k: the last token wanted is verified with one guess", "beyond.host",
           "            return limit\n", "            return 1\n"),
)


def apply_mutant(source: str, mutant: mutation.Mutant) -> str:
    return mutation.apply(source, mutant)


def sources(mutant: mutation.Mutant | None = None) -> dict[str, str]:
    """The package's module sources, with ``mutant`` applied."""
    texts = {name: _path_of(name).read_text() for name in MODULE_ORDER}
    if mutant is not None:
        if module_of(mutant) not in texts or not mutant.file.startswith("spec/"):
            raise MutantError(f"mutant {mutant.name!r}: no module {mutant.file} among {MODULE_ORDER}")
        texts[module_of(mutant)] = apply_mutant(texts[module_of(mutant)], mutant)
    return texts


def _path_of(name: str) -> Path:
    return PACKAGE_DIR.joinpath(*name.split(".")).with_suffix(".py")


_fresh_ids = itertools.count()


def load_package_copy(texts: dict[str, str], *, config: Config):
    """Execute the given module sources as a new package; return its modules as SpecModules (the
    chip checks on the chip ``config``)."""
    from .checks import SpecModules
    modules = load_modules_copy(texts)
    return SpecModules(modules["tiny_lm"], modules["draft"], modules["verifier"],
                       modules["speculative"], modules["on_chip"], config=config)


def load_modules_copy(texts: dict[str, str]) -> dict[str, ModuleType]:
    """Execute the given module sources as a new package; return its modules by name."""
    package_name = f"_spec_copy_{next(_fresh_ids)}"
    package = ModuleType(package_name)
    package.__path__ = []          # a package, so relative imports resolve inside it
    sys.modules[package_name] = package
    modules = {}
    for name in MODULE_ORDER:
        parent = package
        for sub in name.split(".")[:-1]:          # a subpackage (spec.beyond): an empty package of the copy
            if not hasattr(parent, sub):
                child = ModuleType(f"{parent.__name__}.{sub}")
                child.__path__ = []
                child.__package__ = child.__name__
                sys.modules[child.__name__] = child
                setattr(parent, sub, child)
            parent = getattr(parent, sub)
        full_name = f"{package_name}.{name}"
        module = ModuleType(full_name)
        module.__package__ = parent.__name__
        module.__file__ = str(_path_of(name))
        sys.modules[full_name] = module   # dataclasses look their module up while the class is built
        exec(compile(texts[name], f"<spec copy>/{name.replace('.', '/')}.py", "exec"), module.__dict__)
        setattr(parent, name.rsplit(".", 1)[-1], module)
        modules[name] = module
    return modules


def first_problem(mutant: mutation.Mutant | None, config: Config) -> str | None:
    """Run the checks on a copy of the package with ``mutant`` applied, the chip checks compiling
    for and running on the chip ``config``; the first problem found (the remaining checks are
    skipped: one problem is enough to catch a mutant), or None if every check passes."""
    from .beyond.checks import BEYOND_CHECKS, BEYOND_MODULE_NAMES, BeyondModules
    from .checks import CHIP_CHECKS, FLOAT_CHECKS, SpecModules
    modules = load_modules_copy(sources(mutant))
    mods = SpecModules(modules["tiny_lm"], modules["draft"], modules["verifier"], modules["speculative"],
                       modules["on_chip"], config=config)
    beyond = BeyondModules(modules["tiny_lm"], modules["draft"], modules["on_chip"],
                           *(modules[name] for name in BEYOND_MODULE_NAMES), config=config)
    for check, arg in [(c, mods) for c in FLOAT_CHECKS + CHIP_CHECKS] + [(c, beyond) for c in BEYOND_CHECKS]:
        problems = check(arg)
        if problems:
            return f"{check.__name__}: {problems[0]}"
    return None


def judge(mutant: mutation.Mutant | None, config: Config):
    """The spec package's verdict for the engine: the first check that reports a problem (on the chip
    ``config``), or None.  (An exception escaping it is a detection too: the engine counts a crash as
    caught.)"""
    problem = first_problem(mutant, config)
    if problem is None:
        return None
    check, _, detail = problem.partition(": ")
    return Finding(check, detail)


def run_mutants(mutants=MUTANTS, jobs: int = 2, timeout: float = 900.0, reporter: Reporter | None = None,
                baseline: bool = True, *, config: Config) -> tuple[bool, str | None, list[Result]]:
    """The unbroken package first (it must pass; ``baseline=False`` skips it when the caller
    has just checked it), then every mutant, ``jobs`` at a time, each in its own child
    process, the chip checks on the chip ``config``.  Returns
    (unbroken passes, unbroken problem, results)."""
    for m in mutants:                          # refuse a bad anchor before running anything
        sources(m)
    if baseline:
        [unbroken] = mutation.run_mutants([mutation.Mutant("spec/", "", "", name="unbroken", offset=0)],
                                          lambda _m: judge(None, config), jobs=1, timeout=timeout)
        if unbroken.status != "survived":
            return False, f"{unbroken.caught_by}: {unbroken.detail}" if unbroken.caught_by else unbroken.detail, []
    results = mutation.run_mutants(list(mutants), lambda m: judge(m, config), jobs=jobs, timeout=timeout,
                                   reporter=reporter)
    return True, None, results
