"""A results folder, the one owner of what grade-batch writes and every other workflow reads
(merge, regrade and diff, report, publish, export and passback, propose and similarity).

``<out>/batch.json`` (``STATE``) says what the folder holds: the assignment, the grader
version, the students, the course file. ``open_results`` is the one way in, and the one
refusal of a folder that holds none. ``<out>/<student>/results.json`` holds the batch's facts
about the submission (login, commit, status, content hash, grader version, notes) beside the
canonical ``Result`` (``to_dict``), or, where there is no grade, why. ``<out>/scores.csv`` is
written from those records, its cells through the one CSV rule
(``autograder.standalone.escape``). Every file is written atomically
(``autograder.result.atomic_write_text``). Only the Gradescope adapter knows Gradescope's
schema.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.course.assignment import Assignment
from autograder.errors import UsageError
from autograder.platforms.record import handed_in_files
from autograder.result import Result, TestResult, atomic_write_text, write_json
from autograder.standalone.escape import csv_text
from autograder.workflows.term import Charge

RESULTS = "results.json"
STATE = "batch.json"  # what this output folder holds: assignment, grader version, students
SCORES = "scores.csv"
# In a folder of formative results (workflows/formative.py): they never count as the grade,
# so publish and merge refuse such a folder.
FORMATIVE_MARKER = ".formative"
FORMAT = "autograder-record/1"
# status: graded, or why there is no grade (collect's missing, empty, failed; the grader's own
# suite-error, grader-error)
DONE = ("graded", "missing", "empty", "failed")


@dataclass
class Record:
    student: str
    status: str
    sha: str = ""
    content_hash: str = ""
    grader_version: str = ""
    notes: list[str] = field(default_factory=list)
    result: Result | None = None  # None: not graded (see failure)
    failure: str = ""  # why there is no result, for the student
    # the graded code, file name -> text (capped), for the instructor's analyses of the class
    # (workflows/clusters.py, workflows/similarity.py); stored here so merged shards keep it
    code: dict[str, str] = field(default_factory=dict)

    @property
    def graded(self) -> bool:
        return self.status == "graded" and self.result is not None

    @property
    def tests(self) -> list[TestResult]:
        return self.result.tests if self.result else []

    @property
    def score(self) -> float:
        return self.result.score if self.result else 0.0

    @property
    def max_score(self) -> float:
        return self.result.max_score if self.result else 0.0

    def to_dict(self) -> dict[str, Any]:
        batch = {
            "student": self.student,
            "status": self.status,
            "sha": self.sha,
            "content_hash": self.content_hash,
            "grader_version": self.grader_version,
            "notes": self.notes,
        }
        result = self.result.to_dict() if self.result else None
        return {
            "format": FORMAT,
            "batch": batch,
            "result": result,
            "failure": self.failure,
            "code": self.code,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Record:
        batch, result = data["batch"], data.get("result")
        return cls(
            student=str(batch["student"]),
            status=str(batch["status"]),
            sha=str(batch.get("sha", "")),
            content_hash=str(batch.get("content_hash", "")),
            grader_version=str(batch.get("grader_version", "")),
            notes=list(batch.get("notes", [])),
            result=Result.from_dict(result) if result else None,
            failure=str(data.get("failure", "")),
            code={str(k): str(v) for k, v in (data.get("code") or {}).items()},
        )

    def write(self, out: Path) -> None:
        write_json(Path(out) / self.student / RESULTS, self.to_dict())


CODE_CAP = 256 * 1024  # characters kept of one graded file


def graded_code(assignment: Assignment, submission: Path | None) -> dict[str, str]:
    """The code files that grading saw (for a notebook, those its answer cells stand for),
    each capped; unreadable ones are left out. Read as text only, never run."""
    code: dict[str, str] = {}
    if submission is None:
        return code
    try:
        with handed_in_files(assignment, Path(submission)) as files:
            for name in assignment.code_files:
                path = files / name
                if path.is_file() and not path.is_symlink():
                    code[name] = path.read_text(errors="replace")[:CODE_CAP]
    except (OSError, ValueError, UsageError):
        return code
    return code


def load_record(out: Path, student: str) -> Record | None:
    """The stored record, or None where there is none (or it is not one of ours)."""
    try:
        data = json.loads((Path(out) / student / RESULTS).read_text())
        return Record.from_dict(data) if data.get("format") == FORMAT else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def refuse_formative(out: Path) -> None:
    if (Path(out) / FORMATIVE_MARKER).exists():
        raise UsageError(
            f"{out} holds formative results, which never count as the grade: collect at the "
            "deadline and grade that (autograder collect, then grade-batch)"
        )


# -- the output folder --------------------------------------------------------------------------


def read_state(out: Path) -> dict[str, Any] | None:
    try:
        return json.loads((Path(out) / STATE).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise UsageError(f"{out / STATE} is unreadable ({error})") from None


def open_results(out: Path) -> dict[str, Any]:
    """The state of the results folder ``out`` (a grade-batch, merge or regrade folder); the
    one refusal of a folder that is none."""
    state = read_state(out) if Path(out).is_dir() else None
    if state is None:
        raise UsageError(f"{out} is not a grade-batch output folder (no {STATE})")
    return state


def stored_records(out: Path, state: dict[str, Any]) -> list[Record]:
    """The records of the class of ``state`` that ``out`` holds, in its order."""
    return [r for r in (load_record(out, s) for s in state["students"]) if r is not None]


def check_output_folder(out: Path, slug: str) -> None:
    """Refuse an output folder that holds something else, before anything is written."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} exists and is not a folder")
    state = read_state(out) if out.is_dir() else None
    if state is None:
        if out.is_dir() and any(out.iterdir()):
            raise UsageError(f"{out} is not empty and holds no batch results; choose a new folder")
        return
    if state.get("assignment") != slug:
        raise UsageError(f"{out} holds results for {state.get('assignment')!r}, not {slug!r}")


