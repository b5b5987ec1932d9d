"""Hidden tests for masks-and-heads: 70 points of Part 2.

Dimensions are chosen to expose bugs: d_model = 24 with h = 3 gives d_head = 8, so d_head,
sqrt(d_head), d_model and sqrt(d_model) all differ; T >= 5; query and key lengths differ
where the function allows it. Expected values come from the reference at grading time, and
so do the inputs a test of one function needs from another (split heads for merge_heads):
a mistake costs only the tests of its own function. multi_head_attention is graded as a
whole, with the student's own helpers (suite.yaml's graded_together; the handout says so).

Tolerance: rtol 1e-5 and atol 1e-7 (the engine's default), except for multi-head attention,
whose outputs go through four projections: there atol is 1e-6, so that a correct float32
implementation passes.
"""

import numpy as np

from autograder.suite import check, expect, expect_structure, parts, points, raises

D_MODEL, HEADS, T = 24, 3, 6
MHA_TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}


def projections(rng, d=D_MODEL):
    return [rng.normal(size=(d, d)) / np.sqrt(d) for _ in range(4)]


# -- causal_mask: 8 -------------------------------------------------------------------------


@points(2, checks="causal_mask")
def test_causal_mask_shape_and_dtype(student, reference):
    """returns an (n, n) array of booleans"""
    expect_structure(student.causal_mask(5), reference.causal_mask(5))


@points(4, checks="causal_mask")
def test_causal_mask_values(student, reference):
    """is True exactly where j <= i (the diagonal included)"""
    expect(student.causal_mask(5), reference.causal_mask(5))


@points(2, checks="causal_mask")
def test_causal_mask_other_sizes(student, reference):
    """works for n = 2 and n = 9"""
    for n in (2, 9):  # not n = 1: there an inverted mask and a strict one look the same
        expect(student.causal_mask(n), reference.causal_mask(n))


# -- masked_attention: 22 -------------------------------------------------------------------


@points(3, checks="masked_attention")
def test_masked_attention_chapter_example(student):
    """reproduces the chapter's worked example, with and without the mask"""
    q, keys, values = np.array([[1.0, 0.0]]), np.eye(2), 2 * np.eye(2)
    weights, output = parts(student.masked_attention(q, keys, values), "weights", "output")
    expect(weights, np.array([[0.6697615493266569, 0.3302384506733431]]))
    expect(output, np.array([[1.3395230986533138, 0.6604769013466862]]))
    only_first = np.array([[True, False]])
    _, output = parts(student.masked_attention(q, keys, values, only_first), "weights", "output")
    expect(output, np.array([[2.0, 0.0]]))


@points(5, checks="masked_attention")
def test_masked_attention_no_mask(student, reference, rng):
    """without a mask: softmax(Q K^T / sqrt(d_k)) V, with n_q != n_k and d_v != d_k"""
    Q, K, V = rng.normal(size=(4, 8)), rng.normal(size=(6, 8)), rng.normal(size=(6, 5))
    got = student.masked_attention(Q, K, V)
    expect(got, reference.masked_attention(Q, K, V))


@points(5, checks="masked_attention")
def test_masked_attention_causal(student, reference, rng):
    """with a causal mask: weights and output"""
    Q, K, V = (rng.normal(size=(T, 8)) for _ in range(3))
    mask = reference.causal_mask(T)
    expect(student.masked_attention(Q, K, V, mask), reference.masked_attention(Q, K, V, mask))


@points(3, checks="masked_attention")
def test_masked_attention_padding_mask(student, reference, rng):
    """with a mask that is not causal (padding: the last two keys hidden from every query)"""
    Q, K, V = rng.normal(size=(5, 8)), rng.normal(size=(7, 8)), rng.normal(size=(7, 4))
    mask = np.ones((5, 7), dtype=bool)
    mask[:, 5:] = False
    expect(student.masked_attention(Q, K, V, mask), reference.masked_attention(Q, K, V, mask))


@points(2, checks="masked_attention")
def test_masked_attention_weights_are_a_distribution(student, reference, rng):
    """each row of weights sums to 1, and masked weights are exactly 0"""
    Q, K, V = (rng.normal(size=(T, 8)) for _ in range(3))
    mask = reference.causal_mask(T)
    weights, _ = parts(student.masked_attention(Q, K, V, mask), "weights", "output")
    expect_structure(weights, mask.astype(float))
    check(
        np.all(weights[~mask] == 0),
        "some masked positions have a weight that is not "
        "exactly 0: the mask must act on the scores, before the softmax.",
        about=weights,
    )
    check(
        np.allclose(weights.sum(axis=-1), 1), "the rows of weights do not sum to 1.", about=weights
    )


@points(2, checks="masked_attention")
def test_masked_attention_large_scores(student, reference, rng):
    """stays finite and correct when scores are huge (a stable softmax subtracts the row max)"""
    Q, K, V = 40 * rng.normal(size=(5, 8)), 40 * rng.normal(size=(5, 8)), rng.normal(size=(5, 3))
    mask = reference.causal_mask(5)
    got = student.masked_attention(Q, K, V, mask)
    weights, output = parts(got, "weights", "output")
    expect_structure(weights, mask.astype(float))
    expect_structure(output, V)
    check(
        np.all(np.isfinite(weights)) and np.all(np.isfinite(output)),
        "large scores produced inf or NaN: subtract each row's maximum before np.exp.",
        about=output,
    )
    expect(got, reference.masked_attention(Q, K, V, mask))


