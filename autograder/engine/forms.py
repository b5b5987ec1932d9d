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
- ``state_as_lists``: an attribute the reference grows by joining arrays (``self.keys =
  np.concatenate([self.keys, k], axis=1)``) kept instead as a list of the pieces, joined
  only when read, where the handout fixes no storage for it. Only the names the handout
  mentions stay readable. A test that reads storage the handout does not promise then
  fails on it.
"""

from __future__ import annotations

import ast
import re
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


# -- state as lists ---------------------------------------------------------------------------

# The numpy calls that grow an array by joining pieces to it. Each regroups: joining the
# pieces one at a time gives what joining them all at once does, so the form may join late.
JOINS = ("concatenate", "vstack", "hstack", "append")
# What would write into the array read from the attribute: with the form that array is a
# fresh join, so the write would be lost, and the class cannot be split safely.
IN_PLACE_METHODS = frozenset(
    {"fill", "sort", "resize", "put", "itemset", "partition", "setfield", "setflags", "byteswap"}
)
WRITING_FUNCTIONS = frozenset({"copyto", "put", "place", "putmask", "fill_diagonal", "at"})
# A handout sentence that names the attribute and says one of these fixes its storage: its
# type, or that it is one object a caller may write into.
FIXES_STORAGE = re.compile(
    r"in[- ]place|preallocat|\bbuffer|\bsame (array|object)\b|\bviews?\b|\bstored (as|in)\b"
    r"|__dict__|\b(is|are) (a |an )?(np\.ndarray|ndarray|numpy array|list|tuple|deque)",
    re.IGNORECASE,
)
SENTENCE_END = re.compile(r"[.!?](?=\s)|\n\s*\n|\|")


def state_as_lists(
    source: str, handout: str = "", settable: dict[str, list[str]] | None = None
) -> list[Form]:
    """The module with every attribute that a class grows by joining arrays kept as a list
    of the pieces (see the module's doc). ``handout`` is the README; the class's own
    docstrings are read too. Nothing for a class it cannot change safely."""
    tree = ast.parse(source)
    settable = settable or {}
    plans = []  # decided on the reference as it is, before any class changes
    for cls in [n for n in tree.body if isinstance(n, ast.ClassDef)]:
        text = "\n".join([handout, *docstrings(cls)])
        for name, (growths, join) in grown_by_joining(cls).items():
            if fixes_storage(text, name) or not splittable(tree, cls, name, settable):
                continue
            may_set = name in settable.get(cls.name, [])
            promised = not name.startswith("_") and (
                may_set
                or re.search(rf"\b{re.escape(name)}\b", text) is not None
                or used_outside(tree, cls, name)
            )
            plans.append((cls, name, growths, join, promised, may_set))
    for plan in plans:
        split(*plan)
    if not plans:
        return []
    return [Form("state as lists", ast.unparse(ast.fix_missing_locations(tree)) + "\n")]


def docstrings(cls: ast.ClassDef) -> list[str]:
    methods: list[ast.ClassDef | ast.FunctionDef] = [
        m for m in cls.body if isinstance(m, ast.FunctionDef)
    ]
    return [d for d in (ast.get_docstring(n) for n in [cls, *methods]) if d]


def fixes_storage(text: str, name: str) -> bool:
    word = re.compile(rf"\b{re.escape(name)}\b")
    return any(word.search(s) and FIXES_STORAGE.search(s) for s in SENTENCE_END.split(text))


def grown_by_joining(cls: ast.ClassDef) -> dict[str, tuple[list[ast.Assign], str]]:
    """Attribute -> the statements ``self.a = np.<join>([self.a, ...])`` that grow it, and
    how to join a list of pieces the same way (a format string). An attribute grown two ways
    is left out."""
    found: dict[str, tuple[list[ast.Assign], str]] = {}
    mixed: set[str] = set()
    for node in ast.walk(cls):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        if not is_self_attribute(target):
            continue
        join = joining(node.value, target.attr)
        if join is None:
            continue
        growths, before = found.setdefault(target.attr, ([], join[1]))
        growths.append(node)
        if before != join[1]:
            mixed.add(target.attr)
    return {name: grown for name, grown in found.items() if name not in mixed}


def joining(value: ast.expr, name: str) -> tuple[list[ast.expr], str] | None:
    """The pieces that ``value`` joins to ``self.<name>``, and how it would join a list of
    them (a format string); None unless it is such a join."""
    if not (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and isinstance(value.func.value, ast.Name)
        and value.func.attr in JOINS
        and value.args
    ):
        return None
    numpy, how = value.func.value.id, value.func.attr
    keywords = {k.arg: k.value for k in value.keywords}
    if how == "append":  # np.append(a, v, axis) is np.concatenate((a, v), axis)
        first, pieces, rest = value.args[0], value.args[1:2], value.args[2:]
    else:
        joined = value.args[0]
        if not isinstance(joined, ast.List | ast.Tuple) or not joined.elts:
            return None
        first, pieces, rest = joined.elts[0], joined.elts[1:], value.args[1:]
    if not (is_self_attribute(first) and first.attr == name and pieces):
        return None
    if any(isinstance(p, ast.Starred) for p in pieces):
        return None
    if how in ("vstack", "hstack"):
        if rest or keywords:
            return None
        return pieces, f"{numpy}.{how}({{}})"
    axis = rest[0] if len(rest) == 1 and not keywords else keywords.get("axis")
    if len(rest) > 1 or set(keywords) - {"axis"} or (rest and keywords):
        return None
    if axis is None and how == "append":
        return None  # without an axis np.append flattens: a join of its own
    try:
        axis_value = 0 if axis is None else ast.literal_eval(axis)
    except ValueError:
        return None
    return pieces, f"{numpy}.concatenate({{}}, axis={axis_value!r})"


def splittable(tree: ast.Module, cls: ast.ClassDef, name: str, settable: dict) -> bool:
    """Whether every use of ``name`` in the module still works on the form."""
    parts, joined = f"_parts_of_{name}", f"_joined_{name}"
    if cls.decorator_list or any(
        not (isinstance(b, ast.Name) and b.id == "object") for b in cls.bases
    ):
        return False
    defined = {s.name for s in cls.body if isinstance(s, ast.FunctionDef)} | {
        t.id
        for s in cls.body
        if isinstance(s, ast.Assign)
        for t in s.targets
        if isinstance(t, ast.Name)
    }
    customised = {"__slots__", "__getattr__", "__getattribute__", "__setattr__", "__delattr__"}
    if defined & (customised | {name}):
        return False
    parent = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    inside = set(ast.walk(cls))
    may_set = name in settable.get(cls.name, [])
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in (parts, joined, "__dict__"):
            return False
        if isinstance(node, ast.Name) and node.id in ("setattr", "delattr", "vars"):
            return False
        if not (isinstance(node, ast.Attribute) and node.attr == name):
            continue
        up = parent[node]
        if isinstance(node.ctx, ast.Del) or isinstance(up, ast.AugAssign):
            return False
        if isinstance(node.ctx, ast.Store):
            if not (may_set or (node in inside and is_self_attribute(node))):
                return False
        elif writes_into(node, up, parent):
            return False
    return True


def writes_into(node: ast.Attribute, up: ast.AST, parent: dict[ast.AST, ast.AST]) -> bool:
    """Whether the code around a read of ``node`` writes into the array it read."""
    if isinstance(up, ast.Subscript | ast.Attribute) and not isinstance(up.ctx, ast.Load):
        return True  # obj.a[i] = ..., obj.a.shape = ...
    if isinstance(up, ast.Attribute) and up.attr in IN_PLACE_METHODS:
        return isinstance(parent.get(up), ast.Call)
    if isinstance(up, ast.keyword):
        return up.arg == "out"
    return (
        isinstance(up, ast.Call)
        and isinstance(up.func, ast.Attribute)
        and up.func.attr in WRITING_FUNCTIONS
    )


def used_outside(tree: ast.Module, cls: ast.ClassDef, name: str) -> bool:
    """Whether module code outside the class reads ``.name`` (a function given the object)."""
    inside = set(ast.walk(cls))
    return any(
        isinstance(n, ast.Attribute) and n.attr == name and n not in inside for n in ast.walk(tree)
    )


def split(
    cls: ast.ClassDef,
    name: str,
    growths: list[ast.Assign],
    join: str,
    promised: bool,
    may_set: bool,
) -> None:
    """Keep ``name`` as a list of pieces: a growth extends the list, any other assignment
    starts it again, and a read joins it (a single piece is read as it is)."""
    parts, joined = f"_parts_of_{name}", f"_joined_{name}"

    class Grow(ast.NodeTransformer):
        def visit_Assign(self, node: ast.Assign) -> ast.stmt:
            if node not in growths:
                return node
            grown = joining(node.value, name)
            assert grown is not None  # grown_by_joining found it so
            extend = ast.parse(f"self.{parts}.extend([])").body[0]
            assert isinstance(extend, ast.Expr) and isinstance(extend.value, ast.Call)
            extend.value.args[0] = ast.List(grown[0], ast.Load())
            return extend

    Grow().visit(cls)
    for node in ast.walk(cls):
        if is_self_attribute(node) and node.attr == name:
            node.attr = joined
    pieces = f"self.{parts}"
    read = f"{pieces}[0] if len({pieces}) == 1 else {join.format(pieces)}"
    restart = f"lambda self, value: setattr(self, {parts!r}, [value])"
    lines = [f"{joined} = property(lambda self: {read}, {restart})"]
    if promised:
        setter = f", lambda self, value: setattr(self, {joined!r}, value)" if may_set else ""
        lines.append(f"{name} = property(lambda self: self.{joined}{setter})")
    cls.body += [ast.parse(line).body[0] for line in lines]
