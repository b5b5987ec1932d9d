"""State is owned by objects, not modules: a grading session, a sandbox's reaper, a worker's
table of objects, a kernel's gradings. Two of them share nothing, and no module of the package
keeps a registry that grows for the life of the process."""

import ast
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from autograder import PACKAGE_DIR
from autograder.course.assignment import Assignment
from autograder.engine.grading import GradingSession, grade
from autograder.engine.mistakes import load_catalogue
from autograder.platforms.nbgrader import kernel
from autograder.result import Result
from autograder.sandbox.layers import Sandbox
from autograder.sandbox.runner import wire
from autograder.sandbox.worker import Worker

SLUG = "masks-and-heads"


@pytest.fixture(scope="module")
def assignment():
    return Assignment.load(SLUG)


@pytest.fixture(scope="module")
def box():
    return Sandbox.detect("fallback")


def with_mistake(assignment: Assignment, folder: Path, name: str) -> Path:
    """The reference's files, with the catalogued mistake ``name`` in place of its module."""
    shutil.copytree(assignment.reference, folder)
    variant = next(
        v for v in load_catalogue(assignment.suite / "mistakes.py").variants if v.name == name
    )
    (folder / assignment.module_file).write_text(variant.source(assignment.reference_source))
    return folder


# -- a grading session --------------------------------------------------------------------------


def test_each_load_of_a_catalogue_is_its_own(assignment):
    path = assignment.suite / "mistakes.py"
    assert load_catalogue(path) is not load_catalogue(path)


def test_two_sessions_share_no_catalogue_and_one_builds_each_variant_once(
    assignment, box, tmp_path
):
    mistaken = with_mistake(assignment, tmp_path / "mistaken", "causal-mask-inverted")
    first, second = GradingSession(assignment), GradingSession(assignment)
    result = grade(assignment, mistaken, box, first)
    assert result.score < result.max_score
    built = dict(first.catalogue.built)
    assert built  # diagnosing the mistake built variant modules, kept by this session
    assert second.catalogue is not first.catalogue
    grade(assignment, assignment.reference, box, second)
    assert second.catalogue.built == {}  # the reference needs no diagnosis: nothing was built
    grade(assignment, mistaken, box, first)  # again: the same modules, none built anew
    assert first.catalogue.built.keys() == built.keys()
    assert all(first.catalogue.built[k] is m for k, m in built.items())


def test_a_session_gives_each_submission_a_fresh_reference(assignment):
    session = GradingSession(assignment)
    assert session.reference() is not session.reference()


def test_a_session_grades_only_its_own_assignment(assignment, box):
    other = GradingSession(Assignment.load("flash-attention"))
    with pytest.raises(ValueError, match="a grading session of flash-attention cannot grade"):
        grade(assignment, assignment.reference, box, other)


# -- a sandbox's workers ------------------------------------------------------------------------


def test_a_sandboxs_running_workers_are_its_own(assignment, tmp_path):
    mine, other = Sandbox.detect("fallback"), Sandbox.detect("fallback")
    with Worker(assignment.reference, assignment.module, mine, timeout=30) as worker:
        value, _ = worker.call("causal_mask", 3)
        assert value.tolist() == np.tril(np.ones((3, 3), dtype=bool)).tolist()
        assert worker.process is not None
        assert mine.reaper.live == {worker.process.pid}
        assert other.reaper.live == set()
    assert mine.reaper.live == set()


# -- the worker's channel -----------------------------------------------------------------------


def test_a_lent_object_calls_back_through_its_workers_own_channel():
    requests, to_worker = os.pipe()  # the grader writes answers to `to_worker`
    from_worker, replies = os.pipe()
    try:
        objects = wire.Objects(channel=(requests, replies))
        lent = wire.decode({"t": "remote", "id": 1, "type": "KVCache"}, [], objects=objects)
        wire.send(to_worker, {"result": wire.encode(3, [])})
        assert len(lent) == 3
        asked, _ = wire.receive(from_worker)
        assert (asked["callback"], asked["target"], asked["name"]) == ("call", 1, "__len__")
    finally:
        for fd in (requests, to_worker, from_worker, replies):
            os.close(fd)


def test_a_lent_object_without_a_worker_cannot_call_back():
    with pytest.raises(RuntimeError, match="no grader to call back"):
        len(wire.Remote(1, "KVCache"))
    alone = wire.decode({"t": "remote", "id": 1, "type": "KVCache"}, [], objects=wire.Objects())
    with pytest.raises(RuntimeError, match="no grader to call back"):
        alone.size  # noqa: B018 - reading the attribute is the callback


# -- nbgrader's kernel --------------------------------------------------------------------------


@pytest.fixture
def counted_grading(monkeypatch):
    """kernel's grading replaced by a counter: each grading returns a fresh Result."""
    done: list[Path] = []
    monkeypatch.setattr(kernel, "extract", lambda notebook, assignment, folder: None)

    def fake_grade(assignment, folder):
        done.append(folder)
        return Result(assignment=assignment.slug, submission=str(folder))

    monkeypatch.setattr(kernel, "grade", fake_grade)
    return done


def test_a_kernels_gradings_are_kept_by_one_object_and_shared_by_no_other(
    counted_grading, tmp_path
):
    (tmp_path / f"{SLUG}.ipynb").write_text("{}")
    grades = kernel.KernelGrades()
    first = grades.graded(SLUG, tmp_path)
    assert grades.graded(SLUG, tmp_path) is first  # the next test cell reads it
    assert len(counted_grading) == 1
    assert kernel.KernelGrades().graded(SLUG, tmp_path) is not first
    assert len(counted_grading) == 2


