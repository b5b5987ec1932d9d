"""Which hidden tests can see a change to one function of the reference.

A variant of the reference (a catalogued mistake, a mutant) changes one function or method.
A test whose calls never ran that function gives the variant the reference's own result, so
``check`` need not run it: mutmut and cosmic-ray select a mutant's tests by coverage the same
way. Here coverage is what the worker already records for feedback: every function and
method of the student's module is wrapped to note its name when it runs
(``sandbox/runner/calls.py``), and each test's result keeps the names its calls ran
(``TestResult.ran``).

Those names say everything only when the function's code can run in no other way, so
``traceable`` accepts a function only when the reference's source shows that:

- it is a plain ``def``, undecorated, in an undecorated class for a method: the worker wraps
  only plain functions, and a decorator could run its code by another name;
- no code outside a function body names it (an alias ``g = f``, a default argument, a class
  attribute, a dispatch table) or calls a function of the module at import time: there its
  code would run, or be reached, unrecorded;
- it declares nothing ``global`` or ``nonlocal``: a write to module state would reach tests
  that never call it.

The selection assumes, as the suites do, that each test builds its inputs afresh (its rng is
seeded by its name), so no test depends on what an earlier test left in the worker.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from autograder.result import TestResult

FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def traceable(source: str, name: str) -> bool:
    """Whether ``name`` ("f" or "Class.method") in ``source`` runs only where the worker's
    record of what ran can see it (see the module docstring)."""
    tree = ast.parse(source)
    owner, _, short = name.rpartition(".")
    defined = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    scope: list[ast.stmt] = tree.body
    if owner:
        cls = defined.get(owner)
        if not isinstance(cls, ast.ClassDef) or cls.decorator_list:
            return False
        scope = cls.body
    node = next((n for n in scope if isinstance(n, ast.FunctionDef) and n.name == short), None)
    if node is None or node.decorator_list:
        return False
    if any(isinstance(n, ast.Global | ast.Nonlocal) for n in ast.walk(node)):
        return False
    outside = list(outside_functions(tree))
    named = any(
        (isinstance(n, ast.Name) and n.id == short)
        or (isinstance(n, ast.Attribute) and n.attr == short)
        for n in outside
    )
    calls_own = any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in defined
        for n in outside
    )
    return not named and not calls_own


def outside_functions(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node that runs when the module is imported: all but the bodies of functions (their
    decorators and default values do run)."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, FUNCTION_NODES):
            if not isinstance(child, ast.Lambda):
                yield from (d for n in child.decorator_list for d in ast.walk(n))
            yield from (d for n in child.args.defaults for d in ast.walk(n))
            yield from (d for n in child.args.kw_defaults if n is not None for d in ast.walk(n))
            continue
        yield child
        yield from outside_functions(child)


def unseen(reference: list[TestResult], name: str, source: str) -> dict[str, TestResult]:
    """The reference's passed tests that never ran ``name``, by id: a variant that changes
    only ``name`` gets these results without running them. None when ``name`` is not
    ``traceable``, or when a test recorded nothing of what ran (an old result)."""
    if not traceable(source, name):
        return {}
    return {t.id: t for t in reference if t.passed and t.ran and name not in t.ran}
