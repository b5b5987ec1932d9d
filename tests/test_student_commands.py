"""The students' commands from README's "For students" work after the plain `pip install -e .`,
which has no pytest-xdist: the root pyproject's pytest options must not need it."""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def student_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`cd folder && pytest`, as after the plain install: xdist's plugin is not loaded."""
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # leave no __pycache__ in the repository
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_pytest_in_an_assignment_folder_runs_without_xdist():
    """README's `cd assignments/masks-and-heads && pytest`: it reads the root pyproject (that is
    the case that broke) and collects the public tests instead of a usage error."""
    done = student_pytest(ROOT / "assignments" / "masks-and-heads", "--collect-only")
    assert "unrecognized arguments" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stdout[-500:] + done.stderr[-500:]
    assert "configfile: pyproject.toml" in done.stdout, done.stdout[:500]
    assert "test_public.py" in done.stdout


def readme_test_command() -> str:
    readme = (ROOT / "README.md").read_text()
    found = re.search(r"pip install -e '\.\[dev[^\]]*\]' && (pytest[^\n]*)", readme)
    assert found, "README's Quick start gives the test command"
    return found.group(1).strip()


def test_ci_runs_the_readmes_test_command():
    """.ci/run's last line is the README's test command (with -q), xdist options and all."""
    command = readme_test_command().split()
    last = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1].split()
    assert last[:3] == ["python3", "-m", "pytest"]
    assert [word for word in last[3:] if word != "-q"] == command[1:]
