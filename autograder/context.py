"""What one grading run shares with its hidden tests: the student proxy and the call log.

``student.causal_mask(4)`` in a hidden test looks like a plain call. It is sent to the worker,
and the value that comes back is remembered with the call that produced it, so that a failed
comparison can later replay the same call on every catalogued mistake.

The grading plugin keeps its ``GradingContext`` on pytest's ``config.stash`` and makes it the
*current* one only while a hidden test runs (``running``), so the suite API
(``autograder.testing``) finds it without any state that outlives the test.
"""

from __future__ import annotations

import contextlib
import contextvars
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from autograder.mistakes import Diagnoser
from autograder.worker import Worker


@dataclass
class Call:
    function: str
    args: tuple
    kwargs: dict
    path: tuple[int, ...] = ()  # where in the returned value this piece sits

    def describe(self, show: Any) -> str:
        parts = [show(a) for a in self.args] + [f"{k}={show(v)}" for k, v in self.kwargs.items()]
        text = f"{self.function}({', '.join(parts)})"
        return text + "".join(f"[{i}]" for i in self.path)


@dataclass
class TestLog:
    """What happened during one hidden test."""

    calls: dict[int, tuple[Any, Call]] = field(default_factory=dict)
    output: list[str] = field(default_factory=list)
    attempted: Call | None = None  # the latest call into the student's code, even one that raised

    def remember(self, value: Any, call: Call) -> None:
        self.calls[id(value)] = (value, call)  # keep value alive so its id stays unique
        if isinstance(value, tuple | list):
            for i, item in enumerate(value):
                self.remember(item, Call(call.function, call.args, call.kwargs, (*call.path, i)))

    def origin(self, value: Any) -> Call | None:
        entry = self.calls.get(id(value))
        return entry[1] if entry and entry[0] is value else None


class Student:
    """Attribute access gives a function that runs in the worker."""

    def __init__(self, context: GradingContext) -> None:
        self._context = context

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)

        def remote(*args: Any, **kwargs: Any) -> Any:
            return self._context.call(name, args, kwargs)

        remote.__name__ = name
        return remote


@dataclass
class GradingContext:
    worker: Worker
    reference: types.ModuleType
    diagnoser: Diagnoser
    log: TestLog = field(default_factory=TestLog)

    def call(self, function: str, args: tuple, kwargs: dict) -> Any:
        self.log.attempted = Call(function, args, kwargs)
        try:
            value, output = self.worker.call(function, *args, **kwargs)
        except Exception as problem:
            output = getattr(problem, "output", "")
            if output:
                self.log.output.append(output)
            raise
        if output:
            self.log.output.append(output)
        self.log.remember(value, Call(function, args, kwargs))
        return value


class SuiteFault(Exception):
    """Trusted code failed (the reference, the suite's own code): never the student's doing."""


class Reference:
    """The reference module as hidden tests see it: when it raises, the suite is broken."""

    def __init__(self, module: types.ModuleType) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._module, name)
        if not callable(value):
            return value

        def trusted(*args: Any, **kwargs: Any) -> Any:
            try:
                return value(*args, **kwargs)
            except Exception as error:
                raise SuiteFault(
                    f"the reference's {name} raised {type(error).__name__}: {error}"
                ) from error

        return trusted


_current: contextvars.ContextVar[GradingContext | None] = contextvars.ContextVar(
    "autograder_grading_context", default=None
)


def current() -> GradingContext | None:
    """The context of the hidden test running now, if any."""
    return _current.get()


@contextlib.contextmanager
def running(context: GradingContext) -> Iterator[GradingContext]:
    """Make ``context`` the current one for the span of one test, then restore."""
    token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(token)
