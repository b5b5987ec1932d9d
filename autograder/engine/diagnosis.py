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
import inspect
import itertools
import logging
import sys
import tracemalloc
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from autograder.engine import context, numpy_errors
from autograder.engine.budget import Budget, OverBudget
from autograder.engine.compare import (
    ATOL,
    RTOL,
    matches,
    show,
    structure_problem,
    value_name,
)
from autograder.engine.context import Call, RemoteObject
from autograder.engine.mistakes import Diagnoser, Variant, module_from_source
from autograder.engine.shapes import shape_of_error, wrong_order
from autograder.sandbox.worker import StudentProblem, StudentRaised
from autograder.text import listed

LOG = logging.getLogger("autograder.diagnosis")


class Feedback(AssertionError):
    """A failed check: what went wrong (``detail``), its likely cause in one line, why that is
    wrong with a hint (``explanation``), the catalogued mistakes it matched, and the student's
    other functions it comes from (``blame``), for a failure that is not this function's own."""

    def __init__(
        self,
        detail: str,
        mistakes: list[Variant] | None = None,
        cause: str = "",
        blame: list[str] | None = None,
        outcome: str = "wrong",
    ) -> None:
        self.mistakes = mistakes or []
        self.shape = ""  # the generic error shape that fits, if any (shapes.py)
        self.detail, self.blame, self.outcome = detail, blame or [], outcome
        self.cause = cause or " or ".join(m.title for m in self.mistakes)
        self.explanation = "" if self.blame else explain(self.mistakes)
        end = "" if self.cause.endswith((".", "?")) else "."
        said = f"\n\nLikely cause: {self.cause}{end}" if self.cause else ""
        super().__init__(detail + said + (f"\n{self.explanation}" if self.explanation else ""))


def explain(mistakes: list[Variant]) -> str:
    """Why the matched mistakes are wrong, and a hint toward the fix."""
    if len(mistakes) == 1:
        return f"{mistakes[0].why}\nHint: {mistakes[0].hint}"
    lines = [f"Any of these {len(mistakes)} mistakes gives exactly this:"] if mistakes else []
    for m in mistakes:
        lines += [f"- {m.title}: {m.why}", f"  Hint: {m.hint}"]
    return "\n".join(lines)


def diagnose(got: Any, seen: Callable[[Any], Any] = lambda value: value) -> list[Variant]:
    """Catalogued mistakes that, on the calls that produced ``got``, give ``got`` too, where
    the reference gives something else. ``seen`` keeps of a replay's value what the test
    grades (``graded_part``): a test that grades some positions only compares them alone.

    The call is replayed on each variant. When an argument of that call was itself returned by
    the student's code (``merge_heads(split_heads(X, h))``), the variant replays that call too,
    so a mistake is recognised whichever of the chained functions it is in.
    """
    ctx = context.current()
    call = ctx.log.origin(got) if ctx else None
    if ctx is None or call is None:
        return []
    try:
        expected = seen(replay(ctx, ctx.reference, call))
    except Exception:
        return []  # the reference refuses this input: there is nothing to diagnose against
    return [v for v, candidate in giving(ctx, call, got, seen) if not matches(candidate, expected)]


def giving(
    ctx: context.GradingContext,
    call: Call,
    got: Any,
    seen: Callable[[Any], Any] = lambda value: value,
) -> list[tuple[Variant, Any]]:
    """Each catalogued mistake whose replay of ``call`` gives ``got`` (where the test grades
    it, see ``diagnose``), with what it gave."""
    found = []
    for variant in ctx.diagnoser.mistakes:
        try:
            candidate = seen(replay(ctx, ctx.diagnoser.module(variant), call))
        except Exception:
            continue  # this mistake fails loudly on this input: nothing to match
        if matches(got, candidate) and leaves_same_state(ctx, ctx.diagnoser.module(variant), call):
            found.append((variant, candidate))
    return found


def graded_part(got: Any, graded: Any) -> Callable[[Any], Any]:
    """What a replay gives, where a test grades only the positions ``graded`` (a boolean array
    broadcasting to ``got``): the student's own value elsewhere, so only graded positions can
    differ. The identity without ``graded``, or for a value not shaped like ``got``."""
    if graded is None or not isinstance(got, np.ndarray):
        return lambda value: value
    where = np.asarray(graded, dtype=bool)

    def seen(value: Any) -> Any:
        if isinstance(value, np.ndarray) and value.shape == got.shape:
            return np.where(where, value, got)
        return value

    return seen


