"""Measuring the peak memory of a call into student code, and feedback that reports it.

The worker traces a measured call with tracemalloc; ``measure_memory`` and
``expect_peak_below`` are how a hidden suite asks for it and judges it.
"""

import numpy as np
import pytest

from autograder.engine import context
from autograder.engine.context import GradingContext
from autograder.engine.diagnosis import Feedback, traced_peak
from autograder.engine.mistakes import Catalogue, Diagnoser, module_from_source
from autograder.sandbox.layers import Sandbox
from autograder.sandbox.worker import StudentRaised, Worker
from autograder.suite import expect_peak_below, measure_memory

MiB = 1 << 20

SUBMISSION = """
import tracemalloc

import numpy as np


def ones(n):
    return np.ones(n)


def total(x):
    return float(x.sum())


def tracing():
    return tracemalloc.is_tracing()


def fails(n):
    np.ones(n)
    raise ValueError("no")
"""


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    folder = tmp_path_factory.mktemp("submission")
    (folder / "memory.py").write_text(SUBMISSION)
    with Worker(folder, "memory", Sandbox.detect("fallback"), timeout=30) as running:
        yield running


def test_a_measured_call_reports_what_it_allocated_result_included(worker):
    value, _, peak = worker.measure("ones", MiB // 8)
    assert value.shape == (MiB // 8,)
    assert MiB <= peak < MiB + 64 * 1024


def test_the_inputs_do_not_count(worker):
    value, _, peak = worker.measure("total", np.ones(4 * MiB // 8))
    assert value == 4 * MiB // 8
    assert peak < 64 * 1024


def test_calls_are_not_traced_unless_measured_even_after_a_failure(worker):
    with pytest.raises(StudentRaised):
        worker.measure("fails", MiB)
    assert worker.call("tracing") == (False, "")
    assert worker.measure("tracing")[0] is True


def test_traced_peak_in_this_process():
    value, peak = traced_peak(np.zeros, MiB // 8)
    assert value.shape == (MiB // 8,) and MiB <= peak < MiB + 64 * 1024


# -- feedback ---------------------------------------------------------------------------------

REFERENCE = """
import numpy as np


def norm2(x):
    return float(x @ x)
"""

catalogue = Catalogue()


@catalogue.mistake("outer-product", replaces="norm2", why="An n×n matrix.", hint="Use a dot.")
def outer_product(x):
    return float(np.outer(x, x).trace())


@catalogue.mistake("three-outer-products", replaces="norm2", why="Three.", hint="Use one dot.")
def three_outer_products(x):
    a, b, c = np.outer(x, x), np.outer(x, 2 * x), np.outer(x, 3 * x)
    return float(a.trace() + b.trace() + c.trace()) / 6


@catalogue.mistake("outer-wrong", replaces="norm2", why="Wrong and big.", hint="Check.")
def outer_wrong(x):
    return float(np.outer(x, x).sum())


class InProcess:
    """A stand-in for the worker that runs a trusted module here, measured as the worker does."""

    def __init__(self, module):
        self.module = module

    peak = 0

    def request(self, function, args, kwargs, target=None, op="call", measure=False):
        run = getattr(self.module, function)
        if not measure:
            return run(*args, **kwargs), ""
        value, self.peak = traced_peak(run, *args, **kwargs)
        return value, ""


@pytest.fixture
def student(request):
    variant = next(v for v in catalogue.variants if v.name == request.param)
    ctx = GradingContext(
        worker=InProcess(module_from_source(variant.source(REFERENCE), "student")),
        reference=module_from_source(REFERENCE, "reference"),
        diagnoser=Diagnoser(catalogue, REFERENCE),
    )
    with context.running(ctx):
        yield context.Student(ctx)


X = np.arange(1024.0)  # an outer product of X is 8 MiB


@pytest.mark.parametrize("student", ["outer-product"], indirect=True)
def test_the_peak_is_reported_next_to_the_bound_and_the_mistake_named(student):
    with measure_memory() as memory:
        assert student.norm2(X) == X @ X
    assert 8 * MiB <= memory.peak < 9 * MiB
    with pytest.raises(Feedback) as error:
        expect_peak_below(memory, MiB, "a tenth of the matrix")
    text = str(error.value)
    assert text.startswith("norm2(") and ") allocated a peak of 8." in text
    assert " MiB while it ran (measured with tracemalloc)" in text
    assert "the bound is 1.0 MiB (a tenth of the matrix)." in text
    # three-outer-products peaks three times higher, outer-wrong gives another value
    assert [m.name for m in error.value.mistakes] == ["outer-product"]


@pytest.mark.parametrize("student", ["outer-product"], indirect=True)
def test_a_peak_within_the_bound_passes_and_calls_outside_are_not_measured(student):
    with measure_memory() as memory:
        student.norm2(X[:16])
    expect_peak_below(memory, MiB)
    student.norm2(X)  # outside the block: not measured
    assert len(memory.calls) == 1 and context.current().measured is None


@pytest.mark.parametrize("student", ["outer-product"], indirect=True)
def test_only_the_suspects_are_replayed(student):
    with measure_memory() as memory:
        student.norm2(X)
    with pytest.raises(Feedback) as error:
        expect_peak_below(memory, MiB, suspects=["three-outer-products"])
    assert error.value.mistakes == []
