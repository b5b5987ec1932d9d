"""The one module hidden suites and their catalogues import: the suite authors' API.

    @points(2, checks="causal_mask")
    def test_causal_mask_values(student, reference):
        '''causal_mask(n) is True exactly where j <= i'''
        expect(student.causal_mask(5), reference.causal_mask(5))

``expect`` gives staged feedback (type, shape, dtype, values) and, when the student's value
equals what a catalogued mistake produces on the same input, names that mistake (the
diagnosis is ``engine/diagnosis.py``). Catalogues build on ``Catalogue`` and share the small
functions below (``softmax``, ``hide``): a catalogue registers the ones its variants call,
``catalogue.helper(softmax)``, and each variant's module then gets that function's source, as a
student's own helper would be. They assume the reference module imports NumPy as ``np``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from autograder.engine import context
from autograder.engine.compare import (
    ATOL,
    RTOL,
    kind_of,
    naming_axes,
    problem,
    show,
    structure_problem,
)
from autograder.engine.context import Call
from autograder.engine.diagnosis import (
    Feedback,
    axes_of,
    described,
    diagnose_memory,
    diagnose_no_raise,
    failure,
    graded_part,
    last_call,
    mib,
    names_of,
    refused,
)
from autograder.engine.mistakes import Catalogue
from autograder.sandbox.worker import StudentRaised

__all__ = [
    "Catalogue",
    "Memory",
    "check",
    "expect",
    "expect_peak_below",
    "expect_structure",
    "hide",
    "measure_memory",
    "parts",
    "points",
    "raises",
    "softmax",
    "tolerance",
]


def points(value: float, checks: str) -> pytest.MarkDecorator:
    """Mark a hidden test: how many points it is worth and which function it checks."""
    return pytest.mark.points(value, checks=checks)


# A float32 answer is compared against the float64 reference within this many float32 steps
# (machine epsilons) of the largest expected value: the error of a float32 computation grows
# with the size of the values, so a fixed atol fails correct float32 code on large ones
# (scores near 1000) and a loose one hides mistakes on small ones.
FLOAT32_STEPS = 16


def tolerance(got: Any, want: Any, rtol: float = RTOL, atol: float = ATOL) -> tuple[float, float]:
    """(rtol, atol) for comparing ``got`` with ``want``: as given, widened when ``got`` holds
    float32 numbers to ``FLOAT32_STEPS`` float32 epsilons, relative and of max |want|."""
    if not any(np.asarray(g).dtype == np.float32 for g in flat(got)):
        return rtol, atol
    step = FLOAT32_STEPS * float(np.finfo(np.float32).eps)
    sizes = [np.abs(np.asarray(w, dtype=float)) for w in flat(want)]
    largest = max((float(np.max(s[np.isfinite(s)], initial=0.0)) for s in sizes), default=0.0)
    return max(rtol, step), max(atol, step * largest)


def flat(value: Any) -> list[Any]:
    """The arrays and numbers in a value that may be a tuple or list of them."""
    if isinstance(value, tuple | list) and not all(np.isscalar(v) for v in value):
        return [item for v in value for item in flat(v)]
    return [value] if isinstance(value, np.ndarray | np.generic | float | int | list) else []


def expect(got: Any, want: Any, rtol: float = RTOL, atol: float = ATOL, graded: Any = None) -> None:
    """Fail with staged feedback unless ``got`` matches ``want`` within tolerance (widened for
    a float32 answer, see ``tolerance``; the feedback states the one used).

    ``graded``: a boolean array broadcasting to ``got`` where the handout leaves some positions
    free (padded queries): only the positions it marks are compared, and the diagnosis
    compares the known mistakes' replays there alone."""
    __tracebackhide__ = True  # pytest: the failure is the test's line, not this one
    want = graded_part(got, graded)(want)  # the free entries: the student's own
    rtol, atol = tolerance(got, want, rtol, atol)
    axes = axes_of(got)
    with naming_axes(axes.get("")):
        found = problem(got, want, rtol, atol, names_of(got), axes)
        if found:
            raise failure(got, f"{described(got)}: {found}", want, rtol, atol, graded=graded)


def expect_structure(got: Any, want: Any) -> None:
    """Fail unless ``got`` has the type, shape and dtype of ``want``; values are not compared."""
    __tracebackhide__ = True  # pytest: the failure is the test's line, not this one
    found = structure_problem(got, want)
    if found:
        raise failure(got, f"{described(got)}: {found}", want, values=False)


def check(condition: Any, message: str, about: Any = None, cause: str = "") -> None:
    """A behavioural probe: fail with ``message`` (and a diagnosis of ``about``) unless true.

    ``cause`` is the likely cause in one line, for a probe whose failure says it already
    (only one thing makes it fail); a catalogued mistake or a generic cause that the
    diagnosis of ``about`` finds comes first."""
    __tracebackhide__ = True  # pytest: the failure is the test's line, not this one
    if not bool(condition):
        if about is not None:
            raise failure(about, message, cause=cause)
        raise Feedback(message, cause=cause)


