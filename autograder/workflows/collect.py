"""Collect every student's repository at the deadline, with plain git, into one folder.

``DIR/<login>/`` holds the files of the commit collected, exported from git (regular files
only: no symlinks, no submodules, nothing over the size limit), and ``DIR/manifest.json``
records, per student, the commit SHA and the time it was collected, or why nothing was.

The SHA at collection time is the deadline rule. A commit's date is whatever the student's
machine said (``git commit --date``, ``GIT_COMMITTER_DATE``), so it proves nothing; what the
instructor's machine fetched at the deadline is a fact. Re-grading uses the manifest's SHAs
(``collect --at manifest.json``), so a later push never changes a grade.

The token for private repositories comes from the environment (``AUTOGRADER_GIT_TOKEN``,
else ``GITHUB_TOKEN``) and reaches git only as an environment-borne HTTP header: it is never
in a URL, a command line, a git config file, the manifest or a message.
"""

from __future__ import annotations

import argparse
import base64
import csv
import json
import os
import posixpath
import re
import subprocess
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from autograder.course.assignment import Assignment, slugs
from autograder.errors import ExitCode, UsageError
from autograder.result import write_json
from autograder.tree import MAX_DEPTH, MAX_FILES, TreeTooBig, remove_tree
from autograder.workflows import term
from autograder.workflows.command import COURSE_FILE, Command

DEFAULT_TEMPLATE = "https://github.com/{org}/{assignment}-{login}.git"
TOKEN_VARIABLES = ("AUTOGRADER_GIT_TOKEN", "GITHUB_TOKEN")
MANIFEST = "manifest.json"
CACHE = ".repos"  # bare repositories, hidden so artifact uploads leave them out
MAX_FILE_BYTES = 1 << 20  # a student's files are a module and a sheet; more is not coursework
GIT_TIMEOUT = 300
LOGIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")  # fullmatch: no trailing \n
ROSTER_COLUMNS = ("login", "github_username", "username", "github", "student")
MODE_FILE = ("100644", "100755")
MODE_LINK, MODE_SUBMODULE = "120000", "160000"


@dataclass
class Row:
    """One student's line in the manifest."""

    login: str
    status: str  # collected, missing, empty, failed
    url: str
    sha: str = ""
    collected_at: str = ""
    notes: list[str] = field(default_factory=list)
    # with a course file: the student's own due date, and when this SHA was first seen
    due: str = ""
    first_seen: str = ""
    late_seconds: int = 0


def now() -> str:
    return term.stamp(term.clock())


def read_roster(path: Path) -> list[str]:
    """Logins from a roster CSV: a column named login (or github_username, as GitHub
    Classroom exports it), one student a row."""
    return [login for login, _ in roster_rows(path)]


