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
import tracemalloc
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from autograder import context
from autograder.compare import ATOL, RTOL, kind_of, matches, problem, show, structure_problem
from autograder.context import Call
from autograder.mistakes import Diagnoser, Variant
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
    """The part of the feedback that names known mistakes: what happened, why it is wrong, and
    a hint toward the fix."""
    if not mistakes:
        return ""
    if len(mistakes) == 1:
        m = mistakes[0]
        return (
            f"\n\nDiagnosis: this is exactly what the known mistake `{m.name}` gives.\n"
            f"{m.why}\nHint: {m.hint}"
        )
    lines = [
        f"\n\nDiagnosis: this is exactly what each of {len(mistakes)} known mistakes gives, "
        "so any one of them may be the cause:"
    ]
    for m in mistakes:
        lines += [f"- `{m.name}`: {m.why}", f"  Hint: {m.hint}"]
    return "\n".join(lines)


def diagnose(got: Any) -> list[Variant]:
    """Catalogued mistakes that, on the calls that produced ``got``, give ``got`` too, where
    the reference gives something else.

    The call is replayed on each variant. When an argument of that call was itself returned by
    the student's code (``merge_heads(split_heads(X, h))``), the variant replays that call too,
    so a mistake is recognised whichever of the chained functions it is in.
    """
    ctx = context.active
    call = ctx.log.origin(got) if ctx else None
    if ctx is None or call is None:
        return []
    try:
        expected = replay(ctx, ctx.reference, call)
    except Exception:
        return []  # the reference refuses this input: there is nothing to diagnose against
    return [v for v, candidate in giving(ctx, call, got) if not matches(candidate, expected)]


def giving(ctx: context.GradingContext, call: Call, got: Any) -> list[tuple[Variant, Any]]:
    """Each catalogued mistake whose replay of ``call`` gives ``got``, with what it gave."""
    found = []
    for variant in ctx.diagnoser.mistakes:
        try:
            candidate = replay(ctx, ctx.diagnoser.module(variant), call)
        except Exception:
            continue  # this mistake fails loudly on this input: nothing to match
        if matches(got, candidate):
            found.append((variant, candidate))
    return found


def replay(
    ctx: context.GradingContext, module: types.ModuleType, call: Call, depth: int = 0
) -> Any:
    """What ``module`` gives for ``call``, with every argument that the student's code returned
    replaced by what ``module`` gives for the call that returned it."""
    if depth > MAX_CHAIN:
        raise RecursionError("the chain of calls is too long to replay")

    def resolve(value: Any) -> Any:
        origin = ctx.log.origin(value) if isinstance(value, np.ndarray | tuple | list) else None
        return value if origin is None else replay(ctx, module, origin, depth + 1)

    args = tuple(resolve(a) for a in call.args)
    kwargs = {k: resolve(v) for k, v in call.kwargs.items()}
    return pick(Diagnoser.run(module, call.function, args, kwargs), call.path)


MAX_CHAIN = 8


def pick(value: Any, path: tuple[int, ...]) -> Any:
    for i in path:
        value = value[i]
    return value


def last_call() -> tuple[Any, Call | None]:
    """The most recent call into the student's code that returned, and what it returned."""
    ctx = context.active
    for value, call in reversed(ctx.log.calls.values()) if ctx else ():
        if not call.path:
            return value, call
    return None, None


def described(got: Any) -> str:
    ctx = context.active
    call = ctx.log.origin(got) if ctx else None
    return call.describe(show) if call else "your function"


def expect(got: Any, want: Any, rtol: float = RTOL, atol: float = ATOL) -> None:
    """Fail with staged feedback unless ``got`` matches ``want`` within tolerance."""
    __tracebackhide__ = True  # pytest: the failure is the test's line, not this one
    found = problem(got, want, rtol, atol)
    if found:
        raise Feedback(f"{described(got)}: {found}", diagnose(got))


def expect_structure(got: Any, want: Any) -> None:
    """Fail unless ``got`` has the type, shape and dtype of ``want``; values are not compared."""
    __tracebackhide__ = True  # pytest: the failure is the test's line, not this one
    found = structure_problem(got, want)
    if found:
        raise Feedback(f"{described(got)}: {found}", diagnose(got))


def check(condition: Any, message: str, about: Any = None) -> None:
    """A behavioural probe: fail with ``message`` (and a diagnosis of ``about``) unless true."""
    __tracebackhide__ = True  # pytest: the failure is the test's line, not this one
    if not bool(condition):
        raise Feedback(message, diagnose(about) if about is not None else [])


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
        raise Feedback(f"expected {type_name}, but {raised}") from None
    got, call = last_call()
    if call is None or call is before:
        raise Feedback(f"expected {type_name} to be raised, but nothing was raised.")
    raise Feedback(
        f"{call.describe(show)} returned {kind_of(got)} instead of raising {type_name}.",
        diagnose_no_raise(got, call, type_name),
    )


def diagnose_no_raise(got: Any, call: Call, type_name: str) -> list[Variant]:
    """Catalogued mistakes that return what the student's code returned, on a call where the
    reference raises ``type_name``."""
    ctx = context.active
    if ctx is None:
        return []
    try:
        replay(ctx, ctx.reference, call)
    except Exception as error:
        if type_name not in (c.__name__ for c in type(error).__mro__):
            return []
    else:
        return []  # the reference does not raise here either: nothing to tell apart
    return [variant for variant, _ in giving(ctx, call, got)]


# -- memory ---------------------------------------------------------------------------------


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
    ctx = context.active
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


def diagnose_memory(
    call: Call, got: Any, peak: int, limit: int, suspects: list[str] | None = None
) -> list[Variant]:
    """Known mistakes (``suspects``, or those of ``call.function``) that give ``got`` with a
    peak like ``peak``, over ``limit``."""
    ctx = context.active
    if ctx is None:
        return []
    found = []
    for variant in ctx.diagnoser.mistakes:
        tried = variant.replaces == call.function if suspects is None else variant.name in suspects
        if not tried:
            continue
        module = ctx.diagnoser.module(variant)
        try:
            candidate, used = traced_peak(replay, ctx, module, call)
        except Exception:
            continue  # this mistake fails loudly on this input: nothing to match
        if limit < used and peak / 2 <= used <= 2 * peak and matches(got, candidate):
            found.append(variant)
    return found


def traced_peak(run: Callable[..., Any], *args: Any) -> tuple[Any, int]:
    """``run(*args)`` and the peak memory in bytes it allocated, as tracemalloc sees it."""
    tracing = tracemalloc.is_tracing()
    if tracing:
        tracemalloc.reset_peak()
    else:
        tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        value = run(*args)
        return value, tracemalloc.get_traced_memory()[1] - before
    finally:
        if not tracing:
            tracemalloc.stop()


def mib(size: float) -> str:
    return f"{size / (1 << 20):.1f} MiB"
