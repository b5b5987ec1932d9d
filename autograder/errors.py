"""The errors that decide an exit status, shared by every layer."""


class UsageError(Exception):
    """A mistake in how the command was called: one line, non-zero exit."""


class SuiteError(RuntimeError):
    """The hidden suite itself is broken: an instructor's problem, never a student's."""
