"""autograder formative, end to end: local bare repositories, a fake clock (--now), and the API
requests written to a file (--dry-run), checked against GitHub's OpenAPI operation.

One module-scoped class lives through two days of rounds with a limit of 2 results a day.
"""

from __future__ import annotations

import datetime
import json
import shutil
from pathlib import Path

import jsonschema
import pytest
from dozen import mistake_source
from helpers import git, student_repo
from hostile import SLUG
from test_publish import path_pattern

from autograder.cli import main
from autograder.course.assignment import Assignment, slugs
from autograder.errors import UsageError
from autograder.result import Result
from autograder.workflows import formative, term
from autograder.workflows.records import Record
from autograder.workflows.term import Formative

OPERATION = json.loads(
    (Path(__file__).parent / "openapi" / "create-commit-comment.json").read_text()
)
SCHEMA = OPERATION["requestBody"]["content"]["application/json"]["schema"]
pytestmark = pytest.mark.timeout(600)
DAY1, DAY2 = "2026-10-05", "2026-10-06"


def push(remotes: Path, login: str, files: dict[str, str]) -> str:
    """A new commit on the student's main branch, pushed to their bare repository."""
    work = remotes / f"{login}-work"
    for name, content in files.items():
        (work / name).write_text(content)
    git("commit", "-q", "-am", "more work", cwd=work)
    git("push", "-q", str(remotes / f"{login}.git"), "HEAD:main", cwd=work)
    return git("rev-parse", "HEAD", cwd=work)


class Class:
    """Two students with repositories (ada and bo) and one without (cy), a course with a
    limit of two formative results a day, and the round run as the CLI runs it."""

    def __init__(self, root: Path) -> None:
        assignment = Assignment.load(SLUG)
        self.root, self.remotes, self.work = root, root / "remotes", root / "work"
        self.remotes.mkdir()
        self.course = root / "course"
        for folder in ("assignments", "reference"):
            shutil.copytree(assignment.root / folder, self.course / folder)
        (self.course / "course.yaml").write_text(
            "formative:\n  results_per_day: 2\n  timezone: UTC\n"
            "  term_start: 2026-09-07\n  term_end: 2026-12-18\n"
        )
        self.correct = {p.name: p.read_text() for p in assignment.reference.iterdir()}
        wrong = self.correct | {assignment.module_file: mistake_source("mask-after-softmax")}
        self.module = assignment.module_file
        self.sha = {
            "ada": student_repo(self.remotes, "ada", wrong),
            "bo": student_repo(self.remotes, "bo", self.correct),
        }
        self.roster = root / "roster.csv"
        self.roster.write_text("github_username\nada\nbo\ncy\n")

    def round(self, at: str, *extra: str) -> list[dict]:
        requests = self.root / f"requests-{at}.jsonl"
        argv = ["formative", SLUG, "--roster", str(self.roster), "--work", str(self.work)]
        argv += ["--url-template", f"file://{self.remotes}/{{login}}.git", "--org", "course-org"]
        argv += ["--repository-template", "{org}/{assignment}-{login}"]
        argv += ["--course", str(self.course)]
        argv += ["--dry-run", str(requests), "--now", at, "--jobs", "1", *extra]
        assert main(argv) == 0
        if not requests.exists():
            return []
        return [json.loads(line) for line in requests.read_text().splitlines()]


def comment_on(requests: list[dict], login: str, sha: str) -> str:
    path = f"/repos/course-org/{SLUG}-{login}/commits/{sha}/comments"
    found = [r for r in requests if r["path"] == path]
    assert len(found) == 1, [r["path"] for r in requests]
    return found[0]["body"]["body"]


