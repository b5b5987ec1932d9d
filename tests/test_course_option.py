"""`--course COURSE_DIR` reaches every command that reads an assignment's reference or
starter; the commands that read only a batch folder (or nothing of a course) do without."""

import argparse
import json
import os
import shutil

import pytest

from autograder.cli import main, parser
from autograder.course.assignment import Assignment, find_root
from autograder.errors import UsageError

SLUG = "masks-and-heads"
# They read a batch folder's results (and the suite's catalogue, shipped in the package),
# a roster, or the machine: never a course's reference/ or assignments/.
# diff and passback read only batch folders; formative, regrade, propose and similarity load
# the assignment
WITHOUT_COURSE = {"doctor", "collect", "merge", "report", "publish", "diff", "passback"}
WITHOUT_COURSE |= {"sandbox runtime"}  # copies this machine's Python and NumPy


def commands(top: argparse.ArgumentParser, prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    """Every leaf command, e.g. "grade" and "nbgrader build", with its parser."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found |= commands(sub, f"{prefix}{name} ") or {f"{prefix}{name}": sub}
    return found


def test_every_command_that_reads_a_course_takes_course():
    found = commands(parser())
    assert WITHOUT_COURSE.issubset(found)
    for name, sub in found.items():
        options = {o for a in sub._actions for o in a.option_strings}
        assert ("--course" in options) == (name not in WITHOUT_COURSE), name


@pytest.fixture
def loaded_from(monkeypatch):
    """Assignment.load stops the command at once, saying which course folder it was given."""

    def load(cls, slug, root=None, **_):
        raise UsageError(f"loaded {slug} from {root}")

    monkeypatch.setattr(Assignment, "load", classmethod(load))


@pytest.mark.parametrize(
    "argv",
    [
        ["grade", SLUG],
        ["check", SLUG],
        ["generate", SLUG],
        ["release", SLUG, "OUT"],
        ["export", "gradescope", SLUG, "OUT.zip"],
        ["export", "classroom50", SLUG, "OUT"],
        ["nbgrader", "build", "NB", SLUG],
        ["nbgrader", "autograde", "NB", SLUG],
        ["grade-batch", SLUG, "SUBMISSIONS", "--out", "OUT"],
    ],
    ids=" ".join,
)
def test_the_course_reaches_the_assignment(loaded_from, tmp_path, capsys, argv):
    if argv[:2] == ["nbgrader", "autograde"]:
        pytest.importorskip("nbgrader")
    assert main([*argv, "--course", str(tmp_path)]) == 2
    assert f"loaded {SLUG} from {tmp_path}" in capsys.readouterr().err


def test_release_writes_the_handout_of_the_course_given(tmp_path):
    course = tmp_path / "course"
    for folder in ("assignments", "reference"):
        shutil.copytree(find_root() / folder / SLUG, course / folder / SLUG)
    handout = course / "assignments" / SLUG / "README.md"
    handout.write_text(handout.read_text() + "\nThis term's handout.\n")
    assert main(["release", SLUG, str(tmp_path / "template"), "--course", str(course)]) == 0
    assert "This term's handout." in (tmp_path / "template" / "README.md").read_text()


@pytest.fixture
def results(tmp_path):
    """A results folder of SLUG with nobody graded: enough for the assignment to be loaded."""
    folder = tmp_path / "results"
    folder.mkdir()
    state = {"assignment": SLUG, "students": [], "grader_version": "0", "course_file": ""}
    (folder / "batch.json").write_text(json.dumps(state))
    return folder


@pytest.mark.parametrize(
    "argv",
    [
        ["regrade", "{results}", "--out", "{tmp}/new", "--submissions", "{tmp}"],
        ["propose", SLUG, "{results}"],
        ["similarity", "{results}"],
    ],
    ids=lambda argv: argv[0],
)
def test_the_course_is_passed_to_the_workflow_not_through_the_environment(
    monkeypatch, tmp_path, results, argv
):
    """regrade, propose and similarity load the assignment deep in the workflow, from the
    results folder's slug: the course given reaches that load as an argument."""
    monkeypatch.delenv("AUTOGRADER_ROOT", raising=False)
    roots = []

    def load(cls, slug, root=None, **_):
        roots.append(root)
        raise UsageError(f"loaded {slug} from {root}")

    monkeypatch.setattr(Assignment, "load", classmethod(load))
    words = [w.format(results=results, tmp=tmp_path) for w in argv]
    main([*words, "--course", str(tmp_path)])
    assert roots == [str(tmp_path)] and "AUTOGRADER_ROOT" not in os.environ
