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

import shutil
import tomllib
from pathlib import Path

from autograder import PACKAGE_DIR
from autograder.course.assignment import Assignment

COURSE = "course"


def requirements(root: Path) -> str:
    """This package's runtime dependencies, one per line, from pyproject.toml."""
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    return "\n".join(project["dependencies"]) + "\n"


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
    (out / "requirements.txt").write_text(requirements(assignment.root))
    return course