@pytest.fixture(scope="module")
def rounds(tmp_path_factory) -> dict:
    """Two days of rounds; each round's requests, in order, and what was printed is checked
    by the tests below."""
    c = Class(tmp_path_factory.mktemp("formative"))
    seen: dict = {"class": c}
    seen["first"] = c.round(f"{DAY1}T09:00:00+00:00")
    seen["quiet"] = c.round(f"{DAY1}T10:00:00+00:00")  # nobody pushed
    c.sha["ada-fixed"] = push(c.remotes, "ada", {c.module: c.correct[c.module]})
    seen["fixed"] = c.round(f"{DAY1}T11:00:00+00:00")
    c.sha["ada-third"] = push(c.remotes, "ada", {c.module: c.correct[c.module] + "\n# tidy\n"})
    seen["limited"] = c.round(f"{DAY1}T12:00:00+00:00")
    seen["next-day"] = c.round(f"{DAY2}T01:00:00+00:00")
    return seen


def test_every_request_matches_the_create_commit_comment_operation(rounds):
    everything = [r for key in ("first", "fixed", "next-day") for r in rounds[key]]
    assert everything
    pattern = path_pattern()
    for request in everything:
        assert set(request) == {"method", "path", "body"}
        assert request["method"].lower() == OPERATION["method"]
        assert pattern.match(request["path"]), request["path"]
        jsonschema.validate(request["body"], SCHEMA)


def test_the_first_round_posts_the_real_score_and_the_named_cause(rounds):
    c, first = rounds["class"], rounds["first"]
    assert len(first) == 2  # cy has no repository: nothing to post
    ada = comment_on(first, "ada", c.sha["ada"])
    assert "Formative feedback" in ada and "not your grade" in ada
    assert "`mask-after-softmax`" in ada and "/100 points" in ada
    assert "100/100 points" not in ada
    assert "result 1 of 2 for you today (2026-10-05, UTC)" in ada
    assert "1 more today" in ada
    bo = comment_on(first, "bo", c.sha["bo"])
    assert "100/100 points" in bo


def test_nothing_secret_is_posted(rounds):
    bodies = "\n".join(r["body"]["body"] for key in ("first", "fixed") for r in rounds[key])
    hidden = (Assignment.load(SLUG).suite / "test_hidden.py").read_text().splitlines()
    for line in hidden:
        if len(line.strip()) > 25 and not line.strip().startswith(('"""', "#")):
            assert line.strip() not in bodies, line
    assert "expected" not in bodies.lower()


def test_unchanged_work_is_neither_graded_again_nor_posted_again(rounds):
    assert rounds["quiet"] == []


def test_a_new_push_is_posted_and_the_last_of_the_day_says_when_the_next_comes(rounds):
    c, fixed = rounds["class"], rounds["fixed"]
    assert len(fixed) == 1
    ada = comment_on(fixed, "ada", c.sha["ada-fixed"])
    assert "100/100 points" in ada and "result 2 of 2" in ada
    assert "today's last" in ada and "after 2026-10-06 00:00 UTC" in ada


def test_over_the_limit_the_latest_work_waits_for_the_next_day(rounds):
    c = rounds["class"]
    assert rounds["limited"] == []
    ada = comment_on(rounds["next-day"], "ada", c.sha["ada-third"])
    assert "result 1 of 2 for you today (2026-10-06, UTC)" in ada
    ledger = json.loads((c.work / formative.DRY_RUN_LEDGER).read_text())["students"]
    assert [e["sha"] for e in ledger["ada"]] == [
        c.sha["ada"],
        c.sha["ada-fixed"],
        c.sha["ada-third"],
    ]
    assert not (c.work / formative.LEDGER).exists()  # a dry run spends no real quota


def test_a_formative_result_never_counts_as_the_grade(rounds, tmp_path, capsys):
    results = rounds["class"].work / formative.RESULTS
    capsys.readouterr()
    assert main(["publish", str(results), "--org", "o", "--dry-run", str(tmp_path / "r")]) == 2
    assert "never count as the grade" in capsys.readouterr().err
    assert main(["merge", str(results), "--out", str(tmp_path / "merged")]) == 2
    assert "never count as the grade" in capsys.readouterr().err


