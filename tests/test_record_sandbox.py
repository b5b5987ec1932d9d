"""Grading for record refuses a weak sandbox unless the instructor says --allow-weak-sandbox;
a student's own offline grade may run weak (with the note on the instructor's channel)."""

import pytest

from autograder.cli import main
from autograder.errors import UsageError
from autograder.sandbox.layers import Sandbox


def test_a_weak_sandbox_is_refused_for_record_and_accepted_when_allowed():
    with pytest.raises(UsageError, match="--allow-weak-sandbox"):
        Sandbox.for_record("fallback")
    assert Sandbox.for_record("fallback", allow_weak=True).weak
    if not Sandbox.detect().weak:
        assert Sandbox.for_record().strong


def test_grade_batch_refuses_a_weak_sandbox_in_one_line_and_writes_nothing(tmp_path, capsys):
    (tmp_path / "class" / "ada").mkdir(parents=True)
    out = tmp_path / "out"
    code = main(["grade-batch", "masks-and-heads", str(tmp_path / "class"), "--out", str(out),
                 "--sandbox", "fallback"])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--allow-weak-sandbox" in err[0]
    assert not out.exists()


def test_nbgrader_autograde_refuses_a_weak_sandbox(tmp_path, capsys, monkeypatch):
    pytest.importorskip("nbgrader")
    assert main(["nbgrader", "build", str(tmp_path), "masks-and-heads"]) == 0
    detect = Sandbox.detect  # this machine's strongest, replaced by the weak fallback
    monkeypatch.setattr(Sandbox, "detect", staticmethod(lambda mode="auto": detect("fallback")))
    code = main(["nbgrader", "autograde", str(tmp_path), "masks-and-heads"])
    err = capsys.readouterr().err
    assert code == 2 and "--allow-weak-sandbox" in err
