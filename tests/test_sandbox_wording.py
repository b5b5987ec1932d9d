"""One wording of the sandbox's strength: every help text that speaks of a weak sandbox,
doctor, and the README (or the docs page it moves to) say it the same way."""

import argparse
import re
from pathlib import Path

from autograder.cli import main, parser
from autograder.sandbox.layers import STRONG_MEANS, WEAK_MEANS

ROOT = Path(__file__).resolve().parents[1]


def helps(top: argparse.ArgumentParser) -> list[str]:
    """Every description and option help of every command."""
    found = [top.description or ""]
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += helps(sub)
        elif action.help:
            found.append(action.help)
    return found


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).casefold()


def test_every_help_about_a_weak_sandbox_says_what_weak_means():
    about_weak = [h for h in helps(parser()) if "weak" in h]
    assert len(about_weak) >= 3  # doctor, grade-batch, nbgrader autograde
    for text in about_weak:
        assert WEAK_MEANS in text, text


def test_doctor_says_what_strong_and_weak_mean(capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert STRONG_MEANS in out and WEAK_MEANS in out


def test_the_readme_uses_the_same_wording():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    text = flat(" ".join(p.read_text() for p in pages if p.is_file()))
    assert flat(STRONG_MEANS) in text and flat(WEAK_MEANS) in text
