"""Mutants of a reference: one small change each, inside its solution regions.

A suite is sound only if every plausible one-token slip in the reference loses Part 2 points.
``mutants(source)`` makes those slips with small AST operators: a ``raise`` removed or turned
into the ``AssertionError`` an ``assert`` gives; a comparison flipped or moved by one (also the
``k`` of ``tril``/``triu``); ``-inf`` replaced by 0 or by -1e9; an ``axis=`` moved; a transpose
or ``swapaxes`` dropped; a max subtraction removed; an argument (``seed``, ``causal``, a mask,
a flag) replaced by a constant; an operand of a binary operation replaced by another variable
of the same shape (the shapes come from ``trace_shapes`` around a grading of the reference).

Why not mutmut or cosmic-ray: both mutate the files of a project in place and judge a mutant
by the exit code of a test command. Here a mutant must be graded as a student is, its module
copied into the worker's sandbox and the hidden suite run against it with the reference
computing the expected values, so what is needed is only the mutated source text of one
function; their operators are also generic Python ones (numbers, strings, keywords) and know
nothing of axes, transposes, masks or a max subtraction, which are the slips that matter here.
"""

from __future__ import annotations

import ast
import contextlib
import re
import sys
import textwrap
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from autograder.course.stubs import BEGIN, END

Shapes = dict[str, list[dict[str, tuple[int, ...]]]]  # function -> per call: name -> shape
Site = tuple[str, ast.AST]  # what the operator did, and the node that replaces the original

FLAG_NAMES = ("seed", "causal", "mask")
ASSERT_ERROR = "AssertionError"  # what an `assert` raises in place of the promised error


@dataclass(frozen=True)
class Mutant:
    function: str  # "decode_step" or "KVCache.append"
    operator: str  # "raise removed", "axis=1 -> axis=0", ...
    line: int  # in the reference source
    before: str  # the statement as written (unparsed, on one line)
    after: str  # the statement mutated
    source: str  # the whole module with the mutation in place

    @property
    def key(self) -> str:
        """How suite.yaml names it: the function, and the statement before and after."""
        return f"{self.function}: {self.before} -> {self.after}"

    def diff(self) -> str:
        return f"{self.function} line {self.line}: - {self.before}  + {self.after}"


def solution_lines(source: str) -> set[int]:
    """Line numbers inside ``### BEGIN SOLUTION`` ... ``### END SOLUTION``."""
    inside, lines = False, set()
    for number, line in enumerate(source.splitlines(), start=1):
        if BEGIN in line:
            inside = True
        elif END in line:
            inside = False
        elif inside:
            lines.add(number)
    return lines


def functions(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef]]:
    """Every module-level function and method, with its qualified name."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    yield f"{node.name}.{item.name}", item


def mutants(source: str, shapes: Shapes | None = None) -> list[Mutant]:
    """Every distinct one-change mutant of the solution regions of ``source``."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    editable = solution_lines(source)
    found: dict[str, Mutant] = {}
    for name, function in functions(tree):
        operators = Operators(function, (shapes or {}).get(name, []))
        for statement, body, name_of_body, at in statements(function, editable):
            before = one_line(statement)
            for node, parent, field, index in children(statement, body, name_of_body, at):
                for operator, replacement in operators.sites(node):
                    with replaced(parent, field, index, replacement):
                        after = one_line(getattr(body, name_of_body)[at])
                        text = splice(lines, function, ast.unparse(function))
                    line = getattr(node, "lineno", statement.lineno)
                    if after != before and text not in found:
                        found[text] = Mutant(name, operator, line, before, after, text)
    return list(found.values())


def statements(
    function: ast.FunctionDef, editable: set[int]
) -> Iterator[tuple[ast.stmt, ast.AST, str, int]]:
    """Each statement of ``function`` in its solution region, with the body it sits in."""
    for parent in ast.walk(function):
        for field, value in ast.iter_fields(parent):
            if not isinstance(value, list):
                continue
            for index, node in enumerate(value):
                if isinstance(node, ast.stmt) and node.lineno in editable:
                    yield node, parent, field, index


