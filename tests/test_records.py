"""A results folder has one owner (workflows/records.py): one refusal of a folder that is none,
one atomic write, and every CSV the grader writes escaped by the one CSV rule."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import pytest

from autograder.cli import main
from autograder.platforms import lms
from autograder.result import atomic_write_text
from autograder.standalone.escape import csv_cell, csv_text
from autograder.workflows.regrade import CSV_HEADER

SLUG = "masks-and-heads"
NOT_RESULTS = "is not a grade-batch output folder (no batch.json)"


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "{d}"],
        ["publish", "{d}", "--dry-run", "{d}/requests.jsonl"],
        ["merge", "{d}", "--out", "{d}/merged"],
        ["diff", "{d}", "{d}"],
        ["propose", SLUG, "{d}"],
        ["similarity", "{d}"],
        ["export", "canvas", "{d}", "{d}/canvas.csv", "--roster", "{d}/roster.csv"],
        ["regrade", "{d}", "--out", "{d}/new"],
    ],
    ids=lambda argv: argv[0],
)
def test_every_command_refuses_a_folder_without_results_in_one_line(argv, tmp_path, capsys):
    (tmp_path / "something.txt").write_text("not results\n")
    assert main([word.format(d=tmp_path) for word in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"autograder: error: {tmp_path} {NOT_RESULTS}"


def test_a_number_is_written_as_it_is_and_a_formula_never():
    assert [csv_cell(v) for v in ("-2", "+0.5", "1e-3", -3, ".5")] == [
        "-2",
        "+0.5",
        "1e-3",
        "-3",
        ".5",
    ]
    assert [csv_cell(v) for v in ("-2+3", "=1", "@SUM(A1)", "+A1", "-")] == [
        "'-2+3", "'=1", "'@SUM(A1)", "'+A1", "'-",
    ]  # fmt: skip
    rows = list(csv.reader(io.StringIO(csv_text([["=cmd()", "+1"], ["a,b", "x\ny"]]))))
    assert rows == [["'=cmd()", "+1"], ["a,b", "x\ny"]]


def test_lms_imports_escape_what_the_roster_says():
    grades: lms.Grades = {SLUG: {"ada": 90.0, "bo": 75.5}}
    roster = {
        "ada": {"name": '=HYPERLINK("http://x")', "canvas_id": "1", "section": "@A"},
        "bo": {"name": "Bo", "canvas_id": "2", "email": "-bo@example.edu"},
    }
    canvas = list(csv.reader(io.StringIO(lms.canvas(grades, roster)[0])))
    assert canvas[1][0] == '\'=HYPERLINK("http://x")' and canvas[1][4] == "'@A"
    assert canvas[1][-1] == "90" and canvas[2][-1] == "75.5"
    moodle = list(csv.reader(io.StringIO(lms.moodle(grades, roster)[0])))
    assert moodle[1] == ["'-bo@example.edu", "75.5"]


def test_the_diff_csv_keeps_signed_changes_as_numbers():
    text = csv_text([CSV_HEADER, ["ada", "80", "85", "+5", *[""] * 7], ["=x", "9", "4", "-5"]])
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[1][3] == "+5" and rows[2][:4] == ["'=x", "9", "4", "-5"]


def test_a_failed_atomic_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "scores.csv"
    atomic_write_text(path, "old\n")

    def full_disk(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError):
        atomic_write_text(path, "new\n")
    assert path.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_an_atomic_write_makes_the_folders_above(tmp_path):
    atomic_write_text(tmp_path / "a" / "b" / "c.txt", "x")
    assert (tmp_path / "a" / "b" / "c.txt").read_text() == "x"
    assert oct(Path(tmp_path / "a" / "b" / "c.txt").stat().st_mode & 0o777) == "0o644"
