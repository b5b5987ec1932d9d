"""The Python the worker runs: the grader's own, or a copy that the sandbox uid can read.

The dedicated uid (see ``layers``) can only start an interpreter that other users can reach.
Python installed under a 0700 home (pyenv in ``/root``, as on this project's CI) cannot be,
so the uid layer is off there, and with no cgroup nothing else makes ``RLIMIT_NPROC`` bind or
lets ``kill(-1)`` as that uid end everything. ``install`` copies what a worker needs (the
interpreter, a shared libpython if it links one, the standard library without its tests,
IDLE, Tk and the like, and NumPy) into a root-owned, world-readable folder,
``/var/lib/autograder/runtime`` by default (``autograder sandbox runtime``). ``find`` hands
it to the sandbox only after running it: the same Python and NumPy versions as the grader's,
its prefix inside the copy (not the original it was copied from), or a note saying why not.

Nothing here runs student code; the copy is made and checked as the grader.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from autograder.errors import UsageError

RUNTIME_DIR = Path("/var/lib/autograder/runtime")
RUNTIME_VARIABLE = "AUTOGRADER_RUNTIME"  # names a runtime made elsewhere (--to DIR)
MANIFEST = "runtime.json"
COMMAND = "autograder sandbox runtime"
# Parts of the standard library no worker imports: tests, IDEs, GUIs, installers, the
# build's static library, and whatever third-party packages the interpreter has.
LEFT_OUT = {
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "ensurepip",
    "lib2to3",
    "site-packages",
    "dist-packages",
    "pydoc_data",
    "venv",
}
LEFT_OUT_DYNLOAD = ("_tkinter", "_test", "xxlimited", "xxsubtype", "_xxtestfuzz")
CHECK = """
import json, sys
sys.path.append(sys.argv[1])
import numpy
print(json.dumps({"python": list(sys.version_info[:3]), "prefix": sys.prefix,
                  "numpy": numpy.__version__, "numpy_file": numpy.__file__}))
"""


@dataclass(frozen=True)
class Runtime:
    """An interpreter and NumPy, and the folders a confined worker must see for them."""

    python: str  # the interpreter the worker runs
    numpy_site: str  # the folder NumPy is imported from (the worker's last argument)
    folders: tuple[str, ...]  # bound read-only under bubblewrap: prefixes and NumPy's site
    landlock_folders: tuple[str, ...]  # allowed by Landlock: prefixes and NumPy alone
    library_path: str | None = None  # LD_LIBRARY_PATH for a copied shared libpython
    copy: Path | None = None  # the runtime folder, or None for the grader's own Python

    @property
    def summary(self) -> str:
        version = ".".join(map(str, sys.version_info[:3]))
        where = f"a copy in {self.copy}" if self.copy else "the grader's own"
        return f"{where}: Python {version} ({self.python}), NumPy {np.__version__}"


@functools.cache
def grader_runtime() -> Runtime:
    """The grader's own interpreter and NumPy (with bwrap, NumPy's whole site folder is
    shown; with Landlock, only NumPy's own folders are allowed)."""
    numpy_dir = Path(np.__file__).resolve().parent
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    prefixes.add(str(Path(sys.executable).resolve().parent.parent))
    landlock = prefixes | {str(numpy_dir), str(numpy_dir.parent / "numpy.libs")}
    return Runtime(
        python=sys.executable,
        numpy_site=str(numpy_dir.parent),
        folders=_existing(prefixes | {str(numpy_dir.parent)}),
        landlock_folders=_existing(landlock),
    )


def _existing(paths: set[str]) -> tuple[str, ...]:
    return tuple(sorted(p for p in paths if not p.startswith("/usr/") and os.path.isdir(p)))


def default_folder() -> Path:
    return Path(os.environ.get(RUNTIME_VARIABLE) or RUNTIME_DIR)


def copied_runtime(folder: Path) -> Runtime:
    """The runtime ``install`` made in ``folder`` (not yet checked)."""
    lib = folder / "lib"
    python = folder / "bin" / Path(_interpreter()).name
    site = folder / "site"
    return Runtime(
        python=str(python),
        numpy_site=str(site),
        folders=(str(folder),),
        landlock_folders=(str(folder),),
        library_path=str(lib) if any(lib.glob("libpython*")) else None,
        copy=folder,
    )


