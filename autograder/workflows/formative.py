"""A formative round: feedback from the hidden suite on each student's latest push, from runs
the instructor controls, rate-limited so the grader cannot be used as an oracle.

One round, run on a schedule during term and by hand (``autograder formative``):

1. collect the latest commit of every student's repository (``collect``, into
   ``WORK/submissions``);
2. grade what changed (``grade-batch`` into ``WORK/results`` skips unchanged work);
3. post to each student's commit the score per test and the named causes
   (``report.commit_comment``, which never quotes expected values or hidden tests), through
   the same API client as ``publish``: unless that work was posted already, or the student
   has had ``formative.results_per_day`` results today (the course file, ``course.yaml`` at
   the course root unless ``--course-file`` names another: ``term.py`` reads it). Each message says
   which result of the day it is and when the next one comes.

A student held back by the limit is not forgotten: the first round of the next day posts the
latest work. ``WORK/ledger.json`` records what was posted (commit, content, time) and is the
only memory between rounds; keep ``WORK`` between runs (grade.yml caches it).
``--dry-run FILE`` writes the round's requests to FILE and keeps its ledger in
``WORK/ledger.dry-run.json``, so a rehearsal never spends a student's quota.

A formative result never counts as the grade: its folder carries a marker that ``publish``
and ``merge`` refuse, and the grade comes from collecting at the deadline, as before.
"""

from __future__ import annotations

import argparse
import datetime
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder import report
from autograder.course.assignment import Assignment, slugs
from autograder.errors import ExitCode, UsageError
from autograder.result import write_json
from autograder.workflows import batch, collect, publish, term
from autograder.workflows.command import COURSE, COURSE_FILE, GRADING, Command
from autograder.workflows.records import FORMATIVE_MARKER, Record, load_record
from autograder.workflows.term import Formative

LEDGER = "ledger.json"
DRY_RUN_LEDGER = "ledger.dry-run.json"
LEDGER_FORMAT = "autograder-formative-ledger/1"
SUBMISSIONS, RESULTS = "submissions", "results"

LEAD = (
    "**Formative feedback: this is not your grade.** It is how the course's hidden tests "
    "score commit `{sha}` today. Your grade comes only from the commit collected at the "
    "deadline."
)

Clock = Callable[[], datetime.datetime]


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def parse_time(text: str) -> datetime.datetime:
    """An ISO 8601 time; one without a zone is taken as UTC."""
    try:
        when = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"{text!r} is not a time (e.g. 2026-10-05T14:00:00+00:00)") from None
    return when if when.tzinfo else when.replace(tzinfo=datetime.UTC)


# -- the rate limit ----------------------------------------------------------------------------


def day_bounds(
    now: datetime.datetime, settings: Formative
) -> tuple[datetime.datetime, datetime.datetime]:
    """The start of ``now``'s day and of the next, midnight in the course's time zone."""
    local = now.astimezone(settings.zone)
    start = datetime.datetime.combine(local.date(), datetime.time(), settings.zone)
    following = datetime.datetime.combine(
        local.date() + datetime.timedelta(days=1), datetime.time(), settings.zone
    )
    return start, following


def used_today(entries: list[dict[str, str]], now: datetime.datetime, settings: Formative) -> int:
    start, _ = day_bounds(now, settings)
    return sum(parse_time(e["at"]) >= start for e in entries)


def decide(
    record: Record | None,
    entries: list[dict[str, str]],
    now: datetime.datetime,
    settings: Formative,
) -> str:
    """due, unchanged (this work was posted already), limited (today's results are used up)
    or not-graded (nothing to post: not collected, or grading failed)."""
    if record is None or not record.graded or not record.sha:
        return "not-graded"
    if entries and entries[-1]["content_hash"] == record.content_hash:
        return "unchanged"
    if used_today(entries, now, settings) >= settings.results_per_day:
        return "limited"
    return "due"


def when_next(number: int, now: datetime.datetime, settings: Formative) -> str:
    """What a student reads about the next result, after result ``number`` of today."""
    left = settings.results_per_day - number
    day = now.astimezone(settings.zone).strftime("%Y-%m-%d")
    said = f"This is formative result {number} of {settings.results_per_day} for you today "
    said += f"({day}, {settings.timezone})."
    if left > 0:
        return said + (
            f" The next one comes with the first round after your next push ({left} more "
            "today at most)."
        )
    _, following = day_bounds(now, settings)
    return said + (
        " It is today's last: the next one comes with the first round after "
        f"{following:%Y-%m-%d %H:%M} {settings.timezone}, for the latest commit you have "
        "pushed by then."
    )


def message(
    record: Record, hints: dict[str, str], number: int, now: datetime.datetime, settings: Formative
) -> str:
    assert record.result is not None
    body = report.commit_comment(
        record.result, record.sha, hints, lead=LEAD, title="Formative feedback"
    )
    return body + "\n---\n\n" + when_next(number, now, settings) + "\n"


# -- the ledger --------------------------------------------------------------------------------


def read_ledger(path: Path) -> dict[str, list[dict[str, str]]]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
        assert data.get("format") == LEDGER_FORMAT and isinstance(data.get("students"), dict)
        return data["students"]
    except (OSError, ValueError, AssertionError) as error:
        raise UsageError(f"{path} is not a formative ledger ({error or 'wrong format'})") from None


def write_ledger(path: Path, students: dict[str, list[dict[str, str]]]) -> None:
    write_json(path, {"format": LEDGER_FORMAT, "students": students})


# -- a round -----------------------------------------------------------------------------------


