"""The package's layers are import-linter contracts (pyproject.toml), and they can fail."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# `lint-imports`, run by the interpreter running the tests (the script may not be on PATH)
LINT = "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())"


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", LINT, "--no-cache"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    shutil.copytree(
        ROOT / "autograder", tmp_path / "autograder", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


def test_the_package_keeps_its_contracts():
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 3 kept, 0 broken." in done.stdout


@pytest.mark.parametrize(
    "module, line, contract",
    [
        ("engine/compare.py", "import autograder.workflows.batch", "Layers"),
        ("sandbox/runner/wire.py", "import autograder.result", "sandbox runner"),
        ("standalone/sheet.py", "import autograder.errors", "standalone files"),
    ],
)
def test_an_import_against_the_layers_breaks_a_contract(copy, module, line, contract):
    path = copy / "autograder" / module
    path.write_text(path.read_text() + f"\n{line}  # noqa\n")
    done = lint_imports(copy)
    assert done.returncode != 0
    assert "0 broken" not in done.stdout and " broken." in done.stdout
    broken = done.stdout.split("Broken contracts", 1)[1]
    assert contract in broken and line.split()[-1] in broken
