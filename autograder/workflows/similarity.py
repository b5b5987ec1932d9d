"""Code similarity across a graded class: a signal for a person to look at, never a verdict.

Every pair of submissions is compared with copydetect (maintained; winnowing of k-grams over
tokens in which names and strings are replaced by placeholders, so renamed variables and
reordered functions still match). The starter is subtracted: its fingerprints are
boilerplate, so code given to everyone is no evidence. A pair's score is the mean of the two
shares of each file's code that the other one matches.

``write`` puts a ranked list of pairs (``similarity.md``) and a side-by-side HTML view of the
matching regions of the top pairs (``similarity.html``) into the batch folder. Instructor's
eyes only: it names students; nothing of it goes into what is published.
"""

from __future__ import annotations

import html
import io
import itertools
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from autograder.errors import UsageError, not_installed
from autograder.workflows.records import Record

K = 25  # characters of the normalised code per k-gram (copydetect's noise threshold)
WINDOW = 6  # winnowing window: any match of 30 characters is found (its guarantee)
# Pairs that share less than this share of the smaller one's fingerprints are not compared in
# full (the costly part): they share too little to be worth a person's time.
SHORTLIST = 0.2
TOP = 10  # pairs shown side by side
CAVEAT = (
    "High similarity is a signal for a person to look at, not a verdict: short assignments "
    "with a fixed API make independent solutions alike, and the starter code is left out."
)


@dataclass
class Pair:
    first: str
    second: str
    score: float  # the mean of the two shares below
    shares: tuple[float, float]  # how much of each one's code the other matches
    slices: tuple[Any, Any]  # copydetect's matching regions, in each one's code


@dataclass
class Similarity:
    pairs: list[Pair]  # most similar first
    code: dict[str, str]  # student -> the code compared
    seconds: float

    def top(self, n: int = TOP) -> list[Pair]:
        return self.pairs[:n]


def fingerprint(code: str, boilerplate: frozenset[int] = frozenset()) -> Any:
    """copydetect's fingerprint of ``code``, without the ``boilerplate`` hashes. They are
    removed here, not by copydetect's own ``boilerplate`` argument, which drops only one
    occurrence of each (its fingerprints are not unique within a file)."""
    from copydetect import CodeFingerprint  # imported late: only this command needs it
    from copydetect.utils import get_token_coverage

    found = CodeFingerprint("submission.py", K, WINDOW, language="python", fp=io.StringIO(code))
    if boilerplate:
        found.hashes -= boilerplate
        for given in boilerplate & found.hash_idx.keys():
            del found.hash_idx[given]
        found.token_coverage = get_token_coverage(found.hash_idx, K, len(found.filtered_code))
    return found


def code_of(record: Record) -> str:
    """The code a record holds, its files one after the other."""
    return "\n".join(record.code[name] for name in sorted(record.code))


def compare(code: dict[str, str], starter: str = "") -> Similarity:
    """Every pair of ``code`` (student -> code), the ``starter`` subtracted, ranked."""
    try:
        from copydetect import compare_files
    except ImportError:
        raise not_installed("copydetect", "report", "code similarity") from None

    start = time.perf_counter()
    boilerplate = frozenset(fingerprint(starter).hashes) if starter.strip() else frozenset()
    prints = {student: fingerprint(text, boilerplate) for student, text in code.items()}
    pairs = []
    for a, b in itertools.combinations(sorted(prints, key=str.casefold), 2):
        first, second = prints[a], prints[b]
        smaller = min(len(first.hashes), len(second.hashes))
        if not smaller or len(first.hashes & second.hashes) < SHORTLIST * smaller:
            continue
        _, shares, slices = compare_files(first, second)
        score = (float(shares[0]) + float(shares[1])) / 2
        if score > 0:
            pairs.append(Pair(a, b, score, (float(shares[0]), float(shares[1])), slices))
    pairs.sort(key=lambda p: (-p.score, p.first.casefold(), p.second.casefold()))
    return Similarity(pairs, code, time.perf_counter() - start)


def of_records(records: Iterable[Record], starter: str = "") -> Similarity:
    code = {r.student: code_of(r) for r in records if r.graded and r.code}
    if len(code) < 2:
        raise UsageError(
            "fewer than two graded submissions with their code stored: grade them again with "
            "this version of grade-batch, which keeps the graded code"
        )
    return compare(code, starter)


# -- output -------------------------------------------------------------------------------------


def markdown(found: Similarity, limit: int = 50) -> str:
    lines = [CAVEAT, ""]
    if not found.pairs:
        return "\n".join([*lines, "No two submissions share code beyond the starter.", ""])
    lines += ["| rank | students | score | shares |", "|---|---|---|---|"]
    for rank, pair in enumerate(found.pairs[:limit], 1):
        a, b = pair.shares
        lines.append(
            f"| {rank} | {pair.first}, {pair.second} | {pair.score:.2f} | {a:.2f}, {b:.2f} |"
        )
    more = len(found.pairs) - limit
    if more > 0:
        lines.append(f"\n{more} more pair(s) with a lower score are in similarity.md.")
    return "\n".join(lines) + "\n"


def highlighted(code: str, slices: Any) -> str:
    """``code`` as HTML with the matching regions marked."""
    from copydetect.utils import highlight_overlap

    if len(slices) == 0 or slices.shape[-1] == 0:
        return html.escape(code)
    text, _ = highlight_overlap(code, slices, "<mark>", "</mark>", escape_html=True)
    return text


def side_by_side(found: Similarity, n: int = TOP) -> str:
    """The HTML of the top ``n`` pairs, each pair's code in two columns, matches marked."""
    parts = [f"<p><strong>{html.escape(CAVEAT)}</strong></p>"]
    for rank, pair in enumerate(found.top(n), 1):
        left = highlighted(found.code[pair.first], pair.slices[0])
        right = highlighted(found.code[pair.second], pair.slices[1])
        parts.append(
            f"<h3>{rank}. {html.escape(pair.first)} and {html.escape(pair.second)}: "
            f"{pair.score:.2f}</h3>"
            "<div class='pair'>"
            f"<pre>{left}</pre><pre>{right}</pre></div>"
        )
    return "\n".join(parts)


STYLE = (
    ".pair{display:flex;gap:1em}.pair pre{flex:1;overflow:auto;font-size:.75em;"
    "border:1px solid #ccc;padding:.5em;max-height:30em}mark{background:#ffd76e}"
)


def page(assignment: str, found: Similarity, top: int = TOP) -> str:
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(assignment)}: code similarity</title>"
        f"<style>body{{font-family:sans-serif;margin:1em}}{STYLE}</style></head><body>"
        f"<h1>{html.escape(assignment)}: code similarity</h1>"
        f"<p>{len(found.code)} submissions, {len(found.pairs)} pairs sharing code, compared in "
        f"{found.seconds:.1f} s.</p>"
        f"{side_by_side(found, top)}</body></html>\n"
    )
