"""A fingerprint of what a student's code gave in one failing hidden test.

The hidden inputs are fixed (seeded per test), so two students with the same bug return the
same wrong values: the fingerprint is a short hash of every value their code returned in the
test, in order, and of the exception it raised, if any. Values are quantised first, to four
significant digits of the largest magnitude in each array, so that float noise (float32
against float64, another order of summation) does not split a cluster; NaN and the two
infinities keep their own codes. The hash says nothing about the values themselves, so it
may be stored beside any result.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np

DIGITS = 4  # significant digits kept, relative to the largest magnitude of an array
SPECIAL = {"nan": -(2**62), "inf": 2**62, "-inf": -(2**62) + 1}


def quantised(value: np.ndarray) -> np.ndarray:
    """Integers on a grid of 10**-DIGITS of the array's largest finite magnitude."""
    data = np.asarray(value, dtype=np.float64)
    finite = np.isfinite(data)
    top = float(np.max(np.abs(data[finite]))) if finite.any() else 0.0
    step = 10.0 ** (math.floor(math.log10(top)) - DIGITS + 1) if top > 0 else 1.0
    grid = np.zeros(data.shape, dtype=np.int64)
    grid[finite] = np.round(data[finite] / step).astype(np.int64)
    grid[np.isnan(data)] = SPECIAL["nan"]
    grid[np.isposinf(data)] = SPECIAL["inf"]
    grid[np.isneginf(data)] = SPECIAL["-inf"]
    return grid


def token(value: Any) -> bytes:
    """The bytes that stand for one returned value (its structure, then its values)."""
    if isinstance(value, np.ndarray):
        kind = "b" if value.dtype == bool else value.dtype.kind
        head = f"array:{kind}:{value.shape}:".encode()
        if value.dtype.kind in "biuf":
            return head + quantised(value).tobytes()
        return head + repr(value.tolist()).encode()[:4096]
    if isinstance(value, tuple | list):
        return f"{type(value).__name__}[".encode() + b",".join(map(token, value)) + b"]"
    if isinstance(value, bool | int | float | np.number) and not isinstance(value, bool):
        return b"number:" + quantised(np.array([value])).tobytes()
    kind = getattr(value, "type_name", None)  # an object of the student's, in the worker
    if kind is not None:
        return f"object:{kind}".encode()
    return f"{type(value).__name__}:{value!r}".encode()[:4096]


def fingerprint(returned: list[Any], raised: str = "") -> str:
    """The fingerprint of a test in which the student's code returned ``returned`` (in
    order) and, if it did, raised an exception named ``raised``."""
    digest = hashlib.sha256()
    for value in returned:
        digest.update(token(value) + b"\n")
    digest.update(f"raised:{raised}".encode())
    return digest.hexdigest()[:16]