def children(
    statement: ast.stmt, parent: ast.AST, field: str, index: int
) -> Iterator[tuple[ast.AST, ast.AST, str, int | None]]:
    """The statement itself, then each expression in it (not in statements nested in it),
    with where it sits."""
    yield statement, parent, field, index
    stack: list[ast.AST] = [statement]
    while stack:
        node = stack.pop()
        for name, value in ast.iter_fields(node):
            items = value if isinstance(value, list) else [value]
            for i, child in enumerate(items):
                if isinstance(child, ast.AST) and not isinstance(child, ast.stmt):
                    yield child, node, name, i if isinstance(value, list) else None
                    stack.append(child)


@contextlib.contextmanager
def replaced(parent: ast.AST, field: str, index: int | None, new: ast.AST) -> Iterator[None]:
    """``new`` in place of the node at (parent, field, index) for the span of the block."""
    slot = getattr(parent, field)
    old = slot[index] if index is not None else slot
    if index is None:
        setattr(parent, field, new)
    else:
        slot[index] = new
    try:
        yield
    finally:
        if index is None:
            setattr(parent, field, old)
        else:
            slot[index] = old


def one_line(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text.splitlines()[0] if isinstance(node, ast.If | ast.For | ast.While) else text


def splice(lines: list[str], function: ast.FunctionDef, body: str) -> str:
    start = min([function.lineno, *(d.lineno for d in function.decorator_list)]) - 1
    end = function.end_lineno or function.lineno
    new = textwrap.indent(body, " " * function.col_offset) + "\n"
    return "".join(lines[:start]) + new + "".join(lines[end:])


class Operators:
    """The operators, for the nodes of one function."""

    def __init__(self, function: ast.FunctionDef, calls: list[dict[str, tuple[int, ...]]]):
        self.function = function
        self.calls = calls
        args = function.args
        with_default = [a.arg for a in args.args][len(args.args) - len(args.defaults) :]
        defaults = dict(zip(with_default, args.defaults, strict=True))
        defaults |= {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d}
        self.flags = {
            name: defaults.get(name)
            for name in [a.arg for a in [*args.args, *args.kwonlyargs]]
            if any(f in name.lower() for f in FLAG_NAMES) or is_flag_default(defaults.get(name))
        }
        self.from_max = names_from_max(function)

    def sites(self, node: ast.AST) -> list[Site]:
        found: list[Site] = []
        for operator in (
            self.raises,
            self.comparisons,
            self.triangles,
            self.minus_inf,
            self.axes,
            self.transposes,
            self.max_subtraction,
            self.flag_constant,
            self.same_shape_operand,
        ):
            found += operator(node)
        return found

    @staticmethod
    def raises(node: ast.AST) -> list[Site]:
        if not isinstance(node, ast.Raise):
            return []
        found: list[Site] = [("raise removed", ast.Pass())]
        exc = node.exc
        call = exc if isinstance(exc, ast.Call) else None
        name = call.func if call is not None else exc
        if isinstance(name, ast.Name) and name.id != ASSERT_ERROR:
            args = call.args if call is not None else []
            new = ast.Raise(exc=ast.Call(ast.Name(ASSERT_ERROR, ast.Load()), args, []))
            found.append((f"{name.id} raised as {ASSERT_ERROR}", new))
        return found

    @staticmethod
    def comparisons(node: ast.AST) -> list[Site]:
        if not isinstance(node, ast.Compare) or len(node.ops) != 1:
            return []
        moves = {
            ast.Lt: (ast.LtE, ast.Gt),
            ast.LtE: (ast.Lt, ast.GtE),
            ast.Gt: (ast.GtE, ast.Lt),
            ast.GtE: (ast.Gt, ast.LtE),
            ast.Eq: (ast.NotEq,),
            ast.NotEq: (ast.Eq,),
        }
        was = SYMBOLS.get(type(node.ops[0]), "")
        return [
            (f"{was} -> {SYMBOLS[op]}", ast.Compare(node.left, [op()], node.comparators))
            for op in moves.get(type(node.ops[0]), ())
        ]

    @staticmethod
    def triangles(node: ast.AST) -> list[Site]:
        if not (isinstance(node, ast.Call) and called(node) in ("tril", "triu")):
            return []
        k = next((kw for kw in node.keywords if kw.arg == "k"), None)
        value = integer(k.value if k else node.args[1] if len(node.args) > 1 else ast.Constant(0))
        if value is None:
            return []
        found: list[Site] = []
        for moved in (value + 1, value - 1):
            args = node.args[:1]
            keywords = [kw for kw in node.keywords if kw.arg != "k"]
            keywords.append(ast.keyword("k", ast.Constant(moved)))
            found.append((f"k={value} -> k={moved}", ast.Call(node.func, args, keywords)))
        return found

    @staticmethod
    def minus_inf(node: ast.AST) -> list[Site]:
        if not is_minus_inf(node):
            return []
        return [(f"-inf -> {v}", ast.Constant(v)) for v in (0.0, -1e9)]

    @staticmethod
    def axes(node: ast.AST) -> list[Site]:
        if not isinstance(node, ast.Call):
            return []
        found: list[Site] = []
        for kw in node.keywords:
            axis = integer(kw.value) if kw.arg == "axis" else None
            if axis is not None:
                for moved in (axis - 1, axis + 1) if axis != -1 else (-2, 0):
                    keywords = [
                        ast.keyword("axis", ast.Constant(moved)) if k is kw else k
                        for k in node.keywords
                    ]
                    new = ast.Call(node.func, node.args, keywords)
                    found.append((f"axis={axis} -> axis={moved}", new))
        return found

    @staticmethod
    def transposes(node: ast.AST) -> list[Site]:
        if isinstance(node, ast.Attribute) and node.attr in ("T", "mT"):
            return [(f".{node.attr} dropped", node.value)]
        if not isinstance(node, ast.Call) or called(node) not in TRANSPOSES:
            return []
        func = node.func
        if isinstance(func, ast.Attribute) and not is_numpy(func.value):
            return [(f".{func.attr}() dropped", func.value)]
        if node.args:
            return [(f"{called(node)}() dropped", node.args[0])]
        return []

    def max_subtraction(self, node: ast.AST) -> list[Site]:
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub)):
            return []
        right = node.right
        text = ast.unparse(right)
        if "max" in text or any(n.id in self.from_max for n in names(right)):
            return [(f"max subtraction removed (- {text})", node.left)]
        return []

    def flag_constant(self, node: ast.AST) -> list[Site]:
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
            return []
        if node.id not in self.flags:
            return []
        default = self.flags[node.id]
        value = default.value if isinstance(default, ast.Constant) else None
        if isinstance(value, bool) or "causal" in node.id:
            constants: list[Any] = [True, False]
        elif "seed" in node.id:
            constants = [0]
        else:
            constants = [None]
        return [(f"{node.id} -> {c!r}", ast.Constant(c)) for c in constants]

    def same_shape_operand(self, node: ast.AST) -> list[Site]:
        if not isinstance(node, ast.BinOp):
            return []
        found: list[Site] = []
        for side in ("left", "right"):
            operand = getattr(node, side)
            if not isinstance(operand, ast.Name):
                continue
            for other in self.same_shape(operand.id):
                new = ast.BinOp(node.left, node.op, node.right)
                setattr(new, side, ast.Name(other, ast.Load()))
                found.append((f"operand {operand.id} -> {other}", new))
        return found

    def same_shape(self, name: str) -> list[str]:
        """Other variables with the shape of ``name`` in every traced call of the function."""
        seen = [call for call in self.calls if name in call]
        if not seen or not seen[0][name]:
            return []
        others = set.intersection(*(set(call) for call in seen)) - {name}
        return sorted(o for o in others if all(call[o] == call[name] for call in seen))