def leaves_same_state(ctx: context.GradingContext, module: types.ModuleType, call: Call) -> bool:
    """Whether ``module``, replaying every call that touched the student's objects passed to
    ``call`` (a cache given to a step, say), leaves them as the student's code did: each
    public attribute of the object ``module`` builds, against the same attribute read from
    the student's object. A mistake that gives the same value but leaves other state (a step
    that never stores what it should, where the mistake stores it wrongly) is not theirs."""
    objects = [a for a in (*call.args, *call.kwargs.values()) if isinstance(a, RemoteObject)]
    for obj in objects:
        try:
            with quiet():
                mine = rebuild(ctx, module, obj, sys.maxsize, 1, {})
        except Exception:
            return False
        for name, value in vars(mine).items():
            if name.startswith("_"):
                continue
            try:
                theirs, _ = ctx.worker.request(name, (), {}, obj._handle, "get")
            except Exception:
                return False
            if not matches(theirs, value):
                return False
    return True


def replay(
    ctx: context.GradingContext,
    module: types.ModuleType,
    call: Call,
    depth: int = 0,
    built: dict[int, Any] | None = None,
) -> Any:
    """What ``module`` gives for ``call``, with every argument that the student's code returned
    replaced by what ``module`` gives for the call that returned it, and every object of the
    student's replaced by the same object built with ``module`` (``built`` keeps those)."""
    if depth > MAX_CHAIN:
        raise RecursionError("the chain of calls is too long to replay")
    built = {} if built is None else built

    def resolve(value: Any) -> Any:
        if isinstance(value, context.RemoteObject):
            return rebuild(ctx, module, value, call.seq, depth + 1, built)
        origin = ctx.log.origin(value) if isinstance(value, np.ndarray | tuple | list) else None
        return value if origin is None else replay(ctx, module, origin, depth + 1, built)

    args = tuple(resolve(a) for a in call.args)
    kwargs = {k: resolve(v) for k, v in call.kwargs.items()}
    if call.target is None:
        return pick(Diagnoser.run(module, call.function, args, kwargs), call.path)
    target = resolve(call.target)
    args = tuple(np.array(a) if isinstance(a, np.ndarray) else a for a in args)
    with quiet():
        if call.op == "set":
            return setattr(target, call.function, args[0])
        found = getattr(target, call.function)
        return pick(found if call.op == "get" else found(*args, **kwargs), call.path)


def rebuild(
    ctx: context.GradingContext,
    module: types.ModuleType,
    obj: context.RemoteObject,
    before: int,
    depth: int,
    built: dict[int, Any],
) -> Any:
    """The object that ``module`` makes where the student's code made ``obj``, with every call
    that touched ``obj`` before call number ``before`` replayed on it, in order."""
    if id(obj) not in built:
        built[id(obj)] = replay(ctx, module, obj.origin, depth, built)
        for touch in obj.touches:
            if touch.seq >= before:
                continue
            if touch.seq in ctx.log.raised:  # it raised for the student: it may here too
                with contextlib.suppress(Exception):
                    replay(ctx, module, touch, depth, built)
            else:
                replay(ctx, module, touch, depth, built)
    return built[id(obj)]


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Trusted variants run silently: no warnings, no floating-point complaints."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        yield


MAX_CHAIN = 8


def pick(value: Any, path: tuple[int, ...]) -> Any:
    for i in path:
        value = value[i]
    return value


def last_call() -> tuple[Any, Call | None]:
    """The most recent call into the student's code that returned, and what it returned."""
    ctx = context.current()
    for value, call in reversed(ctx.log.calls.values()) if ctx else ():
        if not call.path:
            return value, call
    return None, None


def described(got: Any) -> str:
    """The call that returned ``got``, in words: 'the weights returned by masked_attention(a
    4×8 array, ...)'."""
    ctx = context.current()
    call = ctx.log.origin(got) if ctx else None
    if call is None:
        return "your function"
    text = Call(call.function, call.args, call.kwargs, target=call.target, op=call.op).describe(
        show
    )
    if not call.path:
        return text
    names = returned_names(call.function)
    index = call.path[-1] if len(call.path) == 1 else len(names)
    return f"{value_name(index, names)} returned by {text}"


