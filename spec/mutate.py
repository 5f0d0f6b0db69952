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
(:mod:`ga2_hdl.mutation`); this module supplies the spec package's mutants and
its judge (the five checks).

The list follows the chapter's nineteen changes: the accept rule, the bonus
token, the cache, the block, the draft chain, the verifier's mask and output
assembly, the float block's mask, and the draft table.
"""
from __future__ import annotations

import itertools
import sys
from pathlib import Path
from types import ModuleType

from ga2_hdl import mutation
from ga2_hdl.mutation import Finding, MutantError, Result

#: the package's modules that the checks load, in dependency order
MODULE_ORDER = ("tiny_lm", "verifier", "draft", "speculative", "graphs", "chip")
PACKAGE_DIR = Path(__file__).resolve().parent


def Mutant(name: str, module: str, old: str, new: str) -> mutation.Mutant:
    """A change to spec/``module``.py: ``old`` (which must occur exactly once) becomes ``new``."""
    return mutation.Mutant(f"spec/{module}.py", old, new, name=name)


def module_of(mutant: mutation.Mutant) -> str:
    return Path(mutant.file).stem


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
)


def apply_mutant(source: str, mutant: mutation.Mutant) -> str:
    return mutation.apply(source, mutant)


def sources(mutant: mutation.Mutant | None = None) -> dict[str, str]:
    """The package's module sources, with ``mutant`` applied."""
    texts = {name: (PACKAGE_DIR / f"{name}.py").read_text() for name in MODULE_ORDER}
    if mutant is not None:
        if module_of(mutant) not in texts or not mutant.file.startswith("spec/"):
            raise MutantError(f"mutant {mutant.name!r}: no module {mutant.file} among {MODULE_ORDER}")
        texts[module_of(mutant)] = apply_mutant(texts[module_of(mutant)], mutant)
    return texts


_fresh_ids = itertools.count()


def load_package_copy(texts: dict[str, str]):
    """Execute the given module sources as a new package; return its modules as SpecModules."""
    from .checks import SpecModules
    package_name = f"_spec_copy_{next(_fresh_ids)}"
    package = ModuleType(package_name)
    package.__path__ = []          # a package, so relative imports resolve inside it
    sys.modules[package_name] = package
    modules = {}
    for name in MODULE_ORDER:
        full_name = f"{package_name}.{name}"
        module = ModuleType(full_name)
        module.__package__ = package_name
        module.__file__ = str(PACKAGE_DIR / f"{name}.py")
        sys.modules[full_name] = module   # dataclasses look their module up while the class is built
        exec(compile(texts[name], f"<spec copy>/{name}.py", "exec"), module.__dict__)
        setattr(package, name, module)
        modules[name] = module
    return SpecModules(modules["tiny_lm"], modules["draft"], modules["verifier"],
                       modules["speculative"], modules["chip"])


def first_problem(mutant: mutation.Mutant | None) -> str | None:
    """Run the checks on a copy of the package with ``mutant`` applied; the first problem
    found (the remaining checks are skipped: one problem is enough to catch a mutant),
    or None if every check passes."""
    from .checks import CHIP_CHECKS, FLOAT_CHECKS
    mods = load_package_copy(sources(mutant))
    for check in FLOAT_CHECKS + CHIP_CHECKS:
        problems = check(mods)
        if problems:
            return f"{check.__name__}: {problems[0]}"
    return None


def judge(mutant: mutation.Mutant | None):
    """The spec package's verdict for the engine: the first check that reports a problem, or None.
    (An exception escaping it is a detection too: the engine counts a crash as caught.)"""
    problem = first_problem(mutant)
    if problem is None:
        return None
    check, _, detail = problem.partition(": ")
    return Finding(check, detail)


def run_mutants(mutants=MUTANTS, jobs: int = 2, timeout: float = 900.0, progress=None,
                baseline: bool = True) -> tuple[bool, str | None, list[Result]]:
    """The unbroken package first (it must pass; ``baseline=False`` skips it when the caller
    has just checked it), then every mutant, ``jobs`` at a time, each in its own child
    process.  Returns (unbroken passes, unbroken problem, results)."""
    for m in mutants:                          # refuse a bad anchor before running anything
        sources(m)
    if baseline:
        [unbroken] = mutation.run_mutants([mutation.Mutant("spec/", "", "", name="unbroken", offset=0)],
                                          lambda _m: judge(None), jobs=1, timeout=timeout)
        if unbroken.status != "survived":
            return False, f"{unbroken.caught_by}: {unbroken.detail}" if unbroken.caught_by else unbroken.detail, []
    results = mutation.run_mutants(list(mutants), judge, jobs=jobs, timeout=timeout,
                                   progress=(lambda _n, r: progress(r)) if progress else None)
    return True, None, results
