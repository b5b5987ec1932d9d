"""The attention coursework grader.

``PACKAGE_DIR`` is the one place the package's own folder is worked out. The sandbox hides
it from workers, the plugin tells the engine's failures from a student's by it, and bundles
copy it: every "inside the package" check reads it from here, so a module can move between
subpackages without one of them silently going wrong.
"""

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
DISTRIBUTION = "attention-autograder"

try:
    __version__ = version(DISTRIBUTION)
except PackageNotFoundError:  # run from a checkout that was never installed
    __version__ = "0"
