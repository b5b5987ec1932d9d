"""Misconception discovery and similarity on a class graded by grade-batch, in two shards
merged: mistakes that nothing names, each made by three students in their own words and
layout, are found as one cluster each; no correct student and no catalogued mistake is
in one; the drafts load as a catalogue and reproduce the cluster; similarity ranks copies first.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
from dozen import mistake_source
from synthetic_class import reordered, restyled

from autograder.cli import main
from autograder.course.assignment import Assignment
from autograder.engine.fingerprint import fingerprint
from autograder.engine.mistakes import load_catalogue, module_from_source
from autograder.workflows import batch, clusters, insight, merge, similarity
from autograder.workflows.records import load_record

pytestmark = pytest.mark.timeout(900)
SLUG = "masks-and-heads"
CORPUS = Path(__file__).parent / "corpus" / SLUG

# Mistakes that nothing names, no catalogue entry nor a generic cause: (function, the
# reference's line, the student's). A scale by sqrt(d_v) and heads in another order were here
# once; the diagnosis now names both ("times one factor", "your heads in another order").
UNKNOWN = {
    "mask-one-ahead": (
        "causal_mask",
        "return np.tril(np.ones((n, n), dtype=bool))",
        "return np.tril(np.ones((n, n), dtype=bool), k=1)",
    ),
    "values-not-projected": (
        "multi_head_attention",
        "q, k, v = (split_heads(X @ W, h) for W in (Wq, Wk, Wv))",
        "q, k, v = split_heads(X @ Wq, h), split_heads(X @ Wk, h), split_heads(X, h)",
    ),
}
MEMBERS = {name: [f"{name[:4]}{i}" for i in range(3)] for name in UNKNOWN}
CORRECT = ["ref-restyled", "corpus-where", "corpus-loops"]
CATALOGUED = ["cat1", "cat2"]  # the catalogue's mask-after-softmax: named, so no cluster


def assignment() -> Assignment:
    return dataclasses.replace(Assignment.load(SLUG), timeout=30)  # a loaded machine


def build(folder: Path) -> Path:
    given = Assignment.load(SLUG)
    reference = given.reference_source
    answers = (given.reference / "answers.yaml").read_text()

    def student(name: str, code: str) -> None:
        (folder / name).mkdir(parents=True)
        (folder / name / given.module_file).write_text(code)
        (folder / name / "answers.yaml").write_text(answers)

    for mistake, (_, line, wrong) in UNKNOWN.items():
        assert line in reference
        buggy = reference.replace(line, wrong)
        for layout, name in enumerate(MEMBERS[mistake]):
            student(name, restyled(buggy, f"s{layout}", layout))
    student("ref-restyled", restyled(reference, "r", 2))
    student("corpus-where", (CORPUS / "correct/vectorised-where/attention.py").read_text())
    student("corpus-loops", (CORPUS / "correct/loops-pure-python/attention.py").read_text())
    for name in CATALOGUED:
        student(name, mistake_source("mask-after-softmax"))
    return folder


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict[str, Path]:
    """The class graded in two shards, and the shards merged (shard 1 alone is a batch)."""
    root = tmp_path_factory.mktemp("insight")
    folder = build(root / "class")
    shards = [root / f"shard{k}" for k in (1, 2)]
    for k, out in enumerate(shards, 1):
        batch.grade_batch(assignment(), folder, out, jobs=2, shard=(k, 2), say=lambda _: None)
    merge.merge(shards, root / "merged", say=lambda _: None)
    return {"class": folder, "merged": root / "merged", "shard": shards[0]}


def test_fingerprints_ignore_float_noise_but_not_a_bug():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 6))
    same = fingerprint([x.astype(np.float32).astype(np.float64)])
    assert fingerprint([x]) == same
    assert fingerprint([x * 1.01]) != same
    assert fingerprint([x], "ValueError") != fingerprint([x])
    assert fingerprint([x > 0]) != fingerprint([(x > 0).astype(int)])


def test_every_unknown_mistake_is_one_cluster_and_no_correct_student_is_in_one(graded):
    graded_class = insight.load(graded["merged"])
    found = clusters.find(graded_class.records, graded_class.reference)
    by_members = {tuple(c.students): c for c in found}
    for mistake, (function, _, wrong) in UNKNOWN.items():
        members = tuple(sorted(MEMBERS[mistake], key=str.casefold))
        assert members in by_members, (mistake, [(c.function, c.students) for c in found])
        cluster = by_members[members]
        assert cluster.function == function
        assert cluster.tests, cluster
        # the representative's failing line is the bug, in the representative's own words
        shown = " ".join(text for _, text in cluster.lines).replace(" ", "")
        assert wrong.split("=")[-1].replace(" ", "")[:12] in shown, cluster.lines
    clustered = {s for c in found for s in c.students}
    assert not clustered & {*CORRECT, *CATALOGUED}
    assert len(found) == len(UNKNOWN)


def test_the_size_flag(graded):
    graded_class = insight.load(graded["merged"])
    records, reference = graded_class.records, graded_class.reference
    assert clusters.find(records, reference, min_size=4) == []
    assert len(clusters.find(records, reference, min_size=3)) == len(UNKNOWN)


def test_the_grade_batch_records_carry_fingerprints_and_code(graded):
    record = load_record(graded["merged"], MEMBERS["values-not-projected"][0])
    assert record is not None and record.code
    failed = [t for t in record.tests if not t.passed and t.part == "part2"]
    assert failed and all(t.fingerprint for t in failed)
    passed = [t for t in record.tests if t.passed]
    assert passed and not any(t.fingerprint for t in passed)


def test_propose_writes_drafts_that_load_and_reproduce_the_mistake(graded, tmp_path):
    drafts = tmp_path / "drafts.py"
    code = main(["propose", SLUG, str(graded["merged"]), "--out", str(drafts)])
    assert code == 0
    text = drafts.read_text()
    ast.parse(text)
    assert text.count("@catalogue.mistake(") == len(UNKNOWN) and "TODO" in text
    for function, *_ in UNKNOWN.values():
        assert f'replaces="{function}"' in text
    catalogue = load_catalogue(drafts)
    given = Assignment.load(SLUG)
    reference = module_from_source(given.reference_source, "reference")
    variant = next(v for v in catalogue.mistakes if v.replaces == "causal_mask")
    module = module_from_source(variant.source(given.reference_source), "draft")
    assert not np.array_equal(module.causal_mask(5), reference.causal_mask(5))
    assert np.array_equal(module.causal_mask(5), np.tri(5, 5, 1, dtype=bool))


def test_propose_never_writes_into_a_suite(graded, capsys):
    suite = Assignment.load(SLUG).suite / "mistakes.py"
    before = suite.read_text()
    assert main(["propose", SLUG, str(graded["merged"]), "--out", str(suite)]) == 2
    assert "never written into a suite" in capsys.readouterr().err
    assert suite.read_text() == before
    assert main(["propose", "flash-attention", str(graded["merged"])]) == 2


def test_similarity_on_a_single_shard_and_on_the_merge(graded, tmp_path, capsys):
    out = tmp_path / "merged"
    shutil.copytree(graded["merged"], out)
    assert main(["similarity", str(out), "--top", "3"]) == 0
    printed = capsys.readouterr().out
    assert "not a verdict" in printed
    page = (out / "similarity.html").read_text()
    assert "<mark>" in page and "not a verdict" in page
    ranked = (out / "similarity.md").read_text()
    # the three who share a restyled reference are the most alike: each pair ranks above every
    # pair of the two independent corpus solutions
    found = insight.write_similarity(out)
    score = {frozenset((p.first, p.second)): p.score for p in found.pairs}
    independent = score.get(frozenset(("corpus-where", "corpus-loops")), 0.0)
    assert score[frozenset(("cat1", "cat2"))] > 0.95 > independent
    assert "cat1, cat2" in ranked
    assert main(["similarity", str(graded["shard"])]) == 0


def test_report_has_both_sections_for_the_instructor_only(graded, tmp_path):
    out = tmp_path / "merged"
    shutil.copytree(graded["merged"], out)
    summary = tmp_path / "summary.md"
    assert main(["report", str(out), "--summary-to", str(summary)]) == 0
    page = (out / "report.html").read_text()
    text = (out / "report.md").read_text()
    for document in (page, text):
        assert clusters_title() in document and insight.SIMILARITY_TITLE in document
        assert "not a verdict" in document
        assert all(s in document for s in MEMBERS["mask-one-ahead"])
    assert "<mark>" in page
    published = summary.read_text()
    assert "similar" not in published.lower() and "mask0" not in published
    dry = tmp_path / "requests.jsonl"
    main(["publish", str(out), "--dry-run", str(dry)])
    sent = dry.read_text() if dry.exists() else ""
    assert "similar" not in sent.lower() and "unexplained" not in sent.lower()
    assert all("fingerprint" not in json.dumps(line) for line in sent.splitlines())


def clusters_title() -> str:
    return insight.CLUSTERS_TITLE


def test_similarity_ranks_planted_copies_of_corpus_solutions_first():
    """A small class of the corpus's independent correct solutions, with planted copies
    (renamed variables, reordered functions): every copy scores above every independent
    pair (benchmarks/bench_similarity.py measures a class of 200)."""
    given = Assignment.load(SLUG)
    rng = random.Random(3)
    code = {f.parent.name: f.read_text() for f in sorted(CORPUS.glob("correct/*/attention.py"))}
    originals = sorted(code)
    planted = set()
    for i, source in enumerate(rng.sample(originals, 4)):
        copy = restyled(code[source], f"c{i}", i % 3) if i % 2 else reordered(code[source], rng)
        code[f"copy{i}"] = copy
        planted.add(frozenset((source, f"copy{i}")))
    found = similarity.compare(code, (given.starter / given.module_file).read_text())
    top = {frozenset((p.first, p.second)) for p in found.pairs[: len(planted)]}
    assert top == planted
    lowest_copy = min(p.score for p in found.pairs if frozenset((p.first, p.second)) in planted)
    independent = [p.score for p in found.pairs if p.first in originals and p.second in originals]
    assert max(independent, default=0) < lowest_copy
