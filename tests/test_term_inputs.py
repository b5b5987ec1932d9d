"""The term's inputs, checked strictly: course.yaml and extensions.csv errors name the file and
the line and nothing is collected or graded; the policy's arithmetic; regrade and diff refusing
what they cannot compare. Fast: no grading runs here (results folders are written by hand)."""

from __future__ import annotations

import datetime
import http.server
import json
import re
import textwrap
import threading
import urllib.parse
from pathlib import Path

import pytest

from autograder import cli
from autograder import result as plain
from autograder.course.assignment import slugs
from autograder.result import Result, write_json
from autograder.workflows import term
from autograder.workflows.records import Record

SLUG = "masks-and-heads"
ROOT = Path(__file__).resolve().parents[1]
GOOD = f"""\
timezone: Europe/Paris
grace_days: 2
late_policy:
  per: day
  penalty: 10
  cap: 30
  accept_for: 4d
assignments:
  {SLUG}:
    due: "2026-10-01 23:59"
"""
ROSTER = "login\nada\nbo\n"


def course_folder(tmp_path: Path, course: str = GOOD, extensions: str | None = None) -> Path:
    (tmp_path / "course.yaml").write_text(course)
    (tmp_path / "roster.csv").write_text(ROSTER)
    if extensions is not None:
        (tmp_path / "extensions.csv").write_text(extensions)
    return tmp_path / "course.yaml"


def collect(tmp_path: Path, course_file: Path) -> int:
    return cli.main(
        ["collect", SLUG, "--roster", str(tmp_path / "roster.csv"), "--into"]
        + [str(tmp_path / "into"), "--url-template", "file:///nowhere/{login}.git"]
        + ["--course-file", str(course_file)]
    )


BAD_COURSES = {
    "unknown assignment": (GOOD.replace(f"  {SLUG}:", "  no-such-thing:"), 9, "unknown assignment"),
    "bad date": (GOOD.replace("2026-10-01 23:59", "2026-13-01 23:59"), 10, "bad due date"),
    "a date without a time": (GOOD.replace("2026-10-01 23:59", "2026-10-01"), 10, "give a time"),
    "unknown key": (GOOD.replace("  cap: 30", "  capp: 30"), 6, "unknown key 'capp'"),
    "unknown time zone": (GOOD.replace("Europe/Paris", "Mars/Olympus"), 1, "unknown time zone"),
    "a penalty over 100%": (GOOD.replace("penalty: 10", "penalty: 140"), 5, "between 0 and 100"),
    "a bad window": (GOOD.replace("accept_for: 4d", "accept_for: soon"), 7, "a duration"),
    "bad YAML": (GOOD.replace("grace_days: 2", "grace_days: [2"), 3, "not valid YAML"),
    # one file, one schema: the formative part is read as strictly by collect
    "a formative key": (GOOD + "formative:\n  per_day: 2\n", 12, "unknown key 'per_day'"),
    "a formative value": (GOOD + "formative: {term_end: soon}\n", 11, "formative: term_end"),
}


@pytest.mark.parametrize("case", list(BAD_COURSES))
def test_a_bad_course_file_is_one_line_naming_file_and_line_and_nothing_runs(
    case, tmp_path, capsys
):
    text, line, words = BAD_COURSES[case]
    course_file = course_folder(tmp_path, text)
    assert collect(tmp_path, course_file) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert f"{course_file}, line {line}:" in err and words in err, err
    assert not (tmp_path / "into").exists()


HEADER, LATER = "login,assignment,due\n", "2026-10-03 12:00"
BAD_EXTENSIONS = {
    "unknown login": (f"{HEADER}zed,{SLUG},{LATER}\n", 2, "not on the roster"),
    "unknown assignment": (f"{HEADER}ada,nope,{LATER}\n", 2, "unknown assignment"),
    "bad date": (f"{HEADER}bo,{SLUG},{LATER}\nada,{SLUG},tomorrow\n", 3, "bad due date"),
    "not later": (f"{HEADER}ada,{SLUG},2026-09-30 12:00\n", 2, "not later"),
    "twice": (f"{HEADER}ada,{SLUG},{LATER}\nada,{SLUG},{LATER}\n", 3, "second extension"),
    "no due column": ("login,assignment\nada,x\n", 1, "missing column(s) due"),
}


