""" "Also correct" forms that the engine makes from the reference, not a suite author by hand.

A hand-written catalogue of correct forms shares the blind spots of the suite it validates.
These forms are the reference itself, changed only in ways the handout leaves free, so any
point one of them loses is a test asking for more than the handout promises:

- ``read_only_state``: every attribute a class sets on ``self`` becomes a read-only property
  over a private name, except those the handout lets a caller set (suite.yaml's
  ``settable``). A test that writes ``cache.keys = ...`` then fails on it.
- ``in_float32``: the reference run in float32 where the handout allows it (suite.yaml's
  ``float32``): float inputs cast to float32, arrays it creates made float32, its state and
  results kept in float32. A tolerance too tight for float32 then fails on it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TypeGuard


@dataclass(frozen=True)
class Form:
    name: str  # "read-only state", ...
    source: str  # the whole module, changed


def read_only_state(source: str, settable: dict[str, list[str]]) -> list[Form]:
    """The module with the state of every class kept private and exposed read-only."""
    tree = ast.parse(source)
    changed = False
    for cls in [n for n in tree.body if isinstance(n, ast.ClassDef)]:
        hidden = state_of(cls) - set(settable.get(cls.name, []))
        if not hidden:
            continue
        for node in ast.walk(cls):
            if is_self_attribute(node) and node.attr in hidden:
                node.attr = f"_{node.attr}"
        cls.body += [read_only_property(name) for name in sorted(hidden)]
        changed = True
    if not changed:
        return []
    return [Form("read-only state", ast.unparse(ast.fix_missing_locations(tree)) + "\n")]


CREATORS = ("zeros", "ones", "full", "empty")
FLOAT32_WRAPPER = """

import functools as _functools


def _float32(value):
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return value.astype(np.float32)
    if isinstance(value, tuple):
        return tuple(_float32(v) for v in value)
    return value


def _in_float32(function):
    @_functools.wraps(function)
    def wrapped(*args, **kwargs):
        args = [_float32(a) for a in args]
        result = _float32(function(*args, **{k: _float32(v) for k, v in kwargs.items()}))
        state = getattr(args[0], "__dict__", None) if args else None
        for name, value in (state or {}).copy().items():
            state[name] = _float32(value)
        return result

    return wrapped
"""


def in_float32(source: str) -> list[Form]:
    """The module with every function and method run in float32 (see the module's doc)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in CREATORS
            and not any(k.arg == "dtype" for k in node.keywords)
        ):
            node.keywords.append(ast.keyword("dtype", ast.parse("np.float32", mode="eval").body))
    wrap = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            wrap.append(f"{node.name} = _in_float32({node.name})")
        elif isinstance(node, ast.ClassDef):
            wrap += [
                f"{node.name}.{m.name} = _in_float32({node.name}.{m.name})"
                for m in node.body
                if isinstance(m, ast.FunctionDef)
            ]
    if not wrap:
        return []
    text = ast.unparse(ast.fix_missing_locations(tree)) + FLOAT32_WRAPPER + "\n".join(wrap)
    return [Form("float32", text + "\n")]


def state_of(cls: ast.ClassDef) -> set[str]:
    """The public attributes the class's methods assign on ``self``."""
    return {
        node.attr
        for node in ast.walk(cls)
        if is_self_attribute(node)
        and isinstance(node.ctx, ast.Store)
        and not node.attr.startswith("_")
    }


def is_self_attribute(node: ast.AST) -> TypeGuard[ast.Attribute]:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def read_only_property(name: str) -> ast.stmt:
    """``name = property(lambda self: self._name)``: readable, and setting it raises."""
    return ast.parse(f"{name} = property(lambda self: self._{name})").body[0]
