"""A whole term: due dates, per-student extensions, the late policy and grace days, and the
formative round's settings: one ``course.yaml``, read here and only here.

``course.yaml`` is the course's one settings file, at the course repository's root (beside
``reference/`` and ``assignments/``) unless ``--course-file`` names another. Its term part gives
each assignment's due date with a time zone, the late policy (a penalty per day or per hour, a
cap, and how long after the due date a submission is still accepted) and the term's grace days
per student; its ``formative`` part the formative round's daily limit and the term's dates.
Either part may be left out: a file without ``assignments`` sets no due dates. ``extensions.csv``
(login, assignment, due, note) moves one student's due date. Both are read strictly: an
unknown key, login or assignment, or a bad date, is a one-line error naming the file and line,
before anything is collected or graded.

Lateness is a fact collect records: when a SHA was first seen by a collect run, never the
commit's own date (the student's machine writes that). ``lateness.json`` beside the course
file keeps those facts for every assignment, so grace days can be spent across the term in
due-date order; the penalties are then a pure function of the facts and the policy.

What the file may hold is its schema (``autograder/schemas/course.schema.json``, read by
``autograder/course/schema.py``, which keeps every value's line for the messages); this module
checks what a schema cannot: the time zones, the dates, and the assignments' slugs.
"""

from __future__ import annotations

import csv
import datetime
import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from autograder.course import schema
from autograder.errors import UsageError
from autograder.result import write_json

COURSE = "course.yaml"
EXTENSIONS = "extensions.csv"
LEDGER = "lateness.json"
DAY = 86400
UNITS = {"day": DAY, "hour": 3600}
DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(d|days?|h|hours?|m|min|minutes?)\s*$")
DURATION_SECONDS = {"d": DAY, "h": 3600, "m": 60}
DEFAULT_PER_DAY = 3
EXTENSION_COLUMNS = ("login", "assignment", "due")


def clock() -> datetime.datetime:
    """Now, in UTC: the one clock collect reads (tests replace it)."""
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0)


def stamp(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.UTC).isoformat(timespec="seconds")


def parse_stamp(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text)


# -- the policy ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class LatePolicy:
    per: str = "day"  # the unit of lateness: day or hour
    penalty: float = 0.0  # percent of the raw score per unit late
    cap: float = 100.0  # percent, at most
    accept_for: float = 0.0  # seconds after the due date a submission is still taken

    def describe(self) -> str:
        return (
            f"{self.penalty:g}% of the raw score per {self.per} late, at most {self.cap:g}%; "
            f"nothing is accepted {words(self.accept_for)} after the due date"
        )


@dataclass(frozen=True)
class Deadline:
    slug: str
    due: datetime.datetime  # aware
    policy: LatePolicy


@dataclass(frozen=True)
class Extension:
    login: str
    slug: str
    due: datetime.datetime
    note: str = ""


@dataclass(frozen=True)
class Formative:
    """The formative round's part of course.yaml."""

    results_per_day: int = DEFAULT_PER_DAY
    timezone: str = "UTC"  # the day the limit counts in starts at midnight here
    term_start: datetime.date | None = None  # scheduled rounds run only in term
    term_end: datetime.date | None = None

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def in_term(self, now: datetime.datetime) -> bool:
        today = now.astimezone(self.zone).date()
        after_start = self.term_start is None or today >= self.term_start
        return after_start and (self.term_end is None or today <= self.term_end)


@dataclass
class Course:
    path: Path
    zone: ZoneInfo
    grace_days: int
    slack: float  # seconds: a collect run this soon after a due date counts as at it
    deadlines: dict[str, Deadline]
    extensions: dict[tuple[str, str], Extension] = field(default_factory=dict)
    formative: Formative = Formative()

    def deadline(self, slug: str) -> Deadline:
        if slug not in self.deadlines:
            raise UsageError(f"{self.path}: no due date for {slug}")
        return self.deadlines[slug]

    def due_for(self, login: str, slug: str) -> datetime.datetime:
        extension = self.extensions.get((login.casefold(), slug))
        return extension.due if extension else self.deadline(slug).due

    def closes_for(self, login: str, slug: str) -> datetime.datetime:
        return self.due_for(login, slug) + datetime.timedelta(
            seconds=self.deadline(slug).policy.accept_for
        )

    def late_seconds(self, login: str, slug: str, first_seen: datetime.datetime) -> int:
        late = (first_seen - self.due_for(login, slug)).total_seconds()
        return 0 if late <= self.slack else int(late)

    @property
    def ledger(self) -> Path:
        return self.path.parent / LEDGER

    def charger(self, slug: str) -> Callable[[str], Charge]:
        """login -> the student's charge on ``slug`` (the ledger read once)."""
        ledger = read_ledger(self)
        return lambda login: charges(self, login, ledger).get(slug, Charge())


