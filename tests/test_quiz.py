"""Part 1: the forms a person writes are accepted; wrong answers explain the missed idea."""

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from autograder.course.assignment import Assignment, slugs
from autograder.engine import quiz
from autograder.standalone import sheet as quiz_sheet

NUMBER = {"type": "number", "answer": 4, "idea": "Heads split the width."}
VECTOR = {"type": "vector", "answer": [2, 0], "tolerance": 0.01, "idea": "One key gets it all."}
CHOICE = {"type": "choice", "options": {"A": "Yes", "B": "No"}, "answer": "B", "idea": "x"}
FRACTION = {"type": "number", "answer": 2 / 3, "tolerance": 1e-3}


@pytest.mark.parametrize("given", [4, 4.0, "4", " 4 ", "4.0", "8/2"])
def test_numbers_in_every_written_form(given):
    assert quiz.judge(NUMBER, given).fraction == 1


@pytest.mark.parametrize("given", ["2/3", 0.6667, "0.667"])
def test_fractions_and_tolerance(given):
    assert quiz.judge(FRACTION, given).fraction == 1


@pytest.mark.parametrize("given", [[2, 0], [2.0, 0.0], "[2, 0]", "2, 0", [2.004, -0.003]])
def test_vectors(given):
    assert quiz.judge(VECTOR, given).fraction == 1


@pytest.mark.parametrize("given", ["B", "b", "No", "no", False, "B."])
def test_choices_by_letter_or_words(given):
    assert quiz.judge(CHOICE, given).fraction == 1


def test_wrong_number_explains_the_idea_without_the_value():
    verdict = quiz.judge(NUMBER, 8)
    assert verdict.fraction == 0
    assert "Heads split the width." in verdict.message
    assert "4" not in verdict.message


@pytest.mark.parametrize(
    "spec, given, words",
    [
        (NUMBER, "four", "could not read 'four' as a number"),
        (NUMBER, True, "as a number"),
        (VECTOR, [2, 0, 0], "expected a list of 2 numbers, got 3"),
        (VECTOR, {"a": 1}, "as a list of 2 numbers"),
        (CHOICE, "C", "not one of the choices: A (Yes), B (No)"),
    ],
)
def test_unreadable_answers_say_what_form_is_expected(spec, given, words):
    verdict = quiz.judge(spec, given)
    assert verdict.fraction == 0
    assert words in verdict.message


@pytest.mark.parametrize("given", [None, ""])
def test_blank_scores_zero_and_says_not_answered(given):
    assert quiz.judge(NUMBER, given) == quiz.Verdict(0.0, "not answered")


def test_fields_give_partial_credit_per_field():
    key = Assignment.load("masks-and-heads").key
    spec = next(q for q in key["questions"] if q["type"] == "fields")
    verdict = quiz.judge(
        spec, {"head_width": 128, "projection_parameters": 1, "depends_on_h": "no"}
    )
    assert verdict.fraction == pytest.approx(2 / 3)
    assert "projection_parameters: not quite" in verdict.message


def test_grading_a_sheet(tmp_path):
    key = Assignment.load("masks-and-heads").key
    sheet = tmp_path / "answers.yaml"
    sheet.write_text("third_token_positions: '3'\nhead_width: 5\nmystery: 1\n")
    results, problems = quiz.grade(key, sheet)
    by_id = {r.id: r for r in results}
    assert by_id["third_token_positions"].score == by_id["third_token_positions"].max_score
    assert by_id["head_width"].outcome == "wrong"
    assert by_id["masked_weight"].outcome == "not-answered"
    assert all(r.part == "part1" for r in results)
    assert any("unknown keys ignored: mystery" in p for p in problems)


@pytest.mark.parametrize("slug", slugs())
def test_blank_sheet_lists_every_question_with_all_its_text(slug):
    key = Assignment.load(slug).key
    sheet = quiz_sheet.blank_sheet(quiz_sheet.describe(key))
    for question in key["questions"]:
        assert f"{question['id']}:" in sheet
        for line in question["ask"].strip().splitlines():  # a multi-line ask, whole
            assert line.strip() in sheet, (question["id"], line)
    assert len(key["questions"]) >= 8


def test_a_fields_question_shows_every_line_of_its_text():
    key = {
        "questions": [
            {
                "id": "q",
                "ask": "Scores are [1, 2].\nV_block is [[3], [4]].",
                "points": 2,
                "type": "fields",
                "fields": [{"id": "m", "ask": "the new max", "points": 2, "type": "number",
                            "answer": 2}],
            }
        ]
    }  # fmt: skip
    sheet = quiz_sheet.blank_sheet(quiz_sheet.describe(key))
    assert "Scores are [1, 2]." in sheet and "V_block is [[3], [4]]." in sheet


# -- every form the sheet shows is accepted; the sheet module stands alone ------------------

MASKS_KEY = Assignment.load("masks-and-heads").key


