"""Staged comparison of a student's value with the expected one, in words a student can use.

The stages follow PrairieLearn: was something returned, is it the right type, the right
shape, the right dtype, and only then the values. Each stage stops at the first problem.
Student data is converted to a plain ndarray here before any comparison: never ``==`` on it.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

import numpy as np

from autograder.engine.context import RemoteObject
from autograder.sandbox.runner.wire import Unsupported

RTOL, ATOL = 1e-5, 1e-7
SHOW_ENTRIES = 3  # wrong entries shown; only where got and expected differ
SHOW_ROWS = 2  # wrong rows shown whole, for narrow arrays
MAX_COLUMNS = 8  # arrays up to this wide show whole rows, expected above got


def describe(array: np.ndarray) -> str:
    """An array in words: 'a 6×24 array', 'a 5×5 array of booleans'."""
    if array.ndim == 0:
        size = "a single-value array"
    elif array.ndim == 1:
        size = f"an array of {array.shape[0]} {plural('value', array.shape[0])}"
    else:
        size = "a " + "×".join(map(str, array.shape)) + " array"
    if array.dtype == bool:
        return size + " of booleans"
    return size if array.dtype.kind in "iuf" else f"{size} of {array.dtype}"


def kind_of(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, Unsupported):
        return f"a {value.type_name}"
    if isinstance(value, RemoteObject):  # an object of the student's: its own class's name
        return f"a {value.type_name} object"
    if isinstance(value, np.ndarray):
        return describe(value)
    if isinstance(value, np.generic):
        return f"a NumPy scalar ({value.dtype})"
    if isinstance(value, tuple | list):
        return f"a {type(value).__name__} of {len(value)} {plural('value', len(value))}"
    return f"a {type(value).__name__}"


def structure_problem(got: Any, want: Any) -> str | None:
    """Type and shape: return a message or None."""
    if got is None:
        return "returned None. Did you forget a return statement?"
    if isinstance(want, tuple):
        if not isinstance(got, tuple | list) or len(got) != len(want):
            return f"returned {kind_of(got)}; expected a tuple of {len(want)} values."
        return None
    if isinstance(want, np.ndarray):
        if not isinstance(got, np.ndarray):
            return f"returned {kind_of(got)}; expected a NumPy array, {describe(want)}."
        if got.shape != want.shape:
            return f"returned {describe(got)}; expected {describe(want)}."
        if want.dtype == bool and got.dtype != bool:
            return f"returned {describe(got)}; expected an array of booleans (dtype bool)."
        if got.dtype.kind not in "biuf":
            return f"returned dtype {got.dtype}; expected real numbers."
    if is_number(want) and not is_number(got):
        return f"returned {kind_of(got)}; expected a number."
    return None


def is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.number | np.bool_)


def value_problem(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    """Values, given matching shapes: which entries differ (expected next to got), then how
    far off they are."""
    bad = differing(got, want, rtol, atol)
    if not bad.any():
        return None
    if want.ndim == 0:
        lines = [f"returned {fmt(got)}; expected {fmt(want)}."]
        return "\n".join(lines + error_size(got, want, bad, rtol, atol))
    count = f"{int(bad.sum())} of {want.size} entries differ from the expected values"
    lines = [count + where(bad) + "."]
    lines += side_by_side(got, want, bad) or listed(got, want, bad)
    lines += error_size(got, want, bad, rtol, atol)
    return "\n".join(lines)


def differing(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    if want.dtype == bool:
        return np.asarray(got != want)
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.isclose(got.astype(np.float64), want.astype(np.float64), rtol, atol, True)
    return ~close


def where(bad: np.ndarray) -> str:
    """Which rows, columns (and heads) hold the differences, when that narrows things down."""
    if bad.ndim < 2:
        return ""
    names = axis_names(bad.ndim)
    said = []
    for axis, name in enumerate(names):
        others = tuple(a for a in range(bad.ndim) if a != axis)
        hit = np.flatnonzero(bad.any(axis=others))
        every = len(hit) == bad.shape[axis]
        said.append(f"{'every ' + name if every else plural(name, len(hit)) + ' ' + spans(hit)}")
    return ", in " + ", ".join(said[:-1]) + " and " + said[-1]


def side_by_side(got: np.ndarray, want: np.ndarray, bad: np.ndarray) -> list[str]:
    """Small arrays: each wrong row in full, expected above got, wrong columns named."""
    if got.ndim == 0 or got.shape[-1] > MAX_COLUMNS:
        return []
    rows = [r for r in np.ndindex(got.shape[:-1]) if bad[r].any()]
    if len(rows) > SHOW_ROWS:
        return []
    width = max(len(fmt(x)) for r in rows for x in (*want[r], *got[r]))
    names = axis_names(got.ndim)
    lines = []
    for r in rows:
        label = ", ".join(f"{n} {i}" for n, i in zip(names, r, strict=False)) or "values"
        columns = np.flatnonzero(bad[r])
        lines.append(f"  {label}: expected {row_text(want[r], width)}")
        lines.append(
            f"  {'':{len(label)}}       got {row_text(got[r], width)}"
            f"   <- {plural(names[-1], len(columns))} {spans(columns)}"
        )
    return lines


def listed(got: np.ndarray, want: np.ndarray, bad: np.ndarray) -> list[str]:
    """Larger arrays: the first few wrong entries, expected next to got."""
    found = np.argwhere(bad)
    lines = []
    for index in found[:SHOW_ENTRIES]:
        i = tuple(int(x) for x in index)
        lines.append(f"  at {position(i)}: expected {fmt(want[i])}, got {fmt(got[i])}")
    if len(found) > SHOW_ENTRIES:
        lines.append(f"  ... and {len(found) - SHOW_ENTRIES} more")
    return lines


def error_size(
    got: np.ndarray, want: np.ndarray, bad: np.ndarray, rtol: float, atol: float
) -> list[str]:
    """The last stage: how large the error is, or what kind of wrong values there are."""
    if want.dtype == bool:
        extra = int((got & ~want).sum())
        return [f"{extra} True where False was expected, {int(bad.sum()) - extra} the other way."]
    g, w = got.astype(np.float64), want.astype(np.float64)
    lines = []
    for name, test in (("NaN", np.isnan), ("inf", np.isinf)):
        extra = int((test(g) & ~test(w)).sum())
        if extra:
            lines.append(
                f"Your result has {name} in {extra} {plural('entry', extra)} ({NAN_CAUSES[name]})."
            )
    if lines:
        return lines
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.where(bad, np.abs(g - w), -1.0)
    i = np.unravel_index(int(np.argmax(error)), error.shape)
    at = f" at {position(tuple(int(x) for x in i))}" if got.ndim else ""
    return [
        f"Largest error: {error[i]:.3g}{at}. Allowed: |got - expected| <= "
        f"{atol:g} + {rtol:g} * |expected|."
    ]


NAN_CAUSES = {"NaN": "0/0 or inf - inf somewhere?", "inf": "an overflow in np.exp?"}


def axis_names(ndim: int) -> list[str]:
    """The names of an array's axes: the suite's (suite.yaml ``axes:``, see ``naming_axes``)
    when they fit, else row and column for a matrix and numbered axes beyond."""
    given = AXES.get()
    if given and len(given) <= ndim:  # named from the last axis: (..., query, key)
        return [f"axis-{a}" for a in range(ndim - len(given))] + list(given)
    if ndim == 1:
        return ["entry"]
    return [f"axis-{a}" for a in range(ndim - 2)] + ["row", "column"]


AXES: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("axes", default=())


@contextlib.contextmanager
def naming_axes(names: Names | None) -> Iterator[None]:
    """Inside the block, arrays with len(names) axes have their axes called by ``names``."""
    token = AXES.set(tuple(names or ()))
    try:
        yield
    finally:
        AXES.reset(token)


def plural(name: str, count: int) -> str:
    if count == 1:
        return name
    consonant_y = name.endswith("y") and name[-2:-1] not in tuple("aeiou")
    return name[:-1] + "ies" if consonant_y else name + "s"  # entries, but keys


def spans(indices: np.ndarray) -> str:
    """[0, 1, 2, 5] -> '0-2, 5'"""
    runs: list[list[int]] = []
    for i in (int(x) for x in indices):
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)


def row_text(values: np.ndarray, width: int) -> str:
    return "[" + ", ".join(f"{fmt(x):>{width}}" for x in values) + "]"


def problem(
    got: Any,
    want: Any,
    rtol: float = RTOL,
    atol: float = ATOL,
    names: Names = (),
    axes: Axes | None = None,
) -> str | None:
    """The first problem found between got and want, or None when they match. ``names`` are
    the suite's names for the values of a returned tuple, e.g. ("weights", "output"), and
    ``axes`` the names of each one's axes, by value name ("" for a single array)."""
    axes = axes or {}
    found = structure_problem(got, want)
    if found:
        return found
    if isinstance(want, tuple):
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            with naming_axes(axes.get(names[i]) if i < len(names) else None):
                inner = problem(g, w, rtol, atol)
            if inner:
                return f"in {value_name(i, names)} of the returned tuple, {inner}"
    if isinstance(want, np.ndarray) or is_number(want):
        with naming_axes(axes.get("") or AXES.get()):
            return value_problem(np.asarray(got), np.asarray(want), rtol, atol)
    return None


