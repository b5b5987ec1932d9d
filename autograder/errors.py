"""The errors that decide an exit status, and the statuses, shared by every layer."""

from enum import IntEnum


class ExitCode(IntEnum):
    """What ``autograder`` exits with (the README's table): 0 whenever the work was done,
    whatever the score."""

    OK = 0
    FAILED = 1  # the work ran and something did not pass (check), or could not run (a bundle)
    USAGE = 2  # a mistake in how the command was called: UsageError
    SUITE = 3  # the hidden suite is broken: SuiteError
    GRADER = 4  # the grader or its machine failed: GraderFault


class UsageError(Exception):
    """A mistake in how the command was called: one line, non-zero exit."""


def not_installed(package: str, extra: str, what: str) -> UsageError:
    """The one-line error for a command whose optional dependency is not installed."""
    return UsageError(
        f"{what} needs {package}, which is not installed: "
        f"pip install 'attention-autograder[{extra}]'"
    )


class SuiteError(RuntimeError):
    """The hidden suite itself is broken: an instructor's problem, never a student's."""


class GraderFault(RuntimeError):
    """The grader or its machine failed (a full disk, a sandbox it could not set up): never
    the student's doing, and never a sign that the suite is broken."""