def returned_names(function: str) -> tuple[str, ...]:
    """The suite's names for the values ``function`` returns (suite.yaml: returns)."""
    ctx = context.current()
    return tuple(ctx.diagnoser.returns.get(function, ())) if ctx else ()


def axes_of(got: Any) -> dict[str, list[str]]:
    """The suite's names for the axes of ``got`` (suite.yaml: axes), by value name: "" for
    ``got`` itself, when it is one array, or one value of a returned tuple."""
    ctx = context.current()
    call = ctx.log.origin(got) if ctx else None
    if ctx is None or call is None:
        return {}
    function = call.function if call.target is None else f"{call.target.type_name}.{call.function}"
    given = ctx.diagnoser.axes.get(function, {})
    if not call.path:
        return given
    names = returned_names(call.function)
    index = call.path[-1]
    return {"": given[names[index]]} if index < len(names) and names[index] in given else {}


def names_of(got: Any) -> tuple[str, ...]:
    ctx = context.current()
    call = ctx.log.origin(got) if ctx else None
    return returned_names(call.function) if call and not call.path else ()


def failure(
    got: Any,
    detail: str,
    want: Any = None,
    rtol: float = RTOL,
    atol: float = ATOL,
    values: bool = True,
    cause: str = "",
    graded: Any = None,
) -> Feedback:
    """The feedback on a wrong ``got``: when the student's code that returned it is wrong only
    through another of their functions, that function is named instead; otherwise the
    catalogued mistakes it matches, and how it differs from ``want`` in plain words, or else
    ``cause``, the check's own words for what is wrong. ``graded``: the only positions the
    test grades, and so the only ones a replay is compared on (see ``graded_part``)."""
    ctx = context.current()
    call = ctx.log.origin(got) if ctx else None
    seen = graded_part(got, graded)
    if ctx is not None and call is not None:
        culprits = at_fault(ctx, call, lambda replayed: same_value(got, seen(replayed)))
        if culprits:
            detail, cause = cascade(call.function, culprits)
            return Feedback(detail, diagnose(got, seen), cause=cause, blame=culprits)
    mistakes = diagnose(got, seen)
    # The generic shape is kept even where a catalogued mistake is named (class insight).
    shape = error_shape(got, want, rtol, atol, values) if want is not None else None
    if mistakes:
        feedback = Feedback(detail, mistakes)
    else:
        found = variation(ctx, call, got) if ctx is not None and call is not None else None
        feedback = Feedback(detail, cause=found or shape or cause)
    feedback.shape = shape or ""
    return feedback


# -- generic variations of the reference ------------------------------------------------------


def variation(ctx: context.GradingContext, call: Call, got: Any) -> str | None:
    """The student's value as a generic variation of the reference gives it on the same call:
    two same-shaped arguments exchanged, or conditions joined with 'or' where the reference
    joins them with 'and'. Like a catalogued mistake, each is confirmed by a replay."""
    if not values_in(got):
        return None  # None, or something of the wrong type: nothing a variation explains
    try:
        expected = replay(ctx, ctx.reference, call)
    except Exception:
        return None
    for probe in (
        swapped_arguments,
        or_for_and,
        transposed_argument,
        default_argument,
        exchanged_attributes,
        transposed_attribute,
        ignored_attributes,
    ):
        found = probe(ctx, call, got, expected)
        if found:
            return found
    return None


def values_in(got: Any) -> bool:
    if isinstance(got, tuple | list):
        return bool(got) and all(values_in(g) for g in got)
    return isinstance(got, np.ndarray) and got.dtype.kind in "biuf" and got.size > 0


def swapped_arguments(
    ctx: context.GradingContext, call: Call, got: Any, expected: Any
) -> str | None:
    """Whether exchanging two same-shaped array arguments of the call gives ``got``."""
    if call.target is not None or call.op != "call" or call.kwargs:
        return None
    names = parameter_names(ctx.reference, call.function)
    arrays = [i for i, a in enumerate(call.args) if isinstance(a, np.ndarray)]
    for i, j in itertools.combinations(arrays, 2):
        a, b = call.args[i], call.args[j]
        if a.shape != b.shape or np.array_equal(a, b) or max(i, j) >= len(names):
            continue
        args = list(call.args)
        args[i], args[j] = b, a
        if gives_with(ctx, call, args, {}, got, expected):
            return exchanged_words(names[i], names[j])
    return None


