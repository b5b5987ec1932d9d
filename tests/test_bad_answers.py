"""Bad input never breaks grading: a broken answers.yaml or missing files give a clear
message, and the other part is still graded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hostile import SLUG, submission

from autograder.course.assignment import Assignment
from autograder.engine import quiz
from autograder.engine.grading import grade
from autograder.sandbox.layers import Sandbox
from autograder.standalone import sheet

LAUGHS = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [
        f"{b}: &{b} [{','.join(['*' + a] * 9)}]"
        for a, b in zip("abcdefgh", "bcdefghi", strict=True)
    ]
)

SHEETS = {
    # name: (content of answers.yaml, words the message must contain)
    "syntax error": (
        "third_token_positions: 3\nmasked_weight: [0,\nhead_width: 4\n",
        "line 4",
    ),
    "second colon": ("third_token_positions: 3\nhead_width: : 4\n", "line 2"),
    "not a mapping": ("- 3\n- 0\n- [2, 0]\n", "top level is a list"),
    "a bare number": ("42\n", "top level is a number"),
    "binary": (bytes(range(256)) * 4, "not a text file"),
    "not utf-8": (b"third_token_positions: \xff\xfe\n", "not valid UTF-8"),
    "huge": ("third_token_positions: 3\n" + "# padding\n" * 100_000, "larger than 64 KiB"),
    "billion laughs": (LAUGHS, "anchors and aliases"),
    "python tag": ("third_token_positions: !!python/object/apply:os.system ['true']\n", "tags"),
    "deep nesting": ("third_token_positions: " + "[" * 10_000 + "]" * 10_000, "nested"),
}


def write(folder: Path, content: str | bytes) -> Path:
    path = folder / "answers.yaml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


@pytest.mark.parametrize("case", sorted(SHEETS))
def test_a_bad_sheet_gives_a_clear_message(tmp_path, case):
    content, words = SHEETS[case]
    read = sheet.read_sheet(write(tmp_path, content))
    answers, problems = read.answers, read.problems
    assert any(words in p for p in problems), problems
    assert all(len(p) < 500 for p in problems)
    assert all(not isinstance(v, str) or len(v) < 1000 for v in answers.values())


def test_one_typo_costs_one_question(tmp_path):
    good = (Assignment.load(SLUG).reference / "answers.yaml").read_text()
    typo = good.replace("head_width: 4", "head_width: : 4")
    read = sheet.read_sheet(write(tmp_path, typo))
    answers, problems = read.answers, read.problems
    assert "head_width" not in answers and answers["third_token_positions"] == 3
    assert any("read one by one" in p for p in problems)


def test_a_python_tag_is_never_run(tmp_path):
    marker = tmp_path / "ran"
    write(tmp_path, f"x: !!python/object/apply:os.system ['touch {marker}']\n")
    sheet.read_sheet(tmp_path / "answers.yaml")
    assert not marker.exists()


@pytest.mark.parametrize("target", ["/etc/passwd", "/dev/zero"])
def test_a_linked_sheet_is_not_followed(tmp_path, target):
    (tmp_path / "answers.yaml").symlink_to(target)
    read = sheet.read_sheet(tmp_path / "answers.yaml")
    answers, problems = read.answers, read.problems
    assert answers == {} and "not a plain file" in problems[0]


def test_a_fifo_sheet_does_not_hang(tmp_path):
    os.mkfifo(tmp_path / "answers.yaml")
    read = sheet.read_sheet(tmp_path / "answers.yaml")
    answers, problems = read.answers, read.problems
    assert answers == {} and "not a plain file" in problems[0]


def test_wrong_types_score_zero_with_a_message(tmp_path):
    content = (
        "third_token_positions: {a: 1}\nunmasked_weights: hello\n"
        "forbidden_keep_weight: [1, 2]\nbig_model_heads: 7\nhead_width: [[[1]]]\n"
    )
    results, _ = quiz.grade(Assignment.load(SLUG).key, write(tmp_path, content))
    by_id = {r.id: r for r in results}
    for key in ("third_token_positions", "unmasked_weights", "forbidden_keep_weight"):
        assert by_id[key].score == 0 and by_id[key].message, key
    assert "expected a mapping" in by_id["big_model_heads"].message
    assert "could not read" in by_id["head_width"].message


@pytest.fixture(scope="module")
def assignment() -> Assignment:
    return Assignment.load(SLUG)


@pytest.fixture(scope="module")
def box() -> Sandbox:
    return Sandbox.detect("fallback")


@pytest.mark.parametrize("case", ["syntax error", "binary", "billion laughs", "not a mapping"])
def test_part2_is_still_graded_after_a_bad_sheet(assignment, box, tmp_path, case):
    folder = submission(tmp_path)
    write(folder, SHEETS[case][0])
    result = grade(assignment, folder, box)
    assert sum(t.score for t in result.part("part2")) == 70
    assert any(SHEETS[case][1] in n for n in result.notices), result.notices


def test_a_missing_sheet_gives_a_message_and_part2_is_graded(assignment, box, tmp_path):
    folder = submission(tmp_path)
    (folder / "answers.yaml").unlink()
    result = grade(assignment, folder, box)
    assert sum(t.score for t in result.part("part2")) == 70
    assert any("answers.yaml was not found" in n for n in result.notices)


@pytest.mark.parametrize("rename", [None, "Attention.py"])
def test_a_missing_module_gives_a_message_and_part1_is_graded(assignment, box, tmp_path, rename):
    folder = submission(tmp_path)
    if rename:
        (folder / "attention.py").rename(folder / rename)
    else:
        (folder / "attention.py").unlink()
    result = grade(assignment, folder, box)
    assert sum(t.score for t in result.part("part1")) == 30
    assert all(t.score == 0 for t in result.part("part2"))
    notice = next(n for n in result.notices if "attention.py was not found" in n)
    assert (f"found: {rename}" in notice) == bool(rename)
    assert all("attention.py was not found" in t.message for t in result.part("part2"))


def test_a_syntax_error_in_the_module_names_its_line(assignment, box, tmp_path):
    folder = submission(tmp_path)
    source = (folder / "attention.py").read_text()
    line = source.count("\n") + 2
    (folder / "attention.py").write_text(source + "\ndef broken(:\n    pass\n")
    result = grade(assignment, folder, box)
    assert sum(t.score for t in result.part("part1")) == 30
    assert all(t.score == 0 and t.outcome == "import" for t in result.part("part2"))
    assert any(f"SyntaxError at line {line}" in n for n in result.notices), result.notices
