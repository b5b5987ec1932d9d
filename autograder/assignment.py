"""An assignment is three folders with one slug plus a small declaration, ``suite.yaml``.

assignments/<slug>/        what students get (generated stubs, blank sheet, handout)
reference/<slug>/          the model submission, with solution markers
autograder/suites/<slug>/  suite.yaml, quiz.yaml (the key), test_hidden.py, mistakes.py
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from autograder import quiz, stubs
from autograder.examplar import StudentTests

SUITES = Path(__file__).resolve().parent / "suites"


class UsageError(Exception):
    """A mistake in how the command was called: one line, non-zero exit."""


def find_root() -> Path:
    """The course repository: $AUTOGRADER_ROOT, else the checkout this package lives in."""
    env = os.environ.get("AUTOGRADER_ROOT")
    candidates = [Path(env)] if env else []
    candidates += [SUITES.parent.parent, Path.cwd(), *Path.cwd().parents]
    for path in candidates:
        if (path / "reference").is_dir() and (path / "assignments").is_dir():
            return path.resolve()
    raise UsageError("cannot find the course repository (set AUTOGRADER_ROOT)")


def slugs() -> list[str]:
    return sorted(p.parent.name for p in SUITES.glob("*/suite.yaml"))


@dataclass
class Assignment:
    slug: str
    root: Path
    title: str
    module: str
    functions: list[str]
    points: dict[str, float]
    timeout: float
    student_tests: StudentTests | None = None  # tests the student writes (examplar.py)

    @classmethod
    def load(cls, slug: str, root: Path | None = None) -> Assignment:
        declaration = SUITES / slug / "suite.yaml"
        if not declaration.is_file():
            known = ", ".join(slugs()) or "none"
            raise UsageError(f"unknown assignment {slug!r} (known: {known})")
        data: dict[str, Any] = yaml.safe_load(declaration.read_text())
        return cls(
            slug=slug,
            root=root or find_root(),
            title=data["title"],
            module=data["module"],
            functions=list(data["functions"]),
            points={k: float(v) for k, v in data["points"].items()},
            timeout=float(data.get("timeout", 5)),
            student_tests=StudentTests.declared(data.get("student_tests")),
        )

    @property
    def suite(self) -> Path:
        return SUITES / self.slug

    @property
    def starter(self) -> Path:
        return self.root / "assignments" / self.slug

    @property
    def reference(self) -> Path:
        return self.root / "reference" / self.slug

    @property
    def module_file(self) -> str:
        return f"{self.module}.py"

    @cached_property
    def key(self) -> dict[str, Any]:
        return yaml.safe_load((self.suite / "quiz.yaml").read_text())

    @cached_property
    def reference_source(self) -> str:
        return (self.reference / self.module_file).read_text()

    @property
    def code_files(self) -> list[str]:
        """The files the student completes: the module, and their own tests if they write
        some."""
        extra = [self.student_tests.filename] if self.student_tests else []
        return [self.module_file, *extra]

    def generated(self) -> dict[str, str]:
        """The starter files derived from the reference and the key: name -> content."""
        files = {}
        for name in self.code_files:
            path = self.reference / name
            files[name] = stubs.clear_solutions(path.read_text(), str(path))
        return files | {"answers.yaml": quiz.blank_sheet(self.key)}