def gives_with(
    ctx: context.GradingContext, call: Call, args: list, kwargs: dict, got: Any, expected: Any
) -> bool:
    """Whether the reference gives ``got`` for ``call`` with these arguments instead."""
    changed = Call(call.function, tuple(args), kwargs, call.path, seq=call.seq, called=call.called)
    return replays_to(ctx, ctx.reference, changed, got, expected)


def exchanged_words(a: str, b: str) -> str:
    return (
        f"your result is the expected one with {a} and {b} exchanged: somewhere {a} is used "
        f"where {b} should be, and the other way round"
    )


def transposed_argument(
    ctx: context.GradingContext, call: Call, got: Any, expected: Any
) -> str | None:
    """Whether one square matrix argument, transposed, gives ``got``: a weight matrix used as
    ``W.T`` (another library's layout) where the handout's ``x @ W`` belongs."""
    if call.target is not None or call.op != "call":
        return None
    names = parameter_names(ctx.reference, call.function)
    for i, a in enumerate(call.args[: len(names)]):
        if not square(a):
            continue
        args = list(call.args)
        args[i] = np.array(a.T)
        if gives_with(ctx, call, args, call.kwargs, got, expected):
            return transposed_words(names[i])
    return None


def square(value: Any) -> bool:
    """A square matrix that its transpose would change."""
    return (
        isinstance(value, np.ndarray)
        and value.ndim == 2
        and value.shape[0] == value.shape[1] > 1
        and value.dtype.kind in "biuf"
        and not np.allclose(value, value.T)
    )


def transposed_words(name: str) -> str:
    return (
        f"your result is the expected one with {name} transposed: is {name}.T used where "
        f"{name} belongs (x @ {name}, as the handout lays the weights out)?"
    )


def default_argument(
    ctx: context.GradingContext, call: Call, got: Any, expected: Any
) -> str | None:
    """Whether leaving out an argument that was given (a flag such as ``causal=False``), so
    that its default applies, gives ``got``: the argument is ignored, or not passed on."""
    if call.target is not None or call.op != "call":
        return None
    try:
        parameters = inspect.signature(getattr(ctx.reference, call.function)).parameters
    except (AttributeError, TypeError, ValueError):
        return None
    given = dict(zip(parameters, call.args, strict=False)) | call.kwargs
    for name, value in given.items():
        parameter = parameters.get(name)
        default = parameter.default if parameter else inspect.Parameter.empty
        plain = (bool, int, float, str, type(None))
        if default is inspect.Parameter.empty or not isinstance(value, plain) or value == default:
            continue
        kept = list(call.args)
        kwargs = dict(call.kwargs)
        if name in kwargs:
            kwargs[name] = default
        else:
            kept[list(parameters).index(name)] = default
        if gives_with(ctx, call, kept, kwargs, got, expected):
            return (
                f"your result is what the default {name}={default!r} gives, not "
                f"{name}={value!r}: the {name} argument makes no difference. Is it used "
                "(and passed on to the functions that need it)?"
            )
    return None


# -- generic variations of an object's attributes (the values a test assigned to them) -----


def assigned(call: Call) -> list[str]:
    """The array attributes the test assigned to the object ``call`` is a method of, before
    the call, in order."""
    if call.target is None or call.op != "call":
        return []
    names = [
        t.function
        for t in call.target.touches
        if t.op == "set" and t.seq < call.seq and t.args and isinstance(t.args[0], np.ndarray)
    ]
    return list(dict.fromkeys(names))


def with_attributes(
    ctx: context.GradingContext,
    call: Call,
    got: Any,
    expected: Any,
    changes: Callable[[Any], dict[str, Any]],
) -> bool:
    """Whether the reference's object, built as the student's was, then with the attributes
    ``changes`` gives for it set, gives ``got`` for ``call`` (and the reference does not)."""
    assert call.target is not None
    built: dict[int, Any] = {}
    try:
        with quiet():
            target = rebuild(ctx, ctx.reference, call.target, call.seq, 1, built)
            for name, value in changes(target).items():
                setattr(target, name, value)
            candidate = replay(ctx, ctx.reference, call, built=built)
    except Exception:
        return False
    return matches(got, candidate) and not matches(candidate, expected)


