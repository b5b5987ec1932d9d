"""Synthetic students made from one source: the same code in other words and another layout.

``restyled`` renames a module's local variables (never a parameter or a top-level name, which
the API fixes) and lays it out again; ``reordered`` puts its functions in another order.
Tests of the class analyses (test_insight.py, benchmarks/bench_similarity.py) use them to
make students who share a bug, or copy each other, without sharing text.
"""

from __future__ import annotations

import ast
import random
import re


class _Rename(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.names.get(node.id, node.id)
        return node


def local_names(source: str) -> set[str]:
    """Names the module's functions assign that are neither parameters nor top-level."""
    tree = ast.parse(source)
    params = {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
    top = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    top |= {
        t.id
        for n in tree.body
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    stored = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    keywords = {k.arg for k in ast.walk(tree) if isinstance(k, ast.keyword) and k.arg}
    return stored - params - top - keywords  # a keyword argument's name is the API's


def restyled(source: str, tag: str, layout: int = 0) -> str:
    """``source`` with every local variable renamed (``scores`` -> ``scores_tag``), laid out
    by ``ast.unparse`` (layout 0: comments and docstring layout gone), or textually renamed
    with comments and blank lines added (layout 1), or with spaces around operators changed
    (layout 2)."""
    names = {n: f"{n}_{tag}" for n in local_names(source)}
    if layout == 0:
        return ast.unparse(_Rename(names).visit(ast.parse(source))) + "\n"
    text = source
    for old, new in names.items():
        text = re.sub(rf"(?<![.\w]){re.escape(old)}\b", new, text)
    if layout == 1:
        return text.replace("\n    return ", "\n    # my result\n\n    return ")
    return re.sub(r" @ ", "@", text).replace(", ", " , ")


def reordered(source: str, rng: random.Random) -> str:
    """``source`` with its top-level functions in another order, text otherwise unchanged."""
    tree = ast.parse(source)
    lines = source.splitlines()
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    rest = [n for n in tree.body if n not in defs]

    def text(node: ast.stmt) -> str:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        return "\n".join(lines[first - 1 : node.end_lineno])

    order = defs[:]
    while len(order) > 1 and order == defs:
        rng.shuffle(order)
    return "\n".join(map(text, rest)) + "\n\n\n" + "\n\n\n".join(map(text, order)) + "\n"
