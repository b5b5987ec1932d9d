"""An assignment is three folders with one slug plus a small declaration, ``suite.yaml``.

assignments/<slug>/        what students get (generated stubs, blank sheet, handout)
reference/<slug>/          the model submission, with solution markers
autograder/suites/<slug>/  suite.yaml, quiz.yaml (the key), test_hidden.py, mistakes.py

The first two make up the *course folder*. The grader never looks for it where it runs (a
student's folder could hold a reference of its own); it is, in order: the folder the instructor
names (``--course`` or ``AUTOGRADER_ROOT``), the copy built into an installed package
(``autograder/course_material/``), or the source checkout the package itself lives in.

suite.yaml and quiz.yaml are read against their schemas (``autograder/course/schema.py``): a
misspelled key or a bad value is a ``SuiteError`` naming the file and the line.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from autograder import PACKAGE_DIR
from autograder.course import schema, stubs
from autograder.errors import SuiteError, UsageError
from autograder.standalone import sheet

SUITES = PACKAGE_DIR / "suites"
PACKAGED_COURSE = PACKAGE_DIR / "course_material"  # filled in by the package build (setup.py)
CHECKOUT = PACKAGE_DIR.parent
NO_COURSE = (
    "this grader has no course material (the reference solutions), so it cannot grade here. "
    "In a student repository, run the practice checks instead: `pytest` for the code, and the "
    "answer-sheet check its README names; your grade comes from the course. Instructors: "
    "install the grader from the course repository, or name it with --course COURSE_DIR."
)


def is_course(path: Path) -> bool:
    return (path / "reference").is_dir() and (path / "assignments").is_dir()


def find_root(named: Path | str | None = None) -> Path:
    """The course folder: the one named (argument, then $AUTOGRADER_ROOT), else the copy
    installed with the package, else this package's source checkout. Never the cwd."""
    named = named or os.environ.get("AUTOGRADER_ROOT") or None
    if named:
        path = Path(named).expanduser()
        if not is_course(path):
            raise UsageError(f"{path} is not a course folder (no reference/ and assignments/)")
        return path.resolve()
    for path in (PACKAGED_COURSE, CHECKOUT):
        if is_course(path) and (path is PACKAGED_COURSE or (path / "pyproject.toml").is_file()):
            return path
    raise UsageError(NO_COURSE)


@dataclass(frozen=True)
class StudentTests:
    """The suite's declaration of the item (``student_tests`` in suite.yaml)."""

    module: str
    argument: str
    implements: str
    required: tuple[str, ...]
    points: float

    @classmethod
    def declared(cls, data: dict[str, Any] | None) -> StudentTests | None:
        if not data:
            return None
        return cls(
            module=str(data["module"]),
            argument=str(data.get("argument", "Impl")),
            implements=str(data["implements"]),
            required=tuple(data.get("required", ())),
            points=float(data["points"]),
        )

    @property
    def filename(self) -> str:
        return f"{self.module}.py"

    @property
    def name(self) -> str:
        return f"your tests in {self.filename}"


def equivalents(entries: list[dict[str, str]] | None) -> dict[str, str]:
    """suite.yaml's ``equivalent_mutants``: a list of {mutant, why} (its schema makes each why
    one line)."""
    return {entry["mutant"].strip(): entry["why"].strip() for entry in entries or []}


def slugs() -> list[str]:
    return sorted(p.parent.name for p in SUITES.glob("*/suite.yaml"))


