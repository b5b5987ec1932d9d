"""Regrades before release: grade exactly the submissions of a results folder again with the
current suite and grader, then show who gains or loses before anything is published.

``regrade RESULTS --out NEW`` checks that every submission on disk is byte for byte what
RESULTS graded (the content hash each record keeps), so a later push can never slip in, then
runs grade-batch into NEW with the course file RESULTS used. ``diff OLD NEW`` compares two
folders: totals after the late policy, every test whose points or outcome changed with the
diagnosed cause on each side, and the grader versions and suite digests. Nothing reaches a
student until the instructor runs ``publish`` on NEW.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from autograder import report
from autograder.course.assignment import Assignment
from autograder.errors import ExitCode, UsageError
from autograder.result import TestResult, atomic_write_text
from autograder.standalone import escape
from autograder.workflows import batch
from autograder.workflows.command import ALLOW_MIXED, COURSE, GRADING, Command
from autograder.workflows.gradebook import Folder, Grade, read_folder
from autograder.workflows.records import test_column

DIFF_MD, DIFF_CSV = "diff.md", "diff.csv"


def regrade(
    results: Path,
    out: Path,
    assignment: Assignment | None = None,
    course: Path | str | None = None,
    submissions: Path | None = None,
    sandbox_mode: str = "auto",
    allow_weak_sandbox: bool = False,
    jobs: int | None = None,
    say: Callable[[str], None] = print,
) -> batch.Summary:
    """Grade RESULTS' submissions again into the new folder ``out``, with ``assignment``, else
    the one RESULTS holds, loaded from ``course`` (see ``Assignment.load``)."""
    old = read_folder(results)
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out} is not a new, empty folder: regrade into a new one")
    assignment = assignment or Assignment.load(old.assignment, course)
    where = Path(submissions or old.state.get("submissions") or "")
    if not str(where) or not where.is_dir():
        raise UsageError(f"no submissions folder for {results} (give --submissions)")
    on_disk = {s.student: s for s in batch.discover(where, assignment)}
    for student, grade in old.grades.items():
        sub = on_disk.get(student)
        digest = batch.content_hash(sub.folder) if sub and sub.folder else ""
        if digest != grade.record.content_hash:
            sha = grade.record.sha[:12] or "the graded files"
            raise UsageError(
                f"{where}: {student}'s files are not {sha} as graded in {results}; "
                "collect them again with `collect --at MANIFEST`"
            )
    course_file = old.state.get("course_file") or None
    return batch.grade_batch(
        assignment,
        where,
        out,
        jobs=jobs,
        shard=batch.parse_shard(old.state.get("shard")),
        sandbox_mode=sandbox_mode,
        allow_weak_sandbox=allow_weak_sandbox,
        say=say,
        course_file=Path(course_file) if course_file else None,
    )


# -- the diff -----------------------------------------------------------------------------------


@dataclass
class TestChange:
    student: str
    column: str
    old: TestResult | None
    new: TestResult | None


@dataclass
class StudentChange:
    student: str
    old: float | None
    new: float | None

    @property
    def change(self) -> float:
        return round((self.new or 0) - (self.old or 0), 2)


@dataclass
class Diff:
    old: Folder
    new: Folder
    students: list[StudentChange] = field(default_factory=list)  # who gains or loses
    tests: list[TestChange] = field(default_factory=list)


def graders(folder: Folder) -> set[str]:
    return {g.record.grader_version for g in folder.grades.values() if g.record.grader_version}


def compare(old_path: Path, new_path: Path, allow_mixed: bool = False) -> Diff:
    old, new = read_folder(old_path), read_folder(new_path)
    if old.assignment != new.assignment:
        raise UsageError(f"{old_path} is {old.assignment} and {new_path} is {new.assignment}")
    for folder in (old, new):
        versions = graders(folder)
        if len(versions) > 1 and not allow_mixed:
            raise UsageError(
                f"{folder.path} mixes results of {len(versions)} grader versions "
                f"({', '.join(sorted(versions))}): regrade it whole, or pass --allow-mixed"
            )
    found = Diff(old, new)
    for student in sorted(set(old.grades) | set(new.grades), key=str.casefold):
        before, after = old.grades.get(student), new.grades.get(student)
        change = StudentChange(student, total(before), total(after))
        if change.change or change.old != change.new:
            found.students.append(change)
        found.tests += test_changes(student, before, after)
    found.students.sort(key=lambda c: (c.change, c.student.casefold()))
    return found


def total(grade: Grade | None) -> float | None:
    return grade.total if grade else None


def test_changes(student: str, before: Grade | None, after: Grade | None) -> list[TestChange]:
    old = {test_column(t): t for t in before.record.tests} if before else {}
    new = {test_column(t): t for t in after.record.tests} if after else {}
    changes = []
    for column in [*old, *(c for c in new if c not in old)]:
        a, b = old.get(column), new.get(column)
        same = a and b and (a.score, a.max_score, a.outcome) == (b.score, b.max_score, b.outcome)
        if not same:
            changes.append(TestChange(student, column, a, b))
    return changes


def side(test: TestResult | None) -> tuple[str, str, str]:
    """points, outcome and diagnosed cause of one side of a test change."""
    if test is None:
        return "", "absent", ""
    return f"{test.score:g}/{test.max_score:g}", test.outcome, report.cause_of(test)


def points(value: float | None) -> str:
    return "no grade" if value is None else f"{value:g}"


def markdown(diff: Diff) -> str:
    lines = [f"# {diff.old.assignment}: regrade diff", ""]
    lines += ["| | old | new |", "|---|---|---|"]
    lines.append(f"| folder | `{diff.old.path}` | `{diff.new.path}` |")
    old_grader, new_grader = (", ".join(sorted(graders(f))) for f in (diff.old, diff.new))
    lines.append(f"| grader | {old_grader} | {new_grader} |")
    old_suite = diff.old.state.get("suite_digest", "")
    lines.append(f"| suite digest | {old_suite} | {diff.new.state.get('suite_digest', '')} |")
    gains = sum(c.change > 0 for c in diff.students)
    losses = sum(c.change < 0 for c in diff.students)
    lines += ["", f"## Who gains or loses ({gains} gain, {losses} lose)", ""]
    if diff.students:
        lines += ["| student | old total | new total | change |", "|---|---|---|---|"]
        lines += [
            f"| {c.student} | {points(c.old)} | {points(c.new)} | {c.change:+g} |"
            for c in diff.students
        ]
    else:
        lines.append("Nobody's total changes.")
    lines += ["", "## Tests that changed", ""]
    if diff.tests:
        lines += [
            "| student | test | old | old cause | new | new cause |",
            "|---|---|---|---|---|---|",
        ]
        for t in diff.tests:
            (op, oo, oc), (np_, no, nc) = side(t.old), side(t.new)
            cells = [t.student, f"`{t.column}`", f"{op} {oo}", oc, f"{np_} {no}", nc]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    else:
        lines.append("No test changed.")
    lines += ["", "Nothing is published until you run `autograder publish` on the new folder."]
    return "\n".join(lines) + "\n"


CSV_HEADER = [
    "login", "old_total", "new_total", "change", "test",
    "old_points", "old_outcome", "old_cause", "new_points", "new_outcome", "new_cause",
]  # fmt: skip


def csv_text(diff: Diff) -> str:
    """One row per student whose total changes (test empty), then one per changed test."""
    rows = [CSV_HEADER]
    for c in diff.students:
        rows.append([c.student, points(c.old), points(c.new), f"{c.change:+g}", *[""] * 7])
    totals = {c.student: c for c in diff.students}
    for t in diff.tests:
        moved = totals.get(t.student)
        cells = [points(moved.old), points(moved.new), f"{moved.change:+g}"] if moved else []
        rows.append([t.student, *(cells or ["", "", "+0"]), t.column, *side(t.old), *side(t.new)])
    return escape.csv_text(rows)


def write_diff(diff: Diff, into: Path) -> tuple[Path, Path]:
    into = Path(into)
    into.mkdir(parents=True, exist_ok=True)
    atomic_write_text(into / DIFF_MD, markdown(diff))
    atomic_write_text(into / DIFF_CSV, csv_text(diff))
    return into / DIFF_MD, into / DIFF_CSV


# -- the command -----------------------------------------------------------------------------------


def run_regrade(args: argparse.Namespace) -> int:
    regrade(
        Path(args.results),
        Path(args.out),
        course=args.course,
        submissions=Path(args.submissions) if args.submissions else None,
        sandbox_mode=args.sandbox,
        allow_weak_sandbox=args.allow_weak_sandbox,
        jobs=args.jobs,
    )
    print(f"regraded into {args.out}; compare with `autograder diff {args.results} {args.out}`")
    return ExitCode.OK


def add_regrade_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", metavar="RESULTS", help="the folder graded before")
    p.add_argument("--out", required=True, metavar="NEW", help="a new folder for the regrade")
    p.add_argument(
        "--submissions",
        metavar="DIR",
        help="the collected submissions (default: the folder RESULTS was graded from)",
    )


def run_diff(args: argparse.Namespace) -> int:
    found = compare(Path(args.old), Path(args.new), args.allow_mixed)
    print(markdown(found), end="")
    md, table = write_diff(found, Path(args.out or args.new))
    print(f"written to {md} and {table}", file=sys.stderr)
    return ExitCode.OK


def add_diff_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("old", metavar="OLD", help="the results folder before")
    p.add_argument("new", metavar="NEW", help="the results folder after")
    p.add_argument("--out", metavar="DIR", help="where diff.md and diff.csv go (default: NEW)")


REGRADE = Command(
    "regrade",
    help="grade exactly the submissions of a results folder again, into a new folder",
    description="Regrade RESULTS (a grade-batch or merge folder) with the current suite and "
    "grader into the new folder NEW: the same SHAs, checked byte for byte against what "
    "RESULTS graded (else nothing runs), with the course file RESULTS used. Nothing is "
    "published: compare with `autograder diff RESULTS NEW`, then `publish` NEW.",
    add_arguments=add_regrade_arguments,
    parents=(*GRADING, COURSE),
    run=run_regrade,
)
DIFF = Command(
    "diff",
    help="who gains or loses between two results folders, and why",
    description="Compare OLD and NEW (grade-batch, merge or regrade folders of one "
    "assignment): who gains or loses points (old and new totals, after the late policy), "
    "which tests changed with the diagnosed cause on each side, and the grader versions "
    "and suite digests. Prints the Markdown and writes diff.md and diff.csv into NEW (or "
    "--out). Refuses a side that mixes grader versions unless --allow-mixed.",
    add_arguments=add_diff_arguments,
    parents=(ALLOW_MIXED,),
    run=run_diff,
)
