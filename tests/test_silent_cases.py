"""Where a handout warns about a silent case, a test exercises it (issue 23).

padding-and-batches warns that when B happens to equal h, a mask without its head axis raises
no error. So cross_attention's tests (hidden and public) must use B != h, where that bug
cannot pass, and one hidden test must be the silent case B = h itself. The tests are run here
with the reference standing in for the student, recording every call's B and h.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from autograder.course.assignment import Assignment
from autograder.engine.mistakes import load_catalogue

SLUG = "padding-and-batches"
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnknownMarkWarning")


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def reference() -> ModuleType:
    return load(Assignment.load(SLUG).reference / "batches.py", "reference_batches")


class Recorder:
    """The reference as a student, noting (B, h) of every cross_attention call."""

    def __init__(self, reference: ModuleType) -> None:
        self.reference, self.calls = reference, []

    def cross_attention(self, X: Any, Y: Any, y_lengths: Any, *rest: Any) -> Any:
        self.calls.append((len(X), rest[-1]))
        return self.reference.cross_attention(X, Y, y_lengths, *rest)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.reference, name)


def hidden_cross_tests() -> list[Any]:
    hidden = load(Assignment.load(SLUG).suite / "test_hidden.py", "hidden_padding")
    return [f for name, f in vars(hidden).items() if name.startswith("test_cross_attention")]


def sizes_of(test: Any, reference: ModuleType) -> list[tuple[int, int]]:
    student = Recorder(reference)
    given = {"student": student, "reference": reference, "rng": np.random.default_rng(0)}
    test(**{p: given[p] for p in inspect.signature(test).parameters})
    assert student.calls, f"{test.__name__} never calls cross_attention"
    return student.calls


def test_hidden_cross_attention_tests_use_b_other_than_h_and_one_the_silent_case(reference):
    tests = hidden_cross_tests()
    assert len(tests) >= 4
    silent = []
    for test in tests:
        batched = [(b, h) for b, h in sizes_of(test, reference) if b > 1]
        assert batched, f"{test.__name__} has no batch of several sequences"
        if all(b == h for b, h in batched):
            silent.append(test.__name__)
        else:
            assert all(b != h for b, h in batched), f"{test.__name__} mixes B = h with B != h"
    assert len(silent) == 1, f"exactly one test is the silent case B = h, not {silent}"


def test_public_cross_attention_test_uses_b_other_than_h(reference, monkeypatch):
    folder = Assignment.load(SLUG).starter
    monkeypatch.syspath_prepend(str(Assignment.load(SLUG).reference))
    monkeypatch.delitem(sys.modules, "batches", raising=False)
    public = load(folder / "test_public.py", "public_padding")
    student = Recorder(reference)
    monkeypatch.setattr(public, "cross_attention", student.cross_attention)
    public.test_cross_attention_shape()
    assert student.calls and all(b != h for b, h in student.calls)


def test_the_head_axis_mistake_fails_the_silent_case_and_raises_elsewhere(reference):
    """The catalogue's variant fails every cross test: loudly where B != h, by its values
    where B = h, which is what the feedback's diagnosis can name."""
    assignment = Assignment.load(SLUG)
    catalogue = load_catalogue(assignment.suite / "mistakes.py")
    variant = next(v for v in catalogue.mistakes if v.name == "cross-mask-without-head-axis")
    module = catalogue.module(variant, assignment.reference_source)
    rng = np.random.default_rng(1)
    W = [rng.normal(size=(24, 24)) / np.sqrt(24) for _ in range(4)]
    X, Y = rng.normal(size=(3, 5, 24)), rng.normal(size=(3, 6, 24))
    silent = module.cross_attention(X, Y, [6, 1, 3], *W, 3)
    assert silent.shape == (3, 5, 24)
    assert not np.allclose(silent, reference.cross_attention(X, Y, [6, 1, 3], *W, 3))
    with pytest.raises(ValueError):
        module.cross_attention(X[:2], Y[:2], [6, 1], *W, 3)
