"""Post each student's feedback to their repository as a commit comment (GitHub REST API,
``POST /repos/{owner}/{repo}/commits/{commit_sha}/comments``), on the commit that was graded.

What is posted is what a student may see: points per part and per test, the outcome in words,
and the names and hints of the known mistakes diagnosed. Never the failure messages (they
quote expected values), never the hidden tests' code, never a "why" meant for the instructor.
``--dry-run FILE`` writes the exact requests (method, path, JSON body), one JSON object a line,
and sends nothing.
"""

from __future__ import annotations

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
from autograder.errors import UsageError
from autograder.workflows.batch import read_state
from autograder.workflows.collect import DEFAULT_TEMPLATE, TOKEN_VARIABLES
from autograder.workflows.gradebook import course_of
from autograder.workflows.records import load_record
from autograder.workflows.term import Charge

API = "https://api.github.com"
GITHUB_REPO = re.compile(r"https://github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?")


def requests(out: Path, org: str, template: str = DEFAULT_TEMPLATE) -> list[dict[str, Any]]:
    """One request per graded student with a known commit; (method, path, JSON body)."""
    state = read_state(out) if Path(out).is_dir() else None
    if state is None:
        raise UsageError(f"{out} is not a grade-batch output folder (no batch.json)")
    if "{org}" in template and not org:
        raise UsageError("publishing needs --org (the owner of the students' repositories)")
    catalogue = load_catalogue(Assignment.load(state["assignment"]).suite / "mistakes.py")
    hints = {v.name: v.hint for v in catalogue.mistakes}
    course = course_of(state)
    charge = course.charger(state["assignment"]) if course else None
    found = []
    for student in state["students"]:
        record = load_record(out, student)
        if record is None or record.result is None or not record.graded:
            continue
        sha = record.sha
        url = template.format(org=org, assignment=state["assignment"], login=student)
        match = GITHUB_REPO.fullmatch(url)
        if not sha or not match:
            continue  # not collected from GitHub: nowhere to post
        found.append(
            {
                "method": "POST",
                "path": f"/repos/{match[1]}/{match[2]}/commits/{sha}/comments",
                "body": {
                    "body": report.commit_comment(record.result, sha, hints)
                    + (late_policy(charge(student), record.score) if charge else "")
                },
            }
        )
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


def publish(
    out: Path,
    org: str,
    template: str = DEFAULT_TEMPLATE,
    dry_run: Path | None = None,
    say: Callable[[str], None] = print,
) -> int:
    found = requests(Path(out), org, template)
    if dry_run is not None:
        Path(dry_run).write_text("".join(json.dumps(r) + "\n" for r in found))
        say(f"{len(found)} request(s) written to {dry_run}; nothing sent")
        return len(found)
    token = next((os.environ[v] for v in TOKEN_VARIABLES if os.environ.get(v)), "")
    if not token:
        raise UsageError(f"publishing needs a token in {' or '.join(TOKEN_VARIABLES)}")
    failed = 0
    for request in found:
        try:
            send(request, token)
        except (urllib.error.URLError, OSError) as error:
            failed += 1
            say(f"could not post to {request['path']}: {str(error).replace(token, '[redacted]')}")
    say(f"posted {len(found) - failed} of {len(found)} comment(s)")
    return len(found) - failed