@dataclass
class Round:
    """What one round did, per student."""

    posted: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # limited: posted on a later day
    unchanged: list[str] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    ran: bool = True

    def line(self, settings: Formative, now: datetime.datetime) -> str:
        _, following = day_bounds(now, settings)
        held = (
            f"{len(self.held)} held back by the limit of {settings.results_per_day} a day "
            f"(until {following:%Y-%m-%d %H:%M} {settings.timezone})"
        )
        return (
            f"formative round: {len(self.posted)} result(s) posted, {held}, "
            f"{len(self.unchanged)} already posted; none of it counts as the grade"
        )


@dataclass
class Where:
    """Where the students' repositories are: collected from, and posted to."""

    org: str = ""
    url_template: str = collect.DEFAULT_TEMPLATE
    repository_template: str = ""  # owner/name (or a GitHub URL); default: url_template


def formative_round(
    assignment: Assignment,
    logins: list[str],
    work: Path,
    where: Where,
    dry_run: Path | None = None,
    clock: Clock = utc_now,
    scheduled: bool = False,
    sandbox_mode: str = "auto",
    allow_weak_sandbox: bool = False,
    jobs: int | None = None,
    say: Callable[[str], None] = print,
    course_file: Path | None = None,
) -> Round:
    settings = term.formative_of(course_file, assignment.root, slugs())
    now = clock()
    if scheduled and not settings.in_term(now):
        say(f"formative round: {now:%Y-%m-%d} is outside the term in course.yaml; nothing done")
        return Round(ran=False)
    token = "" if dry_run is not None else publish.token_from_env()  # fail before any work
    work = Path(work)
    submissions, results = work / SUBMISSIONS, work / RESULTS
    collect.collect(assignment.slug, logins, submissions, where.url_template, where.org, say=say)
    batch.grade_batch(
        assignment,
        submissions,
        results,
        jobs=jobs,
        sandbox_mode=sandbox_mode,
        allow_weak_sandbox=allow_weak_sandbox,
        say=say,
    )
    (results / FORMATIVE_MARKER).write_text("formative results: never the grade\n")
    ledger_path = work / (DRY_RUN_LEDGER if dry_run is not None else LEDGER)
    ledger = read_ledger(ledger_path)
    done, due = Round(), {}
    hints = publish.mistake_hints(assignment.slug)
    target = where.repository_template or where.url_template
    for login in logins:
        record = load_record(results, login)
        entries = ledger.get(login, [])
        verdict = decide(record, entries, now, settings)
        sha = record.sha if record else ""
        path = publish.comment_path(target, where.org, assignment.slug, login, sha)
        if verdict == "due" and record is not None and path:
            number = used_today(entries, now, settings) + 1
            due[login] = publish.comment(path, message(record, hints, number, now, settings))
        elif verdict == "limited":
            done.held.append(login)
        elif verdict == "unchanged":
            done.unchanged.append(login)
    done.requests = list(due.values())
    if dry_run is not None:
        publish.write_dry_run(dry_run, done.requests, say)
        sent = done.requests
    else:
        sent = publish.send_each(done.requests, token, say)
    for login, request in due.items():
        if request in sent:
            record = load_record(results, login)
            assert record is not None
            entry = {"sha": record.sha, "content_hash": record.content_hash}
            ledger.setdefault(login, []).append(entry | {"at": now.isoformat()})
            done.posted.append(login)
    write_ledger(ledger_path, ledger)
    say(done.line(settings, now))
    return done


# -- the command -----------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    assignment = Assignment.load(args.assignment, args.course)
    now = parse_time(args.now) if args.now else None
    formative_round(
        assignment,
        collect.read_roster(Path(args.roster)),
        Path(args.work),
        Where(args.org, args.url_template, args.repository_template),
        dry_run=Path(args.dry_run) if args.dry_run else None,
        clock=(lambda: now) if now else utc_now,
        scheduled=args.scheduled,
        sandbox_mode=args.sandbox,
        allow_weak_sandbox=args.allow_weak_sandbox,
        jobs=args.jobs,
        course_file=Path(args.course_file) if args.course_file else None,
    )
    return ExitCode.OK


def add_arguments(p: argparse.ArgumentParser) -> None:
    collect.add_roster_options(p)
    p.add_argument("--work", required=True, metavar="WORK", help="the round's folder, kept")
    p.add_argument(
        "--repository-template",
        default="",
        metavar="OWNER/NAME",
        help="where to post, e.g. {org}/{assignment}-{login} (default: the URL template)",
    )
    p.add_argument(
        "--dry-run",
        metavar="FILE",
        help="write the requests here (JSON lines), send nothing, and keep a separate "
        "ledger (WORK/ledger.dry-run.json) so no student's quota is spent",
    )
    p.add_argument(
        "--scheduled",
        action="store_true",
        help="do nothing outside the term dates in the course file (for scheduled runs)",
    )
    p.add_argument(
        "--now", metavar="TIME", help="take this ISO time as now (to rehearse a day of rounds)"
    )


COMMAND = Command(
    "formative",
    help="a formative round: grade each student's latest push, post feedback (rate-limited)",
    description="Collect the latest commit of every roster student's repository into "
    "WORK/submissions, grade what changed (as grade-batch) into WORK/results, and post to "
    "each student's commit the score per test and the named mistakes (never expected "
    "values or hidden tests) as a commit comment, at most formative.results_per_day times "
    "per student per day (the course file); each comment says when the next one comes. Keep "
    "WORK between rounds: WORK/ledger.json is what was posted. A formative result never "
    "counts as the grade: publish and merge refuse WORK/results. The token is read from "
    "AUTOGRADER_GIT_TOKEN or GITHUB_TOKEN.",
    add_arguments=add_arguments,
    parents=(*GRADING, COURSE, COURSE_FILE),
    run=run,
)