def test_the_kernels_gradings_live_on_its_shell(monkeypatch):
    IPython = pytest.importorskip("IPython", reason="the nbgrader extra's kernel is not installed")
    shell = SimpleNamespace()
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    assert kernel.kernel_grades() is kernel.kernel_grades() is shell.autograder_grades
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)  # outside a kernel: no memory
    assert kernel.kernel_grades() is not kernel.kernel_grades()


# -- no module keeps a registry -----------------------------------------------------------------

# Module-level caches that stay, each a fact about the machine or the process, not state that
# grows with what the process grades: (module, name) -> why.
ALLOWED = {
    ("sandbox/layers.py", "_BWRAP_PROBED"): "whether bwrap runs here, as root or a sandbox uid",
    ("sandbox/layers.py", "_cgroups_here"): "which cgroups this machine lets the grader make",
    ("sandbox/layers.py", "_become_subreaper"): "a property of the process, set once",
    ("sandbox/layers.py", "_janitor_of"): "one janitor per process: it cleans up when it dies",
    ("sandbox/runtime.py", "grader_runtime"): "where this process's Python and NumPy live",
    ("sandbox/runtime.py", "_check"): "whether a runtime copy, at one manifest version, is sound",
    ("sandbox/scratch.py", "_libc"): "the C library this process has loaded",
    ("sandbox/scratch.py", "tmpfs_usable"): "whether this machine lets the grader mount a tmpfs",
    (
        "course/schema.py",
        "validator",
    ): "each shipped schema's validator, built once: they never change",
    # a ProcessPool initializer can leave its process's state nowhere else
    ("workflows/check.py", "_job"): "each job process's sandbox and grading sessions",
}
CONTAINERS = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
CONTAINER_CALLS = {"dict", "list", "set", "defaultdict", "Counter", "deque", "OrderedDict"}
COUNTERS = {"count", "WeakSet", "WeakKeyDictionary", "WeakValueDictionary"}  # state as made
MUTATORS = {"add", "append", "clear", "discard", "extend", "insert", "pop", "popitem", "remove"}
MUTATORS |= {"setdefault", "update"}
CACHES = {"cache", "lru_cache"}
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def called(node: ast.AST) -> str:
    node = node.func if isinstance(node, ast.Call) else node
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def module_level(body: list[ast.stmt]):
    for node in body:
        yield node
        for part in ("body", "orelse", "finalbody", "handlers"):
            if not isinstance(node, ast.FunctionDef | ast.ClassDef):
                yield from module_level(getattr(node, part, []))


def mutated_names(tree: ast.Module) -> set[str]:
    """Names that a function of the module changes in place, or rebinds through ``global``
    (filling a table where it is written, at module level, is writing it)."""
    inside = [n for f in ast.walk(tree) if isinstance(f, FUNCTIONS) for n in ast.walk(f)]
    found = set()
    for node in inside:
        if isinstance(node, ast.Global):
            found |= set(node.names)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in MUTATORS and isinstance(node.func.value, ast.Name):
                found.add(node.func.value.id)
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            for target in targets:
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    found.add(target.value.id)
    return found


def registries(path: Path) -> list[str]:
    """A module's module-level registries: a container that starts empty or that the module
    changes, a counter, and a function cached for the process. A constant table (filled where
    it is written, never changed) is none."""
    tree = ast.parse(path.read_text())
    changed = mutated_names(tree)
    found = []
    for node in module_level(tree.body):
        if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
            continue
        value, targets = node.value, node.targets if isinstance(node, ast.Assign) else [node.target]
        container = isinstance(value, CONTAINERS) or called(value) in CONTAINER_CALLS
        empty = container and not any(ast.iter_child_nodes(value))
        if isinstance(value, ast.Call) and called(value) in CONTAINER_CALLS:
            empty = not value.args and not value.keywords
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        for name in names:
            if (container and (empty or name in changed)) or called(value) in COUNTERS:
                found.append(name)
    for node in ast.walk(tree):
        if isinstance(node, FUNCTIONS) and any(called(d) in CACHES for d in node.decorator_list):
            found.append(node.name)
    return found


def package_modules() -> list[Path]:
    # the suites are course material, loaded afresh by each grading session
    return [p for p in sorted(PACKAGE_DIR.rglob("*.py")) if "suites" not in p.parts]


def test_no_module_of_the_package_keeps_a_registry():
    found = [
        f"{path.relative_to(PACKAGE_DIR).as_posix()}: {name}"
        for path in package_modules()
        for name in registries(path)
        if (path.relative_to(PACKAGE_DIR).as_posix(), name) not in ALLOWED
    ]
    assert found == []


def test_the_scan_finds_each_kind_of_registry(tmp_path):
    module = tmp_path / "module.py"
    module.write_text(
        "import functools, itertools\n"
        "EMPTY = {}\n"
        "SEEN: set[int] = set()\n"
        "GROWN = {'a': 1}\n"
        "NUMBERS = itertools.count()\n"
        "TABLE = {'a': 1}\n"
        "WORDS = dict(a=1)\n"
        "WORDS['b'] = 2\n"
        "def grow(key):\n"
        "    GROWN[key] = 2\n"
        "@functools.lru_cache(maxsize=8)\n"
        "def load(path):\n"
        "    return path\n"
    )
    assert registries(module) == ["EMPTY", "SEEN", "GROWN", "NUMBERS", "load"]


def test_the_allow_list_names_only_what_is_there():
    there = {
        (path.relative_to(PACKAGE_DIR).as_posix(), name)
        for path in package_modules()
        for name in registries(path)
    }
    assert set(ALLOWED) <= there
