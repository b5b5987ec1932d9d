"""Values cross the wire between the grader and the worker as they are: a NumPy scalar stays a
scalar of its type, and a 0-d array stays 0-d (a blind corpus's attention_flops returned
np.int64, which once arrived as an array of shape (1,) and failed "an int")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from autograder.sandbox.layers import Sandbox
from autograder.sandbox.runner import wire
from autograder.sandbox.worker import Worker

VALUES = [
    np.int64(4200),
    np.float32(1.5),
    np.bool_(True),
    np.array(3.5),
    np.arange(6).reshape(2, 3).T,  # Fortran order
    np.zeros((0, 3)),
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_a_value_decodes_as_it_was_encoded(value):
    blobs: list[bytes] = []
    got = wire.decode(wire.encode(value, blobs), blobs)
    assert type(got) is type(value)
    assert np.shape(got) == np.shape(value) and np.asarray(got).dtype == np.asarray(value).dtype
    assert np.array_equal(got, value)


def test_a_numpy_scalar_from_the_student_reaches_the_grader_as_that_scalar(tmp_path: Path):
    (tmp_path / "counts.py").write_text(
        "import numpy as np\n\n\n"
        "def flops(T):\n    return 4 * np.power(T, 2)\n\n\n"
        "def shape_of(x):\n    return list(np.shape(x))\n"
    )
    with Worker(tmp_path, "counts", Sandbox.detect("fallback"), 10) as worker:
        value, _ = worker.request("flops", (5,), {}, None, "call")
        assert type(value) is np.int64 and value == 100
        shape, _ = worker.request("shape_of", (np.array(2.0),), {}, None, "call")
        assert shape == []
