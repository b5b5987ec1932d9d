"""A whole term, end to end: roster and course file, collect from local bare git repositories
under a fake clock, grade-batch, merge, report, both LMS exports, and a regrade with a diff.

Five students on masks-and-heads (a1): ada on time, bo late past her grace day, cy one day
late on grace, dee with an extension (her starter, 0 points), eve pushing only after the
late window closed. padding-and-batches (a2): ada on time, cy late again, with no grace day
left. kv-cache-and-gqa (a3): ada alone. Kept small: grading is the slow part.
"""

from __future__ import annotations

import csv
import datetime
import json
import shutil
from pathlib import Path

import pytest
from helpers import ROOT, git, student_repo

from autograder import cli
from autograder.course.assignment import SUITES, Assignment
from autograder.workflows import regrade, term
from autograder.workflows.collect import MANIFEST

pytestmark = pytest.mark.timeout(900)
A1, A2, A3 = "masks-and-heads", "padding-and-batches", "kv-cache-and-gqa"
UTC = datetime.UTC
DUE = {  # 23:59 in New York (EDT, UTC-4)
    A1: datetime.datetime(2026, 10, 2, 3, 59, tzinfo=UTC),
    A2: datetime.datetime(2026, 10, 9, 3, 59, tzinfo=UTC),
    A3: datetime.datetime(2026, 10, 16, 3, 59, tzinfo=UTC),
}
COURSE_YAML = f"""\
timezone: America/New_York
grace_days: 1
collect_slack: 30m
late_policy: {{per: day, penalty: 10, cap: 50, accept_for: 5d}}
assignments:
  {A1}: {{due: "2026-10-01 23:59"}}
  {A2}: {{due: "2026-10-08 23:59"}}
  {A3}:
    due: "2026-10-15 23:59"
    late_policy: {{per: hour, penalty: 1}}
"""
ROSTER = """\
login,name,canvas_id,sis_user_id,sis_login_id,section,email
ada,"Lovelace, Ada",101,S1,ada@uni,A,ada@uni.example
bo,"Bo, Bo",102,S2,bo@uni,A,bo@uni.example
cy,"Cy, Cy",103,S3,cy@uni,B,
dee,"Dee, Dee",104,S4,dee@uni,B,dee@uni.example
eve,"Eve, Eve",,,,B,eve@uni.example
"""
EXTENSIONS = f"login,assignment,due,note\ndee,{A1},2026-10-03 23:59,medical\n"


def files(slug: str, starter: bool = False) -> dict[str, str]:
    folder = ROOT / ("assignments" if starter else "reference") / slug
    module = Assignment.load(slug).module_file
    return {name: (folder / name).read_text() for name in (module, "answers.yaml")}


def push(remotes: Path, login: str, content: dict[str, str]) -> None:
    """A later commit, pushed to the student's bare repository."""
    work = remotes / f"{login}-work"
    for name, text in content.items():
        (work / name).write_text(text)
    git("commit", "-q", "-a", "-m", "later", cwd=work)
    git("push", "-q", str(remotes / f"{login}.git"), "HEAD:main", cwd=work)


