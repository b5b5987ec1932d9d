"""The ``autograder`` command: grade, check, generate, release, export, doctor, and the
class workflows (collect, grade-batch, merge, report, publish, formative).

Each command is declared by the workflow module that does its work (its options and what it
runs, see ``autograder.workflows.command``); this module lists them in the order the help
shows them and turns the errors that decide an exit status into one line each.
"""

from __future__ import annotations

import argparse
import sys

from autograder.errors import ExitCode, GraderFault, SuiteError, UsageError
from autograder.workflows import (
    authoring,
    batch,
    classreport,
    collect,
    export,
    formative,
    grade,
    gradebook,
    insight,
    machine,
    merge,
    notebooks,
    publish,
    regrade,
    release,
)

COMMANDS = (
    grade.COMMAND,
    authoring.CHECK,
    authoring.GENERATE,
    release.COMMAND,
    export.COMMAND,
    notebooks.COMMAND,
    machine.DOCTOR,
    machine.SANDBOX,
    collect.COMMAND,
    batch.COMMAND,
    merge.COMMAND,
    regrade.REGRADE,
    regrade.DIFF,
    gradebook.PASSBACK,
    classreport.COMMAND,
    insight.PROPOSE,
    insight.SIMILARITY,
    publish.COMMAND,
    formative.COMMAND,
)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="autograder",
        description="Grade attention coursework: student code runs in a sandboxed worker.",
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.run(args))
    except UsageError as error:
        print(f"autograder: error: {error}", file=sys.stderr)
        return ExitCode.USAGE
    except SuiteError as error:
        print(f"autograder: the hidden suite is broken: {error}", file=sys.stderr)
        return ExitCode.SUITE
    except GraderFault as error:
        print(f"autograder: the grader failed on this machine: {error}", file=sys.stderr)
        return ExitCode.GRADER


if __name__ == "__main__":
    sys.exit(main())