def parts(got: Any, *names: str) -> tuple:
    """Unpack a returned tuple such as (weights, output), checking its structure first."""
    __tracebackhide__ = True  # pytest: the failure is the test's line, not this one
    if not isinstance(got, tuple | list) or len(got) != len(names):
        raise Feedback(
            f"{described(got)} returned {show(got) if got is None else type(got).__name__}; "
            f"expected a tuple ({', '.join(names)})."
        )
    return tuple(got)


@contextlib.contextmanager
def raises(type_name: str) -> Iterator[None]:
    """Expect the student's call inside the block to raise ``type_name`` (or a subclass)."""
    __tracebackhide__ = True
    _, before = last_call()
    try:
        yield
    except StudentRaised as raised:
        if raised.is_a(type_name):
            return
        raise Feedback(
            f"expected {type_name}, but {raised}", cause=wrong_error(raised, type_name)
        ) from None
    got, call = last_call()
    if call is None or call is before:
        raise Feedback(f"expected {type_name} to be raised, but nothing was raised.")
    mistakes = diagnose_no_raise(got, call, type_name)
    raise Feedback(
        f"{call.describe(show)} returned {kind_of(got)} instead of raising {type_name}.",
        mistakes,
        cause="" if mistakes else missing_check(call, type_name),
    )


def wrong_error(raised: StudentRaised, type_name: str) -> str:
    """Why the student's code raised the wrong type, when its own statement did: a ``raise``
    of another type, or an ``assert``."""
    line = raised.line.lstrip()
    if line.startswith("assert"):
        return (
            f"an assert raises AssertionError, not {type_name} (and python -O skips it "
            f"altogether): test the condition with if, and raise {type_name}"
        )
    if line.startswith("raise"):
        return (
            f"your check raises {raised.type_name} where the handout promises {type_name}: "
            f"raise {type_name} instead"
        )
    return ""


def missing_check(call: Call, type_name: str) -> str:
    """The cause of a call that returned where the reference raises ``type_name``: a check
    missing (or letting this input through), said with the reference's own words for it."""
    error = refused(call)
    if error is None or type_name not in (c.__name__ for c in type(error).__mro__):
        return ""
    said = str(error).strip()
    rule = f" (the handout's rule: {said[:150]})" if said else ""
    return (
        f"a check is missing, or lets this input through: it should be refused with "
        f"{type_name}{rule}"
    )


@dataclass
class Memory:
    """The calls into the student's code made inside ``measure_memory()``: for each, the
    call, what it returned, and the peak memory in bytes that it allocated."""

    calls: list[tuple[Call, Any, int]] = field(default_factory=list)

    @property
    def peak(self) -> int:
        return max((peak for _, _, peak in self.calls), default=0)


@contextlib.contextmanager
def measure_memory() -> Iterator[Memory]:
    """Measure the peak memory of every call into the student's code inside the block.

        with measure_memory() as memory:
            got = student.chunked_attention(Q, K, V, block_size=128)
        expect_peak_below(memory, 16 << 20, "1/8 of the dense score matrix")

    The worker traces each call with tracemalloc: the NumPy arrays it allocates count, its
    result included; its inputs (decoded before the call) and BLAS workspace do not."""
    ctx = context.current()
    if ctx is None:
        raise RuntimeError("measure_memory() only works while a suite is being graded")
    memory = Memory()
    ctx.measured = memory.calls
    try:
        yield memory
    finally:
        ctx.measured = None


def expect_peak_below(
    memory: Memory, limit: int, why: str = "", suspects: list[str] | None = None
) -> None:
    """Fail unless every call measured in ``memory`` peaked at ``limit`` bytes or less.

    The message puts the measured peak next to the limit (``why`` says where the limit comes
    from). The diagnosis names the known mistakes that, replayed on the same call, give the
    same value and also go over the limit, with a peak within a factor of two of the
    student's: memory is compared loosely, as values are within a tolerance. Each replay runs
    at full size, so only ``suspects`` (names of mistakes) are tried, or by default every
    mistake of the measured function."""
    __tracebackhide__ = True  # pytest: the failure is the test's line, not this one
    if not memory.calls:
        raise RuntimeError("expect_peak_below: no call was measured (see measure_memory)")
    call, got, peak = max(memory.calls, key=lambda entry: entry[2])
    if peak <= limit:
        return
    because = f" ({why})" if why else ""
    raise Feedback(
        f"{call.describe(show)} allocated a peak of {mib(peak)} while it ran (measured with "
        f"tracemalloc); the bound is {mib(limit)}{because}.",
        diagnose_memory(call, got, peak, limit, suspects),
    )


# -- helpers that catalogues share -------------------------------------------------------


def softmax(scores, axis=-1):
    """A stable softmax; a row of -inf only gets weights 0."""
    top = scores.max(axis=axis, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=axis, keepdims=True)
    return e / np.where(total > 0, total, 1.0)


def hide(scores, mask, fill=-np.inf):
    """The scores with every masked position set to fill (no mask: unchanged)."""
    return scores if mask is None else np.where(mask, scores, fill)