Names = tuple[str, ...] | list[str]
Axes = dict[str, list[str]]


def value_name(index: int, names: Names) -> str:
    """'the weights (value 0)' when the suite names the values, else 'value 0'."""
    return f"the {names[index]} (value {index})" if index < len(names) else f"value {index}"


def matches(got: Any, want: Any, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """``problem(got, want) is None``, without writing the words: the diagnosis asks this of
    every catalogued mistake's replay, and most of them differ. Only None matches None."""
    if want is None or got is None:
        return got is want
    if structure_problem(got, want):
        return False
    if isinstance(want, tuple):
        return all(matches(g, w, rtol, atol) for g, w in zip(got, want, strict=True))
    if isinstance(want, np.ndarray) or is_number(want):
        return not differing(np.asarray(got), np.asarray(want), rtol, atol).any()
    return True


def position(index: tuple[int, ...]) -> str:
    if not index:
        return "the value"
    names = axis_names(len(index))
    return ", ".join(f"{name} {i}" for name, i in zip(names, index, strict=True))


def fmt(x: Any) -> str:
    if isinstance(x, np.bool_ | bool):
        return str(bool(x))
    return f"{float(x):.6g}"


def show(value: Any, limit: int = 4) -> str:
    """A value as it appears in a call: tiny arrays in full, others in words ('a 6×24 array')."""
    if isinstance(value, np.ndarray):
        if value.size <= limit:
            return np.array2string(value, precision=4, separator=", ").replace("\n", "")
        return describe(value)
    return repr(value)
