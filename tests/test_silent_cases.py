"""Where a handout warns about a silent case, a test exercises it (issue 23).

Each warning names a mistake that raises nothing and gives right answers on some inputs:

- padding-and-batches: when B happens to equal h, a mask without its head axis raises no error.
  So cross_attention's tests (hidden and public) must use B != h, where that bug cannot pass,
  and one hidden test must be the silent case B = h itself;
- padding-and-batches: the causal mask hides a padding bug (real queries never look right of
  themselves), so padding is also tested with causal=False;
- kv-cache-and-gqa: np.tile instead of np.repeat gives the same stack with one kv head (or one
  query head per kv head), so GQA is tested with several kv heads shared by several queries;
- kv-cache-and-gqa: caching the raw tokens gives the right outputs, so a test reads (or fills)
  the cache that decode_step uses.

For each, the catalogued mistake is graded on the hidden suite as a student's submission: it
must lose points, only in tests whose inputs are not the silent ones, and pass a test that is
the silent case (the handout's claim). The inputs are read by running each hidden test with the
reference standing in for the student, recording its calls.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from autograder.course.assignment import Assignment
from autograder.engine.mistakes import load_catalogue
from autograder.sandbox.layers import Sandbox
from autograder.sandbox.problems import StudentRaised
from autograder.workflows.check import Checker

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


# -- the silent mistakes of every handout, graded --------------------------------------------


Call = tuple[str, dict[str, Any]]  # a function the test called, and its arguments by name


class Watched:
    """A reference KVCache handed to a test as the student's: notes whether the test itself
    appends to it or reads it (not decode_step), and whether decode_step used it."""

    def __init__(self, cache: Any, recorder: Watcher) -> None:
        self.cache, self.recorder = cache, recorder
        self.touched = self.decoded = False

    def __getattr__(self, name: str) -> Any:
        if name in ("append", "keys", "values") and not self.recorder.inside:
            self.touched = True
        return getattr(self.cache, name)

    def __len__(self) -> int:
        return len(self.cache)


class Watcher:
    """The reference as a student, noting every call of the watched functions (by parameter
    name), and the caches it makes."""

    def __init__(self, reference: ModuleType, watched: tuple[str, ...]) -> None:
        self.reference, self.watched = reference, watched
        self.calls: list[Call] = []
        self.caches: list[Watched] = []
        self.inside = False

    def KVCache(self) -> Watched:  # the student's class, as the tests name it
        self.caches.append(Watched(self.reference.KVCache(), self))
        return self.caches[-1]

    def __getattr__(self, name: str) -> Any:
        function = getattr(self.reference, name)
        if not callable(function):
            return function

        def call(*args: Any, **kwargs: Any) -> Any:
            if name in self.watched:
                bound = inspect.signature(function).bind(*args, **kwargs)
                bound.apply_defaults()
                self.calls.append((name, dict(bound.arguments)))
                self.decoded(bound.arguments.values())
            self.inside = True
            try:
                return function(*args, **kwargs)
            except Exception as error:  # as the worker reports it, for the suite's raises()
                mro = [c.__name__ for c in type(error).__mro__]
                raise StudentRaised(name, {"type": mro[0], "mro": mro}) from error
            finally:
                self.inside = False

        return call

    @staticmethod
    def decoded(arguments: Any) -> None:
        for value in arguments:
            if isinstance(value, Watched):
                value.decoded = True

    def events(self) -> list[Call]:
        filled = [c for c in self.caches if c.touched and c.decoded]
        return self.calls + [("a decoded cache the test fills or reads", {})] * len(filled)


def several_of_each(calls: list[Call]) -> bool:
    """np.tile differs from np.repeat only with 2+ kv heads each shared by 2+ query heads."""
    for name, a in calls:
        if name == "repeat_kv" and a["x"].shape[0] > 1 and a["n_rep"] > 1:
            return True
        if name != "repeat_kv" and 1 < a["n_kv_head"] < a["n_head"]:
            return True
    return False


@dataclass(frozen=True)
class Silent:
    slug: str
    mistake: str  # the catalogued variant
    watched: tuple[str, ...]  # the functions whose calls say where it shows
    shows: Callable[[list[Call]], bool]  # whether a test's calls are where it shows
    where: str  # those inputs, in words

    def __str__(self) -> str:
        return f"{self.slug}:{self.mistake}"


SILENT = [
    Silent(
        "kv-cache-and-gqa",
        "repeat-kv-tile",
        ("repeat_kv", "grouped_query_attention", "decode_step"),
        several_of_each,
        "several kv heads, each shared by several query heads",
    ),
    Silent(
        "kv-cache-and-gqa",
        "decode-caches-inputs",
        ("decode_step",),
        lambda calls: any(name.startswith("a decoded cache") for name, _ in calls),
        "the test itself reads or fills the cache decode_step uses",
    ),
    Silent(
        "padding-and-batches",
        "mha-ignores-padding",
        ("multi_head_attention",),
        lambda calls: any(not a["causal"] for _, a in calls),
        "causal=False",
    ),
]


@pytest.mark.parametrize("case", SILENT, ids=str)
def test_a_silent_mistake_loses_points_only_where_the_handout_says_it_shows(case: Silent):
    assignment = Assignment.load(case.slug)
    catalogue = load_catalogue(assignment.suite / "mistakes.py")
    variant = next(v for v in catalogue.mistakes if v.name == case.mistake)
    checker = Checker(assignment, Sandbox.detect("fallback"), lambda _: None)
    graded = checker.grade_variants([variant])[variant.name]
    lost = {t.id for t in graded.part("part2") if not t.passed}
    assert lost, f"{case}: no hidden test catches it"
    module = assignment.reference / assignment.module_file
    reference = load(module, f"reference_{module.stem}")
    hidden = load(assignment.suite / "test_hidden.py", f"hidden_{module.stem}")
    silent_passed = []
    for name, test in vars(hidden).items():
        if not name.startswith("test_"):
            continue
        student = Watcher(reference, case.watched)
        given = {"student": student, "reference": reference, "rng": np.random.default_rng(0)}
        test(**{p: given[p] for p in inspect.signature(test).parameters})
        calls = student.events()
        if name in lost:
            assert case.shows(calls), f"{case}: {name} fails it on inputs where it is silent"
        elif calls and not case.shows(calls):
            silent_passed.append(name)
    assert lost <= set(vars(hidden)), lost
    assert silent_passed, f"{case}: no hidden test is the silent case, where it passes"
    print(f"{case}: caught by {sorted(lost)} ({case.where}); silent in {silent_passed}")
