"""Generic error shapes: how a wrong value differs from the expected one, in plain words.

These need no catalogue. Given what the student returned and what was expected, each probe
asks one question (are the returned values in the wrong order? is this the expected array
transposed? every value scaled by the same factor?) and ``shape_of_error`` returns the first
sentence that fits, or None. Every probe demands an exact fit within the comparison's
tolerance, so a sentence is never a guess about a value that merely looks similar.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from autograder.engine.compare import (
    ATOL,
    RTOL,
    Names,
    axis_names,
    describe,
    matches,
    plural,
    spans,
    value_name,
)


def shape_of_error(
    got: Any, want: Any, rtol: float = RTOL, atol: float = ATOL, names: Names = ()
) -> str | None:
    """One sentence saying how ``got`` differs from ``want``, or None when no shape fits."""
    if isinstance(want, tuple):
        return tuple_shape(got, want, rtol, atol, names)
    if not isinstance(got, np.ndarray) or not isinstance(want, np.ndarray):
        return None
    if got.dtype.kind not in "biuf" or want.dtype.kind not in "biuf" or want.size == 0:
        return None
    for probe in PROBES:
        found = probe(got, want, rtol, atol)
        if found:
            return found
    return None


def tuple_shape(got: Any, want: tuple, rtol: float, atol: float, names: Names) -> str | None:
    if not isinstance(got, tuple | list) or len(got) != len(want):
        return None
    n = len(want)
    for order in itertools.permutations(range(n)):
        if order == tuple(range(n)):
            continue
        if all(matches(got[i], want[j], rtol, atol) for i, j in enumerate(order)):
            return wrong_order(order, names)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if not matches(g, w, rtol, atol):
            inner = shape_of_error(g, w, rtol, atol)
            return f"{value_name(i, names)}: {inner}" if inner else None
    return None


def wrong_order(order: tuple[int, ...], names: Names) -> str:
    """The sentence for returned values in the wrong order: value i of yours is value
    ``order[i]`` of the expected tuple."""
    if len(names) == len(order):
        yours = ", ".join(names[j] for j in order)
        return f"you return ({yours}); the order is ({', '.join(names)})"
    said = ", ".join(f"value {i} is the expected value {j}" for i, j in enumerate(order) if i != j)
    return f"the returned values are in the wrong order: {said}"


def close(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> bool:
    return got.shape == want.shape and matches(got, want.astype(got.dtype), rtol, atol)


def whole_rows(mask: np.ndarray) -> np.ndarray:
    """The rows (along the second-to-last axis) in which every entry is marked."""
    return np.flatnonzero(mask.reshape(-1, mask.shape[-1]).all(axis=-1))


def not_finite_rows(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    """NaN or inf filling whole rows where the expected values are ordinary numbers."""
    if got.shape != want.shape or got.ndim < 1 or got.dtype == bool:
        return None
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(got.astype(np.float64)) & np.isfinite(want.astype(np.float64))
    rows = whole_rows(bad) if got.ndim > 1 else np.array([0] if bad.all() else [])
    if not len(rows):
        return None
    what = "NaN" if np.isnan(got.astype(np.float64)[bad]).any() else "inf"
    if got.ndim == 1:
        return f"every value is {what}, where ordinary numbers were expected"
    where = f"{plural('row', len(rows))} {spans(rows)}" if got.ndim == 2 else "some rows"
    return (
        f"{where} of your result {'are' if len(rows) > 1 else 'is'} all {what}, where "
        "ordinary numbers were expected (0/0 somewhere?)"
    )


def zeros(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    """All zeros, or whole rows of zeros, where non-zero values (weights, say) were expected."""
    if got.shape != want.shape or got.dtype == bool or want.dtype == bool:
        return None
    if not np.any(got):
        return "every value of your result is 0, where non-zero values were expected"
    if got.ndim != 2:
        return None
    rows = np.array([r for r in range(len(got)) if not np.any(got[r]) and np.any(want[r])])
    if not len(rows):
        return None
    are = "are" if len(rows) > 1 else "is"
    return (
        f"{plural('row', len(rows))} {spans(rows)} of your result {are} all zeros, where "
        "non-zero values were expected"
    )


def inverted(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    same_kind = want.dtype == bool and got.dtype == bool and got.shape == want.shape
    if same_kind and np.array_equal(got, ~want):
        return "every True should be False and every False True: the opposite convention"
    return None


def one_diagonal(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    """A boolean mask (over its last two axes) that differs from the expected one only on one
    diagonal, every entry the same way round: a comparison off by one (< for <=, or k=1 in
    np.tril where k=0 belongs)."""
    if want.dtype != bool or got.dtype != bool or got.shape != want.shape or want.ndim < 2:
        return None
    bad = got != want
    if bad.sum() < 2 or len(np.unique(got[bad])) != 1:
        return None
    rows, columns = np.nonzero(bad)[-2:]
    offsets = np.unique(columns - rows)
    if len(offsets) != 1:
        return None
    k = int(offsets[0])
    line = (
        "the main diagonal (each position with itself)"
        if k == 0
        else f"the diagonal {abs(k)} {plural('place', abs(k))} {'right of' if k > 0 else 'left of'}"
        " the main one"
    )
    if got[bad][0]:
        return (
            f"your mask differs only on {line}, which it allows where it should not: it reaches "
            "one position too far (an off-by-one: <= for <, or the wrong k in np.tril?)"
        )
    return (
        f"your mask differs only on {line}, which it leaves out where it should allow it: it "
        "stops one position short (an off-by-one: < for <=, or the wrong k in np.tril?)"
    )


def nonzero_where_zero(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    """Values where every expected value is 0 (a bias that should start at zeros, say)."""
    if got.shape != want.shape or got.dtype == bool or want.dtype == bool or np.any(want):
        return None
    with np.errstate(invalid="ignore"):
        if not np.all(np.isfinite(got.astype(np.float64))):
            return None
    return (
        "every expected value is 0 and yours are not: is something drawn at random, or "
        "added, where the values should be zeros?"
    )


def temperature(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    """Rows of weights (distributions over the last axis) that are the softmax of the
    expected scores times one factor: the scores scaled by the wrong number before the
    softmax (no scale, the wrong width, or the scale applied twice)."""
    if got.shape != want.shape or got.ndim < 2 or got.dtype == bool or want.dtype == bool:
        return None
    g, w = rows_of(got), rows_of(want)
    if not (np.all(np.isfinite(g)) and np.all(np.isfinite(w))) or np.any(g < 0) or np.any(w < 0):
        return None
    if not (np.allclose(g.sum(-1), 1) and np.allclose(w.sum(-1), 1)):
        return None
    allowed = w > 0
    if np.any(g[~allowed] != 0):
        return None
    with np.errstate(divide="ignore"):
        logs = np.where(allowed, np.log(np.where(allowed, w, 1.0)), 0.0)
        mine = np.where(allowed, np.log(np.where(allowed, np.maximum(g, 1e-300), 1.0)), 0.0)
    count = allowed.sum(-1, keepdims=True)
    centred = np.where(allowed, logs - logs.sum(-1, keepdims=True) / np.maximum(count, 1), 0.0)
    ours = np.where(allowed, mine - mine.sum(-1, keepdims=True) / np.maximum(count, 1), 0.0)
    if not np.any(centred):
        return None
    factor = float(np.vdot(ours, centred) / np.vdot(centred, centred))
    if factor <= 0 or np.isclose(factor, 1, rtol=1e-3):
        return None
    scaled = np.where(allowed, factor * logs, -np.inf)
    scaled = np.exp(scaled - scaled.max(-1, keepdims=True))
    candidate = scaled / scaled.sum(-1, keepdims=True)
    if not matches(g, candidate, rtol, atol):
        return None
    guess = name_factor(factor)
    return (
        f"your weights are the softmax of the expected scores times {factor:.3g}"
        + (f" ({guess})" if guess else "")
        + ": the scores are scaled by the wrong number before the softmax"
    )


def transposed(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    if want.ndim == 2 and not close(want.T, want, rtol, atol) and close(got, want.T, rtol, atol):
        return "your result is exactly the expected one transposed (rows and columns swapped)"
    return None


def axes_reordered(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    """The right values with the axes in another order: the right values on the wrong axis."""
    if want.ndim < 3 or got.ndim != want.ndim:
        return None
    names = axis_names(want.ndim)
    for order in itertools.permutations(range(want.ndim)):
        if order != tuple(range(want.ndim)) and close(got, want.transpose(order), rtol, atol):
            held = ", ".join(plural(names[j], 2) for j in order)
            return (
                f"the right values, with the axes in another order: yours are "
                f"({held}), {describe(got)}; expected ({', '.join(plural(n, 2) for n in names)})"
            )
    return None


def permuted(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    """Whole rows (or columns, or heads) in another order, or shifted round by a few places."""
    if got.shape != want.shape or want.ndim < 1:
        return None
    names = axis_names(want.ndim)
    for axis in range(want.ndim):
        g, w = np.moveaxis(got, axis, 0), np.moveaxis(want, axis, 0)
        if len(w) < 2:
            continue
        order = []
        for piece in g:
            found = [j for j in range(len(w)) if j not in order and close(piece, w[j], rtol, atol)]
            if not found:
                break
            order.append(found[0])
        if len(order) != len(w) or order == list(range(len(w))):
            continue
        name = names[axis]
        n = len(w)
        shift = (-order[0]) % n
        if order == [(i - shift) % n for i in range(n)]:
            step = shift if shift <= n // 2 else shift - n
            return (
                f"your {plural(name, 2)} are the expected ones moved along by {step} "
                f"{plural('place', abs(step))}: your {name} {shift} is the expected {name} 0"
            )
        moved = [f"your {name} {i} is the expected {name} {j}" for i, j in enumerate(order)]
        return f"your {plural(name, 2)} are the expected ones in another order: " + ", ".join(
            m for m, (i, j) in zip(moved, enumerate(order), strict=True) if i != j
        )
    return None


def scaled(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    """Every value off by the same factor (a sign flip is the factor -1) or the same amount."""
    if got.shape != want.shape or got.dtype == bool or want.dtype == bool:
        return None
    g, w = got.astype(np.float64), want.astype(np.float64)
    if not (np.all(np.isfinite(g)) and np.all(np.isfinite(w))) or not np.any(w):
        return None
    factor = float(np.vdot(g, w) / np.vdot(w, w))
    if factor != 0 and not np.isclose(factor, 1) and close(g, factor * w, rtol, atol):
        if np.isclose(factor, -1):
            return "every value has the wrong sign: your result is minus the expected one"
        guess = name_factor(factor)
        size = f"{factor:.3g}" if f"{factor:.3g}" != "1" else f"{factor:.6g}"
        return f"every value is {size} times the expected one" + (
            f": a factor of {guess}?" if guess else ""
        )
    offset = float(np.mean(g - w))
    if not np.isclose(offset, 0, atol=atol) and close(g, w + offset, rtol, atol):
        return f"every value is off by the same amount: yours = expected {offset:+.3g}"
    return None


def name_factor(factor: float) -> str:
    """A factor as the expression it most likely came from: 1/sqrt(8), 8, sqrt(24)..."""
    for k in range(2, 1025):
        for value, text in (
            (k, f"{k}"),
            (1 / k, f"1/{k}"),
            (np.sqrt(k), f"sqrt({k})"),
            (1 / np.sqrt(k), f"1/sqrt({k})"),
        ):
            if np.isclose(abs(factor), value, rtol=1e-6):
                return ("-" if factor < 0 else "") + text
    return ""


def rows_of(array: np.ndarray) -> np.ndarray:
    """The array as a stack of rows along its last axis, in float64."""
    return array.astype(np.float64).reshape(-1, array.shape[-1])


def uniform_where_masked(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    """Rows of equal weights (1/n each) where the expected row is all 0, every other row
    right: a fully masked row filled with a large negative number, whose softmax is uniform."""
    if got.shape != want.shape or got.ndim < 2 or got.dtype == bool or want.dtype == bool:
        return None
    g, w = rows_of(got), rows_of(want)
    if not (np.all(np.isfinite(g)) and np.all(np.isfinite(w))):
        return None
    n = g.shape[-1]
    empty = ~w.any(axis=-1)
    uniform = np.isclose(g, 1 / n, rtol, atol).all(axis=-1)
    odd = empty & uniform
    others = ~odd
    if n < 2 or not odd.any() or not matches(g[others], w[others], rtol, atol):
        return None
    count = int(odd.sum())
    are = "are" if count > 1 else "is"
    return (
        f"{plural('row', count)} {spans(np.flatnonzero(odd))} of your result {are} uniform "
        f"(every weight 1/{n}) where {'they' if count > 1 else 'it'} should be all 0: a large "
        "negative fill instead of -inf, with no guard for a row whose keys are all masked?"
    )


def per_row_factor(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    """Each row off by a factor of its own (the same factor along the row, different from
    row to row): a row divided by its own sum where the expected row is not, or the reverse."""
    if got.shape != want.shape or got.ndim < 2 or got.shape[-1] < 2:
        return None
    if got.dtype == bool or want.dtype == bool:
        return None
    g, w = rows_of(got), rows_of(want)
    if not (np.all(np.isfinite(g)) and np.all(np.isfinite(w))) or not w.any(axis=-1).all():
        return None
    factors = np.einsum("ij,ij->i", g, w) / np.einsum("ij,ij->i", w, w)
    if np.allclose(factors, factors[0], rtol=1e-6) or not np.all(factors > 0):
        return None  # one factor for all: ``scaled`` says it; a sign is another story
    if not matches(g, factors[:, None] * w, rtol, atol):
        return None
    shown = ", ".join(f"row {i} by {1 / f:.3g}" for i, f in enumerate(factors[:3]))
    more = ", ..." if len(factors) > 3 else ""
    return (
        f"each row of your result is the expected row divided by its own number ({shown}"
        f"{more}): is each row divided by the wrong total (normalised at every step, or "
        "summed over the wrong entries)?"
    )


PROBES: list[Callable[[np.ndarray, np.ndarray, float, float], str | None]] = [
    not_finite_rows,
    inverted,
    one_diagonal,
    uniform_where_masked,
    zeros,
    nonzero_where_zero,
    transposed,
    axes_reordered,
    permuted,
    scaled,
    temperature,
    per_row_factor,
]
