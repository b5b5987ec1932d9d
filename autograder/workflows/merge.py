"""Merge the output folders of ``grade-batch --shard K/N`` runs into one, as if graded at once.

Refuses shards of different assignments or grader versions (their scores are not comparable;
``allow_mixed`` lets different grader versions through), shards that overlap (the same student
in two), and a set of shards with one missing. With a course file (recorded by grade-batch),
scores.csv has the late policy applied.
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autograder.errors import ExitCode, UsageError
from autograder.result import write_json
from autograder.workflows import classreport, gradebook
from autograder.workflows.command import ALLOW_MIXED, Command
from autograder.workflows.records import (
    RESULTS,
    SCORES,
    STATE,
    load_record,
    open_results,
    refuse_formative,
    write_scores,
)
from autograder.workflows.term import Course


def read_shards(folders: list[Path], allow_mixed: bool = False) -> list[dict[str, Any]]:
    states = []
    for folder in folders:
        state = open_results(folder)
        refuse_formative(Path(folder))
        states.append(state | {"folder": Path(folder)})
    first = states[0]
    for state in states[1:]:
        for key in ("assignment", "course_file", *(() if allow_mixed else ("grader_version",))):
            if state.get(key, "") != first.get(key, ""):
                raise UsageError(
                    f"{state['folder']} and {first['folder']} differ in {key.replace('_', ' ')}"
                    f" ({state.get(key)} against {first.get(key)}): grade them again together"
                    + ("" if key != "grader_version" else " (or pass --allow-mixed)")
                )
    owner: dict[str, Path] = {}
    for state in states:
        for student in state["students"]:
            if student.casefold() in owner:
                raise UsageError(
                    f"{student} is in both {owner[student.casefold()]} and {state['folder']}: "
                    "the shards overlap"
                )
            owner[student.casefold()] = state["folder"]
    shards = {state.get("shard") for state in states}
    if None not in shards:
        counts = {int(str(s).split("/")[1]) for s in shards}
        wanted = {f"{k}/{n}" for n in counts for k in range(1, n + 1)}
        if len(counts) > 1 or shards != wanted:
            missing = ", ".join(sorted(wanted - shards)) or "a consistent N"
            raise UsageError(f"the shards do not make a whole class (missing: {missing})")
    return states


def merge(
    folders: list[Path],
    out: Path,
    say: Callable[[str], None] = print,
    allow_mixed: bool = False,
    course: Course | None = None,
) -> int:
    """Copy every shard's results into ``out`` and write one scores.csv; the student count.
    ``course`` is the course file the shards recorded (``batch.json``'s course_file)."""
    states = read_shards([Path(f) for f in folders], allow_mixed)
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"{out} is not empty; merge into a new folder")
    records, students = [], []
    for state in states:
        for student in state["students"]:
            record = load_record(state["folder"], student)
            if record is None:
                raise UsageError(f"{state['folder']}: {student} has no results; finish that shard")
            records.append(record)
            students.append(student)
    for state in states:
        for student in state["students"]:
            target = out / student / RESULTS
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(state["folder"] / student / RESULTS, target)
    first = states[0]
    write_json(
        out / STATE,
        {
            "assignment": first["assignment"],
            "grader_version": first["grader_version"],
            "shard": None,
            "students": sorted(students, key=str.casefold),
            "submissions": first.get("submissions", ""),
            "course_file": first.get("course_file", ""),
            "suite_digest": first.get("suite_digest", ""),
        },
    )
    write_scores(out / SCORES, records, course.charger(first["assignment"]) if course else None)
    say(f"merged {len(states)} shard(s), {len(students)} students, into {out / SCORES}")
    return len(students)


# -- the command -----------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    states = read_shards([Path(d) for d in args.shards], args.allow_mixed)
    course = gradebook.course_of(
        states[0] | {"students": [s for st in states for s in st["students"]]}
    )
    merge(
        [Path(d) for d in args.shards], Path(args.out), allow_mixed=args.allow_mixed, course=course
    )
    classreport.say_written(Path(args.out))
    return ExitCode.OK


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("shards", metavar="DIR", nargs="+", help="the shards' output folders")
    p.add_argument("--out", required=True, metavar="OUT", help="a new folder for the merge")


COMMAND = Command(
    "merge",
    help="combine the outputs of grade-batch shards into one scores.csv",
    description="Merge the output folders of `grade-batch --shard K/N` runs into OUT: "
    "every student's results.json and one scores.csv, equal to grading the class at once. "
    "Refuses shards that overlap, miss a part, or come from different grader versions.",
    add_arguments=add_arguments,
    parents=(ALLOW_MIXED,),
    run=run,
)