@dataclass
class Assignment:
    slug: str
    title: str
    module: str
    functions: list[str]
    points: dict[str, float]
    timeout: float
    suite: Path
    # function -> the other functions its tests may call the student's own version of; the
    # handout says so (e.g. multi-head attention graded with the student's own split_heads)
    together: dict[str, list[str]] = field(default_factory=dict)
    returns: dict[str, list[str]] = field(default_factory=dict)  # names of returned values
    # function -> value name ("" for a single array) -> the names of that array's axes
    axes: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    student_tests: StudentTests | None = None  # see engine/student_tests.py
    # mutants of the reference that no test can kill, by "function: mutated statement", with
    # the one-line reason they are equivalent (see engine/mutants.py)
    equivalent_mutants: dict[str, str] = field(default_factory=dict)
    # class -> the attributes the handout lets a caller set; every other one may be read-only
    settable: dict[str, list[str]] = field(default_factory=dict)
    float32: bool = False  # the handout allows float32: the reference in float32 gets full marks
    course: Path | None = None  # None: found by find_root() when first needed

    @classmethod
    def load(cls, slug: str, root: Path | str | None = None, suites: Path = SUITES) -> Assignment:
        declaration = suites / slug / "suite.yaml"
        if not declaration.is_file():
            known = ", ".join(slugs()) or "none"
            raise UsageError(f"unknown assignment {slug!r} (known: {known})")
        data: dict[str, Any] = schema.read(declaration, "suite", SuiteError).data
        return cls(
            slug=slug,
            title=data["title"],
            module=data["module"],
            functions=list(data["functions"]),
            points={k: float(v) for k, v in data["points"].items()},
            timeout=float(data.get("timeout", 5)),
            suite=suites / slug,
            together={k: list(v) for k, v in (data.get("graded_together") or {}).items()},
            returns={f: [str(n) for n in names] for f, names in data.get("returns", {}).items()},
            axes={f: axes_by_value(given) for f, given in (data.get("axes") or {}).items()},
            student_tests=StudentTests.declared(data.get("student_tests")),
            equivalent_mutants=equivalents(data.get("equivalent_mutants")),
            float32=bool(data.get("float32", False)),
            settable={k: [str(n) for n in v] for k, v in (data.get("settable") or {}).items()},
            course=Path(root) if root else None,
        )

    @cached_property
    def root(self) -> Path:
        return find_root(self.course)

    @property
    def starter(self) -> Path:
        return self.root / "assignments" / self.slug

    @property
    def reference(self) -> Path:
        return self.root / "reference" / self.slug

    @property
    def handout(self) -> str:
        """The README students get ("" while there is none): what it promises is all a test
        may rely on."""
        path = self.starter / "README.md"
        return path.read_text() if path.is_file() else ""

    @property
    def module_file(self) -> str:
        return f"{self.module}.py"

    @cached_property
    def key(self) -> dict[str, Any]:
        return dict(schema.read(self.suite / "quiz.yaml", "quiz", SuiteError).data)

    @cached_property
    def reference_source(self) -> str:
        path = self.reference / self.module_file
        if not path.is_file():
            raise UsageError(f"the reference solution of {self.slug} is missing: no {path}")
        return path.read_text()

    def unnamed_returns(self) -> list[str]:
        """The functions whose reference returns a tuple that suite.yaml's ``returns:`` does
        not name: every message about such a value would say "value 1" instead of "lse"."""
        return [f for f in returns_tuples(self.reference_source) if f not in self.returns]

    def graded_together(self, function: str, other: str) -> bool:
        """May a test of ``function`` fail because of the student's own ``other``?"""
        return function == other or other in self.together.get(function, [])

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
            if not path.is_file():
                raise UsageError(f"the reference solution of {self.slug} is missing: no {path}")
            files[name] = stubs.clear_solutions(path.read_text(), str(path))
        return files | {"answers.yaml": sheet.blank_sheet(sheet.describe(self.key))}


def axes_by_value(given: Any) -> dict[str, list[str]]:
    """suite.yaml's axes of one function: a list for its one array, or a list per value."""
    if isinstance(given, list):
        return {"": [str(a) for a in given]}
    return {str(k): [str(a) for a in v] for k, v in given.items()}


def returns_tuples(source: str) -> list[str]:
    """The functions and methods ("Class.method") of ``source`` with a ``return a, b``."""
    found = []
    for node in ast.parse(source).body:
        owner = f"{node.name}." if isinstance(node, ast.ClassDef) else ""
        for function in node.body if isinstance(node, ast.ClassDef) else [node]:
            if isinstance(function, ast.FunctionDef) and any(
                isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple)
                for n in ast.walk(function)
            ):
                found.append(owner + function.name)
    return found
