"""Feedback on real code (issue 19): each case is the reference with one change, graded
end to end, and the cause it names (or the error it shows) must be the true one."""

import functools
import re
import shutil

import numpy as np
import pytest

from autograder import report
from autograder.course.assignment import Assignment, slugs
from autograder.engine.compare import plural
from autograder.engine.grading import grade
from autograder.engine.mistakes import Catalogue, load_catalogue
from autograder.sandbox.layers import Sandbox


def edited(slug: str, *replacements: tuple[str, str]) -> str:
    """The reference's source of ``slug`` with each (old, new) text replaced once."""
    source = Assignment.load(slug).reference_source
    for old, new in replacements:
        assert old in source, old
        source = source.replace(old, new)
    return source


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Grade a source as a submission of a slug, once per module: (slug, source) -> Result."""

    @functools.cache
    def grading(slug: str, source: str):
        assignment = Assignment.load(slug)
        folder = tmp_path_factory.mktemp("sub")
        shutil.copy(assignment.reference / "answers.yaml", folder / "answers.yaml")
        (folder / assignment.module_file).write_text(source)
        return grade(assignment, folder, Sandbox.detect("fallback"))

    return grading


def summary_line(text: str, function: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"  {function} "))


# -- a cascade only when measured -------------------------------------------------------------

INT_PADDING = (
    "return np.arange(T)[None, :] < lengths[:, None]",
    "return (np.arange(T)[None, :] < lengths[:, None]).astype(int)",
)
OWN_INT_ATTENTION_MASK = (
    "    real_keys = padding_mask(lengths, T)[:, None, :]",
    "    real_keys = (np.arange(T)[None, None, :] < np.asarray(lengths)[:, None, None]) * 1",
)


def test_a_function_that_never_calls_the_failing_one_shows_its_own_error(graded):
    result = graded(
        "padding-and-batches", edited("padding-and-batches", INT_PADDING, OWN_INT_ATTENTION_MASK)
    )
    text = report.student_text(result)
    assert "fix that first" not in text
    mask_tests = [t for t in result.tests if t.checks == "attention_mask"]
    assert all(not t.blame for t in mask_tests)
    assert "expected an array of booleans" in "\n".join(t.message for t in mask_tests)


def test_a_function_that_calls_the_failing_one_is_still_pointed_to_it(graded):
    result = graded("padding-and-batches", edited("padding-and-batches", INT_PADDING))
    text = report.student_text(result)
    assert summary_line(text, "attention_mask").endswith("fix that first")


# -- merge only what is the same --------------------------------------------------------------

ASSERT_AND_BROADCAST = (
    (
        "    T, d = Q.shape\n",
        "    T, d = Q.shape\n    assert block_size <= len(K), 'block too big'\n",
    ),
    ("i = np.arange(start, T)[:, None]", "i = np.arange(T)[:, None]"),
)


def test_two_different_errors_are_not_merged(graded):
    result = graded("flash-attention", edited("flash-attention", *ASSERT_AND_BROADCAST))
    text = report.student_text(result)
    assert "raised AssertionError: block too big" in text
    # the broadcast error is told in the student's terms (line, shapes), never raw
    assert "the shapes do not fit at line" in text and "operands could not be" not in text
    assert "same cause as above" not in text


def test_the_same_error_twice_is_merged(graded):
    no_causal = ("    T, d = Q.shape\n", "    T, d = Q.shape\n    assert not causal, 'no causal'\n")
    result = graded("flash-attention", edited("flash-attention", no_causal))
    text = report.student_text(result)
    assert text.count("raised AssertionError: no causal") == 1
    # every other causal test of chunked_attention fails the same way, and says so
    assert text.count("same cause as above") == 3


# -- names from the suite, nothing internal ---------------------------------------------------

INTERNAL = re.compile(r"RemoteObject|Handle\(|Unsupported|autograder-job|/tmp/|/sub/|/runner/")


@pytest.mark.parametrize("slug", slugs())
def test_every_suite_names_its_tuples_and_axes_and_titles_every_entry(slug):
    assignment = Assignment.load(slug)
    assert assignment.unnamed_returns() == []
    assert assignment.axes, "suite.yaml has axes:"
    catalogue = load_catalogue(assignment.suite / "mistakes.py")
    assert catalogue.untitled == []
    for variant in catalogue.mistakes:  # every text of every entry a student can receive
        for text in (variant.title, variant.why, variant.hint):
            assert not INTERNAL.search(text), (variant.name, text)
        assert variant.family not in variant.title, "the id is for instructors"


def test_check_fails_on_an_unnamed_tuple_and_an_untitled_entry():
    assignment = Assignment.load("flash-attention")
    assignment.returns = {}
    assert assignment.unnamed_returns() == ["online_softmax_update", "chunked_attention"]
    catalogue = Catalogue()
    catalogue.mistake("no-title", replaces="f", why="Why.", hint="Hint.")(lambda: None)
    assert "no-title has no title= (what a student reads)" in catalogue.problems(["f"])


def test_a_3d_array_is_pointed_into_with_the_suites_axis_names(graded):
    wo_transposed = (
        "return heads.transpose(0, 2, 1, 3).reshape(B, T, C) @ Wo\n",
        "return heads.transpose(0, 2, 1, 3).reshape(B, T, C) @ Wo.T\n",
    )
    result = graded("padding-and-batches", edited("padding-and-batches", wo_transposed))
    text = report.student_text(result)
    assert "at sequence 0, position 0, channel 0" in text
    assert "head 0" not in text


def test_a_job_path_printed_by_the_student_is_not_shown(graded):
    printing = (
        "    lengths = np.asarray(lengths)\n",
        "    lengths = np.asarray(lengths)\n    print(__file__)\n",
    )
    result = graded("padding-and-batches", edited("padding-and-batches", printing))
    printed = "\n".join(t.printed for t in result.tests)
    assert "batches.py" in printed and not INTERNAL.search(printed)


def test_axis_names_are_pluralised_in_plain_english():
    assert (plural("key", 2), plural("entry", 2), plural("query", 3)) == (
        "keys",
        "entries",
        "queries",
    )


# -- generic error shapes, each the reference with one change ---------------------------------


def causes(result) -> str:
    return "\n".join(t.cause for t in result.tests if not t.passed)


LARGE_NEGATIVE_FILL = {
    "masks-and-heads": (
        "scores = np.where(mask, scores, -np.inf)",
        "scores = np.where(mask, scores, -1e9)",
    ),
    "padding-and-batches": (
        "scores = np.where(mask, scores, -np.inf)",
        "scores = np.where(mask, scores, -1e9)",
    ),
}


@pytest.mark.parametrize("slug", sorted(LARGE_NEGATIVE_FILL))
def test_a_large_negative_fill_without_a_guard_is_named(graded, slug):
    result = graded(slug, edited(slug, LARGE_NEGATIVE_FILL[slug]))
    assert "a large negative fill instead of -inf" in causes(result)


def test_two_exchanged_arguments_are_named(graded):
    keys_for_values = ("for W in (Wq, Wk, Wv)", "for W in (Wq, Wv, Wk)")
    result = graded("masks-and-heads", edited("masks-and-heads", keys_for_values))
    assert "the expected one with Wk and Wv exchanged" in causes(result)


def test_masks_joined_with_maximum_are_named(graded):
    maximum = ("return real_keys & order", "return np.maximum(real_keys, order)")
    result = graded("padding-and-batches", edited("padding-and-batches", maximum))
    said = causes(result)
    assert "combined with 'or' (np.maximum or |) instead of 'and' (&)" in said


NORMALISED_EVERY_STEP = (
    "    acc_new = alpha[:, None] * acc + p @ V_block\n",
    "    acc_new = (alpha[:, None] * l[:, None] * acc + p @ V_block) / l_new[:, None]\n",
)


def test_an_accumulator_normalised_at_every_step_is_named(graded):
    result = graded("flash-attention", edited("flash-attention", NORMALISED_EVERY_STEP))
    update = [t for t in result.tests if t.checks == "online_softmax_update" and not t.passed]
    assert any(
        "each row of your result is the expected row divided by its own" in t.cause
        and "divided by the wrong total (normalised at every step" in t.cause
        for t in update
    )
    assert any(t.cause.startswith("the acc (value 2)") for t in update)


NUMPY_WORDS = re.compile(r"gufunc|operands could not be broadcast|core dimension")


def test_a_numpy_shape_error_is_told_in_the_students_terms(graded):
    keys_first = ("scores = Q @ K.T / np.sqrt(d_k)", "scores = K @ Q.T / np.sqrt(d_k)")
    result = graded("masks-and-heads", edited("masks-and-heads", keys_first))
    text = report.student_text(result)
    assert not NUMPY_WORDS.search(text), text
    told = [t for t in result.tests if "`scores = np.where(mask, scores, -np.inf)`" in t.message]
    assert told, text
    assert any(
        re.search(r"scores is (\d)×(\d) where the handout's is \2×\1", t.cause) for t in told
    )
    assert "with Q and K exchanged" in summary_line(text, "masked_attention")


# -- each returned value judged on its own; one screen; nothing internal ----------------------

NO_LSE = ("    return acc / l[:, None], m + np.log(l)\n", "    return acc / l[:, None], None\n")


def test_a_missing_lse_costs_only_the_tests_of_lse(graded):
    result = graded("flash-attention", edited("flash-attention", NO_LSE))
    text = report.student_text(result)
    chunked = [t for t in result.tests if t.checks == "chunked_attention"]
    failed = {t.id for t in chunked if not t.passed}
    assert failed <= {"test_chunked_lse", "test_chunked_large_logits"}, failed
    assert all(t.passed for t in chunked if "memory" in t.id)
    assert "not judged" not in text
    assert text.count("Did you forget a return statement?") <= 2


def test_the_memory_tests_never_point_at_tests_above():
    source = Assignment.load("flash-attention").suite / "test_hidden.py"
    assert "the tests above" not in source.read_text()


ONE_SCREEN = 60  # lines


@pytest.mark.parametrize(
    "slug, change",
    [
        ("flash-attention", NORMALISED_EVERY_STEP),
        ("masks-and-heads", ("scores = Q @ K.T / np.sqrt(d_k)", "scores = K @ Q.T / np.sqrt(d_k)")),
        ("padding-and-batches", INT_PADDING),
    ],
)
def test_a_whole_report_of_a_bad_submission_fits_on_one_screen(graded, slug, change):
    text = report.student_text(graded(slug, edited(slug, change)))
    assert len(text.splitlines()) <= ONE_SCREEN, text


def test_no_object_of_the_students_reaches_them_as_an_internal_type(graded):
    no_divisibility_check = (
        "        if n_embed % n_head != 0:\n",
        "        if False:\n",
    )
    slug = "causal-self-attention"
    result = graded(slug, edited(slug, no_divisibility_check))
    text = report.student_text(result)
    assert "instead of raising ValueError" in text
    assert not INTERNAL.search(text), text


def every_shape_text():
    """What each generic error shape says, each on an array made to show it."""
    from autograder.engine import shapes

    w = np.array([[0.2, 0.8, 0.0], [0.0, 0.0, 0.0], [0.5, 0.25, 0.25]])
    uniform = w.copy()
    uniform[1] = 1 / 3
    out = np.arange(1.0, 13.0).reshape(4, 3)
    yield shapes.uniform_where_masked(uniform, w, 1e-5, 1e-7)
    yield shapes.per_row_factor(out / np.array([[2.0], [3.0], [4.0], [5.0]]), out, 1e-5, 1e-7)
    yield shapes.scaled(out * 8, out, 1e-5, 1e-7)
    yield shapes.transposed(out[:3].T, out[:3], 1e-5, 1e-7)
    yield shapes.zeros(np.zeros_like(out), out, 1e-5, 1e-7)


def test_no_error_shape_says_anything_internal():
    texts = list(every_shape_text())
    assert all(texts), texts  # each array shows its shape
    for text in texts:
        assert not INTERNAL.search(text), text


# -- generic causes, read from the student's own values (issue 18) ----------------------------

CSA, KV = "causal-self-attention", "kv-cache-and-gqa"


def causes_of(result, function: str) -> list[str]:
    return [t.cause for t in result.tests if t.checks == function and not t.passed]


GENERIC_CAUSES = {
    "two attributes exchanged": (
        CSA,
        [
            ("k = (x @ self.W_k)", "k = (x @ self.W_q)"),
            ("q = (x @ self.W_q)", "q = (x @ self.W_k)"),
        ],
        "CausalSelfAttention.attention_weights",
        "the expected one with W_q and W_k exchanged",
    ),
    "an attribute transposed": (
        CSA,
        [("reshape(B, T, C) @ self.W_o + self.b_o", "reshape(B, T, C) @ self.W_o.T + self.b_o")],
        "CausalSelfAttention.forward",
        "the expected one with W_o transposed",
    ),
    "attributes copied in __init__": (
        CSA,
        [
            (
                "        self.b_o = np.zeros(n_embed)\n",
                "        self.b_o = np.zeros(n_embed)\n        self._w_q = self.W_q\n",
            ),
            ("q = (x @ self.W_q)", "q = (x @ self._w_q)"),
        ],
        "CausalSelfAttention.attention_weights",
        "ignores the W_q assigned to it after it was built",
    ),
    "the scale applied twice": (
        CSA,
        [("k.transpose(0, 1, 3, 2) / np.sqrt(d_head)", "k.transpose(0, 1, 3, 2) / d_head")],
        "CausalSelfAttention.attention_weights",
        "the softmax of the expected scores times 0.354 (1/sqrt(8))",
    ),
    "a mask without its diagonal": (
        CSA,
        [("dtype=bool))\n", "dtype=bool), k=-1)\n")],
        "CausalSelfAttention.__init__",
        "differs only on the main diagonal (each position with itself)",
    ),
    "a bias that does not start at zero": (
        CSA,
        [("self.b_o = np.zeros(n_embed)", "self.b_o = np.full(n_embed, 0.1)")],
        "CausalSelfAttention.__init__",
        "every expected value is 0 and yours are not",
    ),
    "an unstable softmax": (
        CSA,
        [("np.exp(scores - scores.max(axis=-1, keepdims=True))", "np.exp(scores)")],
        "CausalSelfAttention.attention_weights",
        "the softmax overflows on large scores",
    ),
    "a check that raises the wrong type": (
        CSA,
        [('raise ValueError(f"x must be', 'raise TypeError(f"x must be')],
        "CausalSelfAttention.attention_weights",
        "your check raises TypeError where the handout promises ValueError",
    ),
    "a check that is too strict": (
        CSA,
        [("if T > self.context_length:", "if T >= self.context_length:")],
        "CausalSelfAttention.forward",
        "your own check raises ValueError for an input the handout accepts",
    ),
    "an assert for a check": (
        KV,
        [
            (
                '        raise ValueError("n_head must divide C, and n_kv_head must divide '
                'n_head")\n',
                "        pass\n",
            ),
            (
                "    if n_head % n_kv_head or C % n_head:\n",
                "    assert n_head % n_kv_head == 0\n    if False:\n",
            ),
        ],
        "grouped_query_attention",
        "an assert raises AssertionError, not ValueError",
    ),
    "an argument transposed": (
        KV,
        [
            (
                "    return out.transpose(1, 0, 2).reshape(T, C) @ Wo\n",
                "    return out.transpose(1, 0, 2).reshape(T, C) @ Wo.T\n",
            )
        ],
        "grouped_query_attention",
        "the expected one with Wo transposed",
    ),
    "an argument ignored": (
        KV,
        [
            (
                "    if causal:\n        scores = np.where(causal_mask(T, T)",
                "    if True:\n        scores = np.where(causal_mask(T, T)",
            )
        ],
        "grouped_query_attention",
        "what the default causal=True gives, not causal=False",
    ),
}


@pytest.mark.parametrize("case", sorted(GENERIC_CAUSES))
def test_a_generic_cause_is_named_from_the_students_own_values(graded, case):
    slug, changes, function, words = GENERIC_CAUSES[case]
    result = graded(slug, edited(slug, *changes))
    said = causes_of(result, function)
    assert any(words in cause for cause in said), said


def test_a_step_that_never_stores_is_not_blamed_on_append(graded):
    """The step's outputs are what an append that overwrites gives too, but the cache the
    student's step leaves is not: only the step's own mistake is named."""
    no_append = (
        "    cache.append(k, v)\n    n_rep = n_head // n_kv_head\n"
        "    keys, values = repeat_kv(cache.keys, n_rep), repeat_kv(cache.values, n_rep)\n",
        "    n_rep = n_head // n_kv_head\n"
        "    if cache.keys is not None:\n"
        "        k = np.concatenate([cache.keys, k], axis=1)\n"
        "        v = np.concatenate([cache.values, v], axis=1)\n"
        "    keys, values = repeat_kv(k, n_rep), repeat_kv(v, n_rep)\n",
    )
    mask = ("causal_mask(t, len(cache))", "causal_mask(t, k.shape[1])")
    result = graded(KV, edited(KV, no_append, mask))
    said = causes_of(result, "decode_step")
    assert said and all("append replaces the cache" not in c for c in said), said
    assert any("never stored in the cache" in c for c in said), said


def test_a_wrong_length_of_the_cache_is_not_blamed_on_the_functions_decode_calls(graded):
    heads = (
        "        return 0 if self.keys is None else self.keys.shape[1]",
        "        return 0 if self.keys is None else self.keys.shape[0]",
    )
    result = graded(KV, edited(KV, heads))
    said = causes_of(result, "decode_step")
    assert said and not any("fix th" in c for c in said), said
