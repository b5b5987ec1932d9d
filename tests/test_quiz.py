"""Part 1: the forms a person writes are accepted; wrong answers explain the missed idea."""

import pytest

from autograder import quiz
from autograder import sheet as quiz_sheet
from autograder.assignment import Assignment

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


def test_blank_sheet_lists_every_question_with_its_text():
    key = Assignment.load("masks-and-heads").key
    sheet = quiz_sheet.blank_sheet(quiz_sheet.describe(key))
    for question in key["questions"]:
        assert f"{question['id']}:" in sheet
        assert question["ask"].splitlines()[0] in sheet
    assert len(key["questions"]) >= 10