def words(seconds: float) -> str:
    if seconds % DAY == 0:
        return f"{seconds / DAY:g} day(s)"
    return f"{seconds / 3600:g} hour(s)"


# -- reading course.yaml ------------------------------------------------------------------------


def parse_due(text: str, zone: ZoneInfo) -> datetime.datetime:
    """A due date with a time: in ``zone`` unless it carries its own UTC offset. A local time
    that the clocks skip or pass twice there is refused: which moment it means is a guess."""
    if not re.search(r"\d[T ]\d", text):
        raise ValueError("give a time too, e.g. 2026-10-01 23:59")
    moment = datetime.datetime.fromisoformat(text)
    if moment.tzinfo:
        return moment
    local = moment.replace(tzinfo=zone)
    offsets = [local.utcoffset(), local.replace(fold=1).utcoffset()]
    if offsets[0] == offsets[1]:
        return local
    again = local.astimezone(datetime.UTC).astimezone(zone).replace(tzinfo=None)
    if again != moment:
        raise ValueError(f"{text} does not exist in {zone.key}: the clocks skip it")
    first, then = (utc_offset(o) for o in offsets)
    raise ValueError(
        f"{text} happens twice in {zone.key} (at {first}, then at {then}): "
        f"give the one meant, e.g. {text}{first}"
    )


