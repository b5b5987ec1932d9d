"""Objects that live in the worker: a hidden test constructs a student's class, sets and reads
attributes and calls methods through handles, and the diagnosis replays all of it on the
catalogued variants."""

import textwrap

import numpy as np
import pytest

from autograder.engine import context
from autograder.engine.context import GradingContext, RemoteObject, Student
from autograder.engine.diagnosis import Feedback
from autograder.engine.mistakes import Catalogue, Diagnoser, module_from_source
from autograder.sandbox.layers import Sandbox
from autograder.sandbox.worker import StudentCrashed, StudentMissing, StudentRaised, Worker
from autograder.suite import expect

REFERENCE = textwrap.dedent(
    '''
    import numpy as np


    class Cache:
        """Keeps the rows appended to it."""

        def __init__(self, width):
            self.width = width
            self.rows = np.zeros((0, width))

        def append(self, row):
            self.rows = np.concatenate([self.rows, np.atleast_2d(row)])

        def __len__(self):
            return len(self.rows)

        def total(self):
            return self.rows.sum(axis=0) * getattr(self, "scale", 1.0)


    def grow(cache, row):
        """Appends row to cache, then returns its length."""
        cache.append(row)
        return len(cache)


    def crash():
        import os

        os._exit(3)
    '''
)

catalogue = Catalogue()


@catalogue.mistake("append-twice", replaces="Cache.append", why="Twice.", hint="Once.")
def append_twice(self, row):
    self.rows = np.concatenate([self.rows, np.atleast_2d(row), np.atleast_2d(row)])


@catalogue.mistake("grow-forgets", replaces="grow", why="No append.", hint="Append.")
def grow_forgets(cache, row):
    return len(cache)


def variant_source(name):
    return next(v for v in catalogue.variants if v.name == name).source(REFERENCE)


@pytest.fixture(scope="module")
def box():
    return Sandbox.detect("fallback")


def session(tmp_path, box, source):
    (tmp_path / "objs.py").write_text(source)
    worker = Worker(tmp_path, "objs", box, timeout=30)
    ctx = GradingContext(
        worker=worker,
        reference=module_from_source(REFERENCE, "reference"),
        diagnoser=Diagnoser(catalogue, REFERENCE),
    )
    return worker, ctx


@pytest.fixture
def honest(tmp_path, box):
    worker, ctx = session(tmp_path, box, REFERENCE)
    with worker, context.running(ctx):
        yield Student(ctx)


def test_construct_call_read_and_set_through_handles(honest):
    cache = honest.Cache(3)
    assert isinstance(cache, RemoteObject) and repr(cache) == "<your Cache>"
    assert cache.width == 3 and len(cache) == 0
    cache.append(np.ones(3))
    cache.append(np.arange(3.0))
    assert len(cache) == 2
    np.testing.assert_array_equal(cache.rows, [[1, 1, 1], [0, 1, 2]])
    cache.scale = 10.0  # a test sets an attribute, as the hidden tests set weights
    np.testing.assert_array_equal(cache.total(), [10, 20, 30])
    assert honest.grow(cache, np.zeros(3)) == 3  # an object passed back as an argument
    assert len(cache) == 3


def test_problems_name_the_class_and_method(honest):
    cache = honest.Cache(2)
    with pytest.raises(StudentRaised, match=r"Cache\.nope raised AttributeError"):
        cache.nope  # noqa: B018
    with pytest.raises(StudentMissing, match="your Cache has no method named width"):
        honest._context.call("width", (), {}, target=cache)  # width is data: not callable


def test_an_object_from_a_worker_that_died_is_reported_lost(honest):
    cache = honest.Cache(2)
    with pytest.raises(StudentCrashed):
        honest.crash()
    with pytest.raises(StudentCrashed, match="your Cache object was lost"):
        cache.append(np.ones(2))
    assert len(honest.Cache(2)) == 0  # a fresh worker serves new objects


@pytest.mark.parametrize("mistake", ["append-twice", "grow-forgets"])
def test_the_diagnosis_replays_what_happened_to_the_object(tmp_path, box, mistake):
    worker, ctx = session(tmp_path, box, variant_source(mistake))
    reference = module_from_source(REFERENCE, "reference")
    with worker, context.running(ctx):
        student = Student(ctx)
        cache, want = student.Cache(2), reference.Cache(2)
        for row in (np.ones(2), np.array([1.0, 2.0])):
            student.grow(cache, row)
            reference.grow(want, row)
        with pytest.raises(Feedback) as error:
            expect(cache.total(), want.total())
        assert [m.name for m in error.value.mistakes] == [mistake]
        assert str(error.value).startswith("your Cache.total()")


def test_a_call_that_raised_for_the_student_does_not_stop_the_replay(tmp_path, box):
    """A test may first check that a bad input raises, then use the same object: replaying
    that call on a variant raises too, and the diagnosis goes on past it."""
    worker, ctx = session(tmp_path, box, variant_source("append-twice"))
    reference = module_from_source(REFERENCE, "reference")
    with worker, context.running(ctx):
        student = Student(ctx)
        cache, want = student.Cache(2), reference.Cache(2)
        with pytest.raises(StudentRaised):
            cache.append(np.ones(5))  # the wrong width: np.concatenate raises
        cache.append(np.ones(2))
        want.append(np.ones(2))
        with pytest.raises(Feedback) as error:
            expect(cache.total(), want.total())
        assert [m.name for m in error.value.mistakes] == ["append-twice"]
