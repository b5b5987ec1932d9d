"""What the student reads when their code misbehaves: one exception class per outcome, and
the sentences that explain timeouts, crashes, exits and failed imports."""

from __future__ import annotations

import signal
from typing import Any

TEXT_CAP = 2000  # characters of any text from the worker


def text(value: Any, cap: int = TEXT_CAP) -> str:
    """A reply field as bounded text, whatever the (untrusted) worker put there."""
    return (value if isinstance(value, str) else "" if value is None else repr(value))[:cap]


class StudentProblem(Exception):
    """Something the student's code did; its message is feedback, not a grader error."""

    outcome = "error"

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


class StudentRaised(StudentProblem):
    outcome = "raised"

    def __init__(self, function: str, error: dict, output: str = "") -> None:
        self.function = function
        self.type_name = text(error.get("type", "Exception"), 100)
        mro = error.get("mro")
        self.mro = [text(n, 100) for n in mro[:20]] if isinstance(mro, list) else []
        self.detail = text(error.get("message", ""))
        self.where = location(error.get("where"), "line {1} of {0}, in {2}")
        self.frame = location(error.get("where"), "{2}")  # the function the line is in
        self.line = text(error.get("line", ""), 300)
        self.shapes = shapes_of(error.get("shapes"))
        at = location(error.get("where"), " (at {0}, line {1}, in {2})")
        if self.type_name == "NotImplementedError":
            message = f"{function} is not implemented yet: it raises NotImplementedError{at}."
        else:
            detail = f": {self.detail}" if self.detail else ""
            message = f"{function} raised {self.type_name}{detail}{at}."
        super().__init__(message, output)

    def is_a(self, type_name: str) -> bool:
        return type_name in self.mro


class StudentMissing(StudentProblem):
    outcome = "missing"


class StudentImportFailed(StudentProblem):
    outcome = "import"


class StudentTimeout(StudentProblem):
    outcome = "timeout"
    budget = False  # True when the submission's whole time budget ran out


class StudentCrashed(StudentProblem):
    outcome = "crashed"


class StudentBadOutput(StudentProblem):
    outcome = "invalid-output"


def too_slow(doing: str, timeout: float) -> StudentTimeout:
    return StudentTimeout(
        f"{doing} took longer than {timeout:g} s and was stopped "
        "(an endless loop, or far too much work?)."
    )


def stopped_reading(doing: str) -> StudentTimeout:
    return StudentTimeout(
        f"{doing}: the process running your code stopped reading its input and was stopped."
    )


def over_budget(what: str, budget: float) -> StudentTimeout:
    problem = StudentTimeout(
        f"{what}: your code had used up the {budget:g} s that grading may spend on "
        "one submission (see the timeouts above; fix those first)."
    )
    problem.budget = True
    return problem


def slow_import(filename: str, limit: float) -> StudentImportFailed:
    return StudentImportFailed(
        f"{filename} did not finish importing within {limit:g} s "
        "(is there a long computation, a sleep or a loop at the top level?)."
    )


def crashed_at_import(filename: str, problem: StudentProblem) -> StudentImportFailed:
    return StudentImportFailed(
        f"{filename} stopped Python while it was being imported ({problem}). "
        "Code at the top level of a module must not exit or crash.",
        problem.output,
    )


def shapes_of(value: Any) -> dict[str, tuple[int, ...]]:
    """The worker's {name: shape} of the arrays on the failing line, checked (untrusted)."""
    if not isinstance(value, dict):
        return {}
    found = {}
    for name, shape in list(value.items())[:30]:
        dims = shape if isinstance(shape, list) and len(shape) <= 8 else [-1]
        if isinstance(name, str) and all(isinstance(n, int) and 0 <= n < 1 << 40 for n in dims):
            found[name[:50]] = tuple(dims)
    return found


def location(where: Any, template: str) -> str:
    """Fill ``template`` from a reply's [file, line, function], or "" if it is malformed."""
    if not isinstance(where, list) or len(where) != 3:
        return ""
    return template.format(text(where[0], 200), text(where[1], 20), text(where[2], 200))


def import_failure(filename: str, error: dict) -> StudentImportFailed:
    line = location(error.get("where"), " at line {1}")
    kind = text(error.get("type", "an error"), 100)
    message = text(error.get("message", ""))
    if kind == "ModuleNotFoundError" and filename[:-3] in message:
        return StudentImportFailed(f"{filename} was not found in the submission.")
    return StudentImportFailed(f"{filename} could not be imported: {kind}{line}: {message}")


def describe_exit(code: int | None) -> str:
    if code is None:
        return "stopped"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = {
            "SIGSEGV": " (a segmentation fault)",
            "SIGKILL": " (killed: too much memory or CPU?)",
            "SIGXCPU": " (the CPU time limit)",
            "SIGXFSZ": " (the file size limit)",
        }.get(name, "")
        return f"was killed by {name}{hint}."
    return f"exited with status {code} (sys.exit or os._exit in your code?)."