def utc_offset(offset: datetime.timedelta | None) -> str:
    minutes = int((offset or datetime.timedelta()).total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def seconds(duration: str) -> float:
    """A duration the schema has checked (5d, 12h, 30m) in seconds."""
    match = DURATION.match(duration)
    assert match is not None, duration  # the schema's pattern is DURATION's
    return float(match[1]) * DURATION_SECONDS[match[2][0]]


def time_zone(doc: schema.Document, where: schema.Where, name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        prefix = "".join(f"{p}: " for p in where) if len(where) > 1 else ""  # formative's
        raise doc.fail(where, f"{prefix}unknown time zone {name!r}") from None


def read_policy(given: dict[str, Any] | None, base: LatePolicy) -> LatePolicy:
    """A late policy: the keys ``given`` sets, the others from ``base``."""
    given = given or {}
    return LatePolicy(
        per=given.get("per", base.per),
        penalty=float(given.get("penalty", base.penalty)),
        cap=float(given.get("cap", base.cap)),
        accept_for=seconds(given["accept_for"]) if "accept_for" in given else base.accept_for,
    )


def read_formative(doc: schema.Document, given: dict[str, Any], zone_name: str) -> Formative:
    """The ``formative`` part; its time zone defaults to the course's."""
    zone_name = given.get("timezone", zone_name)
    if "timezone" in given:
        time_zone(doc, ("formative", "timezone"), zone_name)
    dates: dict[str, datetime.date | None] = {"term_start": None, "term_end": None}
    for key in [k for k in dates if k in given]:
        try:
            dates[key] = datetime.date.fromisoformat(given[key])
        except ValueError:
            message = f"formative: {key} must be a date, YYYY-MM-DD (got {given[key]!r})"
            raise doc.fail(("formative", key), message) from None
    start, end = dates["term_start"], dates["term_end"]
    if start and end and end < start:
        raise doc.fail(("formative", "term_end"), "formative: term_end is before term_start")
    per_day = int(given.get("results_per_day", DEFAULT_PER_DAY))
    return Formative(per_day, zone_name, start, end)


def read_deadline(doc: schema.Document, slug: str, zone: ZoneInfo, default: LatePolicy) -> Deadline:
    given = doc.data["assignments"][slug]
    try:
        due = parse_due(given["due"], zone)
    except ValueError as error:
        raise doc.fail(("assignments", slug, "due"), f"{slug}: bad due date ({error})") from None
    return Deadline(slug, due, read_policy(given.get("late_policy"), default))


def read_course(path: Path, known: Iterable[str]) -> Course:
    """The course file, both parts; every assignment it names must be one of ``known``."""
    doc = schema.read(Path(path), "course")
    top: dict[str, Any] = doc.data or {}
    zone_name = top.get("timezone", "UTC")
    zone = time_zone(doc, ("timezone",), zone_name)
    default = read_policy(top.get("late_policy"), LatePolicy())
    formative = Formative(timezone=zone_name)
    if "formative" in top:
        formative = read_formative(doc, top["formative"], zone_name)
    deadlines = {}
    for slug in top.get("assignments") or {}:
        if slug not in set(known):
            raise doc.fail(("assignments", slug), f"unknown assignment {slug!r}")
        deadlines[slug] = read_deadline(doc, slug, zone, default)
    slack = seconds(top["collect_slack"]) if "collect_slack" in top else 0
    grace = int(top.get("grace_days", 0))
    return Course(Path(path), zone, grace, slack, deadlines, formative=formative)


def read_extensions(path: Path, course: Course, logins: Iterable[str]) -> None:
    """Add ``extensions.csv`` to ``course``: one row per (login, assignment), strictly."""
    path = Path(path)
    roster = {login.casefold() for login in logins}
    try:
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise UsageError(f"cannot read {path} ({error})") from None
    columns = [c.strip().lower() for c in reader.fieldnames or []]
    missing = [c for c in EXTENSION_COLUMNS if c not in columns]
    if missing:
        raise UsageError(f"{path}, line 1: missing column(s) {', '.join(missing)}")
    for number, raw in enumerate(rows, start=2):
        row = {(k or "").strip().lower(): (v or "").strip() for k, v in raw.items()}
        login, slug = row["login"], row["assignment"]
        if login.casefold() not in roster:
            raise UsageError(f"{path}, line {number}: {login!r} is not on the roster")
        if slug not in course.deadlines:
            raise UsageError(f"{path}, line {number}: unknown assignment {slug!r}")
        try:
            due = parse_due(row["due"], course.zone)
        except ValueError as error:
            raise UsageError(
                f"{path}, line {number}: bad due date {row['due']!r} ({error})"
            ) from None
        if due <= course.deadlines[slug].due:
            raise UsageError(f"{path}, line {number}: {login}'s new due date is not later")
        key = (login.casefold(), slug)
        if key in course.extensions:
            raise UsageError(f"{path}, line {number}: a second extension for {login} on {slug}")
        course.extensions[key] = Extension(login, slug, due, row.get("note", ""))


def default_file(root: Path) -> Path:
    return Path(root) / COURSE


def course_file(given: str | Path | None, root: Path, known: Iterable[str]) -> Path | None:
    """The course file whose due dates apply: the one given (``--course-file``), else
    course.yaml at the course root when it sets due dates (it may hold only the formative
    part); None when neither. A file given must have them: collect and grade-batch then ask
    it for the assignment's."""
    if given:
        return Path(given)
    path = default_file(root)
    return path if path.is_file() and read_course(path, known).deadlines else None


def formative_of(given: Path | None, root: Path, known: Iterable[str]) -> Formative:
    """The formative part of the course file given, else of course.yaml at the course root;
    the defaults when there is no such file."""
    path = Path(given) if given is not None else default_file(root)
    if given is None and not path.is_file():
        return Formative()
    return read_course(path, known).formative


def load(path: Path, known: Iterable[str], logins: Iterable[str] | None = None) -> Course:
    """The course file and, when it is beside it, extensions.csv (checked against the roster's
    logins, which it needs)."""
    course = read_course(path, known)
    extensions = Path(path).parent / EXTENSIONS
    if extensions.is_file():
        if logins is None:
            raise UsageError(f"{extensions} needs the roster (give --roster)")
        read_extensions(extensions, course, logins)
    return course


# -- the facts collect records ------------------------------------------------------------------


def read_ledger(course: Course) -> dict[str, dict[str, dict[str, Any]]]:
    """assignment -> login -> the facts of its collected SHA (sha, due, first_seen, late)."""
    try:
        data = json.loads(course.ledger.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise UsageError(f"{course.ledger} is unreadable ({error})") from None
    return data.get("assignments", {})


def record_facts(course: Course, slug: str, rows: Iterable[dict[str, Any]]) -> None:
    """Write this assignment's collected SHAs into the ledger (replacing its earlier entry)."""
    ledger = read_ledger(course)
    ledger[slug] = {
        row["login"]: {k: row[k] for k in ("sha", "due", "first_seen", "late_seconds")}
        for row in rows
        if row.get("status") == "collected"
    }
    write_json(course.ledger, {"assignments": ledger})


def earlier_rows(manifest: Path) -> dict[str, dict[str, Any]]:
    """The rows of an earlier run into the same folder, by login (none on a first run)."""
    try:
        data = json.loads(Path(manifest).read_text())
        return {row["login"]: row for row in data["students"]}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise UsageError(f"{manifest} is not a collect manifest ({error})") from None


def plan(course: Course, slug: str, login: str, earlier: dict[str, Any] | None) -> str:
    """What a collect run does for one student now: keep, fetch, pending or closed.

    An on-time SHA is kept for good; a late one may be replaced by a newer push until the late
    window closes; nothing is fetched before the student's own deadline."""
    moment = clock()
    collected = earlier is not None and earlier.get("status") == "collected"
    if collected and not int(earlier.get("late_seconds", 0)):  # type: ignore[union-attr]
        return "keep"
    if moment < course.due_for(login, slug):
        return "pending"
    if moment > course.closes_for(login, slug):
        return "keep" if collected else "closed"
    return "fetch"


def unfetched(
    course: Course, slug: str, login: str, earlier: dict[str, Any] | None, step: str, url: str
) -> dict[str, Any]:
    """The manifest row of a student this run does not fetch."""
    if step == "keep" and earlier is not None:
        return dict(earlier)
    due = course.due_for(login, slug)
    if step == "pending":
        note = f"due {stamp(due)}: not collected yet"
        return {"login": login, "status": "pending", "url": url, "due": stamp(due), "notes": [note]}
    closed = stamp(course.closes_for(login, slug))
    note = f"nothing was collected before the late window closed ({closed})"
    return {"login": login, "status": "missing", "url": url, "due": stamp(due), "notes": [note]}


def time_row(course: Course, slug: str, row: Any, earlier: dict[str, Any] | None) -> None:
    """Stamp a fetched row: the due date used, when its SHA was first seen, how late that is."""
    if row.status != "collected":
        return
    same = earlier is not None and earlier.get("sha") == row.sha and earlier.get("first_seen")
    first_seen = parse_stamp(earlier["first_seen"]) if same else parse_stamp(row.collected_at)  # type: ignore[index]
    row.due = stamp(course.due_for(row.login, slug))
    row.first_seen = stamp(first_seen)
    row.late_seconds = course.late_seconds(row.login, slug, first_seen)


# -- the charge ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Charge:
    """What the policy does to one student's grade on one assignment."""

    late_seconds: int = 0
    late_days: int = 0
    grace_used: int = 0
    percent: float = 0.0
    how: str = "on time"

    def penalty(self, raw: float) -> float:
        return round(raw * self.percent / 100, 2)

    def total(self, raw: float) -> float:
        return round(raw - self.penalty(raw), 2)

    def explain(self, raw: float) -> str:
        if not self.late_seconds:
            return "Submitted on time: no late penalty."
        text = f"Submitted {self.late_days} day(s) late"
        if self.grace_used:
            text += f"; {self.grace_used} grace day(s) used"
        return f"{text}. {self.how}: {raw:g} - {self.penalty(raw):g} = {self.total(raw):g} points."


def charge_of(late_seconds: int, grace_left: int, policy: LatePolicy) -> Charge:
    if late_seconds <= 0:
        return Charge()
    late_days = math.ceil(late_seconds / DAY)
    grace = min(grace_left, late_days)
    remaining = max(0, late_seconds - grace * DAY)
    units = math.ceil(remaining / UNITS[policy.per])
    percent = min(policy.cap, units * policy.penalty)
    how = (
        f"{units} {policy.per}(s) late after grace days, {policy.penalty:g}% each"
        f" (at most {policy.cap:g}%): {percent:g}% off"
    )
    return Charge(late_seconds, late_days, grace, percent, how)


def charges(
    course: Course, login: str, ledger: dict[str, dict[str, dict[str, Any]]] | None = None
) -> dict[str, Charge]:
    """The student's charge on every assignment in the ledger, grace days spent in order of
    the student's own due dates."""
    ledger = read_ledger(course) if ledger is None else ledger
    taken = [s for s in course.deadlines if login in ledger.get(s, {})]
    taken.sort(key=lambda s: (course.due_for(login, s), s))
    left, found = course.grace_days, {}
    for slug in taken:
        facts = ledger[slug][login]
        charge = charge_of(int(facts["late_seconds"]), left, course.deadline(slug).policy)
        left -= charge.grace_used
        found[slug] = charge
    return found
