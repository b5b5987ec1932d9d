"""Practice checks for a student's repository: the public tests, and the form of answers.yaml.

This file is copied verbatim into every template ``autograder release`` writes, as
``practice/check.py``, next to ``github.py`` (the GitHub formats), ``sheet.py`` (the engine's
answer-sheet reader) and ``questions.json`` (each question's id, type and form: no answers).
The student's repository cannot install the grader, whose package data holds the hidden
suites, so everything here is public code: standard library, PyYAML and pytest.

    python practice/check.py          # from the repository's top folder, online or offline

It runs the public tests with pytest in a child process whose output goes to a file, then
checks that every question in answers.yaml is answered in the right form, naming the line of a
bad one. These are practice checks, not the grade, and nothing here says otherwise: no points,
no ``Points x/y`` line for a reporter (a count such as 18/18 reads as full marks, and work
worth 85/100 passed every check), and every report says what the checks do not check. In GitHub
Actions it also writes the job summary.
Exit status: 0 when every check passed, 1 when one failed (in Actions too, so the run shows
it), 2 when the checks could not run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__:  # imported from the package (autograder.standalone.practice)
    from . import escape, github, sheet
else:  # run as the template's practice/check.py, beside copies of them
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import escape  # type: ignore[no-redef]  # noqa: E402
    import github  # type: ignore[no-redef]  # noqa: E402
    import sheet  # type: ignore[no-redef]  # noqa: E402

HERE = Path(__file__).resolve().parent
TEST_TIMEOUT = 300  # seconds for the whole public test run
MESSAGE_CAP = 2000
TRACE_LINES = 12  # the end of a failure's traceback, where the error is
NOTICE = (
    "These are **practice checks, not your grade**: the public tests, and whether every "
    "question in `answers.yaml` is answered in a form the grader can read. Passing all of "
    "them is not full marks."
)
NOT_CHECKED = (
    "What they do not check: whether your answers in `answers.yaml` are right (only that each "
    "can be read), and your code on the course's own tests, which try other shapes and sizes, "
    "every option of each function, and the edge cases the public tests leave out. Your grade "
    "comes from the course, from the commit collected at the deadline."
)


@dataclass
class Check:
    name: str
    passed: bool
    message: str = ""
    line: int = 0


# -- the public tests -----------------------------------------------------------------------------


def public_test_checks(repo: Path, tests: list[str]) -> list[Check]:
    """Run pytest in a child process; what the student's code prints stays in a file."""
    with tempfile.TemporaryDirectory() as tmp:
        junit, log = Path(tmp) / "junit.xml", Path(tmp) / "pytest.log"
        command = [sys.executable, "-m", "pytest", "-q", "--tb=short", "-p", "no:cacheprovider"]
        command += [f"--junitxml={junit}", *tests]
        # The public tests need no plugins; whatever else is installed must not change them
        # (and loading every plugin on a laptop can take longer than the tests).
        env = os.environ | {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        with open(log, "wb") as out:
            try:
                subprocess.run(
                    command, cwd=repo, env=env, stdin=subprocess.DEVNULL, stdout=out,
                    stderr=subprocess.STDOUT, timeout=TEST_TIMEOUT, check=False,
                )  # fmt: skip
            except subprocess.TimeoutExpired:
                return [Check("public tests", False, f"stopped after {TEST_TIMEOUT} s")]
        if not junit.is_file():
            tail = log.read_text(errors="replace")[-MESSAGE_CAP:]
            return [Check("public tests", False, f"pytest did not run:\n{tail}")]
        return [check_from_case(case) for case in ElementTree.parse(junit).iter("testcase")]


def check_from_case(case: ElementTree.Element) -> Check:
    name = f"public test: {case.get('name', '?')}"
    problem = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
    if problem is None:
        return Check(name, True)
    trace = (problem.text or "").strip().splitlines()[-TRACE_LINES:]
    text = "\n".join([problem.get("message") or problem.tag, *trace])
    if problem.tag == "skipped":
        text = "skipped: " + text
    return Check(name, False, text.strip()[-MESSAGE_CAP:])


# -- the answer sheet -----------------------------------------------------------------------------


def sheet_checks(repo: Path, questions: list[dict[str, Any]]) -> list[Check]:
    """One check that the sheet reads, then one per question: answered, in a readable form."""
    forms, problems = sheet.check_forms({"questions": questions}, repo / "answers.yaml")
    checks = [Check("answers.yaml: reads as YAML", not problems, "\n".join(problems))]
    for form in forms:
        where = f"answers.yaml, line {form.line}: " if form.line else "answers.yaml: "
        message = f"{where}{form.id}: {form.problem}" if form.problem else ""
        checks.append(Check(f"answers.yaml: {form.title}", form.ok, message, form.line or 0))
    return checks


# -- reporting ------------------------------------------------------------------------------------


def tally(title: str, checks: list[Check]) -> str:
    """``title: 16 of 17 practice checks passed``: a count of checks, never points."""
    return f"{title}: {sum(c.passed for c in checks)} of {len(checks)} practice checks passed"


def terminal_report(title: str, checks: list[Check]) -> str:
    out = [f"{tally(title, checks)} (practice, not your grade)", ""]
    for c in checks:
        out.append(f"  [{'PASS' if c.passed else 'FAIL'}] {c.name}")
        if not c.passed and c.message:
            out += [f"         {line}" for line in c.message.splitlines()[:20]]
    out += ["", plain(NOTICE), plain(NOT_CHECKED)]
    return escape.plain("\n".join(out))


def plain(markdown: str) -> str:
    return markdown.replace("**", "").replace("`", "")


def main(repo: Path) -> int:
    config = json.loads((HERE / "questions.json").read_text())
    checks = public_test_checks(repo, config["public_tests"])
    checks += sheet_checks(repo, config["questions"])
    title = f"Practice checks for {config['assignment']}"
    with github.commands_stopped():
        print(terminal_report(title, checks))
    github.append_summary(
        github.checklist_summary(tally(title, checks), checks, NOTICE, NOT_CHECKED)
    )
    return 0 if all(c.passed for c in checks) else 1


if __name__ == "__main__":
    try:
        sys.exit(main(Path.cwd()))
    except (OSError, ValueError, KeyError) as error:
        print(f"practice checks could not run: {error}", file=sys.stderr)
        sys.exit(2)