def integer(node: ast.AST) -> int | None:
    """The int a node spells (``-1`` is a minus applied to 1), or None."""
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def is_flag_default(default: ast.AST | None) -> bool:
    """A parameter defaulting to True, False or None is a switch or an optional input."""
    return isinstance(default, ast.Constant) and (
        default.value is None or isinstance(default.value, bool)
    )


SYMBOLS: dict[type, str] = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
}
TRANSPOSES = ("transpose", "swapaxes", "moveaxis", "permute_dims", "matrix_transpose")


def called(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def is_numpy(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id in ("np", "numpy")


def is_minus_inf(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = node.operand
        return (isinstance(inner, ast.Attribute) and inner.attr == "inf") or (
            isinstance(inner, ast.Name) and inner.id == "inf"
        )
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "float" and node.args:
        arg = node.args[0]
        return isinstance(arg, ast.Constant) and str(arg.value).strip().lower() == "-inf"
    return False


def names(node: ast.AST) -> list[ast.Name]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Name)]


def names_from_max(function: ast.FunctionDef) -> set[str]:
    """Variables that hold a maximum, or a value made from one (``shift`` from ``m_new``)."""
    found: set[str] = set()
    assigns = [n for n in ast.walk(function) if isinstance(n, ast.Assign)]
    for _ in range(3):  # a chain of a few assignments is enough
        for assign in assigns:
            value = assign.value
            if "max" in ast.unparse(value) or any(n.id in found for n in names(value)):
                found |= {t.id for t in assign.targets if isinstance(t, ast.Name)}
    return found


# -- shapes, traced while the reference computes the expected values -----------------------

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@contextlib.contextmanager
def trace_shapes(module: types.ModuleType | None = None, filename: str = "") -> Iterator[Shapes]:
    """Record, for every call of a function of the module whose code file is ``filename``, the
    shape of each array among its locals when it returns."""
    shapes: Shapes = {}
    wanted = filename or getattr(module, "__file__", "")

    def local(frame: types.FrameType, event: str, arg: Any) -> Callable | None:
        if event == "return":
            found = {
                k: v.shape
                for k, v in frame.f_locals.items()
                if isinstance(v, np.ndarray) and v.ndim
            }
            shapes.setdefault(frame.f_code.co_qualname, []).append(found)
        return local

    def start(frame: types.FrameType, event: str, arg: Any) -> Callable | None:
        code = frame.f_code
        if code.co_filename != wanted or code.co_name == "<module>":
            return None
        frame.f_trace_lines = False  # only the return matters: no event per line
        return local

    previous = sys.gettrace()
    sys.settrace(start)
    try:
        yield shapes
    finally:
        sys.settrace(previous)


def promise(mutant: Mutant, source: str) -> str:
    """The handout sentence (a docstring of the function, its class or the module) that the
    mutant most likely breaks, or "" when none shares a word with the change."""
    tree = ast.parse(source)
    owner, _, _ = mutant.function.rpartition(".")
    docs: list[ast.FunctionDef | ast.ClassDef | None] = [dict(functions(tree)).get(mutant.function)]
    docs += [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner]
    texts = [ast.get_docstring(d) or "" for d in docs if d is not None]
    sentences = [
        s.strip() for t in texts for s in re.split(r"(?<=[.:;])\s+|\n\s*[-*]\s+", t) if s.strip()
    ]
    words = clue_words(mutant)
    scored = [(sum(w in s.lower() for w in words), s) for s in sentences]
    best = max(scored, default=(0, ""), key=lambda pair: pair[0])
    return " ".join(best[1].split()) if best[0] else ""


def clue_words(mutant: Mutant) -> set[str]:
    operator = mutant.operator.lower()
    words = {w.lower() for w in WORD.findall(mutant.before) if len(w) > 3}
    words -= {"self", "none", "true", "false", "axis", "shape"}
    if "raise" in operator:
        words |= {"raise", "error"}
    if "inf" in operator:
        words |= {"masked", "-inf", "weights 0"}
    if "max" in operator:
        words |= {"stable", "overflow", "nan", "max"}
    if any(sign in operator for sign in ("<", ">", "=")):
        words |= {"<=", "causal", "mask", "sees", "look"}
    return words