# -- choosing -----------------------------------------------------------------------------------


def find(folder: Path | None = None) -> tuple[Runtime, str]:
    """The runtime in ``folder`` (default: $AUTOGRADER_RUNTIME or RUNTIME_DIR) if it is there
    and matches the grader's Python and NumPy, else the grader's own; and a note when one is
    there but not used."""
    folder = Path(folder) if folder is not None else default_folder()
    if not (folder / MANIFEST).is_file():
        return grader_runtime(), ""
    try:
        stamp = (folder / MANIFEST).stat().st_mtime_ns
    except OSError as error:
        return grader_runtime(), f"the runtime in {folder} is not used: {error.strerror}"
    why = _check(folder, stamp)
    if why:
        return grader_runtime(), f"the runtime in {folder} is not used: {why}; run {COMMAND} again"
    return copied_runtime(folder), ""


@functools.cache
def _check(folder: Path, stamp: int) -> str:
    """Why the runtime in ``folder`` must not be used, or "": run once per process and
    version of its manifest (about a tenth of a second: it imports NumPy)."""
    why = _untrusted(folder)
    if why:
        return why
    runtime = copied_runtime(folder)
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    if runtime.library_path:
        env["LD_LIBRARY_PATH"] = runtime.library_path
    try:
        done = subprocess.run(
            [runtime.python, "-I", "-S", "-c", CHECK, runtime.numpy_site],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        seen = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError) as error:
        return f"its Python could not start ({error})"
    if not isinstance(seen, dict):
        last = done.stderr.strip().splitlines()
        return f"its Python failed: {last[-1] if last else done.returncode}"
    python = ".".join(map(str, seen.get("python", [])))
    mine = ".".join(map(str, sys.version_info[:3]))
    if python != mine:
        return f"it has Python {python}, the grader Python {mine}"
    if seen.get("numpy") != np.__version__:
        return f"it has NumPy {seen.get('numpy')}, the grader NumPy {np.__version__}"
    inside = [seen.get("prefix", ""), seen.get("numpy_file", "")]
    if not all(Path(str(p)).resolve().is_relative_to(folder.resolve()) for p in inside):
        return f"its Python runs from {seen.get('prefix')}, not from the copy"
    return ""


def _untrusted(folder: Path, parent: bool = False) -> str:
    """Why the grader must not run ``folder``'s interpreter: a folder on its path that
    someone other than root (or the grader) owns or may write, or one others cannot enter.
    A sticky folder (/tmp, /var/tmp) is safe to pass through: no one else may rename in it.
    With ``parent``, ``folder`` is where the runtime will be made, so it may be sticky too."""
    current = folder.resolve()
    for part in [*reversed(current.parents), current]:
        info = os.stat(part)
        sticky = (parent or part != current) and info.st_mode & stat.S_ISVTX
        if info.st_uid not in (0, os.geteuid()) or (info.st_mode & 0o022 and not sticky):
            return f"{part} may be written by other users"
        if not info.st_mode & stat.S_IXOTH:
            return f"{part} (mode {stat.S_IMODE(info.st_mode):04o}) cannot be entered by others"
    return ""


# -- copying ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Installed:
    folder: Path
    files: int
    bytes: int
    seconds: float


def install(folder: Path) -> Installed:
    """Copy the grader's interpreter, the standard library it needs and NumPy into
    ``folder``, replacing what was there, and check the copy; raises UsageError if the
    folder would be unreachable by the sandbox uid or the copy does not run."""
    began = time.monotonic()
    folder = Path(os.path.abspath(folder))
    parent = _first_existing(folder.parent)
    why = _untrusted(parent, parent=True)
    if why:
        raise UsageError(f"cannot make the runtime in {folder}: {why}")
    folder.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=f".{folder.name}.new-", dir=folder.parent))
    try:
        files, size = _copy_all(fresh)
        (fresh / MANIFEST).write_text(json.dumps(_manifest(), indent=2) + "\n")
        os.chmod(fresh / MANIFEST, 0o644)
        os.chmod(fresh, 0o755)
        _swap(fresh, folder)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
    why = _check(folder, (folder / MANIFEST).stat().st_mtime_ns)
    if why:
        raise UsageError(f"the runtime copied into {folder} does not work: {why}")
    return Installed(folder, files, size, time.monotonic() - began)


