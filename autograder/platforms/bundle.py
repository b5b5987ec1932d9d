"""What the Gradescope and Classroom 50 bundles share: the grader, laid out to be found by path.

Both bundles grade on machines the instructor's platform controls, so they carry the hidden
suite and the reference. They hold a ``course/`` folder shaped like this repository, trimmed to
one assignment:

    course/autograder/                  this package, with only that assignment's suite
    course/reference/<slug>/            the model submission
    course/assignments/<slug>/          the starter
    requirements.txt                    what grading needs (this package's dependencies)

The bundle's entry point puts ``course/`` first on ``sys.path`` and sets ``AUTOGRADER_ROOT`` to
it, so the grader never looks at the working directory (the student's checkout) for anything.
"""

from __future__ import annotations

import re
import shutil
import tomllib
from importlib import metadata
from pathlib import Path

from autograder import DISTRIBUTION, PACKAGE_DIR
from autograder.course.assignment import Assignment

COURSE = "course"


def requirements(keep: set[str] | None = None) -> str:
    """This package's runtime dependencies, one per line (``keep``: only those names), from
    the installed package's metadata, so a built wheel answers as a checkout does."""
    wanted = runtime_requirements()  # the class report's extra is for the instructor's machine
    return "\n".join(r for r in wanted if keep is None or name_of(r) in keep) + "\n"


def runtime_requirements() -> list[str]:
    try:
        declared = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:  # a checkout run without installing it
        project = tomllib.loads((PACKAGE_DIR.parent / "pyproject.toml").read_text())["project"]
        declared = project["dependencies"]
    return [r for r in declared if "extra ==" not in r]


def name_of(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower()


def write_course(assignment: Assignment, out: Path) -> Path:
    """Copy the grader, one hidden suite, the reference and the starter into ``out/course``."""
    course = out / COURSE
    if course.exists():
        shutil.rmtree(course)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")

    def only_this_suite(folder: str, names: list[str]) -> set[str]:
        ignored = set(skip(folder, names))
        if Path(folder) == PACKAGE_DIR / "suites":
            ignored |= {name for name in names if name != assignment.slug}
        if Path(folder) == PACKAGE_DIR:
            ignored.add("course_material")  # an installed grader's whole course: copied below
        return ignored

    shutil.copytree(PACKAGE_DIR, course / "autograder", ignore=only_this_suite)
    for kind, source in (("reference", assignment.reference), ("assignments", assignment.starter)):
        shutil.copytree(source, course / kind / assignment.slug, ignore=skip)
    (out / "requirements.txt").write_text(requirements())
    return course
