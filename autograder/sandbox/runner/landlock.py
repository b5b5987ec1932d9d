"""Landlock: a Linux process restricts itself (and every child) to an allow-list of folders.

A small ``ctypes`` module over the three system calls rather than a binding: it is copied
next to the worker and run there before the student's module is imported, so it must need
nothing but the standard library, and the calls are three structs and three syscall numbers.
``abi()`` and ``rights()`` are also used by the grader to detect and describe the layer.

ABI versions: 1 file system, 2 REFER, 3 TRUNCATE, 4 TCP bind and connect, 5 IOCTL on devices,
6 scoping of signals and abstract unix sockets. UDP and raw sockets are not covered by any.
"""

import ctypes
import json
import os
import platform
import struct

SYSCALLS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446)}  # create, add_rule, restrict
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

# file-system rights, and the first ABI that knows each
FS = {
    "execute": (1 << 0, 1),
    "write_file": (1 << 1, 1),
    "read_file": (1 << 2, 1),
    "read_dir": (1 << 3, 1),
    "remove_dir": (1 << 4, 1),
    "remove_file": (1 << 5, 1),
    "make_char": (1 << 6, 1),
    "make_dir": (1 << 7, 1),
    "make_reg": (1 << 8, 1),
    "make_sock": (1 << 9, 1),
    "make_fifo": (1 << 10, 1),
    "make_block": (1 << 11, 1),
    "make_sym": (1 << 12, 1),
    "refer": (1 << 13, 2),
    "truncate": (1 << 14, 3),
    "ioctl_dev": (1 << 15, 5),
}
FILE_ONLY = {"execute", "write_file", "read_file", "truncate", "ioctl_dev"}  # valid on a file
NET = {"bind_tcp": (1 << 0, 4), "connect_tcp": (1 << 1, 4)}
SCOPE = {"abstract_unix_socket": (1 << 0, 6), "signal": (1 << 1, 6)}

READ = {"read_file", "read_dir"}
READ_EXEC = READ | {"execute"}
READ_WRITE = set(FS) - {"execute", "make_char", "make_block", "ioctl_dev"}


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi() -> int:
    """The running kernel's Landlock ABI version, or 0 where there is none."""
    numbers = SYSCALLS.get(platform.machine())
    if not numbers or platform.system() != "Linux":
        return 0
    try:
        version = _libc().syscall(numbers[0], None, ctypes.c_size_t(0), CREATE_RULESET_VERSION)
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


def rights(version: int) -> dict[str, list[str]]:
    """What a ruleset handles at this ABI: the names, by kind."""
    return {
        kind: [name for name, (_, since) in table.items() if since <= version]
        for kind, table in (("fs", FS), ("net", NET), ("scope", SCOPE))
    }


def _mask(table: dict, names: set[str] | list[str]) -> int:
    mask = 0
    for name in names:
        mask |= table[name][0]
    return mask


def restrict(read_exec: list[str], read: list[str], read_write: list[str]) -> dict:
    """Confine this process and its future children; return what was applied.

    Paths that do not exist are skipped. Raises OSError if the kernel refuses."""
    version = abi()
    if not version:
        raise OSError("Landlock is not available")
    numbers = SYSCALLS[platform.machine()]
    handled = rights(version)
    fs = _mask(FS, handled["fs"])
    net = _mask(NET, handled["net"])
    scope = _mask(SCOPE, handled["scope"])
    attr = struct.pack("=QQQ", fs, net, scope)[: 8 if version < 4 else 16 if version < 6 else 24]
    libc = _libc()
    ruleset = libc.syscall(numbers[0], attr, ctypes.c_size_t(len(attr)), 0)
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for paths, names in ((read_exec, READ_EXEC), (read, READ), (read_write, READ_WRITE)):
            for path in paths:
                _allow(libc, numbers[1], ruleset, path, names & set(handled["fs"]))
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS failed")
        if libc.syscall(numbers[2], ruleset, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    return {"abi": version, **handled}


def _allow(libc: ctypes.CDLL, number: int, ruleset: int, path: str, names: set[str]) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # nothing there to allow
    try:
        if not os.path.isdir(path):
            names = names & FILE_ONLY
        rule = struct.pack("=Qi", _mask(FS, names), fd)  # packed: u64 access, s32 fd
        if libc.syscall(number, ruleset, RULE_PATH_BENEATH, rule, 0) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
    finally:
        os.close(fd)


def restrict_from(spec_file: str) -> dict:
    """Apply the rules the grader wrote as JSON: {"read_exec": [...], "read": [...], ...}."""
    with open(spec_file) as f:
        spec = json.load(f)
    return restrict(spec["read_exec"], spec["read"], spec["read_write"])
