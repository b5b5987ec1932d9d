"""Every walk of a student's tree is bounded: no recursion, depth and file-count limits, links
never followed, and removal of any depth (autograder.tree, and its users)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_collect import student_repo

from autograder.sandbox.worker import copy_submission
from autograder.tree import (
    MAX_DEPTH,
    TreeLimits,
    TreeTooBig,
    check_tree,
    remove_tree,
    walk_files,
)
from autograder.workflows import collect
from autograder.workflows.batch import content_hash

LEVELS = 1100  # past Python's recursion limit of 1000


def nested(root: Path, levels: int, name: str = "d") -> Path:
    """``levels`` folders inside each other under ``root``, one small file per level; made
    relative to an open folder, so that deep paths cost no path walk."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for level in range(levels):
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
            file = os.open("f.txt", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd)
            os.write(file, str(level).encode())
            os.close(file)
    finally:
        os.close(fd)
    return root


@pytest.fixture(scope="module")
def deep(tmp_path_factory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("deep")
    (folder / "attention.py").write_text("x = 1\n")
    yield nested(folder, LEVELS)
    assert remove_tree(folder)  # pytest's own clean-up of old folders recurses


def test_a_folder_past_the_recursion_limit_is_a_clear_problem(deep):
    assert check_tree(deep) == f"the folder is nested deeper than {MAX_DEPTH} levels"
    assert content_hash(deep).startswith("too-big:")  # no RecursionError


def test_copying_it_for_a_worker_stops_at_the_limit(deep, tmp_path):
    with pytest.raises(TreeTooBig, match="nested deeper"):
        copy_submission(deep, tmp_path / "copy")


def test_a_folder_with_too_many_files_is_refused(tmp_path):
    for i in range(12):
        (tmp_path / f"f{i}.py").write_text("")
    with pytest.raises(TreeTooBig, match="more than 10 files"):
        list(walk_files(tmp_path, TreeLimits(files=10)))
    assert len(list(walk_files(tmp_path, TreeLimits(files=12)))) == 12


def test_links_are_never_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("s = 1\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "a.py").write_text("a = 1\n")
    (sub / "into").symlink_to(outside)
    (sub / "file_link.py").symlink_to(outside / "secret.py")
    (sub / ".git").mkdir()
    (sub / ".git" / "x").write_text("")
    assert [rel for rel, _ in walk_files(sub)] == ["a.py"]
    assert remove_tree(sub)
    assert (outside / "secret.py").read_text() == "s = 1\n"  # the link went, not its target


def test_remove_tree_removes_any_depth(deep, tmp_path):
    # names of 200 characters: 40 levels make a path longer than PATH_MAX (4096)
    long = nested(tmp_path / "long", 40, name="n" * 200)
    assert remove_tree(long) and not long.exists()
    copy = nested(tmp_path / "copy", LEVELS)
    assert remove_tree(copy) and not copy.exists()
    assert remove_tree(tmp_path / "never-there")


def test_collect_refuses_a_repository_nested_too_deep(tmp_path):
    remotes = tmp_path / "remotes"
    remotes.mkdir()
    deep_path = "/".join(["d"] * (MAX_DEPTH + 1)) + "/f.txt"
    student_repo(remotes, "deep", {"attention.py": "x = 1\n", deep_path: "x"})
    student_repo(remotes, "fine", {"attention.py": "x = 1\n"})
    rows = collect.collect(
        "masks-and-heads",
        ["deep", "fine"],
        tmp_path / "into",
        template=f"file://{remotes}/{{login}}.git",
        say=lambda _: None,
    )
    by_login = {row.login: row for row in rows}
    assert by_login["deep"].status == "failed"
    assert by_login["deep"].notes == [
        f"the repository is nested deeper than {MAX_DEPTH} levels: not collected"
    ]
    assert not (tmp_path / "into" / "deep").exists()
    assert by_login["fine"].status == "collected"
    assert (tmp_path / "into" / "fine" / "attention.py").is_file()
    assert not [p for p in (tmp_path / "into").iterdir() if p.name.startswith(".deep.")]