def remove_temporaries(out: Path) -> None:
    """Half-written files from a run that was killed (write_json's temporaries)."""
    for path in Path(out).glob(f"*/.{RESULTS}.*"):
        path.unlink(missing_ok=True)
    for path in Path(out).glob(f".{SCORES}.*"):
        path.unlink(missing_ok=True)


# -- scores.csv ---------------------------------------------------------------------------------

FLAGS = {
    "timeout": "timed out",
    "crashed": "crashed",
    "import": "crashed",
    "invalid-output": "invalid output",
}


def problems(record: Record) -> list[str]:
    """What went wrong beyond wrong answers: timed out, crashed, invalid (forged) output."""
    found = {FLAGS[t.outcome] for t in record.tests if t.outcome in FLAGS}
    if record.status != "graded":
        found.add(record.status)
    return sorted(found)


def test_column(test: TestResult) -> str:
    return f"{test.part}:{test.id}"


def mistakes(record: Record) -> list[str]:
    return sorted({m for t in record.tests for m in t.mistakes})


def scores_table(
    records: Iterable[Record], charge: Callable[[str], Charge] | None = None
) -> tuple[list[str], list[list[str]]]:
    """Header and rows: one row per student, sorted by id; columns in the suite's order.
    With ``charge`` (the late policy), ``total`` is the grade after it, beside ``raw``."""
    records = sorted(records, key=lambda r: r.student.casefold())
    parts: list[str] = []
    tests: list[str] = []
    for record in records:
        for test in record.tests:
            if test.part not in parts:
                parts.append(test.part)
            if test_column(test) not in tests:
                tests.append(test_column(test))
    policy = ["raw", "late_days", "grace_used", "penalty"] if charge else []
    header = ["login", "sha", "status", *parts, *policy, "total", "max_score", *tests]
    header += ["mistakes", "problems"]
    rows = []
    for record in records:
        by_column = {test_column(t): t for t in record.tests}
        graded = record.graded
        part_scores = [
            f"{sum(t.score for t in record.tests if t.part == p):g}" if graded else ""
            for p in parts
        ]
        rows.append(
            [
                record.student,
                record.sha,
                record.status,
                *part_scores,
                *(policy_cells(record, charge(record.student)) if charge else []),
                f"{charge(record.student).total(record.score) if charge else record.score:g}"
                if graded
                else "",
                f"{record.max_score:g}" if graded else "",
                *(f"{by_column[c].score:g}" if c in by_column else "" for c in tests),
                "; ".join(mistakes(record)),
                "; ".join(problems(record)),
            ]
        )
    return header, rows


def policy_cells(record: Record, charge: Charge) -> list[str]:
    """raw, late_days, grace_used, penalty: blank where there is no grade."""
    if not record.graded:
        return ["", f"{charge.late_days}", f"{charge.grace_used}", ""]
    raw = record.score
    return [f"{raw:g}", f"{charge.late_days}", f"{charge.grace_used}", f"{charge.penalty(raw):g}"]


def write_scores(
    path: Path, records: Iterable[Record], charge: Callable[[str], Charge] | None = None
) -> None:
    header, rows = scores_table(records, charge)
    atomic_write_text(path, csv_text([header, *rows]))
