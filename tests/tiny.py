"""A one-module assignment built in a temporary folder, for tests of `autograder check`."""

from pathlib import Path

from autograder.course.assignment import Assignment


def tiny_assignment(tmp_path: Path, reference: str, suite: str, declaration: str) -> Assignment:
    """Slug "tiny": module tiny.py (``reference``), the hidden ``suite``, an empty quiz, and
    suite.yaml's title, module and points with ``declaration`` (YAML) added."""
    course, suites = tmp_path / "course", tmp_path / "suites"
    for folder in ("reference", "assignments"):
        (course / folder / "tiny").mkdir(parents=True)
    (course / "reference" / "tiny" / "tiny.py").write_text(reference)
    (course / "reference" / "tiny" / "answers.yaml").write_text("{}\n")
    (suites / "tiny").mkdir(parents=True)
    (suites / "tiny" / "test_hidden.py").write_text(suite)
    (suites / "tiny" / "quiz.yaml").write_text("questions: []\n")
    head = "title: Tiny\nmodule: tiny\npoints: {part2: 10}\n"
    (suites / "tiny" / "suite.yaml").write_text(head + declaration)
    return Assignment.load("tiny", root=course, suites=suites)
