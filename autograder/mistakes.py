"""Catalogues of known mistakes: small variants of the reference, one misconception each.

A suite's ``mistakes.py`` builds a ``Catalogue`` and decorates functions with it. Each variant
replaces one function of the reference; everything else stays the reference's. The same
variant serves to validate the suite (graded as a submission, it must lose points) and to
diagnose a student (when their output equals the variant's, the feedback names the mistake).
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
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

    def source(self, reference_source: str) -> str:
        """The reference module's source with this variant in place of its function."""
        tree = ast.parse(textwrap.dedent(inspect.getsource(self.function)))
        new = tree.body[0]
        assert isinstance(new, ast.FunctionDef)
        new.name, new.decorator_list = self.replaces, []
        lines = reference_source.splitlines(keepends=True)
        for node in ast.parse(reference_source).body:
            if isinstance(node, ast.FunctionDef) and node.name == self.replaces:
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
                end = node.end_lineno or node.lineno
                return "".join(lines[:start]) + ast.unparse(new) + "\n" + "".join(lines[end:])
        raise LookupError(f"variant {self.name}: the reference has no function {self.replaces}")


@dataclass
class Catalogue:
    variants: list[Variant] = field(default_factory=list)

    def mistake(self, name: str, replaces: str, why: str, hint: str) -> Callable:
        return self._register(name=name, replaces=replaces, why=why, hint=hint)

    def also_correct(self, name: str, replaces: str) -> Callable:
        return self._register(name=name, replaces=replaces, correct=True)

    def _register(self, **fields: Any) -> Callable:
        def decorate(function: Callable) -> Callable:
            if any(v.name == fields["name"] for v in self.variants):
                raise ValueError(f"two variants are named {fields['name']!r}")
            self.variants.append(Variant(function=function, **fields))
            return function

        return decorate

    @property
    def mistakes(self) -> list[Variant]:
        return [v for v in self.variants if not v.correct]

    @property
    def correct(self) -> list[Variant]:
        return [v for v in self.variants if v.correct]


def load_catalogue(path: Path) -> Catalogue:
    if not path.exists():
        return Catalogue()
    spec = importlib.util.spec_from_file_location(f"_mistakes_{path.parent.name}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    catalogue = getattr(module, "catalogue", None)
    if not isinstance(catalogue, Catalogue):
        raise TypeError(f"{path} must define `catalogue = Catalogue()`")
    return catalogue


def module_from_source(source: str, name: str) -> types.ModuleType:
    """Trusted code only: the reference and its variants."""
    module = types.ModuleType(name)
    module.__file__ = f"<{name}>"
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


class Diagnoser:
    """Run every catalogued mistake on a student's input and say which ones they made."""

    def __init__(self, catalogue: Catalogue, reference_source: str) -> None:
        self.mistakes = catalogue.mistakes
        self.reference_source = reference_source
        self._modules: dict[str, types.ModuleType] = {}

    def module(self, variant: Variant) -> types.ModuleType:
        if variant.name not in self._modules:
            source = variant.source(self.reference_source)
            self._modules[variant.name] = module_from_source(source, f"variant {variant.name}")
        return self._modules[variant.name]

    def outputs(self, function: str, args: tuple, kwargs: dict) -> list[tuple[Variant, Any]]:
        found = []
        for variant in self.mistakes:
            call = getattr(self.module(variant), function, None)
            if call is None:
                continue
            copies = [np.array(a) if isinstance(a, np.ndarray) else a for a in args]
            try:
                with warnings.catch_warnings(), np.errstate(all="ignore"):
                    warnings.simplefilter("ignore")
                    found.append((variant, call(*copies, **kwargs)))
            except Exception:
                continue  # this mistake fails loudly on this input: nothing to match
        return found
