"""`autograder check` is green on the repository and red when an assignment is broken."""

import shutil
from pathlib import Path

import pytest

from autograder.assignment import find_root
from autograder.check import Checker
from autograder.cli import main

SLUG = "masks-and-heads"


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A copy of the course folders, used as the repository by the `autograder` command."""
    root = find_root()
    for folder in ("assignments", "reference"):
        shutil.copytree(root / folder / SLUG, tmp_path / folder / SLUG)
    monkeypatch.setenv("AUTOGRADER_ROOT", str(tmp_path))
    return tmp_path


def run_check(capsys) -> tuple[int, str]:
    code = main(["check", SLUG, "--sandbox", "fallback"])
    return code, capsys.readouterr().out


def test_check_is_green_on_the_repository(capsys):
    code, out = run_check(capsys)
    assert code == 0, out
    assert f"{SLUG}: OK" in out
    assert "FAIL" not in out


def test_check_fails_when_a_stub_drifts_from_the_reference(course: Path, capsys):
    stub = course / "assignments" / SLUG / "attention.py"
    stub.write_text(stub.read_text().replace("def merge_heads(Xh):", "def merge_heads(Xh, h):"))
    code, out = run_check(capsys)
    assert code == 1
    assert "[FAIL] assignments/masks-and-heads/attention.py is generated" in out


def test_check_fails_when_the_reference_loses_points(course: Path, capsys, monkeypatch):
    # every variant is built from the reference, so skip regrading the whole catalogue
    monkeypatch.setattr(Checker, "check_catalogue", lambda self, *args: None)
    reference = course / "reference" / SLUG / "attention.py"
    source = reference.read_text().replace(
        "np.tril(np.ones((n, n), dtype=bool))", "np.tril(np.ones((n, n), dtype=bool), -1)"
    )
    reference.write_text(source)
    main(["generate", SLUG])  # keep the stubs in step, so only the reference is wrong
    code, out = run_check(capsys)
    assert code == 1
    assert "[FAIL] the reference gets full marks" in out


def test_check_fails_when_a_public_test_fails_on_the_reference(course: Path, capsys):
    public = course / "assignments" / SLUG / "test_public.py"
    public.write_text(public.read_text() + "\n\ndef test_broken():\n    assert False\n")
    code, out = run_check(capsys)
    assert code == 1
    assert "[FAIL] the public tests pass on the reference" in out


def test_check_fails_when_a_solution_marker_leaks_into_the_starter(course: Path, capsys):
    leaked = course / "assignments" / SLUG / "helpers.py"
    leaked.write_text("### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n")
    code, out = run_check(capsys)
    assert code == 1
    assert "[FAIL] no solution markers in the starter: helpers.py" in out
