"""`autograder similarity` on a synthetic class of 200 made from the blind corpus.

Every file of tests/corpus/<slug>/{correct,wrong}/ (read, never changed) is one student, the
five assignments' starters are subtracted, and planted copies fill the class to 200: half with
every local variable renamed and the layout changed, half with the functions reordered. The
script prints the time of the comparison and how the planted copies rank:

- every planted pair should score above every pair of two independent correct solutions
  (the corpus's correct/ folders, written in different styles);
- at the top of the ranking are the pairs that really share code: the planted copies, and
  the corpus's own variants of one helper's solution (a wrong/ version that is a correct/ one
  with a line changed; found independently of copydetect, by difflib on their lines, >= 0.8).

    python benchmarks/bench_similarity.py [N]
"""

from __future__ import annotations

import difflib
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from synthetic_class import reordered, restyled  # noqa: E402

from autograder.course.assignment import Assignment, slugs  # noqa: E402
from autograder.workflows import similarity  # noqa: E402


def corpus_class() -> tuple[dict[str, str], str]:
    code, starters = {}, []
    for slug in slugs():
        given = Assignment.load(slug)
        starters.append((given.starter / given.module_file).read_text())
        for path in sorted((ROOT / "tests" / "corpus" / slug).glob(f"*/*/{given.module_file}")):
            code[f"{slug}/{path.parent.parent.name}/{path.parent.name}"] = path.read_text()
    return code, "\n".join(starters)


def main(size: int = 200) -> None:
    rng = random.Random(1)
    code, starter = corpus_class()
    corpus = list(code)
    planted = set()
    for i in range(size - len(corpus)):
        source = rng.choice(corpus)
        name = f"copy{i:03d}"
        changed = restyled(code[source], f"c{i}", i % 3) if i % 2 else reordered(code[source], rng)
        code[name] = changed
        planted.add(frozenset((source, name)))
    start = time.perf_counter()
    found = similarity.compare(code, starter)
    seconds = time.perf_counter() - start

    related = {name: {name} for name in code}  # who really shares code with whom

    def join(a: str, b: str) -> None:
        group = related[a] | related[b]
        for name in group:
            related[name] = group

    for pair in planted:
        join(*pair)
    for i, a in enumerate(corpus):
        for b in corpus[i + 1 :]:
            same_slug = a.split("/")[0] == b.split("/")[0]
            lines_a, lines_b = code[a].splitlines(), code[b].splitlines()
            if same_slug and difflib.SequenceMatcher(None, lines_a, lines_b).ratio() >= 0.8:
                join(a, b)
    really = [p for p in found.pairs if p.second in related[p.first]]
    top = found.pairs[: len(really)]
    copies = [p.score for p in found.pairs if frozenset((p.first, p.second)) in planted]
    independent = [
        p.score
        for p in found.pairs
        if "/correct/" in p.first and "/correct/" in p.second and p.second not in related[p.first]
    ]
    pairs = len(code) * (len(code) - 1) // 2
    print(f"{len(code)} submissions, {pairs} pairs, {len(found.pairs)} shortlisted and ranked")
    print(f"time: {seconds:.1f} s ({1000 * seconds / pairs:.2f} ms per pair)")
    print(f"planted copies: {len(planted)}, found {len(copies)}, lowest score {min(copies):.3f}")
    print(f"independent correct pairs: highest score {max(independent, default=0):.3f}")
    wrong = [p for p in top if p.second not in related[p.first]]
    print(
        f"top {len(really)} (the pairs that share code): {len(wrong)} unrelated pair(s) in it"
        + "".join(f"\n  {p.score:.3f} {p.first} {p.second}" for p in wrong)
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