def exchanged_attributes(
    ctx: context.GradingContext, call: Call, got: Any, expected: Any
) -> str | None:
    """Whether two same-shaped attributes the test assigned, exchanged, give ``got``: W_q used
    where W_k belongs and the other way round (scores k q^T instead of q k^T)."""
    for a, b in itertools.combinations(assigned(call), 2):

        def swap(obj: Any, a: str = a, b: str = b) -> dict[str, Any]:
            if np.shape(getattr(obj, a)) != np.shape(getattr(obj, b)):
                raise ValueError("not the same shape")
            return {a: getattr(obj, b), b: getattr(obj, a)}

        if with_attributes(ctx, call, got, expected, swap):
            return exchanged_words(a, b)
    return None


def transposed_attribute(
    ctx: context.GradingContext, call: Call, got: Any, expected: Any
) -> str | None:
    """Whether one square matrix the test assigned, transposed, gives ``got``."""
    for name in assigned(call):

        def flip(obj: Any, name: str = name) -> dict[str, Any]:
            value = getattr(obj, name)
            if not square(value):
                raise ValueError("not a square matrix")
            return {name: np.array(value.T)}

        if with_attributes(ctx, call, got, expected, flip):
            return transposed_words(name)
    return None


MAX_IGNORED = 3  # attributes tried together as ignored: up to 41 replays for 6 assigned


def ignored_attributes(
    ctx: context.GradingContext, call: Call, got: Any, expected: Any
) -> str | None:
    """Whether some attributes the test assigned are ignored: ``got`` is what the object gives
    with those attributes as the student's own __init__ made them (read from a fresh object
    of theirs, built the same way), as when __init__ copies or combines the weights and the
    methods never read the attributes again."""
    names = assigned(call)
    target = call.target
    if not names or target is None or target.origin.target is not None:
        return None
    origin = target.origin
    try:
        fresh, _ = ctx.worker.request(
            origin.function,
            tuple(context.unwrap(a) for a in origin.args),
            {k: context.unwrap(v) for k, v in origin.kwargs.items()},
        )
        initial = {n: ctx.worker.request(n, (), {}, fresh, "get")[0] for n in names}
    except Exception:
        return None
    initial = {n: v for n, v in initial.items() if isinstance(v, np.ndarray)}
    for size in range(1, min(MAX_IGNORED, len(initial)) + 1):
        for subset in itertools.combinations(initial, size):

            def initially(_: Any, subset: tuple[str, ...] = subset) -> dict[str, Any]:
                return {n: initial[n] for n in subset}

            if with_attributes(ctx, call, got, expected, initially):
                those = listed(list(subset))
                return (
                    f"your {target.type_name} ignores the {those} assigned to it after it was "
                    f"built: your result is what the {those} your __init__ made give. "
                    f"{'Are they' if size > 1 else 'Is it'} copied or combined in __init__, "
                    "and not read again when used?"
                )
    return None


def or_for_and(ctx: context.GradingContext, call: Call, got: Any, expected: Any) -> str | None:
    """Whether the reference with every 'and' of arrays (``&``) read as 'or' gives ``got``:
    masks combined with np.maximum or ``|``, where a position must pass both."""
    module = ctx.diagnoser.or_for_and
    if module is None or not replays_to(ctx, module, call, got, expected):
        return None
    return (
        "your mask allows a position when either condition allows it, where both must: the "
        "masks are combined with 'or' (np.maximum or |) instead of 'and' (&)"
    )


def replays_to(
    ctx: context.GradingContext, module: types.ModuleType, call: Call, got: Any, expected: Any
) -> bool:
    try:
        with quiet():
            candidate = replay(ctx, module, call)
    except Exception:
        return False
    return matches(got, candidate) and not matches(candidate, expected)


def parameter_names(module: types.ModuleType, function: str) -> list[str]:
    try:
        return list(inspect.signature(getattr(module, function)).parameters)
    except (AttributeError, TypeError, ValueError):
        return []


def same_value(got: Any, replayed: Any) -> bool:
    """Whether a replay gave the student's value (a replay that raised gave none)."""
    return not isinstance(replayed, BaseException) and matches(got, replayed)


