"""Our autograde for an nbgrader course: the sandboxed grader, writing nbgrader's gradebook.

For each ``submitted/<student>/<slug>/<slug>.ipynb``: the answer cells and ``answers.yaml``
become the files ``autograder grade`` reads, graded in the sandboxed worker (no student cell
ever runs in this process or in a kernel beside the tests); the scores go into the gradebook
through nbgrader's own ``Gradebook`` API, and ``autograded/<student>/<slug>/`` gets the
notebook with our feedback as the test cells' outputs. formgrader, ``generate_feedback`` and
``export`` then work unchanged, on scores no student cell could forge.
"""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.utils import parse_utc

from autograder.course.assignment import Assignment
from autograder.engine.grading import GradingSession, grade_files
from autograder.errors import UsageError
from autograder.platforms.nbgrader.kernel import cell_tests, feedback
from autograder.platforms.nbgrader.notebook import (
    ANSWERS,
    PART1,
    extract,
    our_texts,
    shown_as_text,
)
from autograder.platforms.record import policy as record_policy
from autograder.result import Result
from autograder.sandbox.layers import Sandbox


def database(course: Path) -> str:
    return f"sqlite:///{(course / 'gradebook.db').resolve()}"


def checks_of(grade_id: str) -> str:
    return PART1 if grade_id == PART1 else grade_id.removeprefix("test_")


def submissions(course: Path, slug: str, student: str | None) -> list[Path]:
    """The submitted notebooks, one per student folder (every student folder, so that one
    without a notebook is graded 0 rather than dropped)."""
    folders = sorted((course / "submitted").glob(f"*/{slug}"))
    if student is not None:
        folders = [f for f in folders if f.parent.name == student]
        if not folders:
            raise UsageError(f"no submission of {slug} by {student!r} under {course}/submitted")
    return [folder / f"{slug}.ipynb" for folder in folders]


def autograded_notebook(
    submitted: dict[str, Any], source: dict[str, Any], result: Result
) -> dict[str, Any]:
    """The student's notebook with every test cell restored from source/ (missing ones
    appended) and our feedback as its output. No other cell keeps an output, no Markdown or
    raw cell of the student's renders (``shown_as_text``), and the notebook's metadata is
    source/'s: nothing a student's notebook brings reaches the feedback page as HTML."""
    restored = {
        c["metadata"]["nbgrader"]["grade_id"]: c
        for c in source["cells"]
        if c.get("metadata", {}).get("nbgrader", {}).get("grade")
    }
    cells, seen = [], set[str]()
    for c in submitted.get("cells", []):
        grade_id = c.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id in restored:
            c, seen = restored[grade_id], seen | {grade_id}
        cells.append(c)
    cells += [c for grade_id, c in restored.items() if grade_id not in seen]
    ours = our_texts(source)
    cells = [c if c.get("cell_type") == "code" else shown_as_text(c, ours) for c in cells]
    out = {
        "cells": copy.deepcopy(cells),
        "metadata": copy.deepcopy(source.get("metadata", {})),
        "nbformat": 4,
        "nbformat_minor": submitted.get("nbformat_minor", 4),
    }
    for c in out["cells"]:
        if c.get("cell_type") != "code":
            continue
        c["outputs"], c["execution_count"] = [], None
        meta = c.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade"):
            checks = checks_of(meta["grade_id"])
            tests = cell_tests(result, checks)
            notices = [n for n in result.notices if (ANSWERS in n) == (checks == PART1)]
            score = sum(t.score for t in tests)
            c["outputs"] = [
                {"output_type": "stream", "name": "stdout", "text": feedback(tests, notices)},
                {
                    "output_type": "execute_result",
                    "execution_count": None,
                    "metadata": {},
                    "data": {"text/plain": repr(float(score))},
                },
            ]
    return out


def grade_notebook(
    assignment: Assignment,
    notebook: Path,
    sandbox: Sandbox,
    session: GradingSession | None = None,
) -> Result:
    """The notebook alone is the submission: any other file beside it is ignored."""
    with tempfile.TemporaryDirectory(prefix="nbgrader-") as tmp:
        if notebook.is_file():
            extract(notebook, assignment, Path(tmp))
        return grade_files(assignment, Path(tmp), sandbox, session)


def autograde(
    course: Path,
    slug: str,
    student: str | None = None,
    allow_weak: bool = False,
    root: Path | str | None = None,
) -> dict[str, Result]:
    """Grade the nbgrader COURSE's submissions of SLUG; ``root`` holds reference/ (and
    assignments/) when it is not the installed course material."""
    course = Path(course)
    assignment = Assignment.load(slug, root)
    source_file = course / "source" / slug / f"{slug}.ipynb"
    if not source_file.is_file():
        raise UsageError(f"{source_file} not found: run `autograder nbgrader build` first")
    source = json.loads(source_file.read_text())
    sandbox = record_policy(allow_weak=allow_weak)
    session = GradingSession(assignment)  # the class shares one catalogue, built once
    todo = submissions(course, slug, student)
    results: dict[str, Result] = {}
    with Gradebook(database(course)) as gb, warnings.catch_warnings():
        # nbgrader's own autoflush warning on a new submission, as its config silences it
        warnings.filterwarnings("ignore", message=".*not in session")
        try:
            gb.find_assignment(slug)
        except MissingEntry:
            message = f"{slug} is not in the gradebook: run nbgrader generate_assignment first"
            raise UsageError(message) from None
        for number, notebook in enumerate(todo, start=1):
            student_id = notebook.parent.parent.name
            start = time.perf_counter()
            result = grade_notebook(assignment, notebook, sandbox, session)
            results[student_id] = result
            record(gb, course, slug, student_id, notebook, source, result)
            print(
                f"[{number}/{len(todo)}] {student_id}: "
                f"{result.score:g}/{result.max_score:g} ({time.perf_counter() - start:.1f} s)",
                flush=True,
            )
    return results


def record(
    gb: Gradebook,
    course: Path,
    slug: str,
    student: str,
    notebook: Path,
    source: dict[str, Any],
    result: Result,
) -> None:
    stamp = notebook.parent / "timestamp.txt"
    extra = {"timestamp": parse_utc(stamp.read_text().strip())} if stamp.is_file() else {}
    gb.update_or_create_student(student)
    gb.update_or_create_submission(slug, student, **extra)
    for grade_row in gb.find_submission_notebook(slug, slug, student).grades:
        tests = cell_tests(result, checks_of(grade_row.name))
        grade_row.auto_score = round(sum(t.score for t in tests), 6)
        grade_row.needs_manual_grade = False
    gb.db.commit()

    # What formgrader and generate_feedback read: the submission, with our outputs.
    out = course / "autograded" / student / slug
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(notebook.parent, out, symlinks=True)
    submitted = json.loads(notebook.read_text()) if notebook.is_file() else {"cells": []}
    graded = autograded_notebook(submitted, source, result)
    (out / notebook.name).write_text(json.dumps(graded, indent=1) + "\n")