@points(2, checks="masked_attention")
def test_masked_attention_fully_masked_row(student, reference, rng):
    """a query with every key masked gets weights 0 and output 0 (the policy in the handout)"""
    Q, K, V = (rng.normal(size=(4, 8)) for _ in range(3))
    mask = reference.causal_mask(4)
    mask[2] = False
    expect(student.masked_attention(Q, K, V, mask), reference.masked_attention(Q, K, V, mask))


# -- split_heads: 12 ------------------------------------------------------------------------


@points(3, checks="split_heads")
def test_split_heads_shape(student, reference, rng):
    """maps (n, d) to (h, n, d // h)"""
    X = rng.normal(size=(T, D_MODEL))
    expect_structure(student.split_heads(X, HEADS), reference.split_heads(X, HEADS))


@points(5, checks="split_heads")
def test_split_heads_values(student, reference, rng):
    """head i owns the contiguous columns i*d/h up to (i+1)*d/h"""
    X = rng.normal(size=(T, D_MODEL))
    for h in (HEADS, 4):
        expect(student.split_heads(X, h), reference.split_heads(X, h))


@points(4, checks="split_heads")
def test_split_heads_rejects_bad_h(student, rng):
    """raises ValueError when h does not divide d, h = 0 included"""
    X = rng.normal(size=(T, D_MODEL))
    with raises("ValueError"):
        student.split_heads(X, 5)
    with raises("ValueError"):  # not the ZeroDivisionError of d % 0
        student.split_heads(X, 0)


# -- merge_heads: 8 -------------------------------------------------------------------------


@points(4, checks="merge_heads")
def test_merge_heads_values(student, reference, rng):
    """maps (h, n, d_head) back to (n, h * d_head), head i into columns i*d_head onwards"""
    Xh = rng.normal(size=(HEADS, T, 8))
    expect(student.merge_heads(Xh), reference.merge_heads(Xh))


@points(4, checks="merge_heads")
def test_merge_undoes_split(student, reference, rng):
    """merge_heads undoes split_heads: merge_heads(split_heads(X, h)) gives X back"""
    X = rng.normal(size=(T, D_MODEL))
    for h in (HEADS, 4):  # split by the reference: a wrong split_heads must not cost merge_heads
        expect(student.merge_heads(reference.split_heads(X, h)), X)


# -- multi_head_attention: 20 ---------------------------------------------------------------


def expect_mha(student, reference, X, W, h, **kwargs):
    got = student.multi_head_attention(X, *W, h, **kwargs)
    expect(got, reference.multi_head_attention(X, *W, h, **kwargs), **MHA_TOLERANCE)


@points(5, checks="multi_head_attention")
def test_multi_head_attention_causal(student, reference, rng):
    """matches the reference with the causal mask (d_model 24, 3 heads)"""
    expect_mha(student, reference, rng.normal(size=(T, D_MODEL)), projections(rng), HEADS)


@points(3, checks="multi_head_attention")
def test_multi_head_attention_not_causal(student, reference, rng):
    """causal=False attends to every position"""
    X, W = rng.normal(size=(T, D_MODEL)), projections(rng)
    expect_mha(student, reference, X, W, HEADS, causal=False)


@points(4, checks="multi_head_attention")
def test_multi_head_attention_future_cannot_leak(student, rng):
    """changing later tokens leaves the outputs of earlier positions unchanged"""
    X = rng.normal(size=(T, D_MODEL))
    W = projections(rng)
    changed = X.copy()
    changed[3:] = rng.normal(size=(T - 3, D_MODEL))
    before = student.multi_head_attention(X, *W, HEADS)
    after = student.multi_head_attention(changed, *W, HEADS)
    expect_structure(before, X)
    expect_structure(after, X)
    check(
        np.allclose(before[:3], after[:3], rtol=1e-9, atol=1e-12),
        "changing tokens 3 to 5 changed the outputs of tokens 0 to 2: the future leaks "
        "into the past. Is the causal mask applied in every head, before the softmax?",
        about=before,
    )


@points(2, checks="multi_head_attention")
def test_multi_head_attention_unmasked_is_permutation_equivariant(student, rng):
    """with causal=False, shuffling the tokens shuffles the outputs the same way"""
    X = rng.normal(size=(T, D_MODEL))
    W = projections(rng)
    order = np.array([3, 0, 5, 1, 4, 2])
    output = student.multi_head_attention(X, *W, HEADS, causal=False)
    shuffled = student.multi_head_attention(X[order], *W, HEADS, causal=False)
    expect_structure(output, X)
    expect_structure(shuffled, X)
    check(
        np.allclose(shuffled, output[order], **MHA_TOLERANCE),
        "shuffling the tokens changed more than the order of the outputs. Without a mask, "
        "attention does not depend on where a token stands: is a mask applied although "
        "causal is False?",
        about=output,
    )


@points(3, checks="multi_head_attention")
def test_multi_head_attention_other_head_counts(student, reference, rng):
    """works for other numbers of heads (h = 2 and h = 4)"""
    X, W = rng.normal(size=(T, D_MODEL)), projections(rng)
    for h in (2, 4):
        expect_mha(student, reference, X, W, h)


@points(3, checks="multi_head_attention")
def test_multi_head_attention_large_inputs(student, reference, rng):
    """stays finite and correct for large inputs"""
    expect_mha(student, reference, 30 * rng.normal(size=(T, D_MODEL)), projections(rng), HEADS)