@pytest.mark.parametrize("case", list(BAD_EXTENSIONS))
def test_a_bad_extension_is_one_line_naming_file_and_line_and_nothing_runs(case, tmp_path, capsys):
    text, line, words = BAD_EXTENSIONS[case]
    course_file = course_folder(tmp_path, extensions=text)
    assert collect(tmp_path, course_file) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert f"{tmp_path / 'extensions.csv'}, line {line}:" in err and words in err, err
    assert not (tmp_path / "into").exists()


def test_grade_batch_refuses_a_bad_course_file_before_writing(tmp_path, capsys):
    course_file = course_folder(tmp_path, GOOD.replace(f"  {SLUG}:", "  nope:"))
    (tmp_path / "class" / "ada").mkdir(parents=True)
    out = tmp_path / "out"
    argv = ["grade-batch", SLUG, str(tmp_path / "class"), "--out", str(out)]
    assert cli.main([*argv, "--course-file", str(course_file)]) == 2
    assert "line 9: unknown assignment" in capsys.readouterr().err
    assert not out.exists()


def test_a_course_without_the_assignment_is_refused(tmp_path, capsys):
    course_file = course_folder(tmp_path)
    argv = ["collect", "padding-and-batches", "--roster", str(tmp_path / "roster.csv")]
    assert (
        cli.main([*argv, "--into", str(tmp_path / "into"), "--course-file", str(course_file)]) == 2
    )
    assert "no due date for padding-and-batches" in capsys.readouterr().err


def test_due_dates_take_the_course_time_zone_or_their_own_offset(tmp_path):
    course = term.read_course(course_folder(tmp_path), [SLUG])
    due = course.deadline(SLUG).due
    assert due.astimezone(datetime.UTC).isoformat() == "2026-10-01T21:59:00+00:00"  # CEST
    assert term.parse_due("2026-10-01T23:59-04:00", course.zone).utcoffset() == datetime.timedelta(
        hours=-4
    )


DAY = 86400


@pytest.mark.parametrize(
    ("late", "grace", "policy", "expected"),
    [
        (0, 2, term.LatePolicy(penalty=10), (0, 0, 0)),
        (DAY + 1, 2, term.LatePolicy(penalty=10), (2, 2, 0)),  # two started days, both on grace
        (3 * DAY, 1, term.LatePolicy(penalty=10), (3, 1, 20)),
        (10 * DAY, 0, term.LatePolicy(penalty=10, cap=30), (10, 0, 30)),  # capped
        (DAY + 3600 * 5, 1, term.LatePolicy(per="hour", penalty=2), (2, 1, 10)),  # 5 hours
    ],
)
def test_the_charge(late, grace, policy, expected):
    charge = term.charge_of(late, grace, policy)
    assert (charge.late_days, charge.grace_used, charge.percent) == expected
    assert charge.total(50) == 50 - round(50 * expected[2] / 100, 2)


def test_grace_days_run_out_across_the_term_in_due_date_order(tmp_path):
    text = GOOD + '  padding-and-batches:\n    due: "2026-09-20 23:59"\n'
    course = term.read_course(course_folder(tmp_path, text), [SLUG, "padding-and-batches"])
    facts = {"sha": "x", "due": "", "first_seen": "", "late_seconds": DAY}
    ledger = {
        SLUG: {"ada": facts},
        "padding-and-batches": {"ada": facts | {"late_seconds": 2 * DAY}},
    }
    found = term.charges(course, "ada", ledger)
    assert found["padding-and-batches"].grace_used == 2  # due first: takes both grace days
    assert (found[SLUG].grace_used, found[SLUG].percent) == (0, 10)


