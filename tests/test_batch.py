"""autograder grade-batch: a dozen mixed submissions, graded once, checked many ways."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
from dozen import HOSTILE, MISTAKES, build, graded, patient
from hostile import SLUG

from autograder.cli import main
from autograder.course.assignment import Assignment
from autograder.engine.grading import grade
from autograder.platforms.gradescope import gradescope
from autograder.platforms.nbgrader import notebook
from autograder.result import Result, TestResult
from autograder.sandbox.layers import Sandbox
from autograder.workflows import batch, records
from autograder.workflows.grade import holds_a_class
from autograder.workflows.records import Record, load_record

ROOT = Path(__file__).parents[1]
SCHEMA = json.loads((ROOT / "autograder" / "schemas" / "gradescope-results.json").read_text())
# Grading a class takes a while on a loaded 2-core machine: the whole module shares one budget.
pytestmark = pytest.mark.timeout(900)
STUDENTS = sorted(["ada", "bo", *MISTAKES, *HOSTILE], key=str.casefold)


@pytest.fixture(scope="session")
def dozen(tmp_path_factory) -> tuple[Path, Path]:
    return graded(tmp_path_factory)


def rows(out: Path) -> list[dict[str, str]]:
    with (out / "scores.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def record(out: Path, student: str) -> Record:
    found = load_record(out, student)
    assert found is not None, f"no stored record for {student}"
    return found


def test_batch_scores_equal_grading_each_alone(dozen):
    folder, out = dozen
    assignment, box = patient(), Sandbox.detect()
    for student in STUDENTS:
        alone = grade(assignment, folder / student, box)
        batched = record(out, student)
        assert batched.score == alone.score, student
        assert {t.id: t.score for t in batched.tests} == {t.id: t.score for t in alone.tests}


def test_results_json_per_student_is_the_canonical_result_and_records_the_batch(dozen):
    _, out = dozen
    grader = batch.grader_version(Assignment.load(SLUG))
    for student in STUDENTS:
        data = json.loads((out / student / "results.json").read_text())
        stored = Record.from_dict(data)
        assert stored.to_dict() == data  # read back whole: the canonical Result, not a platform's
        assert stored.result is not None
        jsonschema.validate(gradescope(stored.result), SCHEMA)  # every adapter still reads it
        assert stored.student == student and stored.status == "graded"
        assert stored.grader_version == grader
        assert stored.content_hash == batch.content_hash(dozen[0] / student)


def test_scores_csv_columns_and_values(dozen):
    _, out = dozen
    table = rows(out)
    header = list(table[0])
    assert header[:7] == ["login", "sha", "status", "part1", "part2", "total", "max_score"]
    assert header[-2:] == ["mistakes", "problems"]
    tests = header[7:-2]
    assert tests[0].startswith("part1:") and tests[-1].startswith("part2:")
    assert len(tests) == len(record(out, "ada").tests)
    assert [r["login"] for r in table] == STUDENTS
    by = {r["login"]: r for r in table}
    assert (by["ada"]["total"], by["ada"]["part1"], by["ada"]["max_score"]) == ("100", "30", "100")
    assert by["bo"]["total"] == "0"
    for student in MISTAKES:
        assert MISTAKES[student] in by[student]["mistakes"].split("; ")
        assert float(by[student]["total"]) < 100
    assert float(by["dee"]["part1"]) < float(by["cy"]["part1"])  # the wrong quiz answer
    assert by["dee"]["part1:head_width"] == "0" and by["cy"]["part1:head_width"] != "0"
    assert "crashed" in by["Kim"]["problems"] and "crashed" in by["gus"]["problems"]
    assert by["ada"]["problems"] == "" and by["ada"]["mistakes"] == ""
    for student in STUDENTS:  # every cell is the results.json's number
        data = record(out, student)
        assert float(by[student]["total"]) == data.score
        for test in data.tests:
            assert float(by[student][f"{test.part}:{test.id}"]) == test.score


def test_hostile_submissions_score_only_what_they_earn(dozen):
    by = {r["login"]: r for r in rows(dozen[1])}
    for student in HOSTILE:
        assert float(by[student]["part2"]) < 70, student  # none forged full marks


def test_a_rerun_skips_what_is_unchanged_and_regrades_what_changed(dozen, tmp_path):
    folder, out = tmp_path / "class", tmp_path / "out"
    shutil.copytree(dozen[0], folder)
    shutil.copytree(dozen[1], out)
    said: list[str] = []
    summary = batch.grade_batch(patient(), folder, out, say=said.append)
    assert (summary.graded, summary.unchanged) == (0, 12)
    assert (out / "scores.csv").read_text() == (dozen[1] / "scores.csv").read_text()
    shutil.rmtree(folder / "bo")
    shutil.copytree(folder / "ada", folder / "bo")  # bo now hands in the reference
    summary = batch.grade_batch(patient(), folder, out, say=said.append)
    assert (summary.graded, summary.unchanged) == (1, 11)
    assert {r["login"]: r["total"] for r in rows(out)}["bo"] == "100"
    assert "[1/1] bo: 100" in said and "12 students: 1 graded now, 11 unchanged" in said[-1]


def tagged_processes(tag: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and tag.encode() in (entry / "environ").read_bytes():
                state = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[0]
                if state != b"Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_an_interrupted_batch_resumes_to_the_same_result(dozen, tmp_path, how):
    # enough students that, with two graded when the signal goes, the rest cannot all finish
    # before it lands, however late a loaded machine wakes this poller (four could)
    students = (
        STUDENTS if how == signal.SIGKILL else ["ada", "bo", "cy", "dee", "eve", "fay", "gus"]
    )
    folder, out = tmp_path / "class", tmp_path / "out"
    for student in students:
        shutil.copytree(dozen[0] / student, folder / student)
    tag = f"KLASS_BATCH_TEST={os.getpid()}-{how}"
    path = f"{ROOT}:{ROOT / 'tests'}"
    env = {**os.environ, tag.split("=")[0]: tag.split("=")[1], "PYTHONPATH": path}
    run = (  # grade_batch as the CLI calls it, with the dozen's patient timeout
        "import sys; from pathlib import Path; from dozen import patient; "
        "from autograder.workflows import batch; "
        "batch.grade_batch(patient(), Path(sys.argv[1]), Path(sys.argv[2]), jobs=2)"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", run, str(folder), str(out)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while len(list(out.glob("*/results.json"))) < 2 and time.monotonic() < deadline:
        assert process.poll() is None, "the batch finished before it could be interrupted"
        time.sleep(0.05)
    process.send_signal(how)
    process.wait(timeout=120)
    assert process.returncode != 0
    finished = list(out.glob("*/results.json"))
    assert 2 <= len(finished) < len(students)
    for path in finished:  # nothing half-written: every results file is whole
        json.loads(path.read_text())
    assert not (out / "scores.csv").exists()
    deadline = time.monotonic() + 60
    while tagged_processes(tag) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert tagged_processes(tag) == [], "the interrupted batch left processes behind"
    summary = batch.grade_batch(patient(), folder, out, say=lambda _: None)
    assert summary.unchanged == len(finished) and summary.graded == len(students) - len(finished)
    expected = [load_record(dozen[1], s) for s in students]
    fresh = tmp_path / "expected.csv"
    records.write_scores(fresh, [r for r in expected if r])
    assert (out / "scores.csv").read_text() == fresh.read_text()
    assert not [p for p in out.rglob(".*") if p.is_file()]  # no temporaries left


# -- input and bad input (nothing graded) -------------------------------------------------------


def one_line_error(capsys, argv: list[str], message: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_bad_input_gets_one_line_and_nothing_written(tmp_path, capsys):
    out = tmp_path / "out"
    command = ["grade-batch", SLUG]
    one_line_error(capsys, [*command, str(tmp_path / "nope"), "--out", str(out)], "no such")
    empty = tmp_path / "empty"
    empty.mkdir()
    one_line_error(capsys, [*command, str(empty), "--out", str(out)], "holds no submissions")
    twins = tmp_path / "twins"
    (twins / "Alice").mkdir(parents=True)
    (twins / "alice").mkdir()
    one_line_error(
        capsys, [*command, str(twins), "--out", str(out)], "two students with the same id"
    )
    assert not out.exists()
    one = tmp_path / "one"
    (one / "ada").mkdir(parents=True)
    other = tmp_path / "other"
    other.mkdir()
    (other / "batch.json").write_text('{"assignment": "padding-and-batches"}')
    before = sorted(other.rglob("*"))
    one_line_error(
        capsys, [*command, str(one), "--out", str(other)], "holds results for 'padding-and-batches'"
    )
    assert sorted(other.rglob("*")) == before
    stranger = tmp_path / "stranger"
    stranger.mkdir()
    (stranger / "thesis.tex").write_text("")
    one_line_error(capsys, [*command, str(one), "--out", str(stranger)], "holds no batch results")
    one_line_error(capsys, [*command, str(one), "--out", str(out), "--shard", "4/3"], "K/N")


def test_the_three_input_layouts(tmp_path):
    assignment = Assignment.load(SLUG)
    plain = tmp_path / "plain"
    for student in ("b", "a"):
        (plain / student).mkdir(parents=True)
    (plain / ".cache").mkdir()
    found = batch.discover(plain, assignment)
    assert [(s.student, s.folder) for s in found] == [("a", plain / "a"), ("b", plain / "b")]

    nbgrader = tmp_path / "submitted"
    for student in ("s1", "s2"):
        (nbgrader / student / SLUG).mkdir(parents=True)
    found = batch.discover(nbgrader, assignment)
    assert [s.folder for s in found] == [nbgrader / "s1" / SLUG, nbgrader / "s2" / SLUG]

    collected = tmp_path / "collected"
    (collected / "ann").mkdir(parents=True)
    manifest = {
        "assignment": SLUG,
        "students": [
            {"login": "ann", "status": "collected", "sha": "a" * 40, "notes": []},
            {"login": "ben", "status": "missing", "sha": "", "notes": ["no repository"]},
        ],
    }
    (collected / "manifest.json").write_text(json.dumps(manifest))
    ann, ben = batch.discover(collected, assignment)
    assert (ann.folder, ann.sha, ann.status) == (collected / "ann", "a" * 40, "submitted")
    assert (ben.folder, ben.status, ben.notes) == (None, "missing", ["no repository"])
    manifest["assignment"] = "flash-attention"
    (collected / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(batch.UsageError, match="is for 'flash-attention'"):
        batch.discover(collected, assignment)


def test_a_student_without_a_submission_still_gets_a_row(tmp_path):
    collected = tmp_path / "collected"
    collected.mkdir()
    manifest = {
        "assignment": SLUG,
        "students": [{"login": "ben", "status": "empty", "sha": "", "notes": ["no commits"]}],
    }
    (collected / "manifest.json").write_text(json.dumps(manifest))
    batch.grade_batch(Assignment.load(SLUG), collected, tmp_path / "out", say=lambda _: None)
    (row,) = rows(tmp_path / "out")
    assert (row["login"], row["status"], row["total"], row["problems"]) == (
        "ben",
        "empty",
        "",
        "empty",
    )
    assert "no commits" in record(tmp_path / "out", "ben").failure


def test_shards_are_stable_disjoint_and_cover_the_class():
    ids = [f"student{i}" for i in range(300)]
    shards = [{s for s in ids if batch.in_shard(s, (k, 3))} for k in (1, 2, 3)]
    assert set.union(*shards) == set(ids) and sum(map(len, shards)) == len(ids)
    assert all(60 < len(s) < 140 for s in shards)
    assert {s for s in ids[:100] if batch.in_shard(s, (2, 3))} == shards[1] & set(ids[:100])


# -- shards and merge ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def shards(dozen, tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("shards")
    outs = []
    for k in (1, 2, 3):
        out = root / f"shard{k}"
        batch.grade_batch(patient(), dozen[0], out, shard=(k, 3), say=lambda _: None)
        outs.append(out)
    return outs


def test_three_shards_merged_equal_the_single_run(dozen, shards, tmp_path):
    sizes = [len(rows(s)) for s in shards]
    assert sum(sizes) == 12 and all(sizes)
    assert main(["merge", *map(str, shards), "--out", str(tmp_path / "merged")]) == 0
    assert (tmp_path / "merged" / "scores.csv").read_bytes() == (
        dozen[1] / "scores.csv"
    ).read_bytes()
    for student in STUDENTS:
        assert record(tmp_path / "merged", student).score == record(dozen[1], student).score


def test_merge_refuses_overlaps_gaps_and_other_graders(dozen, shards, tmp_path, capsys):
    one_line_error(
        capsys, ["merge", str(shards[0]), str(dozen[1]), "--out", str(tmp_path / "a")], "overlap"
    )
    one_line_error(
        capsys,
        ["merge", str(shards[0]), str(shards[1]), "--out", str(tmp_path / "b")],
        "missing: 3/3",
    )
    older = tmp_path / "older"
    shutil.copytree(shards[2], older)
    state = json.loads((older / "batch.json").read_text())
    (older / "batch.json").write_text(json.dumps(state | {"grader_version": "0.0.1+old"}))
    argv = ["merge", str(shards[0]), str(shards[1]), str(older), "--out", str(tmp_path / "c")]
    one_line_error(capsys, argv, "differ in grader version")
    assert not any((tmp_path / name).exists() for name in "abc")


def test_a_symlinked_student_folder_is_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "attention.py").write_text("SECRET = 1\n")
    folder = tmp_path / "class"
    (folder / "ann").mkdir(parents=True)
    (folder / "mallory").symlink_to(outside)
    ann, mallory = batch.discover(folder, Assignment.load(SLUG))
    assert ann.folder == folder / "ann"
    assert (mallory.student, mallory.folder, mallory.status) == ("mallory", None, "failed")
    assert "symbolic link" in mallory.notes[0]


def test_nbgrader_submitted_notebooks_grade_as_their_files(tmp_path):
    """grade-batch on nbgrader's submitted/<student>/<assignment>/ grades each notebook as the
    code it holds: the same scores as the plain files, and the notebooks are not touched."""
    assignment = patient()
    plain = build(tmp_path / "plain")
    submitted = tmp_path / "submitted"
    for student in ("ada", "cy", "fay", "bo"):
        folder = submitted / student / SLUG
        folder.mkdir(parents=True)
        files = {p.name: p.read_text() for p in (plain / student).glob("*.py")}
        nb = notebook.as_notebook(assignment, files)
        (folder / f"{SLUG}.ipynb").write_text(json.dumps(nb))
        shutil.copy(plain / student / "answers.yaml", folder / "answers.yaml")
    before = {p: p.read_bytes() for p in submitted.rglob("*") if p.is_file()}
    batch.grade_batch(assignment, submitted, tmp_path / "out", jobs=2, say=lambda line: None)
    box = Sandbox.detect()
    for student in ("ada", "cy", "fay", "bo"):
        stored = record(tmp_path / "out", student)
        alone = grade(assignment, plain / student, box)
        assert [t.score for t in stored.tests] == [t.score for t in alone.tests], student
    assert {p: p.read_bytes() for p in submitted.rglob("*") if p.is_file()} == before


def summary_record(status: str, score: float = 0, outcome: str = "passed") -> Record:
    test = TestResult("t", "t", "part2", score, 100, outcome)
    result = Result("a", "s", tests=[test]) if status == "graded" else None
    return Record("s", status, result=result)


def test_the_summary_line_has_the_true_median_and_counts_each_student_once():
    """[0, 100] has median 50, not the upper middle; a missing student is only "without a
    grade", not also among the graded ones that timed out, crashed or returned invalid output."""
    records = [
        summary_record("graded", 0),
        summary_record("graded", 100),
        summary_record("graded", 40, outcome="timeout"),
        summary_record("graded", 60),
        summary_record("missing"),
    ]
    line = batch.Summary(5, 4, 0, 1.0, records).line()
    assert "median 50/100" in line, line
    assert "1 without a grade" in line, line
    assert "1 timed out, crashed or returned invalid output" in line, line


