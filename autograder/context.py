"""What one grading run shares with its hidden tests: the student proxy and the call log.

``student.causal_mask(4)`` in a hidden test looks like a plain call. It is sent to the worker,
and the value that comes back is remembered with the call that produced it, so that a failed
comparison can later replay the same call on every catalogued mistake.
"""

from __future__ import annotations

import types
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
    # Inside testing.measure_memory(): each call's (Call, value, peak bytes) is appended here.
    measured: list[tuple[Call, Any, int]] | None = None

    def call(self, function: str, args: tuple, kwargs: dict) -> Any:
        try:
            if self.measured is None:
                value, output = self.worker.call(function, *args, **kwargs)
            else:
                value, output, peak = self.worker.measure(function, *args, **kwargs)
        except Exception as problem:
            output = getattr(problem, "output", "")
            if output:
                self.log.output.append(output)
            raise
        if output:
            self.log.output.append(output)
        call = Call(function, args, kwargs)
        self.log.remember(value, call)
        if self.measured is not None:
            self.measured.append((call, value, peak))
        return value


# The context of the grading run in progress; the suite API (autograder.testing) reads it.
active: GradingContext | None = None