def roster_rows(path: Path) -> list[tuple[str, dict[str, str]]]:
    """Each student's login and whole row (column names in lower case), checked strictly."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no such roster: {path}")
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    columns = {name.strip().lower(): name for name in reader.fieldnames or []}
    column = next((columns[c] for c in ROSTER_COLUMNS if c in columns), None)
    if column is None:
        raise UsageError(f"{path}: no login column (name one of: {', '.join(ROSTER_COLUMNS)})")
    found: list[tuple[str, dict[str, str]]] = []
    seen: set[str] = set()
    for number, row in enumerate(rows, start=2):
        login = (row[column] or "").strip()
        if not login:
            continue
        if not LOGIN.fullmatch(login):
            raise UsageError(f"{path}, line {number}: {login!r} is not a valid login")
        if login.lower() in seen:
            raise UsageError(f"{path}, line {number}: {login} is listed twice")
        seen.add(login.lower())
        found.append(
            (login, {(k or "").strip().lower(): (v or "").strip() for k, v in row.items()})
        )
    if not found:
        raise UsageError(f"{path}: the roster lists no students")
    return found


def read_manifest(path: Path) -> dict[str, Any]:
    """A manifest, from its file or from the folder that holds it."""
    path = Path(path)
    if path.is_dir():
        path = path / MANIFEST
    try:
        data = json.loads(path.read_text())
        assert isinstance(data.get("students"), list)
        return data
    except (OSError, ValueError, AssertionError) as error:
        raise UsageError(f"{path} is not a collect manifest ({error})") from None


class Git:
    """Runs git with nothing from the user's configuration and the token only in the env."""

    def __init__(self, token: str | None) -> None:
        self.token = token
        self.env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("GIT_") and k not in TOKEN_VARIABLES
        }
        self.env |= {
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_ASKPASS": "true",
        }
        if token:
            basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
            self.env |= {
                "GIT_CONFIG_COUNT": "1",
                "GIT_CONFIG_KEY_0": "http.https://github.com/.extraheader",
                "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}",
            }
            self.secrets = [token, basic]
        else:
            self.secrets = []

    def run(self, *args: str, git_dir: Path | None = None) -> subprocess.CompletedProcess:
        argv = ["git", *([f"--git-dir={git_dir}"] if git_dir else []), *args]
        try:
            return subprocess.run(
                argv,
                env=self.env,
                capture_output=True,
                timeout=GIT_TIMEOUT,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(
                argv, 124, b"", f"timed out after {GIT_TIMEOUT} s".encode()
            )

    def problem(self, done: subprocess.CompletedProcess) -> str:
        """git's complaint in one line, with any secret blanked out."""
        lines = [ln for ln in done.stderr.decode(errors="replace").splitlines() if ln.strip()]
        text = (lines[0] if lines else f"git exited with status {done.returncode}").strip()
        for secret in self.secrets:
            text = text.replace(secret, "[redacted]")
        return text.removeprefix("fatal: ")


def fetch(git: Git, row: Row, cache: Path, want: str) -> str | None:
    """Fetch ``want`` (HEAD or a SHA) into the cache; fill in the row; return the SHA."""
    listing = git.run("ls-remote", "--", row.url, "HEAD")
    if listing.returncode != 0:
        row.status, row.notes = "missing", [f"no repository: {git.problem(listing)}"]
        return None
    if not listing.stdout.strip():
        row.status, row.notes = "empty", ["the repository has no commits"]
        return None
    if not (cache / "HEAD").is_file():
        cache.mkdir(parents=True, exist_ok=True)
        git.run("init", "-q", "--bare", str(cache))
    done = git.run("fetch", "-q", "--depth=1", "--no-tags", "--", row.url, want, git_dir=cache)
    if done.returncode != 0:
        row.status, row.notes = "failed", [f"fetching {want} failed: {git.problem(done)}"]
        return None
    sha = git.run("rev-parse", "FETCH_HEAD^{commit}", git_dir=cache).stdout.decode().strip()
    row.status, row.sha, row.collected_at = "collected", sha, now()
    return sha


def export(git: Git, cache: Path, sha: str, target: Path, max_bytes: int) -> list[str]:
    """Write the commit's regular files under ``target``; return notes on what was left out."""
    listing = git.run("ls-tree", "-r", "-z", "-l", "--full-tree", sha, git_dir=cache).stdout
    notes, blobs = [], []
    entries = list(filter(None, listing.split(b"\0")))
    if len(entries) > MAX_FILES:
        raise TreeTooBig(f"the repository holds more than {MAX_FILES} files")
    for entry in entries:
        meta, raw_path = entry.split(b"\t", 1)
        mode, _, blob, size = meta.decode().split()
        path = raw_path.decode(errors="replace")
        if path.count("/") > MAX_DEPTH:
            raise TreeTooBig(f"the repository is nested deeper than {MAX_DEPTH} levels")
        if mode == MODE_SUBMODULE:
            notes.append(f"{path}: a submodule, not collected")
        elif mode == MODE_LINK:
            link = git.run("cat-file", "blob", blob, git_dir=cache).stdout.decode(errors="replace")
            inside = not posixpath.isabs(link) and not posixpath.normpath(
                posixpath.join(posixpath.dirname(path), link)
            ).startswith("..")
            where = "inside" if inside else "pointing out of the tree"
            notes.append(f"{path}: a symlink {where} ({link}), not collected")
        elif mode not in MODE_FILE:
            notes.append(f"{path}: not a regular file, not collected")
        elif int(size) > max_bytes:
            notes.append(f"{path}: {int(size):,} bytes, over the {max_bytes:,}-byte limit")
        elif ".." in path.split("/") or path.startswith("/"):
            notes.append(f"{path}: an unsafe path, not collected")
        else:
            blobs.append((path, blob))
    if blobs:
        objects = "".join(f"{blob}\n" for _, blob in blobs).encode()
        done = subprocess.run(
            ["git", f"--git-dir={cache}", "cat-file", "--batch"],
            input=objects,
            capture_output=True,
            env=git.env,
            timeout=GIT_TIMEOUT,
            check=True,
        )
        stream = done.stdout
        for path, _ in blobs:
            header, stream = stream.split(b"\n", 1)
            size = int(header.split()[2])
            data, stream = stream[:size], stream[size + 1 :]
            destination = target / path
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(data)
    return notes


def collect_one(git: Git, login: str, url: str, into: Path, want: str, max_bytes: int) -> Row:
    row = Row(login=login, status="failed", url=url)
    cache = into / CACHE / f"{login}.git"
    sha = fetch(git, row, cache, want)
    if sha is None:
        remove_tree(into / login)  # nothing stale poses as collected
        return row
    staging = Path(tempfile.mkdtemp(prefix=f".{login}.", dir=into))
    try:
        row.notes = export(git, cache, sha, staging, max_bytes)
        remove_tree(into / login)
        staging.rename(into / login)
    except TreeTooBig as problem:
        remove_tree(into / login)
        row.status, row.notes = "failed", [f"{problem}: not collected"]
    finally:
        remove_tree(staging)
    return row


def collect(
    assignment: str,
    logins: list[str],
    into: Path,
    template: str = DEFAULT_TEMPLATE,
    org: str = "",
    pinned: dict[str, str] | None = None,
    max_bytes: int = MAX_FILE_BYTES,
    jobs: int = 4,
    say: Callable[[str], None] = print,
    course: term.Course | None = None,
) -> list[Row]:
    """Collect each login's repository into ``into``; write and return the manifest's rows.

    With ``pinned`` (login -> SHA, from an earlier manifest) exactly those commits are fetched,
    and students without one keep their earlier row. With ``course``, each student's own
    deadline decides (see ``term.plan``): an on-time SHA already in ``into`` is kept."""
    if "{org}" in template and not org:
        raise UsageError("the URL template needs --org (or give --url-template)")
    if course is not None and pinned is not None:
        raise UsageError("--at re-collects a manifest's SHAs as they were: leave out --course")
    into = Path(into)
    earlier = term.earlier_rows(into / MANIFEST) if course else {}
    into.mkdir(parents=True, exist_ok=True)
    git = Git(next((os.environ[v] for v in TOKEN_VARIABLES if os.environ.get(v)), None))
    done = 0

    def one(login: str) -> Row:
        nonlocal done
        url = template.format(org=org, assignment=assignment, login=login)
        want = pinned.get(login, "") if pinned is not None else "HEAD"
        step = term.plan(course, assignment, login, earlier.get(login)) if course else "fetch"
        if course is not None and step != "fetch":
            given = term.unfetched(course, assignment, login, earlier.get(login), step, url)
            row = Row(**{k: v for k, v in given.items() if k in Row.__dataclass_fields__})
        elif not want:
            row = Row(login=login, status="missing", url=url, notes=["no SHA in the manifest"])
        else:
            row = collect_one(git, login, url, into, want, max_bytes)
            if course is not None:
                term.time_row(course, assignment, row, earlier.get(login))
        done += 1
        short = f" {row.sha[:12]}" if row.sha else ""
        extra = f" ({len(row.notes)} note(s))" if row.notes else ""
        say(f"[{done}/{len(logins)}] {login}: {row.status}{short}{extra}")
        return row

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        rows = list(pool.map(one, logins))
    write_json(
        into / MANIFEST,
        {
            "assignment": assignment,
            "url_template": template,
            "org": org,
            "collected_at": now(),
            "course": str(course.path) if course else "",
            "students": [asdict(row) for row in rows],
        },
    )
    if course is not None:
        term.record_facts(course, assignment, [asdict(row) for row in rows])
    kinds = ("collected", "missing", "empty", "pending")
    counts = {s: sum(r.status == s for r in rows) for s in kinds}
    failed = len(rows) - sum(counts.values())
    pending = f", {counts['pending']} not due yet" if counts["pending"] else ""
    say(
        f"collected {counts['collected']} of {len(rows)} ({counts['missing']} missing, "
        f"{counts['empty']} empty, {failed} failed{pending}); manifest: {into / MANIFEST}"
    )
    return rows


def pinned_shas(manifest: dict[str, Any]) -> dict[str, str]:
    return {row["login"]: row.get("sha", "") for row in manifest["students"]}


# -- the command --------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    root = Assignment.load(args.assignment).root  # an unknown slug fails before any git runs
    pinned = pinned_shas(read_manifest(Path(args.at))) if args.at else None
    logins = read_roster(Path(args.roster))
    course = None
    course_file = term.course_file(args.course_file, root, slugs())
    if course_file:  # checked whole before any git runs
        course = term.load(course_file, slugs(), logins)
        course.deadline(args.assignment)
    collect(
        args.assignment,
        logins,
        Path(args.into),
        template=args.url_template,
        org=args.org,
        pinned=pinned,
        max_bytes=args.max_file_bytes,
        jobs=args.jobs,
        course=course,
    )
    return ExitCode.OK


def add_roster_options(p: argparse.ArgumentParser) -> None:
    """The assignment, the roster and where the students' repositories are (collect's)."""
    p.add_argument("assignment", metavar="ASSIGNMENT", help="the assignment slug")
    p.add_argument("--roster", required=True, help="CSV with a login (or github_username) column")
    p.add_argument("--org", default="", help="the GitHub organisation, for the URL template")
    p.add_argument(
        "--url-template",
        default=DEFAULT_TEMPLATE,
        help="repository URL with {org}, {assignment} and {login} (default: %(default)s)",
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_roster_options(p)
    p.add_argument("--into", required=True, metavar="DIR", help="where submissions go")
    p.add_argument(
        "--at",
        metavar="MANIFEST",
        help="re-collect exactly the SHAs recorded in this manifest (for re-grading)",
    )
    p.add_argument(
        "--max-file-bytes",
        type=int,
        default=MAX_FILE_BYTES,
        help="skip (and note) files larger than this (default: %(default)s)",
    )
    p.add_argument("--jobs", type=int, default=4, help="repositories fetched at once")


COMMAND = Command(
    "collect",
    help="fetch every student's repository with git and record each commit SHA",
    description="Clone or fetch each roster student's repository (URL from a template) "
    "into DIR/<login>/ and write DIR/manifest.json with each commit SHA and the time it "
    "was collected. The SHA at collection time is the deadline (commit dates can be "
    "forged). A token for private repositories is read from AUTOGRADER_GIT_TOKEN or "
    "GITHUB_TOKEN and never written anywhere. Only regular files are collected: no "
    "symlinks, no submodules, nothing over --max-file-bytes.",
    add_arguments=add_arguments,
    parents=(COURSE_FILE,),
    run=run,
)
