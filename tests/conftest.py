"""Fixtures shared by the engine's test modules."""

import pytest

from autograder.result import Result


@pytest.fixture(scope="session")
def check_cache() -> dict[str, Result]:
    """Gradings of catalogued variants, shared by every full `autograder check` in one run:
    each is keyed by everything its outcome depends on, so sharing them changes nothing."""
    return {}
