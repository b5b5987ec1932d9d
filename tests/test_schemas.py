"""suite.yaml, quiz.yaml and course.yaml are each read against one declarative schema
(autograder/schemas/*.schema.json): a misspelled key or a bad value is one line naming the
file, the line and the key; a local time that does not exist, or exists twice, is refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from autograder.cli import main
from autograder.course import schema
from autograder.course.assignment import SUITES, Assignment, slugs
from autograder.errors import SuiteError, UsageError
from autograder.workflows import term

SLUG = "masks-and-heads"


def suite_copy(tmp_path: Path, name: str, old: str, new: str) -> Path:
    """A suites folder holding SLUG's suite, with ``old`` replaced by ``new`` in ``name``."""
    shutil.copytree(SUITES / SLUG, tmp_path / SLUG)
    path = tmp_path / SLUG / name
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new, 1))
    return tmp_path


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_a_misspelled_key_in_suite_yaml_names_its_line(tmp_path):
    suites = suite_copy(tmp_path, "suite.yaml", "graded_together:", "graded_togther:")
    declaration = suites / SLUG / "suite.yaml"
    with pytest.raises(SuiteError) as caught:
        Assignment.load(SLUG, suites=suites)
    line = line_of(declaration, "graded_togther:")
    said = str(caught.value)
    assert said.startswith(f"{declaration}, line {line}: unknown key 'graded_togther' in ")
    assert "graded_together" in said and "\n" not in said


def test_a_misspelled_key_in_quiz_yaml_names_its_line(tmp_path):
    suites = suite_copy(tmp_path, "quiz.yaml", "    tolerance: 0\n", "    tolerence: 0\n")
    key = suites / SLUG / "quiz.yaml"
    assignment = Assignment.load(SLUG, suites=suites)  # the key is read when first needed
    with pytest.raises(SuiteError) as caught:
        assignment.key  # noqa: B018
    said = str(caught.value)
    assert said.startswith(f"{key}, line {line_of(key, 'tolerence:')}: unknown key 'tolerence' in ")
    assert "questions: item 2 (" in said and "\n" not in said


def test_a_misspelled_key_in_course_yaml_names_its_line(tmp_path, capsys):
    course = tmp_path / "course.yaml"
    course.write_text("timezone: UTC\nasignments:\n  masks-and-heads: {due: '2026-10-01 23:59'}\n")
    (tmp_path / "class" / "ada").mkdir(parents=True)
    argv = ["grade-batch", SLUG, str(tmp_path / "class"), "--out", str(tmp_path / "out")]
    assert main([*argv, "--course-file", str(course)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"autograder: error: {course}, line 2: unknown key 'asignments' in ")
    assert "the course file (assignments, collect_slack, " in err and "\n" not in err


@pytest.mark.parametrize(
    "name, old, new, words",
    [
        ("suite.yaml", "timeout: 5", "timeout: soon", "timeout must be a number (got 'soon')"),
        ("suite.yaml", "timeout: 5", "timeout: 0", "timeout must be more than 0 (got 0)"),
        ("suite.yaml", "module: attention", "module: atten tion", "module must be a module name"),
        (
            "suite.yaml",
            "float32: true",
            "float32: true\nfloat32: false",
            "'float32' is given twice",
        ),
        ("suite.yaml", "title: Masks and heads\n", "", "no 'title' in the suite declaration"),
        ("quiz.yaml", "    type: number\n", "    type: numbr\n", "type must be one of number,"),
        ("quiz.yaml", "    answer: 3\n", "", "no 'answer' in questions: item 1"),
    ],
)
def test_a_bad_value_is_one_line_with_its_line(tmp_path, name, old, new, words):
    suites = suite_copy(tmp_path, name, old, new)
    with pytest.raises(SuiteError) as caught:
        Assignment.load(SLUG, suites=suites).key  # noqa: B018
    said = str(caught.value)
    assert said.startswith(f"{suites / SLUG / name}, line ") and words in said, said
    assert "\n" not in said


def test_every_shipped_file_passes_its_schema_and_reads_as_yaml_does():
    for slug in slugs():
        for name, kind in (("suite.yaml", "suite"), ("quiz.yaml", "quiz")):
            path = SUITES / slug / name
            assert schema.read(path, kind).data == yaml.safe_load(path.read_text()), path
    course = Path(__file__).parents[1] / "course.yaml"
    assert term.read_course(course, slugs()).formative.results_per_day >= 1


@pytest.mark.parametrize(
    "due, words",
    [
        ("2026-03-29 02:30", "2026-03-29 02:30 does not exist in Europe/Berlin"),
        ("2026-10-25 02:30", "happens twice in Europe/Berlin (at +02:00, then at +01:00)"),
    ],
)
def test_a_local_time_the_clocks_skip_or_repeat_is_refused(tmp_path, due, words):
    course = tmp_path / "course.yaml"
    course.write_text(f"timezone: Europe/Berlin\nassignments:\n  {SLUG}:\n    due: {due}\n")
    with pytest.raises(UsageError) as caught:
        term.read_course(course, slugs())
    assert str(caught.value).startswith(f"{course}, line 4: {SLUG}: bad due date (")
    assert words in str(caught.value)


def test_a_time_with_its_offset_or_outside_a_change_is_taken(tmp_path):
    course = tmp_path / "course.yaml"
    course.write_text(
        f"timezone: Europe/Berlin\nassignments:\n  {SLUG}: {{due: '2026-10-25 02:30+01:00'}}\n"
        "  padding-and-batches: {due: 2026-03-29 03:30}\n"
    )
    read = term.read_course(course, slugs())
    assert read.deadline(SLUG).due.utcoffset().total_seconds() == 3600
    assert read.deadline("padding-and-batches").due.utcoffset().total_seconds() == 7200


def test_an_extension_at_a_time_that_does_not_exist_is_refused(tmp_path):
    course = tmp_path / "course.yaml"
    course.write_text(
        f"timezone: Europe/Berlin\nassignments:\n  {SLUG}: {{due: 2026-03-20 12:00}}\n"
    )
    (tmp_path / "extensions.csv").write_text(f"login,assignment,due\nada,{SLUG},2026-03-29 02:15\n")
    with pytest.raises(UsageError, match=r"extensions.csv, line 2: .* does not exist in Europe"):
        term.load(course, slugs(), ["ada"])