def error_shape(got: Any, want: Any, rtol: float, atol: float, values: bool) -> str | None:
    """How ``got`` differs from ``want``, in words: for one value of a returned tuple, whether
    another value of that tuple is what was expected (its ``values``, or only its type and
    shape); else, for values, autograder.engine.shapes."""

    def same(value: Any, want: Any) -> bool:
        if values:
            return matches(value, want, rtol, atol)
        return structure_problem(value, want) is None

    ctx = context.current()
    call = ctx.log.origin(got) if ctx else None
    if ctx is not None and call is not None and len(call.path) == 1:
        i, names = call.path[0], returned_names(call.function)
        entries = ctx.log.calls.values()
        whole = next((v for v, c in entries if not c.path and holds(v, i, got)), ())
        for j, value in enumerate(whole):
            if j != i and same(value, want):
                if len(whole) == 2:  # a pair: the two are swapped
                    return wrong_order((1, 0), names)
                return f"{value_name(j, names)} you return is what {value_name(i, names)} should be"
    found = shape_of_error(got, want, rtol, atol, names_of(got)) if values else None
    if found and call is not None and len(call.path) == 1:  # said as of the whole tuple
        return f"{value_name(call.path[0], returned_names(call.function))}: {found}"
    return found


def holds(value: Any, index: int, item: Any) -> bool:
    return isinstance(value, tuple | list) and len(value) > index and value[index] is item


def cascade(function: str, culprits: list[str]) -> tuple[str, str]:
    """The detail and the cause of a failure that comes from other functions of the student."""
    those = listed(culprits)
    detail = (
        f"{function} uses your {those}, and that is where this goes wrong: a correct "
        f"{function} using your {those} fails in exactly the same way."
    )
    return detail, f"it uses your {those}: fix {'them' if len(culprits) > 1 else 'that'} first"


def at_fault(ctx: context.GradingContext, call: Call, same: Callable[[Any], bool]) -> list[str]:
    """Those of the student's functions called by ``call.function`` (in the reference) that
    make the reference's ``call.function`` fail as the student's did: ``same`` says whether
    a replay's value (or the exception it raised) is the same failure.

    Only functions the student's code really called are candidates (the worker records the
    calls): a student's function with its own code, which never calls X, is never blamed on X.
    The replay runs the reference in this process; only the student's functions run in the
    worker, through the usual proxy. A function is named when swapping it alone in
    reproduces the failure; when no single one does, all together are tried. An object of
    the student's passed to the call (a cache) is rebuilt with the reference for each replay:
    replaying on the student's own object would change it, and would bring in its methods,
    which are not among the functions tried. Each replay with the student's functions in
    runs under a time and memory budget (engine/budget.py); one over it names no cause for
    this call, and says so in the grader's log."""
    callees = [name for name in ctx.diagnoser.callees(call.function) if name in call.called]
    if not callees:
        return []
    budget = Budget()

    def reproduces(used: list[str]) -> bool:
        source = ctx.diagnoser.reference_source
        module = module_from_source(source, "reference, mixed") if used else ctx.reference
        student = context.Student(ctx)
        for name in used:
            mine = getattr(student, name)
            setattr(module, name, bounded(mine, getattr(ctx.reference, name), budget))
        built: dict[int, Any] = {}

        def own(value: Any) -> Any:
            if isinstance(value, RemoteObject):
                return rebuild(ctx, ctx.reference, value, call.seq, 1, built)
            return value

        try:
            with budget.running(), warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                args = tuple(own(a) for a in call.args)
                kwargs = {k: own(v) for k, v in call.kwargs.items()}
                replayed = pick(getattr(module, call.function)(*args, **kwargs), call.path)
        except OverBudget:
            raise
        except StudentProblem as problem:
            return same(problem)
        except Exception as error:  # the reference's code, on what the student's returned
            return same(error)
        return same(replayed)

    try:
        if reproduces([]) or not reproduces(callees):
            return []  # the reference alone fails so too, or the student's own code differs
        alone = [name for name in callees if reproduces([name])]
    except OverBudget as over:
        LOG.warning("replaying %s went over its budget (%s): no cause named", call.function, over)
        return []
    return alone or callees


class Oversized(Exception):
    """A student's value too big for the reference to be replayed on in the grader."""


