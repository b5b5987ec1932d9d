"""The small API hidden suites are written with.

    @points(2, checks="causal_mask")
    def test_causal_mask_values(student, reference):
        '''causal_mask(n) is True exactly where j <= i'''
        expect(student.causal_mask(5), reference.causal_mask(5))

``expect`` gives staged feedback (type, shape, dtype, values) and, when the student's value
equals what a catalogued mistake produces on the same input, names that mistake.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from autograder import context
from autograder.compare import ATOL, RTOL, matches, problem, show, structure_problem
from autograder.mistakes import Variant
from autograder.worker import StudentRaised


def points(value: float, checks: str) -> pytest.MarkDecorator:
    """Mark a hidden test: how many points it is worth and which function it checks."""
    return pytest.mark.points(value, checks=checks)


class Feedback(AssertionError):
    """A failed check, with a message for the student and the mistakes it matched."""

    def __init__(self, message: str, mistakes: list[Variant] | None = None) -> None:
        self.mistakes = mistakes or []
        super().__init__(message + explain(self.mistakes))


def explain(mistakes: list[Variant]) -> str:
    if not mistakes:
        return ""
    if len(mistakes) == 1:
        m = mistakes[0]
        return f"\nThis is exactly what `{m.name}` gives: {m.why}\nHint: {m.hint}"
    lines = ["\nThis matches several known mistakes at once (any of them could be it):"]
    lines += [f"- `{m.name}`: {m.why} Hint: {m.hint}" for m in mistakes]
    return "\n".join(lines)


def diagnose(got: Any) -> list[Variant]:
    """Catalogued mistakes whose output, on the call that produced ``got``, equals ``got``."""
    ctx = context.active
    call = ctx.log.origin(got) if ctx else None
    if ctx is None or call is None:
        return []
    reference = getattr(ctx.reference, call.function)(*call.args, **call.kwargs)
    expected = pick(reference, call.path)
    found = []
    for variant, value in ctx.diagnoser.outputs(call.function, call.args, call.kwargs):
        try:
            candidate = pick(value, call.path)
        except (IndexError, TypeError):
            continue
        if matches(got, candidate) and not matches(candidate, expected):
            found.append(variant)
    return found


def pick(value: Any, path: tuple[int, ...]) -> Any:
    for i in path:
        value = value[i]
    return value


def described(got: Any) -> str:
    ctx = context.active
    call = ctx.log.origin(got) if ctx else None
    return call.describe(show) if call else "your function"


def expect(got: Any, want: Any, rtol: float = RTOL, atol: float = ATOL) -> None:
    """Fail with staged feedback unless ``got`` matches ``want`` within tolerance."""
    found = problem(got, want, rtol, atol)
    if found:
        raise Feedback(f"{described(got)} {found}", diagnose(got))


def expect_structure(got: Any, want: Any) -> None:
    """Fail unless ``got`` has the type, shape and dtype of ``want``; values are not compared."""
    found = structure_problem(got, want)
    if found:
        raise Feedback(f"{described(got)} {found}", diagnose(got))


def check(condition: Any, message: str, about: Any = None) -> None:
    """A behavioural probe: fail with ``message`` (and a diagnosis of ``about``) unless true."""
    if not bool(condition):
        raise Feedback(message, diagnose(about) if about is not None else [])


def parts(got: Any, *names: str) -> tuple:
    """Unpack a returned tuple such as (weights, output), checking its structure first."""
    if not isinstance(got, tuple | list) or len(got) != len(names):
        raise Feedback(
            f"{described(got)} returned {show(got) if got is None else type(got).__name__}; "
            f"expected a tuple ({', '.join(names)})."
        )
    return tuple(got)


@contextlib.contextmanager
def raises(type_name: str) -> Iterator[None]:
    """Expect the student's call inside the block to raise ``type_name`` (or a subclass)."""
    try:
        yield
    except StudentRaised as raised:
        if raised.is_a(type_name):
            return
        raise Feedback(f"expected {type_name}, but {raised}") from None
    raise Feedback(f"expected {type_name} to be raised, but nothing was raised.")
