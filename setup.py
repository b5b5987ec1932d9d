"""Build hook: ship the course folder (starter, reference, course.yaml) inside the package.

An installed grader then finds the reference it grades against next to its suites
(``autograder/course_material/``), never in the folder it is run from. Editable installs read the
checkout instead. A package built this way holds the reference solutions: it is for the
instructor's machines only, never for a student's repository or CI.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

COURSE_FOLDERS = ("assignments", "reference")
COURSE_FILES = ("course.yaml",)  # the course's settings (autograder/workflows/term.py)
SKIPPED = {"__pycache__", ".pytest_cache"}


class BuildWithCourse(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        root = Path(__file__).resolve().parent
        target = Path(self.build_lib) / "autograder" / "course_material"
        for folder in COURSE_FOLDERS:
            for path in sorted((root / folder).rglob("*")):
                relative = path.relative_to(root)
                if path.is_file() and not SKIPPED & set(relative.parts) and path.suffix != ".pyc":
                    (target / relative).parent.mkdir(parents=True, exist_ok=True)
                    self.copy_file(str(path), str(target / relative))
        for name in COURSE_FILES:
            if (root / name).is_file():
                self.copy_file(str(root / name), str(target / name))


setup(cmdclass={"build_py": BuildWithCourse})
