"""Post each student's feedback to their repository as a commit comment (GitHub REST API,
``POST /repos/{owner}/{repo}/commits/{commit_sha}/comments``), on the commit that was graded.

What is posted is what a student may see: points per part and per test, the outcome in words,
and the names and hints of the known mistakes diagnosed. Never the failure messages (they
quote expected values), never the hidden tests' code, never a "why" meant for the instructor.
``--dry-run FILE`` writes the exact requests (method, path, JSON body), one JSON object a line,
and sends nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autograder import report
from autograder.course.assignment import Assignment
from autograder.engine.mistakes import load_catalogue
from autograder.errors import ExitCode, UsageError
from autograder.workflows.collect import DEFAULT_TEMPLATE, TOKEN_VARIABLES
from autograder.workflows.command import Command
from autograder.workflows.gradebook import course_of
from autograder.workflows.records import load_record, open_results, refuse_formative
from autograder.workflows.term import Charge

API = "https://api.github.com"
GITHUB_REPO = re.compile(r"https://github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?")
OWNER_NAME = re.compile(r"([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)")  # fullmatch, as GITHUB_REPO


def comment_path(template: str, org: str, assignment: str, login: str, sha: str) -> str | None:
    """Where to post a comment on ``login``'s commit ``sha``; None where the repository is not
    on GitHub (nowhere to post). ``template`` is a repository URL or ``owner/name`` template."""
    url = template.format(org=org, assignment=assignment, login=login)
    match = GITHUB_REPO.fullmatch(url) or OWNER_NAME.fullmatch(url)
    if not sha or not match:
        return None
    return f"/repos/{match[1]}/{match[2]}/commits/{sha}/comments"


def comment(path: str, body: str) -> dict[str, Any]:
    return {"method": "POST", "path": path, "body": {"body": body}}


def mistake_hints(slug: str) -> dict[str, str]:
    catalogue = load_catalogue(Assignment.load(slug).suite / "mistakes.py")
    return {v.name: v.hint for v in catalogue.mistakes}


def requests(out: Path, org: str, template: str = DEFAULT_TEMPLATE) -> list[dict[str, Any]]:
    """One request per graded student with a known commit; (method, path, JSON body)."""
    state = open_results(out)
    refuse_formative(Path(out))
    if "{org}" in template and not org:
        raise UsageError("publishing needs --org (the owner of the students' repositories)")
    hints = mistake_hints(state["assignment"])
    course = course_of(state)
    charge = course.charger(state["assignment"]) if course else None
    found = []
    for student in state["students"]:
        record = load_record(out, student)
        if record is None or record.result is None or not record.graded:
            continue
        path = comment_path(template, org, state["assignment"], student, record.sha)
        if path is not None:
            owed = charge(student) if charge else None
            lead = report.LATE_LEAD if owed and owed.late_seconds else report.DEADLINE_LEAD
            body = report.commit_comment(record.result, record.sha, hints, lead=lead)
            late = late_policy(owed, record.score) if owed else ""
            found.append(comment(path, body + late))
    return found


def late_policy(charge: Charge, raw: float) -> str:
    """How the late penalty was computed, under the points table."""
    return f"\n**Late policy:** {charge.explain(raw)}\n"


def send(request: dict[str, Any], token: str) -> None:
    http = urllib.request.Request(
        API + request["path"],
        data=json.dumps(request["body"]).encode(),
        method=request["method"],
        headers={
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {token}",
            "X-GitHub-Api-Version": "2022-11-28",
        },
    )
    with urllib.request.urlopen(http, timeout=30) as response:
        response.read()


def write_dry_run(path: Path, found: list[dict[str, Any]], say: Callable[[str], None]) -> None:
    Path(path).write_text("".join(json.dumps(r) + "\n" for r in found))
    say(f"{len(found)} request(s) written to {path}; nothing sent")


def token_from_env() -> str:
    token = next((os.environ[v] for v in TOKEN_VARIABLES if os.environ.get(v)), "")
    if not token:
        raise UsageError(f"publishing needs a token in {' or '.join(TOKEN_VARIABLES)}")
    return token


def send_each(
    found: list[dict[str, Any]], token: str, say: Callable[[str], None] = print
) -> list[dict[str, Any]]:
    """Send every request; return those that went through (a failure is said, not raised)."""
    sent = []
    for request in found:
        try:
            send(request, token)
            sent.append(request)
        except (urllib.error.URLError, OSError) as error:
            say(f"could not post to {request['path']}: {str(error).replace(token, '[redacted]')}")
    say(f"posted {len(sent)} of {len(found)} comment(s)")
    return sent


def publish(
    out: Path,
    org: str,
    template: str = DEFAULT_TEMPLATE,
    dry_run: Path | None = None,
    say: Callable[[str], None] = print,
) -> int:
    found = requests(Path(out), org, template)
    if dry_run is not None:
        write_dry_run(dry_run, found, say)
        return len(found)
    return len(send_each(found, token_from_env(), say))


# -- the command -----------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    dry_run = Path(args.dry_run) if args.dry_run else None
    publish(Path(args.folder), args.org, args.url_template, dry_run)
    return ExitCode.OK


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", metavar="DIR", help="a grade-batch or merge output folder")
    p.add_argument("--org", default="", help="the owner of the students' repositories")
    p.add_argument(
        "--url-template",
        default=DEFAULT_TEMPLATE,
        help="the repository URL template collect used (default: %(default)s)",
    )
    p.add_argument("--dry-run", metavar="FILE", help="write the requests here (JSON lines)")


COMMAND = Command(
    "publish",
    help="post each student's feedback on their graded commit (GitHub commit comments)",
    description="For every graded student of a grade-batch or merge folder DIR with a "
    "collected SHA, post the feedback (points per test, outcome, diagnosed mistakes and "
    "hints; never expected values or hidden tests) as a commit comment through GitHub's "
    "REST API, with the token in AUTOGRADER_GIT_TOKEN or GITHUB_TOKEN. Off unless run; "
    "--dry-run writes the requests to a file instead.",
    add_arguments=add_arguments,
    run=run,
)
