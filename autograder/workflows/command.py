"""What a command of ``autograder`` is, and the options several commands share.

Each workflow module owns its commands, as pytest's plugins own their options: it declares a
``Command`` (the name, the help, the options it adds and the function it runs), and
``autograder.cli`` only lists them in the order ``autograder --help`` shows them.

An option that several commands take is defined once here, as an argparse parent parser
(``parents=``), with one wording for every command that takes it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from autograder.sandbox.layers import MODES, WEAK_MEANS


@dataclass(frozen=True)
class Command:
    """One subcommand: ``add_arguments`` adds its own options, ``parents`` the shared ones
    (after its own, in the order given), and ``run`` does the work with the parsed
    arguments and returns the exit status."""

    name: str
    help: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    parents: tuple[argparse.ArgumentParser, ...] = ()
    epilog: str | None = None
    formatter_class: type[argparse.HelpFormatter] = argparse.HelpFormatter

    def register(self, sub: Any) -> argparse.ArgumentParser:
        """Add this command to ``sub`` (an ``add_subparsers`` object)."""
        p = sub.add_parser(
            self.name,
            help=self.help,
            description=self.description,
            epilog=self.epilog,
            formatter_class=self.formatter_class,
            parents=[own_first(self.add_arguments), *self.parents] if self.parents else [],
        )
        if not self.parents:
            self.add_arguments(p)  # a command with ACTION words keeps its subparsers its own
        p.set_defaults(run=self.run)
        return p


def own_first(add: Callable[[argparse.ArgumentParser], None]) -> argparse.ArgumentParser:
    """A command's own options as a parent, so that they come before the shared ones."""
    own = parent()
    add(own)
    return own


def no_options(p: argparse.ArgumentParser) -> None:
    """For a command whose options are all shared ones."""


def parent() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(add_help=False)


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


def course_option(dest: str = "course") -> argparse.ArgumentParser:
    """Every command that reads an assignment's reference or starter takes --course."""
    p = parent()
    p.add_argument(
        "--course",
        dest=dest,
        metavar="COURSE_DIR",
        help="the course folder holding reference/ and assignments/ (default: the copy "
        "installed with the grader, or its source checkout; never the current folder)",
    )
    return p


def sandbox_option(help: str = "isolation for the workers") -> argparse.ArgumentParser:
    p = parent()
    p.add_argument("--sandbox", choices=MODES, default="auto", help=help)
    return p


COURSE = course_option()
# nbgrader's COURSE_DIR is nbgrader's course folder: ours is --course, read as course_root
COURSE_ROOT = course_option("course_root")
SANDBOX = sandbox_option()

JOBS = parent()
JOBS.add_argument("--jobs", type=int, help="parallel graders (default: the number of cores)")

ALLOW_WEAK = parent()
ALLOW_WEAK.add_argument(
    "--allow-weak-sandbox",
    action="store_true",
    help=f"grade for record even when the sandbox is {WEAK_MEANS}",
)

COURSE_FILE = parent()
COURSE_FILE.add_argument(
    "--course-file",
    metavar="COURSE_YAML",
    help="the course file (default: course.yaml at the course root): due dates with a "
    "time zone, the late policy and grace days (extensions.csv beside it gives per-student "
    "due dates), and the formative round's settings; with due dates, collect honours each "
    "student's own deadline, and scores.csv applies the policy",
)

ALLOW_MIXED = parent()
ALLOW_MIXED.add_argument(
    "--allow-mixed",
    action="store_true",
    help="accept results graded by different grader versions or suites",
)

# what grade-batch, regrade and formative share: how many graders, in which sandbox
GRADING = (JOBS, SANDBOX, ALLOW_WEAK)


def add_actions(p: argparse.ArgumentParser) -> Any:
    """A command whose work is chosen by an ACTION word (``nbgrader build``)."""
    return p.add_subparsers(dest="action", required=True, metavar="ACTION")
