"""What a command of ``autograder`` is, and the options several commands share.

Each workflow module owns its commands, as pytest's plugins own their options: it declares a
``Command`` (the name, the help, the options it adds and the function it runs), and
``autograder.cli`` only lists them in the order ``autograder --help`` shows them.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from autograder.sandbox.layers import WEAK_MEANS


@dataclass(frozen=True)
class Command:
    """One subcommand: ``add_arguments`` adds its options to its parser, ``run`` does the work
    with the parsed arguments and returns the exit status."""

    name: str
    help: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
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
        )
        self.add_arguments(p)
        p.set_defaults(run=self.run)
        return p


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


def add_course_option(p: argparse.ArgumentParser, dest: str = "course") -> None:
    """Every command that reads an assignment's reference or starter takes --course."""
    p.add_argument(
        "--course",
        dest=dest,
        metavar="COURSE_DIR",
        help="the course folder holding reference/ and assignments/ (default: the copy "
        "installed with the grader, or its source checkout; never the current folder)",
    )


def add_allow_weak_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--allow-weak-sandbox",
        action="store_true",
        help=f"grade for record even when the sandbox is {WEAK_MEANS}",
    )


def add_course_file_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--course-file",
        metavar="COURSE_YAML",
        help="the course file (default: course.yaml at the course root): due dates with a "
        "time zone, the late policy and grace days (extensions.csv beside it gives per-student "
        "due dates), and the formative round's settings; with due dates, collect honours each "
        "student's own deadline, and scores.csv applies the policy",
    )


def add_allow_mixed_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--allow-mixed",
        action="store_true",
        help="accept results graded by different grader versions or suites",
    )


def add_actions(p: argparse.ArgumentParser) -> Any:
    """A command whose work is chosen by an ACTION word (``nbgrader build``)."""
    return p.add_subparsers(dest="action", required=True, metavar="ACTION")


def use_course(course: str | None) -> None:
    """For commands that load an assignment deep inside a workflow: --course as
    $AUTOGRADER_ROOT, the one other way find_root() is told the course folder."""
    if course:
        os.environ["AUTOGRADER_ROOT"] = course
