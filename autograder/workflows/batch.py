"""Grade a whole class: one folder per student in, one results.json per student and a CSV out.

The trusted side (pytest, the hidden suite, the reference, the catalogue) lives in a few
long-lived job processes, one per core; each submission still gets its own fresh sandboxed
worker for the student's code, exactly as ``autograder grade`` does, so a batch scores every
submission as grading it alone would. A hostile submission costs its own worker, never the
job: and if a job process dies anyway, the pool is rebuilt and the rest carry on.

Resumable: ``DIR/<student>/results.json`` is written atomically as each submission finishes
and records the submission's content hash and the grader version; a re-run skips those whose
both are unchanged. ``scores.csv`` is written (atomically) from the results files at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import hashlib
import multiprocessing
import os
import re
import signal
import statistics
import sys
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
from rich.progress import Progress as Bar
from threadpoolctl import threadpool_limits

from autograder import PACKAGE_DIR
from autograder.course.assignment import Assignment, slugs
from autograder.engine.grading import GradingSession
from autograder.errors import ExitCode, SuiteError, UsageError
from autograder.platforms.record import grade_for_record, policy
from autograder.result import Result, write_json
from autograder.sandbox.layers import Sandbox
from autograder.tree import TreeTooBig, walk_files
from autograder.workflows import term
from autograder.workflows.collect import MANIFEST, read_manifest
from autograder.workflows.command import COURSE, COURSE_FILE, GRADING, Command
from autograder.workflows.records import (
    DONE,
    SCORES,
    STATE,
    Record,
    check_output_folder,
    graded_code,
    load_record,
    problems,
    remove_temporaries,
    write_scores,
)

STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}")  # fullmatch: no trailing \n
ATTEMPTS = 2  # a submission whose job process died this often is recorded as such


@dataclass
class Submission:
    student: str
    folder: Path | None  # None: nothing was collected
    sha: str = ""
    status: str = "submitted"  # or collect's status: missing, empty, failed
    notes: list[str] = field(default_factory=list)


# -- input --------------------------------------------------------------------------------------


def discover(folder: Path, assignment: Assignment) -> list[Submission]:
    """The class in ``folder``: collect's manifest, nbgrader's submitted/<student>/<assignment>/,
    or any folder of folders (one per student, named by the student's id)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise UsageError(f"no such submissions folder: {folder}")
    if (folder / MANIFEST).is_file():
        manifest = read_manifest(folder)
        if manifest.get("assignment") != assignment.slug:
            raise UsageError(
                f"{folder / MANIFEST} is for {manifest.get('assignment')!r}, "
                f"not {assignment.slug!r}"
            )
        found = [
            Submission(
                student=row["login"],
                folder=folder / row["login"] if row.get("status") == "collected" else None,
                sha=row.get("sha", ""),
                status="submitted" if row.get("status") == "collected" else row["status"],
                notes=list(row.get("notes", [])),
            )
            for row in manifest["students"]
        ]
    else:
        children = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
        nbgrader = bool(children) and all((p / assignment.slug).is_dir() for p in children)
        found = [
            Submission(student=p.name, folder=p / assignment.slug if nbgrader else p)
            for p in children
        ]
    if not found:
        raise UsageError(f"{folder} holds no submissions (one folder per student expected)")
    seen: dict[str, str] = {}
    for sub in found:
        if not STUDENT_ID.fullmatch(sub.student):
            raise UsageError(f"{sub.student!r} cannot be used as a student id (in {folder})")
        key = sub.student.casefold()
        if key in seen:
            raise UsageError(f"two students with the same id: {seen[key]} and {sub.student}")
        seen[key] = sub.student
        if sub.folder is not None and through_a_link(folder, sub.folder):
            sub.folder, sub.status = None, "failed"
            sub.notes.append("the folder is a symbolic link: not followed, not graded")
        elif sub.folder is not None and not sub.folder.is_dir():
            sub.folder, sub.status = None, "failed"
            sub.notes.append("the collected folder is missing")
    return sorted(found, key=lambda s: s.student.casefold())


def through_a_link(root: Path, path: Path) -> bool:
    """Whether reaching ``path`` from ``root`` passes a symbolic link (never followed: it
    could point anywhere, the grader's own files included)."""
    parts = path.relative_to(root).parts
    return any(root.joinpath(*parts[: i + 1]).is_symlink() for i in range(len(parts)))


def parse_shard(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    match = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not match or not 1 <= int(match[1]) <= int(match[2]):
        raise UsageError(f"--shard takes K/N with 1 <= K <= N (got {text!r})")
    return int(match[1]), int(match[2])


def in_shard(student: str, shard: tuple[int, int] | None) -> bool:
    """A stable 1/N of the class: by a hash of the id, not by position, so adding a student
    never moves another to a different shard."""
    if shard is None:
        return True
    digest = hashlib.sha256(student.casefold().encode()).digest()
    return int.from_bytes(digest[:8], "big") % shard[1] == shard[0] - 1


def content_hash(folder: Path) -> str:
    """What grading can see of a submission: its regular files (the worker copies no links,
    no hidden folder, no __pycache__), by relative path and content. Never follows a link.
    A folder past the walk's limits hashes as its problem: grading then reports it."""
    digest = hashlib.sha256()
    try:
        for rel, path in walk_files(folder):
            name = rel.encode()
            digest.update(len(name).to_bytes(4, "big") + name)
            with path.open("rb") as f:
                digest.update(hashlib.file_digest(f, "sha256").digest())
    except TreeTooBig as problem:
        return f"too-big:{problem}"
    return digest.hexdigest()


def grader_version(assignment: Assignment) -> str:
    """The package version plus a hash of everything that decides a score: the engine's code,
    this assignment's hidden suite and its reference."""
    try:
        base = version("attention-autograder")
    except PackageNotFoundError:
        base = "0"
    digest = hashlib.sha256()
    engine = sorted(p for p in PACKAGE_DIR.rglob("*.py") if "__pycache__" not in p.parts)
    named = [(p.relative_to(PACKAGE_DIR).as_posix(), p) for p in engine]
    # the suite by its place in the package, wherever it is read from (a regrade may use a
    # copy that is being edited)
    named += [(f"suites/{assignment.slug}/{rel}", p) for rel, p in suite_files(assignment)]
    for name, path in named:
        digest.update(name.encode() + b"\0" + path.read_bytes())
    digest.update(assignment.reference_source.encode())
    return f"{base}+{digest.hexdigest()[:16]}"


def suite_digest(assignment: Assignment) -> str:
    """A hash of the hidden suite's own files (the key, the tests and their points, the
    catalogue), which a regrade's diff shows on each side."""
    digest = hashlib.sha256()
    for name, path in suite_files(assignment):
        digest.update(name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def suite_files(assignment: Assignment) -> list[tuple[str, Path]]:
    """The hidden suite's files, by their path inside it."""
    found = (p for p in assignment.suite.rglob("*") if p.is_file() and p.suffix != ".pyc")
    return [(p.relative_to(assignment.suite).as_posix(), p) for p in sorted(found)]


def is_current(record: Record | None, digest: str, grader: str) -> bool:
    if record is None:
        return False
    done = record.status in DONE
    return done and record.content_hash == digest and record.grader_version == grader


# -- grading, in long-lived job processes --------------------------------------------------------

PR_SET_PDEATHSIG = 1


@dataclass
class JobState:
    """What one job process keeps between submissions: the assignment, this job's own
    sandbox (its own uid, so one job's sweep never touches another's workers), and the
    grading session that builds the catalogue's variants once for every submission."""

    assignment: Assignment
    sandbox: Sandbox
    session: GradingSession


def _start_job(assignment: Assignment, sandbox_mode: str) -> JobState:
    """Runs once in each job process: keep the assignment, detect this job's own sandbox."""
    # pytest runs once per submission here: skip what costs time on every run and changes no
    # score (plugins found by entry point, warnings about unraisable exceptions, which each
    # run a full garbage collection).
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    os.environ["PYTEST_ADDOPTS"] = "-p no:unraisableexception -p no:threadexception"
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # unwind: workers are killed on exit
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)  # the batch was killed: stop too
    sandbox = policy(sandbox_mode, allow_weak=True)  # the parent enforced it
    # one job per core: a job's own NumPy (a diagnosis replaying mistakes) takes one thread,
    # as a spinning BLAS thread pool on a core another job needs wastes both
    threadpool_limits(1)
    job = JobState(assignment, sandbox, GradingSession(assignment))
    gc.freeze()  # what is loaded now lives all along; spare the collector from walking it
    return job


def _grade(job: JobState, student: str, folder: str) -> tuple[str, dict[str, Any] | str]:
    """(status, the Result as a dict) or (status, why there is none)."""
    try:
        result = grade_for_record(job.assignment, Path(folder), job.sandbox, job.session)
        return "graded", result.to_dict()
    except SuiteError as error:
        return "suite-error", could_not_run(str(error))
    except Exception as error:  # a grader fault (a full disk too): retried on the next run
        return "grader-error", could_not_run(described(error))


def _job_main(connection: Connection, assignment: Assignment, sandbox_mode: str) -> None:
    """A job process: set up once, then grade what the parent sends until it sends None."""
    job = _start_job(assignment, sandbox_mode)
    while (task := connection.recv()) is not None:
        connection.send(_grade(job, *task))


class Job:
    """One long-lived grading process and the pipe to it (no hidden threads, unlike a pool:
    the parent sees at once when a job dies, and can stop every job for sure)."""

    def __init__(self, args: tuple[Assignment, str]) -> None:
        context = multiprocessing.get_context("spawn")  # nothing of the parent's state leaks in
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_job_main, args=(child, *args), daemon=True)
        self.process.start()
        child.close()

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.terminate()  # SIGTERM: the job unwinds and kills its worker
            self.process.join(10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.connection.close()


def reap_orphans() -> None:
    """The sandbox makes this process a subreaper: collect whatever was left to it."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


# -- progress -----------------------------------------------------------------------------------


class Progress:
    """A progress bar on a terminal (rich), plain lines otherwise (CI logs, pipes)."""

    def __init__(self, total: int, say: Callable[[str], None] = print) -> None:
        self.total, self.done, self.say = total, 0, say
        self.bar: Any = None
        if sys.stderr.isatty() and say is print:
            self.bar = Bar(
                TextColumn("grading"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                TextColumn("{task.description}"),
                transient=True,
            )
            self.task = self.bar.add_task("", total=total)
            self.bar.start()

    def step(self, line: str) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=line)
        else:
            self.say(f"[{self.done}/{self.total}] {line}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


# -- the batch ----------------------------------------------------------------------------------


@dataclass
class Summary:
    students: int
    graded: int  # graded in this run
    unchanged: int  # skipped: same content, same grader
    seconds: float
    records: list[Record]

    def line(self) -> str:
        graded = [r for r in self.records if r.graded]
        top = max((r.max_score for r in self.records), default=0)
        per = f", {self.seconds / self.graded:.2f} s per submission" if self.graded else ""
        middle = statistics.median(r.score for r in graded) if graded else 0
        # Each student once: one without a grade is not also counted as a graded one that
        # timed out, crashed or returned invalid output.
        flagged = sum(bool(problems(r)) for r in graded)
        missing = len(self.records) - len(graded)
        return (
            f"{self.students} students: {self.graded} graded now, {self.unchanged} unchanged, "
            f"{missing} without a grade; median {middle:g}/{top:g}; {flagged} timed out, "
            f"crashed or returned invalid output; {self.seconds:.1f} s{per}"
        )


def record_of(
    sub: Submission, status: str, digest: str, grader: str, graded: dict[str, Any] | str
) -> Record:
    """What is stored for ``sub``: the Result (as its dict), or why there is none."""
    result = Result.from_dict(graded) if isinstance(graded, dict) else None
    failure = "" if result else str(graded)
    return Record(sub.student, status, sub.sha, digest, grader, sub.notes, result, failure)


def could_not_run(why: str) -> str:
    return f"Grading could not run (not a problem with your work): {why}"


def described(error: BaseException) -> str:
    return f"{type(error).__name__}: {str(error)[:300]}"


def store(record: Record, out: Path, say: Callable[[str], None] = print) -> None:
    """Write one student's results.json; a failure to write (a full disk) is said, and costs
    that student's row only: the next run grades them again."""
    try:
        record.write(out)
    except OSError as error:
        say(f"{record.student}: the result could not be written ({error.strerror or error})")


def not_submitted(sub: Submission) -> str:
    why = "; ".join(sub.notes) or sub.status
    return f"No submission was collected ({why})."


def grade_batch(
    assignment: Assignment,
    submissions: Path,
    out: Path,
    jobs: int | None = None,
    shard: tuple[int, int] | None = None,
    sandbox_mode: str = "auto",
    allow_weak_sandbox: bool = False,
    say: Callable[[str], None] = print,
    course_file: Path | None = None,
) -> Summary:
    """Grade the class in ``submissions`` into ``out``; with ``course_file`` (course.yaml),
    scores.csv has the late policy applied."""
    start = time.perf_counter()
    out = Path(out)
    everyone = discover(submissions, assignment)
    course = None
    if course_file is not None:  # checked strictly before anything is written
        course = term.load(Path(course_file), slugs(), [s.student for s in everyone])
        course.deadline(assignment.slug)
    check_output_folder(out, assignment.slug)
    policy(sandbox_mode, allow_weak_sandbox)  # refuses a weak sandbox before any work
    chosen = [s for s in everyone if in_shard(s.student, shard)]
    grader = grader_version(assignment)
    out.mkdir(parents=True, exist_ok=True)
    remove_temporaries(out)
    write_json(
        out / STATE,
        {
            "assignment": assignment.slug,
            "grader_version": grader,
            "shard": f"{shard[0]}/{shard[1]}" if shard else None,
            "students": [s.student for s in chosen],
            "submissions": str(Path(submissions).resolve()),
            "course_file": str(course.path.resolve()) if course else "",
            "suite_digest": suite_digest(assignment),
        },
    )
    todo: list[tuple[Submission, str]] = []
    unchanged = 0
    for sub in chosen:
        try:
            digest = content_hash(sub.folder) if sub.folder else ""
            if is_current(load_record(out, sub.student), digest, grader):
                unchanged += 1
            elif sub.folder is None:
                store(record_of(sub, sub.status, "", grader, not_submitted(sub)), out, say)
            else:
                todo.append((sub, digest))
        except Exception as error:  # this student's row only; the others carry on
            why = could_not_run(f"preparing this submission failed: {described(error)}")
            store(record_of(sub, "grader-error", "", grader, why), out, say)
    say(
        f"{assignment.slug}: {len(chosen)} students"
        + (f" (shard {shard[0]}/{shard[1]} of {len(everyone)})" if shard else "")
        + f", {len(todo)} to grade, {unchanged} unchanged"
    )
    jobs = max(1, min(jobs or len(os.sched_getaffinity(0)), len(todo) or 1))
    progress = Progress(len(todo), say)
    try:
        run_pool(assignment, todo, out, grader, jobs, sandbox_mode, progress)
    finally:
        progress.close()
    records = [r for r in (load_record(out, s.student) for s in chosen) if r is not None]
    write_scores(out / SCORES, records, course.charger(assignment.slug) if course else None)
    summary = Summary(len(chosen), len(todo), unchanged, time.perf_counter() - start, records)
    say(summary.line())
    return summary


def run_pool(
    assignment: Assignment,
    todo: list[tuple[Submission, str]],
    out: Path,
    grader: str,
    jobs: int,
    sandbox_mode: str,
    progress: Progress,
) -> None:
    """Grade ``todo`` across ``jobs`` processes; replace a job process that dies."""
    queue = deque(todo)
    attempts: Counter[str] = Counter()
    args = (assignment, sandbox_mode)
    idle = [Job(args) for _ in range(min(jobs, len(todo)))]
    busy: dict[Job, tuple[Submission, str]] = {}
    try:
        while queue or busy:
            while idle and queue:
                job, (sub, digest) = idle.pop(), queue.popleft()
                attempts[sub.student] += 1
                job.connection.send((sub.student, str(sub.folder)))
                busy[job] = (sub, digest)
            ready = wait([job.connection for job in busy])
            for job in [job for job in busy if job.connection in ready]:
                sub, digest = busy.pop(job)
                try:
                    status, data = job.connection.recv()
                    idle.append(job)
                except (EOFError, OSError):  # the job process died under this submission
                    job.stop()
                    idle.append(Job(args))
                    if attempts[sub.student] < ATTEMPTS:
                        queue.append((sub, digest))
                        continue
                    status, data = "grader-error", "the grading process died on it twice"
                record = record_of(sub, status, digest, grader, data)
                record.code = graded_code(assignment, sub.folder) if record.graded else {}
                store(record, out, progress.say)
                progress.step(f"{sub.student}: {record.score:g}" if record.graded else status)
    finally:
        for job in [*idle, *busy]:
            job.stop()
        reap_orphans()


# -- the command --------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    assignment = Assignment.load(args.assignment, args.course)
    grade_batch(
        assignment,
        Path(args.submissions),
        Path(args.out),
        jobs=args.jobs,
        shard=parse_shard(args.shard),
        sandbox_mode=args.sandbox,
        allow_weak_sandbox=args.allow_weak_sandbox,
        course_file=term.course_file(args.course_file, assignment.root, slugs()),
    )
    return ExitCode.OK


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("assignment", metavar="ASSIGNMENT", help="the assignment slug")
    p.add_argument("submissions", metavar="SUBMISSIONS_DIR", help="one folder per student")
    p.add_argument("--out", required=True, metavar="DIR", help="where results go")
    p.add_argument("--shard", metavar="K/N", help="grade only shard K of N (a stable split)")


COMMAND = Command(
    "grade-batch",
    help="grade a whole class in parallel into results.json files and scores.csv",
    description="Grade every submission in SUBMISSIONS_DIR: the folders collect writes "
    "(with manifest.json), nbgrader's submitted/<student>/<assignment>/, or any folder of "
    "folders named by student id. Writes DIR/<student>/results.json and DIR/scores.csv. "
    "Re-running skips submissions whose content and grader are unchanged, so an "
    "interrupted batch resumes where it stopped.",
    add_arguments=add_arguments,
    parents=(*GRADING, COURSE, COURSE_FILE),
    run=run,
)