def test_a_scheduled_round_outside_term_does_nothing(rounds, capsys):
    c = rounds["class"]
    before = (c.work / formative.DRY_RUN_LEDGER).read_text()
    assert c.round("2027-01-10T09:00:00+00:00", "--scheduled") == []
    assert "outside the term" in capsys.readouterr().out
    assert (c.work / formative.DRY_RUN_LEDGER).read_text() == before


def test_without_a_token_or_with_a_bad_time_it_stops_before_any_work(tmp_path, monkeypatch, capsys):
    for name in ("AUTOGRADER_GIT_TOKEN", "GITHUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    roster = tmp_path / "roster.csv"
    roster.write_text("login\nada\n")
    argv = ["formative", SLUG, "--roster", str(roster), "--work", str(tmp_path / "work")]
    assert main([*argv, "--org", "o"]) == 2
    assert "needs a token in AUTOGRADER_GIT_TOKEN or GITHUB_TOKEN" in capsys.readouterr().err
    assert main([*argv, "--org", "o", "--dry-run", str(tmp_path / "r"), "--now", "soon"]) == 2
    assert "'soon' is not a time" in capsys.readouterr().err
    assert not (tmp_path / "work").exists()  # nothing collected, nothing graded


# -- the rate limit and the course configuration, without grading -----------------------------


def record(content: str) -> Record:
    return Record("ada", "graded", "a" * 40, content, result=Result(SLUG, "ada"))


def test_the_day_is_counted_in_the_course_time_zone():
    settings = Formative(results_per_day=1, timezone="America/New_York")
    # 03:00 UTC is 23:00 the day before in New York: yesterday's result still counts.
    posted = [{"sha": "x", "content_hash": "old", "at": "2026-10-05T02:00:00+00:00"}]
    late = datetime.datetime(2026, 10, 5, 3, tzinfo=datetime.UTC)
    assert formative.decide(record("new"), posted, late, settings) == "limited"
    morning = datetime.datetime(2026, 10, 5, 5, tzinfo=datetime.UTC)  # 01:00 in New York
    assert formative.decide(record("new"), posted, morning, settings) == "due"
    assert formative.decide(record("old"), posted, morning, settings) == "unchanged"
    assert "after 2026-10-05 00:00 America/New_York" in formative.when_next(1, late, settings)


@pytest.mark.parametrize(
    "text, line, complaint",
    [
        ("formative:\n  results_per_day: 0\n", 2, "formative: results_per_day must be a whole"),
        ("formative:\n  timezone: Mars/Olympus\n", 2, "unknown time zone 'Mars/Olympus'"),
        ("formative:\n  per_day: 2\n", 2, "unknown key 'per_day' in formative"),
        ("formative:\n  term_start: soon\n", 2, "formative: term_start must be a date"),
        ("formative:\n  term_start: 2026-12-01\n  term_end: 2026-09-01\n", 3, "before"),
        ("formative: [\n", 2, "not valid YAML"),
        # one schema: the term's part is read strictly too
        ("formative: {}\nlate_policy: {pennalty: 3}\n", 2, "unknown key 'pennalty'"),
        ("formative: {}\nformatve: {}\n", 2, "unknown key 'formatve' in the course file"),
    ],
)
def test_a_bad_course_file_is_one_line_naming_the_key(tmp_path, text, line, complaint):
    path = tmp_path / "course.yaml"
    path.write_text(text)
    with pytest.raises(UsageError) as caught:
        term.formative_of(None, tmp_path, slugs())
    said = str(caught.value)
    assert said.startswith(f"{path}, line {line}: ") and complaint in said, said
    assert "\n" not in said


def test_without_a_course_file_the_defaults_hold(tmp_path):
    assert term.formative_of(None, tmp_path, slugs()) == Formative()
    repository = Path(__file__).parents[1]
    assert term.formative_of(None, repository, slugs()).results_per_day >= 1  # the course's own


def test_one_file_holds_both_parts_and_a_given_file_overrides_the_roots(tmp_path):
    (tmp_path / "course.yaml").write_text("formative: {results_per_day: 0}\n")  # not read
    given = tmp_path / "elsewhere.yaml"
    given.write_text(
        f"timezone: America/New_York\nassignments:\n  {SLUG}: {{due: '2026-10-01 23:59'}}\n"
        "formative:\n  results_per_day: 5\n"
    )
    settings = term.formative_of(given, tmp_path, slugs())
    # the formative day starts where the course's due dates are, unless it says otherwise
    assert settings == Formative(results_per_day=5, timezone="America/New_York")
    assert term.load(given, slugs()).deadline(SLUG).due.hour == 23


def test_the_formative_command_reads_the_course_file_given(tmp_path, capsys):
    (tmp_path / "roster.csv").write_text("login\nada\n")
    bad = tmp_path / "course.yaml"
    bad.write_text("formative:\n  results_per_day: many\n")
    argv = ["formative", SLUG, "--roster", str(tmp_path / "roster.csv"), "--work"]
    argv += [str(tmp_path / "work"), "--url-template", "file:///nowhere/{login}.git"]
    assert main([*argv, "--course-file", str(bad), "--dry-run", str(tmp_path / "r.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{bad}, line 2: formative: results_per_day must be a whole number" in err
    assert "\n" not in err and not (tmp_path / "work").exists()


# -- grade.yml's formative job, its step run as written ------------------------------------------


def test_the_workflow_runs_the_round_on_a_schedule_and_on_demand():
    from test_grade_workflow import WORKFLOW

    crons = [entry["cron"] for entry in WORKFLOW[True]["schedule"]]
    job = WORKFLOW["jobs"]["formative"]
    assert "github.event.schedule == '30 */3 * * *'" in job["if"] and "30 */3 * * *" in crons
    assert "inputs.round == 'formative'" in job["if"]
    assert "inputs.round == 'deadline'" in WORKFLOW["jobs"]["collect"]["if"]
    uses = [s.get("uses", "") for s in job["steps"]]
    assert "actions/cache/restore@v4" in uses and "actions/cache/save@v4" in uses


def test_the_workflow_step_posts_a_new_push(rounds, tmp_path):
    """The step as grade.yml runs it, on a copy of the round's folder: by hand, not published,
    so its requests go to a file; bo's new push is the one thing graded and posted."""
    import os
    import stat
    import sys

    from test_grade_workflow import WORKFLOW, run

    c = rounds["class"]
    shutil.copytree(c.course, tmp_path, dirs_exist_ok=True)  # the checkout is the course
    shutil.copytree(c.work, tmp_path / "formative")
    shutil.copy(c.roster, tmp_path / "roster.csv")
    sha = push(c.remotes, "bo", {c.module: c.correct[c.module] + "\n# again\n"})
    shim = tmp_path / "bin" / "autograder"  # `autograder` on PATH, running this checkout
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m autograder "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    env = {**os.environ, **{k: str(v) for k, v in WORKFLOW["env"].items()}}
    env |= {
        "PATH": f"{shim.parent}:{os.environ['PATH']}",
        "PYTHONPATH": str(Path(__file__).parents[1]),
        "ASSIGNMENT": SLUG,
        "ROSTER": "roster.csv",
        "ORG": "course-org",
        "URL_TEMPLATE": f"file://{c.remotes}/{{login}}.git",
        "EVENT": "workflow_dispatch",
        "PUBLISH": "false",
    }
    assert env["REPOSITORY_TEMPLATE"] == "{org}/{assignment}-{login}"
    run("formative", "Formative round", tmp_path, env)
    requests = (tmp_path / "formative-requests.jsonl").read_text().splitlines()
    assert len(requests) == 1
    assert "100/100 points" in comment_on([json.loads(requests[0])], "bo", sha)
