"""autograder collect: real git over file:// URLs, one bare repository per student."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import git, student_repo

from autograder import cli
from autograder.workflows.collect import MANIFEST

SECRET = "ghp_klassTokenThatMustNeverBeWritten"


@pytest.fixture(scope="module")
def remotes(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("remotes")
    shas = {
        "alice": student_repo(root, "alice", {"attention.py": "A = 1\n", "answers.yaml": "q: 1\n"}),
        "dave": student_repo(root, "dave", {"attention.py": "D = 1\n"}, branch="trunk"),
        "frank": student_repo(
            root, "frank", {"attention.py": "F = 1\n", "weights.bin": bytes(3 << 20)}
        ),
    }
    git("init", "-q", "--bare", str(root / "carol.git"), cwd=root)  # empty
    # erin: a symlink pointing out of the tree and a submodule (a gitlink entry).
    work = root / "erin-work"
    git("init", "-q", "-b", "main", str(work), cwd=root)
    (work / "attention.py").write_text("E = 1\n")
    (work / "answers.yaml").symlink_to("../../../../etc/passwd")
    (work / "notes.md").symlink_to("attention.py")
    git("add", "-A", cwd=work)
    git("update-index", "--add", "--cacheinfo", f"160000,{shas['alice']},lib", cwd=work)
    git("commit", "-q", "-m", "work", cwd=work)
    git("clone", "-q", "--bare", str(work), str(root / "erin.git"), cwd=root)
    shas["erin"] = git("rev-parse", "HEAD", cwd=work)
    roster = root / "roster.csv"
    roster.write_text(
        "identifier,github_username,github_id,name\n"
        + "".join(f"{n},{n},{i},{n.title()}\n" for i, n in enumerate(STUDENTS))
    )
    return {"root": root, "shas": shas, "roster": roster}


STUDENTS = ["alice", "bob", "carol", "dave", "erin", "frank"]


def run_collect(remotes: dict, into: Path, *extra: str) -> int:
    template = f"file://{remotes['root']}/{{login}}.git"
    return cli.main(
        ["collect", "masks-and-heads", "--roster", str(remotes["roster"]), "--into", str(into)]
        + ["--url-template", template, *extra]
    )


@pytest.fixture(scope="module")
def collected(remotes, tmp_path_factory) -> dict:
    into = tmp_path_factory.mktemp("collected")
    assert run_collect(remotes, into) == 0
    manifest = json.loads((into / MANIFEST).read_text())
    return {
        "into": into,
        "manifest": manifest,
        "rows": {r["login"]: r for r in manifest["students"]},
    }


def test_every_student_gets_a_row_and_the_class_is_collected(collected, remotes):
    rows = collected["rows"]
    assert list(rows) == STUDENTS
    status = {login: row["status"] for login, row in rows.items()}
    assert status == {
        "alice": "collected",
        "bob": "missing",
        "carol": "empty",
        "dave": "collected",
        "erin": "collected",
        "frank": "collected",
    }
    for login, sha in remotes["shas"].items():
        assert rows[login]["sha"] == sha
        assert rows[login]["collected_at"].startswith("20")  # now, not the forged 2001 date
        assert not rows[login]["collected_at"].startswith("2001")
    assert "no repository" in rows["bob"]["notes"][0]
    assert rows["carol"]["notes"] == ["the repository has no commits"]
    assert not (collected["into"] / "bob").exists() and not (collected["into"] / "carol").exists()


def test_files_are_exported_at_the_sha(collected):
    into = collected["into"]
    assert (into / "alice" / "attention.py").read_text() == "A = 1\n"
    assert (into / "alice" / "answers.yaml").read_text() == "q: 1\n"
    assert (into / "dave" / "attention.py").read_text() == "D = 1\n"  # branch trunk


def test_symlinks_and_submodules_are_not_collected(collected):
    erin = collected["into"] / "erin"
    assert sorted(p.name for p in erin.iterdir()) == ["attention.py"]
    notes = " | ".join(collected["rows"]["erin"]["notes"])
    assert "answers.yaml: a symlink pointing out of the tree" in notes
    assert "notes.md: a symlink inside" in notes
    assert "lib: a submodule, not collected" in notes


def test_a_huge_file_is_left_out_with_a_note(collected):
    frank = collected["into"] / "frank"
    assert (frank / "attention.py").is_file() and not (frank / "weights.bin").exists()
    assert collected["rows"]["frank"]["notes"] == [
        "weights.bin: 3,145,728 bytes, over the 1,048,576-byte limit"
    ]


def test_recollecting_at_the_manifest_uses_its_shas(collected, remotes, tmp_path):
    work = remotes["root"] / "alice-work"
    (work / "attention.py").write_text("A = 2  # pushed after the deadline\n")
    git("commit", "-q", "-am", "late", cwd=work)
    git("push", "-q", str(remotes["root"] / "alice.git"), "HEAD:main", cwd=work)
    try:
        again = tmp_path / "again"
        assert run_collect(remotes, again, "--at", str(collected["into"] / MANIFEST)) == 0
        rows = {r["login"]: r for r in json.loads((again / MANIFEST).read_text())["students"]}
        assert rows["alice"]["sha"] == remotes["shas"]["alice"]
        assert (again / "alice" / "attention.py").read_text() == "A = 1\n"
        assert rows["bob"]["status"] == "missing"
    finally:
        git("reset", "-q", "--hard", "HEAD~1", cwd=work)
        git("push", "-q", "-f", str(remotes["root"] / "alice.git"), "HEAD:main", cwd=work)


def test_the_token_is_never_written_or_printed(remotes, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GITHUB_TOKEN", SECRET)
    into = tmp_path / "into"
    assert run_collect(remotes, into) == 0
    printed = capsys.readouterr()
    assert SECRET not in printed.out + printed.err
    for path in into.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_bad_rosters_get_one_line(tmp_path, capsys):
    roster = tmp_path / "roster.csv"
    for content, message in [
        ("name\nAlice\n", "no login column"),
        ("login\n", "lists no students"),
        ("login\nalice\nAlice\n", "Alice is listed twice"),
        ("login\n../etc\n", "not a valid login"),
    ]:
        roster.write_text(content)
        code = cli.main(["collect", "masks-and-heads", "--roster", str(roster)] + ["--into", "x"])
        err = capsys.readouterr().err
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()
