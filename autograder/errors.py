"""The errors that decide an exit status, shared by every layer."""


class UsageError(Exception):
    """A mistake in how the command was called: one line, non-zero exit."""


class SuiteError(RuntimeError):
    """The hidden suite itself is broken: an instructor's problem, never a student's."""


class GraderFault(RuntimeError):
    """The grader or its machine failed (a full disk, a sandbox it could not set up): never
    the student's doing, and never a sign that the suite is broken."""