# -- results folders written by hand ------------------------------------------------------------


def results_folder(path: Path, graders: dict[str, str], points: float = 2) -> Path:
    test = plain.TestResult("t1", "a test", "part2", points, 2, "passed" if points else "wrong")
    for student, grader in graders.items():
        result = Result(SLUG, student, tests=[test])
        Record(student, "graded", "abc", "hash-" + student, grader, result=result).write(path)
    state = {"assignment": SLUG, "grader_version": next(iter(graders.values())), "shard": None}
    write_json(path / "batch.json", state | {"students": list(graders), "submissions": ""})
    return path


def test_diff_refuses_a_side_mixing_grader_versions_unless_told(tmp_path, capsys):
    old = results_folder(tmp_path / "old", {"ada": "g1", "bo": "g2"})
    new = results_folder(tmp_path / "new", {"ada": "g3", "bo": "g3"}, points=0)
    assert cli.main(["diff", str(old), str(new)]) == 2
    assert "mixes results of 2 grader versions" in capsys.readouterr().err
    assert not (new / "diff.md").exists()
    assert cli.main(["diff", str(old), str(new), "--allow-mixed"]) == 0
    assert "| ada | 2 | 0 | -2 |" in capsys.readouterr().out
    assert (new / "diff.csv").read_text().startswith("login,old_total,new_total,change,test")


def test_merge_lets_different_graders_through_only_when_told(tmp_path, capsys):
    one = results_folder(tmp_path / "one", {"ada": "g1"})
    two = results_folder(tmp_path / "two", {"bo": "g2"})
    argv = ["merge", str(one), str(two), "--out"]
    assert cli.main([*argv, str(tmp_path / "m1")]) == 2
    assert "--allow-mixed" in capsys.readouterr().err
    assert not (tmp_path / "m1").exists()
    assert cli.main([*argv, str(tmp_path / "m2"), "--allow-mixed"]) == 0
    assert (tmp_path / "m2" / "scores.csv").is_file()


def test_regrade_refuses_files_that_are_not_what_was_graded(tmp_path, capsys):
    old = results_folder(tmp_path / "old", {"ada": "g1"})
    (tmp_path / "class" / "ada").mkdir(parents=True)
    (tmp_path / "class" / "ada" / "attention.py").write_text("pushed later\n")
    argv = ["regrade", str(old), "--out", str(tmp_path / "new"), "--submissions"]
    assert cli.main([*argv, str(tmp_path / "class")]) == 2
    assert "ada's files are not abc as graded" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()


def test_diff_refuses_two_assignments(tmp_path, capsys):
    old = results_folder(tmp_path / "old", {"ada": "g1"})
    new = results_folder(tmp_path / "new", {"ada": "g1"})
    state = json.loads((new / "batch.json").read_text()) | {"assignment": "padding-and-batches"}
    write_json(new / "batch.json", state)
    assert cli.main(["diff", str(old), str(new)]) == 2
    assert "is masks-and-heads and" in capsys.readouterr().err


def test_exports_report_unmatched_students_and_need_a_roster(tmp_path, capsys):
    results = results_folder(tmp_path / "r", {"ada": "g1", "bo": "g1"})
    roster = tmp_path / "roster.csv"
    roster.write_text("login,canvas_id,email\nada,7,ada@x.example\nbo,,\n")
    out = tmp_path / "canvas.csv"
    assert cli.main(["export", "canvas", str(results), str(out), "--roster", str(roster)]) == 0
    assert "bo" in capsys.readouterr().err
    assert out.read_text().splitlines()[1] == "ada,7,,,,2"
    assert cli.main(["export", "moodle", str(results), str(tmp_path / "m.csv")]) == 2
    assert "graded without a course file: give --roster" in capsys.readouterr().err
    assert not (tmp_path / "m.csv").exists()


