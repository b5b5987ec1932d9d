"""Quiz wording (issue 23): one reading per question, feedback for the reading a student used,
Part 1 failures in question order, and one name per quantity between quiz and handout."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from autograder.course.assignment import Assignment, slugs
from autograder.engine import quiz
from autograder.report import PART1, sections, student_text
from autograder.result import Result
from autograder.standalone import sheet as quiz_sheet


def key_entry(slug: str, *path: str) -> dict:
    """One question (or one field of it) of a suite's quiz key, by id."""
    entries = Assignment.load(slug).key["questions"]
    entry: dict = {}
    for step in path:
        entry = next(e for e in entries if e["id"] == step)
        entries = entry.get("fields", [])
    return entry


# -- padding-and-batches Q8: every option is read as its letter or its value, the same way ----

EMPTY_ROW = ("padding-and-batches", "empty_row")


@pytest.mark.parametrize(
    ("given", "letter"),
    [("A", "A"), ("0", "A"), (0, "A"), ("1/S", "B"), ("1/s", "B"), ("B (1/S)", "B")]
    + [("NaN", "C"), ("nan", "C"), ("C", "C")],
)
def test_empty_row_options_read_as_letter_or_value(given, letter):
    for field in ("naive_softmax", "large_negative_fill"):
        question = quiz_sheet.question(key_entry(*EMPTY_ROW, field))
        assert question.read(given) == letter


def test_large_negative_fill_says_it_replaces_the_scores():
    ask = key_entry(*EMPTY_ROW, "large_negative_fill")["ask"]
    assert "replaced by -1e9" in ask and "not -1e9 added" in ask
    assert quiz.judge(key_entry(*EMPTY_ROW), {"naive_softmax": "NaN", "large_negative_fill": "1/S"})


def test_1_over_s_and_nan_are_graded_alike():
    spec = key_entry(*EMPTY_ROW)
    full = quiz.judge(spec, {"naive_softmax": "NaN", "large_negative_fill": "1/S"})
    assert full.fraction == 1
    swapped = quiz.judge(spec, {"naive_softmax": "1/S", "large_negative_fill": "NaN"})
    assert swapped.fraction == 0 and "not one of the choices" not in swapped.message


# -- feedback that speaks to the reading behind a wrong answer --------------------------------


def test_training_examples_feedback_names_the_n_minus_1_reading():
    spec = key_entry("padding-and-batches", "training_examples")
    n_minus_1 = quiz.judge(spec, 13)
    assert n_minus_1.fraction == 0 and "L - 1" in n_minus_1.message
    b_times_t = quiz.judge(spec, 32)
    assert "not B times T" in b_times_t.message and "L - 1" not in b_times_t.message
    assert "last real token" in spec["ask"]


def test_decode_step_question_says_which_count_is_meant():
    spec = key_entry("kv-cache-and-gqa", "projections_per_token")
    assert "holds 300 tokens" in spec["ask"] and "feeds in one new token" in spec["ask"]
    verdict = quiz.judge(spec, {"without_cache": 300, "with_cache": 1})
    assert verdict.fraction == 0.5
    assert "leaves out the token the step feeds in" in verdict.message
    assert quiz.judge(spec, {"without_cache": 301, "with_cache": 1}).fraction == 1


def test_a_known_wrong_answer_matches_within_the_tolerance_and_per_type():
    half = [{"answer": 2, "idea": "half"}]
    number = {"type": "number", "answer": 4, "idea": "general", "wrong": half}
    assert quiz.judge(number, "2.0").message == "not quite. half"
    assert quiz.judge(number, 3).message == "not quite. general"
    choice = {
        "type": "choice",
        "options": {"A": "x", "B": "y", "C": "z"},
        "answer": "A",
        "idea": "general",
        "wrong": [{"answer": "C", "idea": "why C"}],
    }
    assert quiz.judge(choice, "c").message == "not quite. why C"
    assert quiz.judge(choice, "B").message == "not quite. general"


def test_field_notes_never_run_a_full_stop_into_the_separator():
    spec = key_entry("kv-cache-and-gqa", "projections_per_token")
    message = quiz.judge(spec, {"without_cache": 2, "with_cache": 5}).message
    assert ".;" not in message and "; with_cache: not quite." in message
    problem = quiz_sheet.question(spec).problem({"without_cache": "x", "with_cache": "y"})
    assert ".;" not in problem and ";" in problem


@pytest.mark.parametrize("slug", slugs())
def test_known_wrong_answers_stay_out_of_what_students_get(slug):
    key = Assignment.load(slug).key
    assert "wrong" not in yaml.safe_dump(quiz_sheet.describe(key))
    for q in quiz_sheet.questions(key):
        for part in [q, *getattr(q, "fields", [])]:
            for known in part.spec.get("wrong", []):
                assert not part.correct(part.read(known["answer"])), f"{part.id}: wrong is right"


# -- Part 1 failures in question order --------------------------------------------------------


def test_part1_failures_are_listed_in_question_order(tmp_path):
    assignment = Assignment.load("padding-and-batches")
    sheet = tmp_path / "answers.yaml"
    # a long message on Q1 (a form error) and short ones after it: by length, Q1 would go last
    sheet.write_text(
        "zero_weights_where: maybe, it depends on the batch\n"
        "zero_weights_count: 2\ntraining_examples: 13\nuseful_scores: 1\n"
    )
    tests, _ = quiz.grade(assignment.key, sheet)
    result = Result("padding-and-batches", "s", tests=tests)
    part1 = next(s for s in sections(result) if s.title == PART1)
    numbers = [int(re.match(r"Q(\d+)\.", t.name)[1]) for t in part1.failed]
    assert numbers == sorted(numbers) and numbers[0] == 1
    assert len({len(t.message) for t in part1.failed}) > 1  # length order would differ
    text = student_text(result)
    shown = [int(n) for n in re.findall(r"\[FAIL\] [\d.]+/[\d.]+ Q(\d+)\.", text)]
    assert shown == sorted(shown) and len(shown) == len(part1.failed)


# -- one name per quantity --------------------------------------------------------------------

SYMBOL = re.compile(r"\b([A-Za-z])\s*=\s*\d")  # a one-letter quantity given a value: "h = 4"
SHAPE = re.compile(r"\(((?:[A-Za-z], )+[A-Za-z])\)")  # a shape written in letters: (B, h, T, S)


def symbols(text: str) -> set[str]:
    found = set(SYMBOL.findall(text))
    for shape in SHAPE.findall(text):
        found |= set(shape.split(", "))
    return found


def quiz_text(key: dict) -> str:
    return yaml.safe_dump(
        [{k: q.get(k) for k in ("ask", "title", "fields")} for q in key["questions"]]
    )


def prose(handout: str) -> str:
    """The handout without its Part 1 section, which restates the quiz's own wording."""
    return re.sub(r"^## Part 1.*?(?=^## )", "", handout, flags=re.M | re.S)


@pytest.mark.parametrize("slug", slugs())
def test_the_quiz_names_each_quantity_as_the_handout_does(slug):
    assignment = Assignment.load(slug)
    handout = symbols(prose(Path(assignment.starter / "README.md").read_text()))
    asked = symbols(quiz_text(assignment.key))
    assert asked, "the check can fail: the quiz names quantities"
    clashes = {s for s in asked if s not in handout and s.swapcase() in handout}
    assert not clashes, f"the quiz writes {sorted(clashes)} where the handout writes the other case"