class Term:
    """The course folder, the students' remotes, and the clock collect reads."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root, self.monkeypatch = root, monkeypatch
        self.course = root / "course"
        self.course.mkdir()
        (self.course / "course.yaml").write_text(COURSE_YAML)
        (self.course / "roster.csv").write_text(ROSTER)
        (self.course / "extensions.csv").write_text(EXTENSIONS)
        self.remotes = {slug: root / "remotes" / slug for slug in DUE}
        for folder in self.remotes.values():
            folder.mkdir(parents=True)

    def repo(self, slug: str, login: str, starter: bool = False) -> str:
        return student_repo(self.remotes[slug], login, files(slug, starter))

    def collect(self, slug: str, at: datetime.timedelta) -> dict[str, dict]:
        self.monkeypatch.setattr(term, "clock", lambda: DUE[slug] + at)
        template = f"file://{self.remotes[slug]}/{{login}}.git"
        assert self.cli("collect", slug, "--roster", str(self.course / "roster.csv"),
                        "--into", str(self.into(slug)), "--url-template", template,
                        "--course-file", str(self.course / "course.yaml")) == 0  # fmt: skip
        manifest = json.loads((self.into(slug) / MANIFEST).read_text())
        return {row["login"]: row for row in manifest["students"]}

    def into(self, slug: str) -> Path:
        return self.root / "submissions" / slug

    def out(self, slug: str) -> Path:
        return self.root / "results" / slug

    def cli(self, *argv: str) -> int:
        return cli.main(list(argv))


def scores(folder: Path) -> dict[str, dict[str, str]]:
    with (folder / "scores.csv").open(newline="") as f:
        return {row["login"]: row for row in csv.DictReader(f)}


H, M = datetime.timedelta(hours=1), datetime.timedelta(minutes=1)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The whole term, once; each test below reads one part of what it left."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        t = Term(tmp_path_factory.mktemp("term"), monkeypatch)
        seen: dict[str, list[dict[str, dict]]] = {A1: [], A2: [], A3: []}
        shas = {"ada": t.repo(A1, "ada"), "dee": t.repo(A1, "dee", starter=True)}
        seen[A1].append(t.collect(A1, 5 * M))  # the deadline run, 5 minutes after
        push(t.remotes[A1], "ada", {"attention.py": "# pushed after the deadline\n"})
        shas["cy"] = t.repo(A1, "cy")
        seen[A1].append(t.collect(A1, 20 * H))  # cy, 20 hours late
        shas["bo"] = t.repo(A1, "bo")
        seen[A1].append(t.collect(A1, 48 * H + 10 * M))  # dee's own deadline; bo
        t.repo(A1, "eve")
        seen[A1].append(t.collect(A1, 6 * 24 * H))  # past the late window: eve is not taken
        t.repo(A2, "ada")
        seen[A2].append(t.collect(A2, 0.1 * H))
        t.repo(A2, "cy")
        seen[A2].append(t.collect(A2, 10 * H))
        t.repo(A3, "ada")
        seen[A3].append(t.collect(A3, 0.1 * H))
        course_file = str(t.course / "course.yaml")
        for slug in DUE:
            argv = ["grade-batch", slug, str(t.into(slug)), "--out", str(t.out(slug))]
            assert t.cli(*argv, "--course-file", course_file, "--jobs", "1") == 0
        merged = t.root / "merged" / A1
        assert t.cli("merge", str(t.out(A1)), "--out", str(merged)) == 0
        yield {"term": t, "seen": seen, "shas": shas, "merged": merged}


def test_collect_honours_each_students_own_deadline(run):
    first, second, third, last = run["seen"][A1]
    assert first["ada"]["status"] == "collected" and first["ada"]["late_seconds"] == 0
    assert first["ada"]["due"] == "2026-10-02T03:59:00+00:00"
    assert first["dee"]["status"] == "pending"  # her extension runs two more days
    assert first["dee"]["due"] == "2026-10-04T03:59:00+00:00"
    assert {first[s]["status"] for s in ("bo", "cy", "eve")} == {"missing"}
    assert second["cy"]["late_seconds"] == 20 * 3600
    assert third["dee"]["status"] == "collected" and third["dee"]["late_seconds"] == 0
    assert third["dee"]["sha"] == run["shas"]["dee"]
    assert third["bo"]["late_seconds"] == 48 * 3600 + 600
    # a later run never replaces an on-time SHA (ada pushed after the deadline), and a SHA
    # keeps the time it was first seen however often it is fetched again (cy)
    for row in (second, third, last):
        assert row["ada"]["sha"] == run["shas"]["ada"]
    assert third["cy"]["first_seen"] == second["cy"]["first_seen"]
    assert last["cy"]["sha"] == run["shas"]["cy"]
    assert last["eve"]["status"] == "missing"
    assert "late window closed" in last["eve"]["notes"][0]


def test_lateness_is_when_a_sha_was_first_seen_never_the_commit_date(run):
    # helpers.student_repo forges every commit date to 2001; only the runs' times count
    ledger = json.loads((run["term"].course / term.LEDGER).read_text())["assignments"]
    assert ledger[A1]["bo"]["first_seen"] == "2026-10-04T04:09:00+00:00"
    assert set(ledger[A1]) == {"ada", "bo", "cy", "dee"}


def test_scores_apply_the_policy_with_grace_days_spent_in_order(run):
    a1, a2 = scores(run["merged"]), scores(run["term"].out(A2))
    full = float(a1["ada"]["raw"])
    assert full > 0
    assert (a1["ada"]["late_days"], a1["ada"]["penalty"], a1["ada"]["total"]) == (
        "0",
        "0",
        f"{full:g}",
    )
    # bo: 2 days 10 minutes late = 3 days; 1 grace day, then 2 days at 10%
    assert (a1["bo"]["late_days"], a1["bo"]["grace_used"]) == ("3", "1")
    assert float(a1["bo"]["total"]) == pytest.approx(full * 0.8)
    # cy: 20 hours late = 1 day, on her grace day; on a2 10 hours late, no grace day left
    assert (a1["cy"]["late_days"], a1["cy"]["grace_used"], a1["cy"]["penalty"]) == ("1", "1", "0")
    assert (a2["cy"]["late_days"], a2["cy"]["grace_used"]) == ("1", "0")
    assert float(a2["cy"]["total"]) == pytest.approx(float(a2["cy"]["raw"]) * 0.9)
    assert a1["dee"]["late_days"] == "0" and a1["dee"]["total"] == "0"  # the starter
    assert a1["eve"]["status"] == "missing" and a1["eve"]["total"] == ""
    assert scores(run["term"].out(A1)) == a1  # grade-batch and merge agree


def test_report_shows_lateness(run):
    text = (run["merged"] / "report.md").read_text()
    assert "## Lateness" in text
    assert "| bo | 3 | 1 | 20% |" in text and "| ada |" not in text.split("## Lateness")[1]
    assert "<h2>Lateness</h2>" in (run["merged"] / "report.html").read_text()


def test_feedback_says_how_the_penalty_was_computed(run, tmp_path):
    requests = tmp_path / "requests.jsonl"
    template = "https://github.com/klass/{assignment}-{login}.git"
    argv = ["publish", str(run["merged"]), "--url-template", template, "--dry-run", str(requests)]
    assert run["term"].cli(*argv) == 0
    bodies = {
        json.loads(line)["path"].split("/")[3]: json.loads(line)["body"]["body"]
        for line in requests.read_text().splitlines()
    }
    assert "1 grace day(s) used" in bodies[f"{A1}-bo"]
    assert "20% off" in bodies[f"{A1}-bo"]
    assert "on time" in bodies[f"{A1}-ada"]
    # a late student's comment never says it was collected at the deadline
    assert "collected after your deadline" in bodies[f"{A1}-bo"]
    assert "collected at the deadline" in bodies[f"{A1}-ada"]
    assert "collected at the deadline" not in bodies[f"{A1}-bo"]


def test_canvas_export_maps_logins_through_the_roster(run, tmp_path, capsys):
    t, out = run["term"], tmp_path / "canvas.csv"
    folders = [str(run["merged"]), str(t.out(A2)), str(t.out(A3))]
    roster = str(t.course / "roster.csv")
    assert t.cli("export", "canvas", *folders, str(out), "--roster", roster) == 0
    rows = list(csv.reader(out.open(newline="")))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", A1, A2, A3]
    by_id = {row[1]: row for row in rows[1:]}
    a1 = scores(run["merged"])
    assert by_id["101"][:5] == ["Lovelace, Ada", "101", "S1", "ada@uni", "A"]
    assert by_id["102"][5] == a1["bo"]["total"]
    assert by_id["103"][5:7] == [a1["cy"]["total"], scores(t.out(A2))["cy"]["total"]]
    assert "eve" in capsys.readouterr().err  # no Canvas identity: reported, not dropped
    assert len(rows) == 5


def test_moodle_export_identifies_by_email(run, tmp_path, capsys):
    t, out = run["term"], tmp_path / "moodle.csv"
    assert t.cli("export", "moodle", str(run["merged"]), str(out)) == 0  # roster from the course
    rows = list(csv.reader(out.open(newline="")))
    assert rows[0] == ["Email address", A1]
    assert ["eve@uni.example", "0"] in rows  # nothing accepted: a zero, not a blank
    assert "cy" in capsys.readouterr().err  # no email in the roster


@pytest.fixture(scope="module")
def regraded(run, tmp_path_factory):
    """a1 regraded after one hidden test is made worth 3 points instead of 2."""
    suites = tmp_path_factory.mktemp("suites")
    shutil.copytree(SUITES / A1, suites / A1)
    hidden = suites / A1 / "test_hidden.py"
    marker = '@points(2, checks="causal_mask")\ndef test_causal_mask_shape_and_dtype'
    assert marker in hidden.read_text()
    hidden.write_text(hidden.read_text().replace(marker, marker.replace("2", "3", 1)))
    declared = suites / A1 / "suite.yaml"
    declared.write_text(declared.read_text().replace("part2: 70", "part2: 71"))
    new = tmp_path_factory.mktemp("regrade") / "new"
    regrade.regrade(run["merged"], new, Assignment.load(A1, suites=suites), jobs=1)
    return new


def test_regrade_diff_shows_who_gains_and_which_test_changed(run, regraded, capsys):
    assert run["term"].cli("diff", str(run["merged"]), str(regraded)) == 0
    printed = capsys.readouterr().out
    assert "| ada | " in printed and "+1 |" in printed
    assert "| bo | " in printed and "+0.8 |" in printed  # a point, less her 20% penalty
    with (regraded / regrade.DIFF_CSV).open(newline="") as f:
        rows = list(csv.DictReader(f))
    test_rows = [r for r in rows if r["test"] == "part2:test_causal_mask_shape_and_dtype"]
    assert {r["login"] for r in test_rows} == {"ada", "bo", "cy", "dee"}
    dee = next(r for r in test_rows if r["login"] == "dee")
    assert (dee["old_points"], dee["new_points"]) == ("0/2", "0/3")
    assert dee["old_cause"] and dee["old_cause"] == dee["new_cause"]
    md = (regraded / regrade.DIFF_MD).read_text()
    old_state = json.loads((run["merged"] / "batch.json").read_text())
    new_state = json.loads((regraded / "batch.json").read_text())
    assert old_state["suite_digest"] != new_state["suite_digest"]
    assert old_state["suite_digest"] in md and new_state["suite_digest"] in md
    assert old_state["grader_version"] in md and new_state["grader_version"] in md


def test_merge_refuses_mixed_graders_unless_told(run, regraded, tmp_path, capsys):
    old, t = run["term"].out(A1), run["term"]
    assert t.cli("merge", str(old), str(regraded), "--out", str(tmp_path / "m")) == 2
    assert "differ in grader version" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()
