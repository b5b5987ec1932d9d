"""Student stubs are the reference with its solution regions cleared, as nbgrader does it.

``### BEGIN SOLUTION`` ... ``### END SOLUTION`` becomes ``# YOUR CODE HERE`` and
``raise NotImplementedError()`` at the indentation of the marker.
"""

from __future__ import annotations

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


class MarkerError(ValueError):
    """Unbalanced solution markers."""


def clear_solutions(source: str, filename: str = "<source>") -> str:
    out: list[str] = []
    inside_since: int | None = None
    for number, line in enumerate(source.splitlines(keepends=True), start=1):
        if BEGIN in line:
            if inside_since is not None:
                raise MarkerError(f"{filename}:{number}: nested {BEGIN}")
            inside_since = number
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}# YOUR CODE HERE\n{indent}raise NotImplementedError()\n")
        elif END in line:
            if inside_since is None:
                raise MarkerError(f"{filename}:{number}: {END} without {BEGIN}")
            inside_since = None
        elif inside_since is None:
            out.append(line)
    if inside_since is not None:
        raise MarkerError(f"{filename}:{inside_since}: {BEGIN} is never closed")
    return "".join(out)


def has_markers(source: str) -> bool:
    return BEGIN in source or END in source
