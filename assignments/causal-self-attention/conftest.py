"""Hands your own layer to your own tests: `pytest` here runs test_layer.py with
Layer = your CausalSelfAttention. The grader runs the same tests against its own hidden
layers instead (see README.md)."""

import pytest


@pytest.fixture
def Layer():  # noqa: N802 (the tests take the class under this name)
    from layer import CausalSelfAttention

    return CausalSelfAttention
