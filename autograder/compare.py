"""Staged comparison of a student's value with the expected one, in words a student can use.

The stages follow PrairieLearn: was something returned, is it the right type, the right
shape, the right dtype, and only then the values. Each stage stops at the first problem.
Student data is converted to a plain ndarray here before any comparison: never ``==`` on it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autograder.wire import Unsupported

RTOL, ATOL = 1e-5, 1e-7
SHOW_ENTRIES = 6


def kind_of(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, Unsupported):
        return f"a {value.type_name}"
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    if isinstance(value, np.generic):
        return f"a NumPy scalar ({value.dtype})"
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
            return f"returned {kind_of(got)}; expected a NumPy array of shape {want.shape}."
        if got.shape != want.shape:
            return f"returned shape {got.shape}; expected shape {want.shape}."
        if want.dtype == bool and got.dtype != bool:
            return f"returned dtype {got.dtype}; expected a boolean array (dtype bool)."
        if got.dtype.kind not in "biuf":
            return f"returned dtype {got.dtype}; expected real numbers."
    return None


def value_problem(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    """Values, given matching shapes: which entries differ, expected next to got."""
    if want.dtype == bool:
        bad = got != want
    else:
        g = got.astype(np.float64)
        w = want.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            bad = ~np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    if not bad.any():
        return None
    where = np.argwhere(bad)
    lines = [f"{len(where)} of {want.size} entries differ from the expected values."]
    for index in where[:SHOW_ENTRIES]:
        i = tuple(int(x) for x in index)
        lines.append(f"  at {position(i)}: expected {fmt(want[i])}, got {fmt(got[i])}")
    if len(where) > SHOW_ENTRIES:
        lines.append(f"  ... and {len(where) - SHOW_ENTRIES} more")
    if want.dtype != bool:
        g, w = got.astype(np.float64), want.astype(np.float64)
        if np.isnan(g).any() and not np.isnan(w).any():
            lines.append("Your result contains NaN (0/0 or inf - inf somewhere?).")
        else:
            with np.errstate(invalid="ignore", over="ignore"):
                error = np.nanmax(np.abs(g - w))
            lines.append(f"Largest error: {error:.3g} (allowed: rtol {rtol:g}, atol {atol:g}).")
    return "\n".join(lines)


def problem(got: Any, want: Any, rtol: float = RTOL, atol: float = ATOL) -> str | None:
    """The first problem found between got and want, or None when they match."""
    found = structure_problem(got, want)
    if found or not isinstance(want, np.ndarray):
        if found is None and isinstance(want, tuple):
            for i, (g, w) in enumerate(zip(got, want, strict=True)):
                inner = problem(g, w, rtol, atol)
                if inner:
                    return f"value {i} of the returned tuple: {inner}"
        return found
    return value_problem(got, want, rtol, atol)


def matches(got: Any, want: Any, rtol: float = RTOL, atol: float = ATOL) -> bool:
    return problem(got, want, rtol, atol) is None


def position(index: tuple[int, ...]) -> str:
    names = {1: ["entry"], 2: ["row", "column"], 3: ["head", "row", "column"]}.get(len(index))
    if names is None:
        return f"index {list(index)}"
    return ", ".join(f"{name} {i}" for name, i in zip(names, index, strict=True))


def fmt(x: Any) -> str:
    if isinstance(x, np.bool_ | bool):
        return str(bool(x))
    return f"{float(x):.6g}"


def show(value: Any, limit: int = 16) -> str:
    """A value as it appears in feedback: small arrays in full, large ones by shape."""
    if isinstance(value, np.ndarray):
        if value.size <= limit:
            return np.array2string(value, precision=4, separator=", ").replace("\n", "")
        return f"<array {value.shape}>"
    return repr(value)