@pytest.mark.parametrize("layout", ["folders", "nbgrader", "collect"])
def test_grade_on_a_class_says_to_use_grade_batch(tmp_path, capsys, layout):
    assignment = Assignment.load(SLUG)
    module = f"{assignment.module}.py"
    for student in ("ada", "bo"):
        where = tmp_path / student / (SLUG if layout == "nbgrader" else "")
        where.mkdir(parents=True, exist_ok=True)
        shutil.copy(assignment.reference / module, where / module)
    if layout == "collect":
        manifest = {"assignment": SLUG, "students": []}
        (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    one_line_error(capsys, ["grade", SLUG, str(tmp_path)], f"autograder grade-batch {SLUG}")


def test_one_submission_is_not_taken_for_a_class(tmp_path):
    assignment = Assignment.load(SLUG)
    assert not holds_a_class(assignment.reference, assignment)
    assert not holds_a_class(assignment.starter, assignment)
    (tmp_path / "notes").mkdir()  # a submission with a folder of its own, and its files
    shutil.copy(assignment.reference / "answers.yaml", tmp_path / "answers.yaml")
    assert not holds_a_class(tmp_path, assignment)


def blas_threads_of_a_job(slug: str) -> int:
    from threadpoolctl import threadpool_info

    batch._start_job(Assignment.load(slug), "fallback")
    return max(pool["num_threads"] for pool in threadpool_info())


def test_a_job_process_takes_one_blas_thread():
    """One job per core: a job's own NumPy (a diagnosis replaying mistakes) must not spin a
    BLAS thread pool on the cores the other jobs grade on."""
    import concurrent.futures
    import multiprocessing

    spawn = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=spawn) as pool:
        assert pool.submit(blas_threads_of_a_job, SLUG).result(timeout=120) == 1