def bounded(
    student: Callable[..., Any], reference: Callable[..., Any], budget: Budget
) -> Callable[..., Any]:
    """``student``, whose every array is checked against what ``reference`` returns for the
    same call before the replay goes on with it: the replay runs the reference in the grader,
    so an array larger than the reference's (in size, or along any axis) could cost it any
    time or memory (a (3, 12000, 43) split gives 12000 x 12000 scores). A reshuffle of the
    reference's axes (a missing transpose) still passes, so it can still be blamed. The call
    into the worker is outside the ``budget``: the worker's own limits bound it."""

    def call(*args: Any, **kwargs: Any) -> Any:
        with budget.paused():
            got = student(*args, **kwargs)
        want = reference(*args, **kwargs)  # trusted code on the replay's own (trusted) inputs
        if not _within(got, want):
            raise Oversized("the value is larger than the reference's for the same call")
        return got

    return call


def _within(got: Any, want: Any) -> bool:
    """Every array in ``got`` no larger, in size or along any axis, than the largest array
    in ``want`` (in any order: a swapped pair of returned values is still replayed)."""
    wanted = _arrays(want)
    size = max((a.size for a in wanted), default=1)
    longest = max((n for a in wanted for n in a.shape), default=1)
    return all(a.size <= size and all(n <= longest for n in a.shape) for a in _arrays(got))


def _arrays(value: Any) -> list[np.ndarray]:
    if isinstance(value, tuple | list):
        return [a for item in value for a in _arrays(item)]
    return [value] if isinstance(value, np.ndarray) else []


def reattribute(error: BaseException) -> BaseException:
    """A student's function that raised only because another of their functions, which it
    calls, returned something wrong becomes feedback naming that function; the error itself
    (from code that is not the cause) is not shown."""
    ctx = context.current()
    call = ctx.log.attempted if ctx else None
    if ctx is None or call is None or not isinstance(error, StudentRaised):
        return error
    called = call.function if call.target is None else f"{call.target.type_name}.{call.function}"
    if error.is_a("NotImplementedError") or called != error.function:
        return error

    def same(replayed: Any) -> bool:
        if isinstance(replayed, StudentRaised):
            return (replayed.type_name, replayed.detail) == (error.type_name, error.detail)
        return isinstance(replayed, Exception) and type(replayed).__name__ == error.type_name

    culprits = at_fault(ctx, call, same)
    if not culprits:
        told = numpy_errors.explain(error, lambda: replay(ctx, ctx.reference, call))
        if told is None:
            return own_check(ctx, call, error)
        return Feedback(told[0], cause=told[1], outcome=error.outcome)
    detail, cause = cascade(call.function, culprits)
    return Feedback(detail, cause=cause, blame=culprits, outcome=error.outcome)


def own_check(ctx: context.GradingContext, call: Call, error: StudentRaised) -> BaseException:
    """A ``raise`` statement of the student's that refuses an input the reference accepts:
    their own check is too strict. Any other error is left as it is."""
    if not error.line.lstrip().startswith("raise"):
        return error
    try:
        with quiet():
            replay(ctx, ctx.reference, call)
    except Exception:
        return error  # the reference refuses it too: the test expects no value from it
    return Feedback(
        str(error),
        cause=(
            f"your own check raises {error.type_name} for an input the handout accepts (the "
            "handout's code returns a value for it): is its condition too strict, or off by "
            "one (>= where > belongs)?"
        ),
        outcome=error.outcome,
    )


def refused(call: Call) -> BaseException | None:
    """The error the reference raises on ``call``, or None when it returns."""
    ctx = context.current()
    if ctx is None:
        return None
    try:
        with quiet():
            replay(ctx, ctx.reference, call)
    except Exception as error:
        return error
    return None


def diagnose_no_raise(got: Any, call: Call, type_name: str) -> list[Variant]:
    """Catalogued mistakes that return what the student's code returned, on a call where the
    reference raises ``type_name``."""
    ctx = context.current()
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


def diagnose_memory(
    call: Call, got: Any, peak: int, limit: int, suspects: list[str] | None = None
) -> list[Variant]:
    """Known mistakes (``suspects``, or those of ``call.function``) that give ``got`` with a
    peak like ``peak``, over ``limit``."""
    ctx = context.current()
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
