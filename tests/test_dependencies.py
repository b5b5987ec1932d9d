"""Dependencies live in the extras that use them, every requirement is bounded, every package
the grader imports is declared, and a command whose extra is missing says so in one line."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import json
import re
import sys
import tomllib
from pathlib import Path

import pytest

from autograder.cli import main
from autograder.platforms import nbgrader as nbgrader_route
from autograder.result import Result, TestResult
from autograder.workflows.records import Record

ROOT = Path(__file__).parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
BASE = PROJECT["dependencies"]
EXTRAS = PROJECT["optional-dependencies"]
SLUG = "masks-and-heads"


def name_of(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def names(requirements: list[str]) -> set[str]:
    return {name_of(r) for r in requirements}


def third_party_imports(path: Path, module_level_only: bool = False) -> set[str]:
    """The top-level names ``path`` imports that are neither the standard library, the
    package, nor a file beside it (the runner and the standalone files import those)."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if module_level_only else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    local = {p.stem for p in path.parent.glob("*.py")} | {p.name for p in path.parent.iterdir()}
    local |= skipped_without(tree)
    return {n for n in found - local if n not in sys.stdlib_module_names and n != "autograder"}


def skipped_without(tree: ast.Module) -> set[str]:
    """The packages a test file is skipped without (``pytest.importorskip`` at its top)."""
    return {
        node.value.args[0].value.split(".")[0]
        for node in tree.body
        if isinstance(node, ast.Expr | ast.Assign)
        and isinstance(node.value, ast.Call)
        and getattr(node.value.func, "attr", "") == "importorskip"
        and isinstance(node.value.args[0], ast.Constant)
    }


@functools.cache
def installed() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


def distribution(module: str) -> str:
    found = installed().get(module)
    if not found:
        pytest.skip(f"{module} is not installed here, so its distribution cannot be named")
    return found[0].lower().replace("_", "-")


def test_every_requirement_has_a_lower_and_an_upper_bound():
    for requirement in [*BASE, *(r for extra in EXTRAS.values() for r in extra)]:
        assert re.search(r">=\s*[\d.]+\s*,\s*<\s*[\d.]+", requirement), requirement


def test_the_instructors_analyses_are_an_extra_and_no_grader_needs_them():
    assert {"matplotlib", "copydetect"} <= names(EXTRAS["report"])
    assert not {"matplotlib", "copydetect", "pytest-timeout"} & names(BASE)
    assert "pytest-timeout" in names(EXTRAS["dev"])  # this repository's own tests use it


def test_every_package_the_grader_imports_is_declared_where_it_is_needed():
    declared_anywhere = names(BASE) | {n for extra in EXTRAS.values() for n in names(extra)}
    for path in sorted((ROOT / "autograder").rglob("*.py")):
        if "suites" in path.parts:
            continue
        nbgrader_route = "nbgrader" in path.relative_to(ROOT / "autograder").parts
        for module in third_party_imports(path):
            wanted = distribution(module)
            assert wanted in declared_anywhere, (path, module)
            if nbgrader_route:
                assert wanted in names(BASE) | names(EXTRAS["nbgrader"]), (path, module)
        if not nbgrader_route:  # what the CLI imports on the way must be installed always
            for module in third_party_imports(path, module_level_only=True):
                assert distribution(module) in names(BASE), (path, module)


def test_every_test_file_is_collected_with_the_dev_extra_alone():
    """A module-level import outside the plain install and `dev` would stop collection; the
    extras' packages are imported after ``pytest.importorskip`` or inside a test."""
    allowed = names(BASE) | names(EXTRAS["dev"]) | {"pytest", "_pytest"}
    for path in sorted((ROOT / "tests").glob("*.py")):
        for module in third_party_imports(path, module_level_only=True):
            assert distribution(module) in allowed, (path.name, module)


@pytest.fixture
def graded(tmp_path):
    """A results folder with two graded students."""
    out = tmp_path / "results"
    for student in ("ada", "bo"):
        result = Result(SLUG, student, [TestResult("t", "a test", "part2", 1, 1, "passed")])
        code = {"attention.py": f"{student} = 1\n"}
        Record(student, "graded", result=result, code=code).write(out)
    state = {"assignment": SLUG, "students": ["ada", "bo"], "grader_version": "0"}
    (out / "batch.json").write_text(json.dumps(state))
    return out


def hide(monkeypatch, package: str) -> None:
    """Make ``package`` (and its modules) impossible to import, as where it is not installed."""
    for name in [n for n in sys.modules if n == package or n.startswith(f"{package}.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, package, None)


@pytest.mark.parametrize(
    "package, argv, words",
    [
        ("matplotlib", ["report", "{out}"], "the class report needs matplotlib"),
        ("copydetect", ["similarity", "{out}"], "code similarity needs copydetect"),
    ],
)
def test_a_command_whose_extra_is_missing_says_how_to_install_it(
    monkeypatch, capsys, graded, package, argv, words
):
    hide(monkeypatch, package)
    assert main([w.format(out=graded) for w in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and "pip install 'attention-autograder[report]'" in err
    assert "\n" not in err


def test_nbgrader_autograde_without_nbgrader_says_how_to_install_it(monkeypatch, capsys, tmp_path):
    hide(monkeypatch, "nbgrader")
    monkeypatch.delitem(sys.modules, "autograder.platforms.nbgrader.gradebook", raising=False)
    monkeypatch.delattr(nbgrader_route, "gradebook", raising=False)  # imported by another test
    assert main(["nbgrader", "autograde", str(tmp_path), SLUG]) == 2
    err = capsys.readouterr().err.strip()
    assert "nbgrader autograde needs nbgrader" in err and "[nbgrader]'" in err