def _first_existing(path: Path) -> Path:
    while not path.exists():
        path = path.parent
    return path


def _swap(fresh: Path, folder: Path) -> None:
    """Put ``fresh`` in place of ``folder`` with renames, so a grader never sees half."""
    old = None
    if folder.exists() or folder.is_symlink():
        old = folder.with_name(f".{folder.name}.old-{os.getpid()}")
        os.rename(folder, old)
    os.rename(fresh, folder)
    if old is not None:
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old, ignore_errors=True)
        else:
            old.unlink()


def _interpreter() -> str:
    """The real interpreter binary (a virtual environment's python is a link to it)."""
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def _manifest() -> dict:
    return {
        "python": ".".join(map(str, sys.version_info[:3])),
        "numpy": np.__version__,
        "copied_from": _interpreter(),
        "made": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def _copy_all(to: Path) -> tuple[int, int]:
    """Lay out ``to`` as a Python prefix (bin/, lib/pythonX.Y/ with lib-dynload) plus site/
    with NumPy; returns files and bytes copied."""
    counts = [0, 0]
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    bin_dir, lib = to / "bin", to / "lib"
    stdlib = to / sys.platlibdir / version  # where the copied interpreter looks for os.py
    _copy_file(Path(_interpreter()), bin_dir / Path(_interpreter()).name, counts)
    shared = sysconfig.get_config_var("INSTSONAME")
    libdir = sysconfig.get_config_var("LIBDIR")
    linked = shared and libdir and sysconfig.get_config_var("Py_ENABLE_SHARED")
    if linked and (Path(libdir) / shared).is_file():  # the interpreter needs it to start
        _copy_file(Path(libdir) / shared, lib / shared, counts)
    source = Path(sysconfig.get_path("stdlib"))
    _copy_tree(source, stdlib, counts, top_left_out=LEFT_OUT)
    dynload = Path(sysconfig.get_path("platstdlib")) / "lib-dynload"
    if not (stdlib / "lib-dynload").is_dir() and dynload.is_dir():
        _copy_tree(dynload, stdlib / "lib-dynload", counts)
    numpy_dir = Path(np.__file__).resolve().parent
    _copy_tree(numpy_dir, to / "site" / "numpy", counts)
    if (numpy_dir.parent / "numpy.libs").is_dir():
        _copy_tree(numpy_dir.parent / "numpy.libs", to / "site" / "numpy.libs", counts)
    for folder in (to, bin_dir, lib, stdlib.parent):
        if folder.is_dir():
            os.chmod(folder, 0o755)
    return counts[0], counts[1]


def _copy_tree(
    source: Path, target: Path, counts: list[int], top_left_out: set[str] | None = None
) -> None:
    """Copy ``source`` into ``target``: regular files and folders, links as links; no
    tests, no optimised bytecode (-O is never used), nothing in ``top_left_out``."""
    tag = sys.implementation.cache_tag
    for root, dirs, files in os.walk(source):
        here = Path(root)
        rel = here.relative_to(source)
        dirs[:] = [
            d
            for d in dirs
            if d not in ("tests", "test")
            and not (rel == Path(".") and d in (top_left_out or ()))
            and not d.startswith("config-")
        ]
        (target / rel).mkdir(mode=0o755, parents=True, exist_ok=True)
        os.chmod(target / rel, 0o755)
        for name in files:
            if here.name == "__pycache__" and not name.endswith(f".{tag}.pyc"):
                continue
            if here.name == "lib-dynload" and name.startswith(LEFT_OUT_DYNLOAD):
                continue
            _copy_file(here / name, target / rel / name, counts)
        for name in dirs:
            if (here / name).is_symlink():  # os.walk does not descend into it: keep the link
                with contextlib.suppress(FileExistsError):
                    os.symlink(os.readlink(here / name), target / rel / name)


def _copy_file(source: Path, target: Path, counts: list[int]) -> None:
    target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    if source.is_symlink():
        os.symlink(os.readlink(source), target)
        return
    if not source.is_file():
        return
    shutil.copy2(source, target)  # keeps mtimes, so the copied .pyc files stay valid
    mode = os.stat(source).st_mode
    os.chmod(target, 0o755 if mode & 0o111 else 0o644)
    counts[0] += 1
    counts[1] += os.stat(target).st_size