# -- Canvas passback, against a loopback server answering the calls Canvas's API documents ------


class FakeCanvas(http.server.BaseHTTPRequestHandler):
    seen: list[tuple[str, str, str, str]] = []  # method, path, Authorization, body

    def answer(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.seen.append(("GET", self.path, self.headers["Authorization"], ""))
        if self.path == "/api/v1/courses/5":
            self.answer({"id": 5, "name": "Attention"})
        elif self.path == "/api/v1/courses/5/assignments/7":
            self.answer({"id": 7, "course_id": 5, "name": SLUG})
        else:
            self.send_error(404)

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        self.seen.append(("POST", self.path, self.headers["Authorization"], body))
        if self.path == "/api/v1/courses/5/assignments/7/submissions/update_grades":
            self.answer({"id": 99, "workflow_state": "queued"})
        else:
            self.send_error(404)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def canvas_server():
    pytest.importorskip("canvasapi")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeCanvas)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    FakeCanvas.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.mark.filterwarnings("ignore::UserWarning")  # canvasapi warns about plain http
def test_passback_posts_each_grade_by_canvas_id_with_the_token_from_the_env(
    canvas_server, tmp_path, capsys, monkeypatch
):
    results = results_folder(tmp_path / "r", {"ada": "g1", "bo": "g1"})
    roster = tmp_path / "roster.csv"
    roster.write_text("login,canvas_id\nada,31\nbo,\n")
    argv = ["passback", str(results), "--url", canvas_server, "--course-id", "5"]
    argv += ["--assignment-id", "7", "--roster", str(roster)]
    monkeypatch.delenv("CANVAS_API_TOKEN", raising=False)
    assert cli.main(argv) == 2
    assert "CANVAS_API_TOKEN" in capsys.readouterr().err and not FakeCanvas.seen
    monkeypatch.setenv("CANVAS_API_TOKEN", "tok-secret")
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    assert "sent 1 grade(s)" in captured.out and "bo" in captured.err
    post = [s for s in FakeCanvas.seen if s[0] == "POST"]
    assert len(post) == 1 and post[0][2] == "Bearer tok-secret"
    form = urllib.parse.parse_qs(post[0][3])
    assert form == {"grade_data[31][posted_grade]": ["2"]}


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_passback_to_an_unknown_assignment_is_one_line(
    canvas_server, tmp_path, capsys, monkeypatch
):
    results = results_folder(tmp_path / "r", {"ada": "g1"})
    roster = tmp_path / "roster.csv"
    roster.write_text("login,canvas_id\nada,31\n")
    monkeypatch.setenv("CANVAS_API_TOKEN", "tok-secret")
    argv = ["passback", str(results), "--url", canvas_server, "--course-id", "5"]
    assert cli.main([*argv, "--assignment-id", "8", "--roster", str(roster)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("autograder: error: Canvas refused the grades") and "\n" not in err
    assert "tok-secret" not in err
    assert not [s for s in FakeCanvas.seen if s[0] == "POST"]


def test_before_the_deadline_nobody_is_fetched_and_the_summary_says_so(
    tmp_path, capsys, monkeypatch
):
    course_file = course_folder(tmp_path)
    monkeypatch.setattr(term, "clock", lambda: datetime.datetime(2026, 9, 1, tzinfo=datetime.UTC))
    assert collect(tmp_path, course_file) == 0  # the URLs lead nowhere: no git ran
    assert "2 not due yet" in capsys.readouterr().out
    rows = json.loads((tmp_path / "into" / "manifest.json").read_text())["students"]
    assert {r["status"] for r in rows} == {"pending"}
    assert rows[0]["due"] == "2026-10-01T21:59:00+00:00"


def test_collect_at_a_manifest_with_a_course_file_is_refused(tmp_path, capsys):
    course_file = course_folder(tmp_path)
    manifest = tmp_path / "old.json"
    manifest.write_text(json.dumps({"students": [{"login": "ada", "sha": "abc"}]}))
    argv = ["collect", SLUG, "--roster", str(tmp_path / "roster.csv"), "--into"]
    argv += [str(tmp_path / "into"), "--at", str(manifest), "--course-file", str(course_file)]
    argv += ["--url-template", "file:///nowhere/{login}.git"]
    assert cli.main(argv) == 2
    assert "--at re-collects a manifest's SHAs as they were" in capsys.readouterr().err
    assert not (tmp_path / "into").exists()


def course_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp_path as the course root (its reference/ and assignments/ are this checkout's)."""
    for folder in ("reference", "assignments"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    monkeypatch.setenv("AUTOGRADER_ROOT", str(tmp_path))
    return tmp_path


def test_collect_reads_the_course_yaml_at_the_course_root_by_default(tmp_path, capsys, monkeypatch):
    course_folder(course_root(tmp_path, monkeypatch))
    monkeypatch.setattr(term, "clock", lambda: datetime.datetime(2026, 9, 1, tzinfo=datetime.UTC))
    argv = ["collect", SLUG, "--roster", str(tmp_path / "roster.csv"), "--into"]
    argv += [str(tmp_path / "into"), "--url-template", "file:///nowhere/{login}.git"]
    assert cli.main(argv) == 0  # no --course-file
    assert "2 not due yet" in capsys.readouterr().out


def test_a_course_file_given_overrides_the_roots(tmp_path, capsys, monkeypatch):
    (tmp_path / "root").mkdir()
    root = course_root(tmp_path / "root", monkeypatch)
    (root / "course.yaml").write_text(GOOD.replace("  cap: 30", "  capp: 30"))  # never read
    course_file = course_folder(tmp_path)
    monkeypatch.setattr(term, "clock", lambda: datetime.datetime(2026, 9, 1, tzinfo=datetime.UTC))
    assert collect(tmp_path, course_file) == 0
    assert "2 not due yet" in capsys.readouterr().out


def test_a_root_course_yaml_without_due_dates_sets_none(tmp_path, monkeypatch):
    root = course_root(tmp_path, monkeypatch)
    (root / "course.yaml").write_text("formative:\n  results_per_day: 2\n")
    assert term.course_file(None, root, slugs()) is None
    assert term.course_file("given.yaml", root, slugs()) == Path("given.yaml")
    (root / "course.yaml").write_text(GOOD)
    assert term.course_file(None, root, slugs()) == root / "course.yaml"


def test_the_sample_course_yaml_reads_with_its_term_part_uncommented(tmp_path):
    """The repository's own course.yaml: the formative part as it is, the term part commented
    out (so nothing here has due dates); uncommented, it is a valid course file."""
    own = (ROOT / "course.yaml").read_text()
    assert not term.read_course(ROOT / "course.yaml", slugs()).deadlines
    sample = re.sub(r"(?m)^# (\s*[\w-]+:)", r"\1", own)  # "# key: value" lines only
    (tmp_path / "course.yaml").write_text(sample)
    course = term.read_course(tmp_path / "course.yaml", slugs())
    assert set(course.deadlines) == {SLUG, "padding-and-batches"}
    assert course.formative.results_per_day == 3 and course.grace_days == 3


def test_the_readmes_course_file_is_one_the_reader_takes(tmp_path):
    """README's sample, both parts in one file, as it is printed there."""
    readme = (ROOT / "README.md").read_text()
    after = readme.split("**The course file.**", 1)[1].split("\n\n", 2)[1]
    (tmp_path / "course.yaml").write_text(textwrap.dedent(after) + "\n")
    course = term.read_course(tmp_path / "course.yaml", slugs())
    assert set(course.deadlines) == {SLUG, "padding-and-batches"}
    assert course.formative.timezone == "America/New_York"  # the course's zone, by default
    assert course.formative.results_per_day == 3