@pytest.mark.parametrize("q", quiz_sheet.questions(MASKS_KEY), ids=lambda q: q.id)
def test_every_form_the_blank_sheet_shows_is_accepted(q):
    sheet = quiz_sheet.blank_sheet(quiz_sheet.describe(MASKS_KEY))
    parts = q.fields if isinstance(q, quiz_sheet.Fields) else [q]
    for part in parts:
        assert part.shown() and f"({part.form()})" in sheet
        header_forms = part.examples if part.examples else []
        for text in part.shown() + header_forms:
            given = yaml.safe_load(f"answer: {text}")["answer"]
            assert part.problem(given) == "", (part.id, text)


@pytest.mark.parametrize("given", ["B (No)", "B) No", "B. No", "(B)", "b (no)", "B: No", "no."])
def test_choices_in_the_forms_people_copy_from_the_sheet(given):
    assert quiz.judge(CHOICE, given).fraction == 1


def test_a_choice_that_contradicts_itself_is_not_read():
    assert "not one of the choices" in quiz.judge(CHOICE, "B (Yes)").message


@pytest.mark.parametrize("given", ["3,0", "0,5"])
def test_a_decimal_comma_gets_a_format_message(given):
    verdict = quiz.judge({"type": "number", "answer": 30, "idea": "IDEA"}, given)
    assert verdict.fraction == 0
    assert "comma" in verdict.message and "IDEA" not in verdict.message


def test_thousands_separators_and_underscores_are_read():
    spec = {"type": "number", "answer": 67108864}
    assert quiz.judge(spec, "67,108,864").fraction == 1
    assert quiz.judge(spec, "67_108_864").fraction == 1


@pytest.mark.parametrize("given", [[[2, 0]], "[[2, 0]]", [[2], [0]], "(2, 0)", "2 0"])
def test_a_one_row_array_is_a_vector(given):
    assert quiz.judge(VECTOR, given).fraction == 1


@pytest.mark.parametrize("given", [None, {}, {"head_width": None, "depends_on_h": ""}])
def test_a_blank_multi_field_question_is_not_answered(tmp_path, given):
    spec = next(q for q in MASKS_KEY["questions"] if q["type"] == "fields")
    assert quiz.judge(spec, given) == quiz.Verdict(0.0, "not answered")


def test_one_typo_in_a_sheet_with_block_lists_and_quoted_keys_costs_one_question():
    text = (
        "third_token_positions: 3\n"
        '"masked_weight": 0\n'
        "cat_sat_weights:\n- 0.269\n- 0.731\n"
        "head_width: : 4\n"
        "'examples_per_pass': 1024\n"
    )
    read = quiz_sheet.read_text(text)
    assert read.answers == {
        "third_token_positions": 3,
        "masked_weight": 0,
        "cat_sat_weights": [0.269, 0.731],
        "examples_per_pass": 1024,
    }
    assert read.lines["cat_sat_weights"] == 3 and read.lines["examples_per_pass"] == 7
    assert "answers.yaml, line 6" in read.problems[0]


def test_the_key_free_description_holds_no_answer():
    description = quiz_sheet.describe(MASKS_KEY)
    text = yaml.safe_dump(description)
    for word in ("answer", "idea", "tolerance"):
        assert f"{word}:" not in text
    assert quiz_sheet.blank_sheet(description) == quiz_sheet.blank_sheet(MASKS_KEY)


def test_forms_are_checked_without_the_key_with_line_numbers(tmp_path):
    path = tmp_path / "answers.yaml"
    blank = quiz_sheet.blank_sheet(quiz_sheet.describe(MASKS_KEY))
    path.write_text(
        blank.replace("head_width: null", "head_width: four", 1).replace(
            "masked_weight: null", "masked_weight: 0"
        )
    )
    checks, problems = quiz_sheet.check_forms(quiz_sheet.describe(MASKS_KEY), path)
    by_id = {c.id: c for c in checks}
    assert problems == []
    assert by_id["masked_weight"].ok
    assert by_id["third_token_positions"].problem == "not answered"
    line = blank.splitlines().index("head_width: four".replace("four", "null")) + 1
    assert by_id["head_width"].line == line and "could not read" in by_id["head_width"].problem
    assert f"line {line}" in str(by_id["head_width"])


def test_the_sheet_module_imports_only_the_standard_library_and_yaml():
    source = Path(quiz_sheet.__file__).read_text()
    imported = {
        name.split(".")[0]
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for name in (
            [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        )
    }
    assert imported - sys.stdlib_module_names <= {"yaml"}, imported


def test_the_sheet_module_checks_forms_as_a_copied_script(tmp_path):
    shutil.copy(quiz_sheet.__file__, tmp_path / "sheet.py")
    (tmp_path / "questions.yaml").write_text(yaml.safe_dump(quiz_sheet.describe(MASKS_KEY)))
    (tmp_path / "answers.yaml").write_text("head_width: 3,0\n")
    done = subprocess.run(
        [sys.executable, "sheet.py", "questions.yaml", "answers.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"]},
    )
    assert done.returncode == 1
    assert "head_width, line 1): '3,0' has a comma" in done.stdout
