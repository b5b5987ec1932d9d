"""What one grading run shares with its hidden tests: the student proxy and the call log.

``student.causal_mask(4)`` in a hidden test looks like a plain call. It is sent to the worker,
and the value that comes back is remembered with the call that produced it, so that a failed
comparison can later replay the same call on every catalogued mistake.

The grading plugin keeps its ``GradingContext`` on pytest's ``config.stash`` and makes it the
*current* one only while a hidden test runs (``running``), so the suite API
(``autograder.engine.diagnosis``) finds it without any state that outlives the test.
"""

from __future__ import annotations

import contextlib
import contextvars
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from autograder.engine.memo import Memo
from autograder.engine.mistakes import Diagnoser
from autograder.sandbox.runner import wire
from autograder.sandbox.worker import CALLABLE, StudentBadOutput, Worker


@dataclass(eq=False)
class Call:
    function: str
    args: tuple
    kwargs: dict
    path: tuple[int, ...] = ()  # where in the returned value this piece sits
    target: RemoteObject | None = None  # a method call, attribute read or write on this object
    op: str = "call"  # "call", "get" or "set"
    seq: int = 0  # its place in the test's log, so that replays keep the order
    # the student's functions that ran during it, as the worker recorded them
    called: frozenset[str] = frozenset()

    def describe(self, show: Any) -> str:
        parts = [show(a) for a in self.args] + [f"{k}={show(v)}" for k, v in self.kwargs.items()]
        name = self.function if self.target is None else f"{self.target.name}.{self.function}"
        if self.op == "get":
            text = name
        elif self.op == "set":
            text = f"{name} = {parts[0] if parts else '?'}"
        else:
            text = f"{name}({', '.join(parts)})"
        return text + "".join(f"[{i}]" for i in self.path)

    def at(self, path: tuple[int, ...]) -> Call:
        return Call(
            self.function, self.args, self.kwargs, path, self.target, self.op, self.seq, self.called
        )


@dataclass
class TestLog:
    """What happened during one hidden test."""

    calls: dict[int, tuple[Any, Call]] = field(default_factory=dict)
    output: list[str] = field(default_factory=list)
    attempted: Call | None = None  # the latest call into the student's code, even one that raised
    count: int = 0
    raised: set[int] = field(default_factory=set)  # seq of each call that raised
    ran: set[str] = field(default_factory=set)  # the student's functions any call ran

    def remember(self, value: Any, call: Call) -> None:
        self.calls[id(value)] = (value, call)  # keep value alive so its id stays unique
        if isinstance(value, tuple | list):
            for i, item in enumerate(value):
                self.remember(item, call.at((*call.path, i)))

    def origin(self, value: Any) -> Call | None:
        entry = self.calls.get(id(value))
        return entry[1] if entry and entry[0] is value else None

    def next_seq(self) -> int:
        self.count += 1
        return self.count


class RemoteObject:
    """An object of the student's that lives in the worker, such as an instance of their
    class: ``layer.forward(x)`` calls a method there, ``layer.W_q`` reads an attribute and
    ``layer.W_q = W`` sets one. Every call that touched it is kept, so that a diagnosis can
    rebuild the same object from a catalogued variant and replay what happened to it."""

    def __init__(self, context: GradingContext, handle: wire.Handle, origin: Call) -> None:
        object.__setattr__(self, "_context", context)
        object.__setattr__(self, "_handle", handle)
        object.__setattr__(self, "origin", origin)  # the call that made it
        object.__setattr__(self, "touches", [])  # later calls with it as target or argument

    @property
    def name(self) -> str:
        return f"your {self._handle.type_name}"

    @property
    def type_name(self) -> str:
        return self._handle.type_name

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        value = self._context.call(name, (), {}, target=self, op="get")
        if value is not CALLABLE:
            return value

        def method(*args: Any, **kwargs: Any) -> Any:
            return self._context.call(name, args, kwargs, target=self)

        method.__name__ = name
        return method

    def __setattr__(self, name: str, value: Any) -> None:
        self._context.call(name, (value,), {}, target=self, op="set")

    def __len__(self) -> int:
        value = self._context.call("__len__", (), {}, target=self)
        if type(value) is not int or value < 0:
            raise StudentBadOutput(f"len() of {self.name} returned {value!r}, not a count.")
        return value

    def __repr__(self) -> str:
        return f"<{self.name}>"


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
    memo: Memo | None = None  # the session's remembered reference answers (engine/memo.py)
    # Inside testing.measure_memory(): each call's (Call, value, peak bytes) is appended here.
    measured: list[tuple[Call, Any, int]] | None = None

    def call(
        self,
        function: str,
        args: tuple,
        kwargs: dict,
        target: RemoteObject | None = None,
        op: str = "call",
    ) -> Any:
        call = Call(function, args, kwargs, target=target, op=op, seq=self.log.next_seq())
        self.log.attempted = call
        for obj in [o for o in (target, *args, *kwargs.values()) if isinstance(o, RemoteObject)]:
            if op != "get":
                obj.touches.append(call)
        handle = target._handle if target is not None else None
        plain_args = tuple(unwrap(a) for a in args)
        plain_kwargs = {k: unwrap(v) for k, v in kwargs.items()}
        try:
            measure = self.measured is not None
            value, output = self.worker.request(
                function, plain_args, plain_kwargs, handle, op, measure=measure
            )
        except Exception as problem:
            call.called = ran(self.worker)
            self.log.ran |= call.called
            self.log.raised.add(call.seq)
            output = getattr(problem, "output", "")
            if output:
                self.log.output.append(output)
            raise
        if output:
            self.log.output.append(output)
        call.called = ran(self.worker)
        self.log.ran |= call.called
        value = self.wrap(value, call)
        if value is not CALLABLE:
            self.log.remember(value, call)
        if self.measured is not None:
            self.measured.append((call, value, self.worker.peak))
        return value

    def wrap(self, value: Any, call: Call) -> Any:
        """Handles in a reply become objects a test can use, each knowing where it came from."""
        if isinstance(value, wire.Handle):
            return RemoteObject(self, value, call)
        if isinstance(value, tuple | list):
            items = [self.wrap(v, call.at((*call.path, i))) for i, v in enumerate(value)]
            return type(value)(items)
        return value


def ran(worker: Worker) -> frozenset[str]:
    """The student's functions the worker's last call ran (none known: none)."""
    return frozenset(getattr(worker, "called", ()))


def unwrap(value: Any) -> Any:
    if isinstance(value, RemoteObject):
        return value._handle
    if isinstance(value, tuple | list):
        return type(value)(unwrap(v) for v in value)
    return value


class SuiteFault(Exception):
    """Trusted code failed (the reference, the suite's own code): never the student's doing."""


class Reference:
    """The reference module as hidden tests see it: when it raises, the suite is broken."""

    def __init__(self, module: types.ModuleType, memo: Memo | None = None) -> None:
        self._module, self._memo = module, memo

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._module, name)
        if not callable(value):
            return value
        memo = self._memo if isinstance(value, types.FunctionType) else None

        def trusted(*args: Any, **kwargs: Any) -> Any:
            try:
                if memo is not None:  # the same answer as last submission's, computed once
                    return memo.call(name, value, args, kwargs)
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
