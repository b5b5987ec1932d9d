"""NumPy's shape errors told in the student's terms: the line, the arrays on it and their
shapes, and the shapes the handout's computation has at that point.

NumPy says "operands could not be broadcast together with shapes (5,7) (7,5) ()" or
"matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature
(n?,k),(k,m?)->(n?,m?) (size 7 is different from 5)": true, but in NumPy's terms. The worker
sends the failing line and the shapes of the arrays it names (runner/worker_main.py); the
grader runs the reference on the same call and reads the shapes its local variables of the
same names end with. Hand-written: no library maps NumPy's messages to source lines.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from autograder.sandbox.problems import StudentRaised

SHAPE_ERRORS = re.compile(
    r"could not be broadcast|mismatch in its core dimension|not aligned|cannot reshape"
    r"|shape mismatch|inconsistent shapes?"
)


def is_shape_error(error: StudentRaised) -> bool:
    return error.is_a("ValueError") and bool(SHAPE_ERRORS.search(error.detail))


def shape(dims: tuple[int, ...]) -> str:
    return "×".join(map(str, dims)) if dims else "a single value"


def names_on(line: str) -> list[str]:
    """The names a line of code reads or assigns, in order of appearance, once each."""
    try:
        tree = ast.parse(line.strip().rstrip(":") or "pass")
    except SyntaxError:
        return re.findall(r"[A-Za-z_]\w*", line)
    found = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name)]
    return list(dict.fromkeys(found))


def reference_shapes(run: Callable[[], Any], function: str) -> dict[str, tuple[int, ...]]:
    """The shapes of the arrays that the reference's ``function`` holds when it returns,
    running it with ``run`` (None where it raised too)."""
    seen: dict[str, tuple[int, ...]] = {}

    def watch(frame: Any, event: str, arg: Any) -> None:
        if event == "return" and frame.f_code.co_name == function:
            seen.clear()
            seen.update(
                {k: v.shape for k, v in frame.f_locals.items() if isinstance(v, np.ndarray)}
            )

    previous = sys.getprofile()
    sys.setprofile(watch)
    try:
        run()
    except Exception:
        return {}
    finally:
        sys.setprofile(previous)
    return seen


def explain(error: StudentRaised, run: Callable[[], Any]) -> tuple[str, str] | None:
    """``explained`` against the reference's shapes, where ``run`` runs the reference."""
    if not is_shape_error(error):
        return None
    return explained(error, reference_shapes(run, error.frame or error.function))


def explained(error: StudentRaised, expected: dict[str, tuple[int, ...]]) -> tuple[str, str] | None:
    """The detail and the cause of a NumPy shape error, or None when it is not one."""
    if not is_shape_error(error):
        return None
    names = [n for n in names_on(error.line) if n in error.shapes]
    if not error.line or not names:
        return None
    yours = ", ".join(f"{n} is {shape(error.shapes[n])}" for n in names)
    detail = (
        f"{error.function} stopped at {error.where}: `{error.line}`: NumPy cannot combine "
        f"the arrays on this line, whose shapes do not fit together ({yours})."
    )
    wrong = [n for n in names if n in expected and expected[n] != error.shapes[n]]
    if wrong:
        said = ", ".join(
            f"{n} is {shape(error.shapes[n])} where the handout's is {shape(expected[n])}"
            for n in wrong
        )
        return detail, f"the shapes do not fit at {error.where}: {said}"
    known = [n for n in names if n in expected]
    if known:
        said = ", ".join(f"{n} {shape(expected[n])}" for n in known)
        return detail, f"the shapes do not fit at {error.where}; the handout's are: {said}"
    return detail, f"the shapes do not fit at {error.where}"
