"""`autograder check` is green for every assignment: its reference gets full marks, its starter
0, every catalogued mistake is caught on its own function and named, every "also correct" form
gets full marks, and no quiz answer is printed in what students read."""

import pytest

from autograder.course.assignment import Assignment, slugs
from autograder.sandbox.layers import Sandbox
from autograder.workflows.check import check

pytestmark = pytest.mark.timeout(600)


@pytest.mark.parametrize("slug", slugs())
def test_check_is_green(slug):
    lines: list[str] = []
    ok = check(Assignment.load(slug), Sandbox.detect("fallback"), lines.append)
    failures = [line for line in lines if "[FAIL]" in line]
    assert ok and not failures, "\n".join(failures)
    assert f"{slug}: OK" in lines[-1]
