"""Catalogues of known mistakes: small variants of the reference, one misconception each.

A suite's ``mistakes.py`` builds a ``Catalogue`` and decorates functions with it. Each variant
replaces one function of the reference; everything else stays the reference's. The same
variant serves to validate the suite (graded as a submission, it must lose points) and to
diagnose a student (when their output equals the variant's, the feedback names the mistake).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import inspect
import re
import textwrap
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Variant:
    name: str
    replaces: str
    function: Callable[..., Any]
    why: str = ""
    hint: str = ""
    correct: bool = False  # an "also correct" form, which must get full marks
    helpers: list[Callable[..., Any]] = field(default_factory=list)  # the catalogue's, shared
    title: str = ""  # what a student reads: "the mask applied after the softmax"
    bound: dict[str, Any] = field(default_factory=dict)  # a parameterised entry's case
    family: str = ""  # the entry this case belongs to: its name without the case
    titled: bool = field(default=True, init=False, compare=False)  # was title= given?

    def __post_init__(self) -> None:
        object.__setattr__(self, "titled", bool(self.title))
        if not self.title:  # never the id, which is for instructors; `check` asks for a title
            object.__setattr__(self, "title", "a known mistake")
        if not self.family:
            object.__setattr__(self, "family", self.name)

    def source(self, reference_source: str) -> str:
        """The reference module's source with this variant in place of its function (or of
        its method, for ``replaces="Class.method"``), and the catalogue's helpers added at the
        end."""
        new = bind(function_node(self.function), self.bound)
        owner, _, name = self.replaces.rpartition(".")
        new.name, new.decorator_list = name, []
        lines = reference_source.splitlines(keepends=True)
        defined = {n.name: n for n in ast.parse(reference_source).body if hasattr(n, "name")}
        scope = defined
        if owner:
            cls = defined.get(owner)
            if not isinstance(cls, ast.ClassDef):
                raise LookupError(f"variant {self.name}: the reference has no class {owner}")
            scope = {n.name: n for n in cls.body if hasattr(n, "name")}
        node = scope.get(name)
        if not isinstance(node, ast.FunctionDef):
            raise LookupError(f"variant {self.name}: the reference has no function {self.replaces}")
        clash = [h.__name__ for h in self.helpers if h.__name__ in defined]
        if clash:
            raise ValueError(f"helper {clash[0]} would replace the reference's own {clash[0]}")
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
        end = node.end_lineno or node.lineno
        body = textwrap.indent(ast.unparse(new), " " * node.col_offset)
        source = "".join(lines[:start]) + body + "\n" + "".join(lines[end:])
        for helper in self.helpers:
            helper_node = function_node(helper)
            helper_node.decorator_list = []
            source += "\n\n" + ast.unparse(helper_node) + "\n"
        return source


def function_node(function: Callable[..., Any]) -> ast.FunctionDef:
    node = ast.parse(textwrap.dedent(inspect.getsource(function))).body[0]
    if not isinstance(node, ast.FunctionDef):
        raise TypeError(f"{function!r} is not a plain function")
    return node


def bind(node: ast.FunctionDef, bound: dict[str, Any]) -> ast.FunctionDef:
    """A parameterised entry's function for one case: its keyword-only parameters become
    constants set at the top of the body, so the variant has the reference's signature."""
    if not bound:
        return node
    args = node.args
    keep = [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    keep = [(a, d) for a, d in keep if a.arg not in bound]
    args.kwonlyargs, args.kw_defaults = [a for a, _ in keep], [d for _, d in keep]
    constants = [
        ast.Assign(targets=[ast.Name(id=k, ctx=ast.Store())], value=ast.Constant(v), lineno=0)
        for k, v in bound.items()
    ]
    node.body = [*constants, *node.body]
    return ast.fix_missing_locations(node)


NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


@dataclass
class Catalogue:
    variants: list[Variant] = field(default_factory=list)
    helpers: list[Callable[..., Any]] = field(default_factory=list)
    # variant modules already built, by (variant name, reference source): building one means
    # parsing and compiling the whole reference, and every grading run needs them all again
    built: dict[tuple[str, str], types.ModuleType] = field(default_factory=dict, repr=False)

    def helper(self, function: Callable) -> Callable:
        """A small function every variant may call, as a student's own helper would be. It is
        added to each variant's module, so it must not share a name with the reference's."""
        self.helpers.append(function)
        return function

    def mistake(
        self,
        name: str,
        replaces: str,
        why: str,
        hint: str,
        title: str = "",
        cases: dict[str, list[str]] | None = None,
    ) -> Callable:
        """Register a known-wrong variant: ``why`` says what went wrong and why it is wrong,
        ``hint`` points toward the fix without giving the code, ``title`` names it for a
        student in a few plain words.

        ``cases`` makes one entry stand for several variants, one per value of a keyword-only
        parameter of the function: ``cases={"which": ["Wq", "Wo"]}`` registers
        ``name-wq`` and ``name-wo``, and ``{which}`` in the texts names the case."""
        if not why.strip() or not hint.strip():
            raise ValueError(f"mistake {name!r} needs both a `why` and a `hint`")
        texts = {"why": why.strip(), "hint": hint.strip(), "title": title.strip()}
        if not cases:
            return self._register(name=name, replaces=replaces, **texts)
        (parameter, values), *more = cases.items()
        if more or not values:
            raise ValueError(f"mistake {name!r}: cases name one parameter and its values")
        registrations = [
            self._register(
                name=f"{name}-{str(value).lower()}",
                replaces=replaces,
                family=name,
                bound={parameter: value},
                **{k: t.format(**{parameter: value}) for k, t in texts.items()},
            )
            for value in values
        ]

        def decorate(function: Callable) -> Callable:
            for register in registrations:
                register(function)
            return function

        return decorate

    def also_correct(self, name: str, replaces: str) -> Callable:
        """Register a form that looks different from the reference but must get full marks."""
        return self._register(name=name, replaces=replaces, correct=True)

    def _register(self, **fields: Any) -> Callable:
        name = fields["name"]
        if not NAME.fullmatch(name):
            raise ValueError(f"variant names are short, lower-case and hyphenated: {name!r}")
        if any(v.name == name for v in self.variants):
            raise ValueError(f"two variants are named {name!r}")

        def decorate(function: Callable) -> Callable:
            self.variants.append(Variant(function=function, helpers=self.helpers, **fields))
            return function

        return decorate

    @property
    def mistakes(self) -> list[Variant]:
        return [v for v in self.variants if not v.correct]

    @property
    def correct(self) -> list[Variant]:
        return [v for v in self.variants if v.correct]

    def module(self, variant: Variant, reference_source: str) -> types.ModuleType:
        """The reference module with ``variant`` in place (trusted code), built once."""
        key = (variant.name, reference_source)
        if key not in self.built:
            source = variant.source(reference_source)
            self.built[key] = module_from_source(source, f"variant {variant.name}")
        return self.built[key]

    def problems(self, functions: list[str]) -> list[str]:
        """What is wrong with this catalogue for an assignment with these functions."""
        found = [
            f"{v.name} replaces {v.replaces}, which is not one of the assignment's functions"
            for v in self.variants
            if v.replaces not in functions
        ]
        covered = {v.replaces for v in self.mistakes}
        found += [f"no known mistake for {f}" for f in functions if f not in covered]
        found += [f"{v.name} has no title= (what a student reads)" for v in self.untitled]
        return found

    @property
    def untitled(self) -> list[Variant]:
        return [v for v in self.mistakes if not v.titled]


def load_catalogue(path: Path) -> Catalogue:
    """The suite's catalogue, loaded afresh: its variant modules are built, once each, for as
    long as the caller keeps it (``grading.GradingSession`` keeps one per assignment)."""
    if not path.exists():
        return Catalogue()
    name = f"_mistakes_{path.parent.name}"
    origin = str(path.resolve())
    spec = importlib.util.spec_from_loader(name, loader=None, origin=origin)
    assert spec
    module = importlib.util.module_from_spec(spec)
    module.__file__ = origin  # inspect.getsource finds the variants' code through it
    exec(compile(path.read_bytes(), origin, "exec"), module.__dict__)
    catalogue = getattr(module, "catalogue", None)
    if not isinstance(catalogue, Catalogue):
        raise TypeError(f"{origin} must define `catalogue = Catalogue()`")
    return catalogue


def module_from_source(source: str, name: str) -> types.ModuleType:
    """Trusted code only: the reference and its variants."""
    module = types.ModuleType(name)
    module.__file__ = f"<{name}>"
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


def calls_between(source: str) -> dict[str, list[str]]:
    """For each public module-level function of ``source``, the others it calls by name."""
    functions = {
        node.name: node
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")
    }
    calls = {}
    for name, node in functions.items():
        called = {
            n.func.id
            for n in ast.walk(node)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        }
        calls[name] = [f for f in functions if f in called and f != name]
    return calls


class Diagnoser:
    """Run catalogued mistakes in the trusted process, on the inputs a student's code was given.

    Each variant is a module, the reference with one function replaced, built once by the
    catalogue. ``run`` calls a function of such a module quietly, on copies of the inputs, so a
    variant can neither warn nor change an input that the next variant needs.
    """

    def __init__(
        self,
        catalogue: Catalogue,
        reference_source: str,
        returns: dict[str, list[str]] | None = None,
        axes: dict[str, dict[str, list[str]]] | None = None,
    ) -> None:
        self.catalogue = catalogue
        self.axes = axes or {}  # the suite's names for the axes of returned arrays
        self.mistakes = catalogue.mistakes
        self.reference_source = reference_source
        self.returns = returns or {}  # the suite's names for returned values, by function
        self._callees = calls_between(reference_source)

    def callees(self, function: str) -> list[str]:
        """The reference's public functions that its ``function`` calls."""
        return self._callees.get(function, [])

    def module(self, variant: Variant) -> types.ModuleType:
        return self.catalogue.module(variant, self.reference_source)

    @functools.cached_property
    def or_for_and(self) -> types.ModuleType | None:
        """The reference with every ``&`` (and ``np.logical_and``) read as ``|``, built once;
        None when the reference joins no conditions with 'and'."""
        source = and_to_or(self.reference_source)
        return module_from_source(source, "reference, or for and") if source else None

    @staticmethod
    def run(module: types.ModuleType, function: str, args: tuple, kwargs: dict) -> Any:
        """``module.function(*args, **kwargs)`` on copies, with warnings silenced."""
        call = getattr(module, function)
        copies = [np.array(a) if isinstance(a, np.ndarray) else a for a in args]
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return call(*copies, **kwargs)


class AndToOr(ast.NodeTransformer):
    """``a & b`` becomes ``a | b``, ``a &= b`` becomes ``a |= b``, and ``logical_and`` becomes
    ``logical_or``; ``changed`` says whether there was any."""

    changed = False

    def visit_BitAnd(self, node: ast.BitAnd) -> ast.AST:
        self.changed = True
        return ast.BitOr()

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if node.attr == "logical_and":
            self.changed = True
            node.attr = "logical_or"
        return node


def and_to_or(source: str) -> str | None:
    """The source with 'and' of arrays read as 'or', or None when it has none."""
    transformer = AndToOr()
    tree = transformer.visit(ast.parse(source))
    return ast.unparse(tree) if transformer.changed else None
