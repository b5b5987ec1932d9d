"""Walking and removing a student's folder tree, bounded: no recursion, depth and file-count
limits, symbolic links never followed.

``os.walk`` recurses in Python 3.11 and ``shutil.rmtree`` recurses too, so a folder nested
about a thousand levels deep raises ``RecursionError`` from either; and neither bounds how much
it visits. Hence these small iterative versions. ``remove_tree`` holds one folder descriptor
at a time and works relative to it, so it removes any depth (even past PATH_MAX).

This module imports only the standard library: the janitor process runs it as a file.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MAX_DEPTH = 32  # folder levels below the submission's own
MAX_FILES = 2000  # regular files that a walk visits
SKIPPED = ("__pycache__",)  # folders not walked, besides every hidden one (a leading dot)
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class TreeTooBig(ValueError):
    """A student's folder is past a walk's limit: a problem of the submission, one line."""


@dataclass(frozen=True)
class TreeLimits:
    depth: int = MAX_DEPTH
    files: int = MAX_FILES


def skipped(folder: str) -> bool:
    return folder.startswith(".") or folder in SKIPPED


def walk_files(root: Path, limits: TreeLimits = TreeLimits()) -> Iterator[tuple[str, Path]]:
    """(relative posix path, path) of every regular file under ``root`` that grading sees, in
    sorted order; hidden folders, __pycache__ and links are skipped, never followed.

    Raises TreeTooBig past ``limits``, before yielding anything beyond them."""
    root = Path(root)
    files = 0
    stack: list[tuple[str, int]] = [("", 0)]  # (relative folder, depth), depth first
    while stack:
        folder, depth = stack.pop()
        entries = sorted(os.scandir(root / folder) if folder else os.scandir(root), key=_name)
        subfolders = []
        for entry in entries:
            rel = f"{folder}/{entry.name}" if folder else entry.name
            if entry.is_dir(follow_symlinks=False):
                if skipped(entry.name):
                    continue
                if depth + 1 > limits.depth:
                    raise TreeTooBig(f"the folder is nested deeper than {limits.depth} levels")
                subfolders.append((rel, depth + 1))
            elif entry.is_file(follow_symlinks=False):
                files += 1
                if files > limits.files:
                    raise TreeTooBig(f"the folder holds more than {limits.files} files")
                yield rel, root / rel
        stack.extend(reversed(subfolders))  # so that the first in sorted order comes next


def _name(entry: os.DirEntry) -> str:
    return entry.name


def check_tree(root: Path, limits: TreeLimits = TreeLimits()) -> str:
    """The problem with ``root`` as one line, or "" when it is within ``limits``."""
    try:
        for _ in walk_files(root, limits):
            pass
    except TreeTooBig as problem:
        return str(problem)
    return ""


def remove_tree(path: Path | str) -> bool:
    """Remove ``path`` and everything under it, however deep; never follows a link (a link is
    removed, not what it points to). Never raises; returns whether the path is gone."""
    path = os.fspath(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    with contextlib.suppress(OSError):
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(path)
        else:
            _empty_folder(path)
            os.rmdir(path)
    return not os.path.lexists(path)


def _empty_folder(path: str) -> None:
    """Depth first with one open folder at a time: down by name, back up through "..", a
    stack of names only. A folder that cannot be emptied is skipped, so this always ends."""
    fd = os.open(path, DIR_FLAGS)
    names: list[str] = []
    stuck: set[tuple[int, int]] = set()
    try:
        while True:
            child = _clear_files(fd, stuck)
            if child is not None:
                try:
                    inner = os.open(child, DIR_FLAGS, dir_fd=fd)
                except OSError:
                    stuck.add(_identity(child, fd))
                    continue
                os.close(fd)
                fd = inner
                names.append(child)
                continue
            if not names:
                return
            parent = os.open("..", DIR_FLAGS, dir_fd=fd)
            here = os.fstat(fd)
            os.close(fd)
            fd, name = parent, names.pop()
            try:
                os.rmdir(name, dir_fd=fd)
            except OSError:
                stuck.add((here.st_dev, here.st_ino))
    finally:
        os.close(fd)


def _identity(name: str, fd: int) -> tuple[int, int]:
    info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    return info.st_dev, info.st_ino


def _clear_files(fd: int, stuck: set[tuple[int, int]]) -> str | None:
    """Unlink every non-folder in the open folder ``fd``; return one subfolder still to empty."""
    found = None
    with os.scandir(fd) as entries:
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    info = entry.stat(follow_symlinks=False)
                    if found is None and (info.st_dev, info.st_ino) not in stuck:
                        found = entry.name
                else:
                    os.unlink(entry.name, dir_fd=fd)
            except OSError:
                continue
    return found
