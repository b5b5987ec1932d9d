"""This machine's sandbox: ``doctor`` says which layers work here, ``sandbox runtime``
prepares what the dedicated uid needs."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from autograder.errors import ExitCode, UsageError
from autograder.sandbox import doctor, runtime
from autograder.sandbox.layers import STRONG_MEANS, WEAK_MEANS, Sandbox
from autograder.workflows.command import Command, add_actions, no_options, sandbox_option


def run_doctor(args: argparse.Namespace) -> int:
    print("\n".join(doctor.report(Sandbox.detect(args.sandbox))))
    return ExitCode.OK


def run_sandbox(args: argparse.Namespace) -> int:
    """``sandbox runtime``: copy Python and NumPy where the sandbox uid can read them."""
    if args.to is None and os.geteuid() != 0:
        raise UsageError(
            f"{runtime.RUNTIME_DIR} is for a grader running as root (the dedicated uid needs "
            "root); pass --to DIR to make a runtime elsewhere"
        )
    made = runtime.install(Path(args.to) if args.to else runtime.RUNTIME_DIR)
    print(
        f"copied {made.files} files ({made.bytes >> 20} MiB) into {made.folder} "
        f"in {made.seconds:.1f} s; checked: {runtime.copied_runtime(made.folder).summary}"
    )
    if args.to and Path(args.to).resolve() != runtime.default_folder().resolve():
        print(f"the sandbox uses it when {runtime.RUNTIME_VARIABLE}={made.folder} is set")
    return ExitCode.OK


def add_sandbox_arguments(p: argparse.ArgumentParser) -> None:
    q = add_actions(p).add_parser(
        "runtime",
        help=f"copy Python and NumPy into {runtime.RUNTIME_DIR} for the dedicated uid",
        description="Copy the grader's interpreter (and its shared libpython), the standard "
        "library without tests, IDLE and Tk, and NumPy into a root-owned, world-readable "
        f"folder (default {runtime.RUNTIME_DIR}), replacing an older copy. The worker runs "
        "this copy whenever its Python and NumPy versions are the grader's, so the dedicated "
        "uid works even where Python lives under a home folder others cannot enter. Run it "
        "again after upgrading Python or NumPy.",
    )
    q.add_argument(
        "--to",
        metavar="DIR",
        help=f"where to make it (the sandbox looks there when {runtime.RUNTIME_VARIABLE}=DIR)",
    )


DOCTOR = Command(
    "doctor",
    help="report which sandbox layers work on this machine",
    description="Detect bubblewrap, Landlock, the dedicated uid and resource limits, and "
    f"say whether the sandbox is {STRONG_MEANS}; or {WEAK_MEANS}.",
    add_arguments=no_options,
    parents=(sandbox_option("the mode to examine"),),
    run=run_doctor,
)
SANDBOX = Command(
    "sandbox",
    help="prepare this machine's sandbox (a Python the dedicated uid can run)",
    description="Prepare what the sandbox needs on this machine; `doctor` says what is missing.",
    add_arguments=add_sandbox_arguments,
    run=run_sandbox,
)
