"""Hidden tests for padding-and-batches: 70 points of Part 2.

Dimensions are chosen to expose bugs: C = 24 with h = 3 gives d_head = 8, so d_head,
sqrt(d_head), C and sqrt(C) all differ; T >= 4; every batch has B >= 2 sequences of unequal
lengths, one of them full and one of them short; cross-attention uses S != T both ways.
Padding bugs hide behind the causal mask (with right padding a real query never looks right
of itself), so every padding test also runs with causal=False. The main multi-head test has
B = h, where a mask without its head axis broadcasts silently instead of raising. The
cross-attention tests use B != h, as the handout's warning asks, and one of them B = h, the
silent case itself.

Outputs at padded query positions are not graded (the handout says so): multi-head outputs
are compared at real positions only. Expected values come from the reference at grading time.

Tolerance: rtol 1e-5 and atol 1e-7 (the engine's default), except for outputs that go through
four projections: there atol is 1e-6, so that a correct float32 implementation passes.
"""

import numpy as np

from autograder.suite import check, expect, expect_structure, parts, points, raises

C, HEADS = 24, 3
T, LENGTHS = 7, [7, 2, 5]  # one full sequence, one short, one in between
MHA_TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
PADDING_SCALE = 100.0  # padded tokens get large, finite, meaningless values


def projections(rng, c=C):
    return [rng.normal(size=(c, c)) / np.sqrt(c) for _ in range(4)]


def real_positions(lengths, T):
    """(B, T) True at real tokens, built here rather than trusted from the student."""
    return np.arange(T)[None, :] < np.asarray(lengths)[:, None]


def expect_real(got, want, lengths):
    """Compare (B, T, C) outputs at real query positions only: padded ones are free."""
    expect_structure(got, want)
    real = real_positions(lengths, want.shape[1])[..., None]
    expect(got, want, graded=real, **MHA_TOLERANCE)


def with_new_padding(rng, X, lengths):
    """X with every padded token replaced by other large values; real tokens unchanged."""
    changed = X.copy()
    padded = ~real_positions(lengths, X.shape[1])
    changed[padded] = PADDING_SCALE * rng.normal(size=changed[padded].shape)
    return changed


# -- padding_mask: 10 ------------------------------------------------------------------------


@points(2, checks="padding_mask")
def test_padding_mask_shape_and_dtype(student, reference):
    """returns a (B, T) array of booleans"""
    expect_structure(student.padding_mask([3, 1, 4], 5), reference.padding_mask([3, 1, 4], 5))


@points(4, checks="padding_mask")
def test_padding_mask_values(student, reference):
    """is True exactly at t < lengths[b] (right padding), for lengths 0 to T"""
    lengths = [5, 2, 0, 3]
    expect(student.padding_mask(lengths, 5), reference.padding_mask(lengths, 5))


@points(1, checks="padding_mask")
def test_padding_mask_array_lengths(student, reference):
    """accepts the lengths as a NumPy array of ints too"""
    lengths = np.array([1, 6, 4])
    expect(student.padding_mask(lengths, 6), reference.padding_mask(lengths, 6))


@points(2, checks="padding_mask")
def test_padding_mask_rejects_length_above_T(student):
    """raises ValueError for a length above T"""
    with raises("ValueError"):
        student.padding_mask([3, 6], 5)


@points(1, checks="padding_mask")
def test_padding_mask_rejects_negative_length(student):
    """raises ValueError for a length below 0"""
    with raises("ValueError"):
        student.padding_mask([-1, 2], 5)


# -- attention_mask: 12 ----------------------------------------------------------------------


@points(2, checks="attention_mask")
def test_attention_mask_shape_and_dtype(student, reference):
    """returns a (B, T, T) array of booleans"""
    expect_structure(student.attention_mask([4, 2], 4), reference.attention_mask([4, 2], 4))


@points(4, checks="attention_mask")
def test_attention_mask_causal(student, reference):
    """causal=True: key j is real and j <= i"""
    lengths = [6, 2, 4]
    expect(student.attention_mask(lengths, 6), reference.attention_mask(lengths, 6))


@points(4, checks="attention_mask")
def test_attention_mask_not_causal(student, reference):
    """causal=False: every real key, for every query"""
    lengths = [6, 2, 4]
    got = student.attention_mask(lengths, 6, causal=False)
    expect(got, reference.attention_mask(lengths, 6, causal=False))


@points(2, checks="attention_mask")
def test_attention_mask_padded_queries_see_real_keys(student, reference):
    """masks keys only: the rows of padded queries still allow the real keys"""
    got = student.attention_mask([5, 2], 5, causal=False)
    expect_structure(got, reference.attention_mask([5, 2], 5, causal=False))
    check(
        np.array_equal(got[1, 2:], np.tile([True, True, False, False, False], (3, 1))),
        "in a sequence of length 2 padded to 5 (causal=False), the rows of the padded queries "
        "2 to 4 should allow exactly the real keys 0 and 1. The padding mask goes on the keys "
        "(the columns); the rows of padded queries are not masked.",
        about=got,
    )


# -- batched_attention: 18 -------------------------------------------------------------------


@points(1, checks="batched_attention")
def test_batched_attention_no_leading_dimension(student, reference, rng):
    """without a mask on (T, d) inputs, T != S and d_v != d"""
    Q, K, V = rng.normal(size=(4, 8)), rng.normal(size=(6, 8)), rng.normal(size=(6, 5))
    expect(student.batched_attention(Q, K, V), reference.batched_attention(Q, K, V))


@points(3, checks="batched_attention")
def test_batched_attention_batch_dimension(student, reference, rng):
    """without a mask on (B, T, d) inputs (K^T there swaps only the last two axes)"""
    Q, K, V = rng.normal(size=(3, 4, 8)), rng.normal(size=(3, 6, 8)), rng.normal(size=(3, 6, 5))
    expect(student.batched_attention(Q, K, V), reference.batched_attention(Q, K, V))


@points(4, checks="batched_attention")
def test_batched_attention_key_padding_mask(student, reference, rng):
    """(B, H, T, d) inputs with a (B, 1, 1, S) key padding mask that broadcasts"""
    Q, K, V = (
        rng.normal(size=(3, 2, 5, 8)),
        rng.normal(size=(3, 2, 6, 8)),
        rng.normal(size=(3, 2, 6, 4)),
    )
    mask = real_positions([6, 2, 4], 6)[:, None, None, :]
    expect(student.batched_attention(Q, K, V, mask), reference.batched_attention(Q, K, V, mask))


@points(3, checks="batched_attention")
def test_batched_attention_causal_and_padding(student, reference, rng):
    """(B, H, T, d) inputs with a (B, 1, T, T) causal and padding mask"""
    Q, K, V = (rng.normal(size=(3, 2, 6, 8)) for _ in range(3))
    mask = reference.attention_mask([6, 3, 5], 6)[:, None]
    expect(student.batched_attention(Q, K, V, mask), reference.batched_attention(Q, K, V, mask))


@points(3, checks="batched_attention")
def test_batched_attention_fully_masked_rows(student, reference, rng):
    """a sequence with no real key gets weights 0 and output 0 (the policy in the handout)"""
    Q, K, V = rng.normal(size=(3, 4, 8)), rng.normal(size=(3, 5, 8)), rng.normal(size=(3, 5, 3))
    mask = real_positions([5, 0, 2], 5)[:, None, :]
    expect(student.batched_attention(Q, K, V, mask), reference.batched_attention(Q, K, V, mask))


@points(2, checks="batched_attention")
def test_batched_attention_large_scores(student, reference, rng):
    """stays finite and correct when the scores are huge (a stable softmax)"""
    Q, K, V = (
        40 * rng.normal(size=(2, 5, 8)),
        40 * rng.normal(size=(2, 5, 8)),
        rng.normal(size=(2, 5, 3)),
    )
    mask = reference.attention_mask([5, 3], 5)
    got = student.batched_attention(Q, K, V, mask)
    weights, output = parts(got, "weights", "output")
    expect_structure(output, V[:, :, :3])
    check(
        np.all(np.isfinite(weights)) and np.all(np.isfinite(output)),
        "large scores produced inf or NaN: subtract each row's maximum before np.exp.",
        about=output,
    )
    expect(got, reference.batched_attention(Q, K, V, mask))


@points(2, checks="batched_attention")
def test_batched_attention_weights_are_a_distribution(student, reference, rng):
    """each row with a real key sums to 1, and masked weights are exactly 0"""
    Q, K, V = (rng.normal(size=(2, 6, 8)) for _ in range(3))
    mask = reference.attention_mask([6, 3], 6, causal=False)
    weights, _ = parts(student.batched_attention(Q, K, V, mask), "weights", "output")
    expect_structure(weights, mask.astype(float))
    check(
        np.all(weights[~mask] == 0),
        "some masked positions have a weight that is not exactly 0: the mask must act on the "
        "scores, before the softmax.",
        about=weights,
    )
    check(
        np.allclose(weights.sum(axis=-1), 1), "the rows of weights do not sum to 1.", about=weights
    )


# -- multi_head_attention: 18 ----------------------------------------------------------------


@points(4, checks="multi_head_attention")
def test_multi_head_attention_causal(student, reference, rng):
    """matches the reference at real positions, causal (C = 24, 3 heads, 3 sequences)"""
    X, W = rng.normal(size=(len(LENGTHS), T, C)), projections(rng)
    got = student.multi_head_attention(X, LENGTHS, *W, HEADS)
    expect_real(got, reference.multi_head_attention(X, LENGTHS, *W, HEADS), LENGTHS)


@points(4, checks="multi_head_attention")
def test_multi_head_attention_not_causal(student, reference, rng):
    """matches the reference at real positions with causal=False: only padding is masked"""
    X, W = rng.normal(size=(len(LENGTHS), T, C)), projections(rng)
    got = student.multi_head_attention(X, LENGTHS, *W, HEADS, causal=False)
    want = reference.multi_head_attention(X, LENGTHS, *W, HEADS, causal=False)
    expect_real(got, want, LENGTHS)


def expect_padding_ignored(student, rng, causal):
    X, W = rng.normal(size=(len(LENGTHS), T, C)), projections(rng)
    before = student.multi_head_attention(X, LENGTHS, *W, HEADS, causal=causal)
    changed = with_new_padding(rng, X, LENGTHS)
    after = student.multi_head_attention(changed, LENGTHS, *W, HEADS, causal=causal)
    expect_structure(before, X)
    expect_structure(after, X)
    real = real_positions(LENGTHS, T)
    check(
        np.allclose(before[real], after[real], **MHA_TOLERANCE),
        f"changing only the padded tokens (causal={causal}) changed the outputs at real "
        "positions: padding leaks into real tokens. Are the padded keys masked in every head, "
        "before the softmax?",
        about=after,
    )


@points(3, checks="multi_head_attention")
def test_multi_head_attention_padding_is_ignored(student, rng):
    """causal=False: changing padded tokens leaves every real output unchanged"""
    expect_padding_ignored(student, rng, causal=False)


@points(2, checks="multi_head_attention")
def test_multi_head_attention_padding_is_ignored_causal(student, rng):
    """causal=True: changing padded tokens leaves every real output unchanged"""
    expect_padding_ignored(student, rng, causal=True)


@points(3, checks="multi_head_attention")
def test_multi_head_attention_each_sequence_alone(student, rng):
    """lengths 9, 1 and 4 in one batch give what each sequence gives alone (causal=False)"""
    lengths = [9, 1, 4]
    X, W = rng.normal(size=(3, 9, C)), projections(rng)
    batch = student.multi_head_attention(X, lengths, *W, HEADS, causal=False)
    expect_structure(batch, X)
    for b, length in enumerate(lengths):
        alone = student.multi_head_attention(
            X[b : b + 1, :length], [length], *W, HEADS, causal=False
        )
        expect_structure(alone, X[b : b + 1, :length])
        check(
            np.allclose(batch[b, :length], alone[0], **MHA_TOLERANCE),
            f"sequence {b} (length {length}) gives other outputs in the batch than alone: "
            "its real tokens see the padding, or the other sequences.",
            about=batch,
        )


@points(2, checks="multi_head_attention")
def test_multi_head_attention_other_head_counts(student, reference, rng):
    """works for h = 2 and h = 4, causal and not"""
    X, W = rng.normal(size=(len(LENGTHS), T, C)), projections(rng)
    for h in (2, 4):
        for causal in (True, False):
            got = student.multi_head_attention(X, LENGTHS, *W, h, causal=causal)
            want = reference.multi_head_attention(X, LENGTHS, *W, h, causal=causal)
            expect_real(got, want, LENGTHS)


# -- cross_attention: 12 ---------------------------------------------------------------------


def expect_cross(student, reference, X, Y, y_lengths, W):
    got = student.cross_attention(X, Y, y_lengths, *W, HEADS)
    expect(got, reference.cross_attention(X, Y, y_lengths, *W, HEADS), **MHA_TOLERANCE)


@points(3, checks="cross_attention")
def test_cross_attention_fewer_keys(student, reference, rng):
    """T = 6 queries from X attend to S = 4 keys of Y, with padding on Y (B = 4, h = 3)"""
    X, Y = rng.normal(size=(4, 6, C)), rng.normal(size=(4, 4, C))
    expect_cross(student, reference, X, Y, [4, 1, 3, 2], projections(rng))


@points(3, checks="cross_attention")
def test_cross_attention_more_keys_and_an_empty_one(student, reference, rng):
    """T = 5 queries, S = 9 keys; a Y of length 0 gives output 0 (B = 2, h = 3)"""
    X, Y = rng.normal(size=(2, 5, C)), rng.normal(size=(2, 9, C))
    expect_cross(student, reference, X, Y, [0, 9], projections(rng))


@points(3, checks="cross_attention")
def test_cross_attention_padding_of_y_is_ignored(student, rng):
    """changing Y's padded tokens leaves every output unchanged"""
    y_lengths = [7, 2, 5, 4]
    X, Y, W = rng.normal(size=(4, 4, C)), rng.normal(size=(4, 7, C)), projections(rng)
    before = student.cross_attention(X, Y, y_lengths, *W, HEADS)
    after = student.cross_attention(X, with_new_padding(rng, Y, y_lengths), y_lengths, *W, HEADS)
    expect_structure(before, X)
    expect_structure(after, X)
    check(
        np.allclose(before, after, **MHA_TOLERANCE),
        "changing only the padded tokens of Y changed the outputs: the queries attend to Y's "
        "padding. The padding mask of cross-attention comes from y_lengths and goes on Y's "
        "keys.",
        about=after,
    )


@points(2, checks="cross_attention")
def test_cross_attention_each_sequence_alone(student, rng):
    """each sequence gives what it gives alone, with Y cut to its real length (B = 2, h = 3)"""
    y_lengths = [6, 1]
    X, Y, W = rng.normal(size=(2, 4, C)), rng.normal(size=(2, 6, C)), projections(rng)
    batch = student.cross_attention(X, Y, y_lengths, *W, HEADS)
    expect_structure(batch, X)
    for b, length in enumerate(y_lengths):
        alone = student.cross_attention(X[b : b + 1], Y[b : b + 1, :length], [length], *W, HEADS)
        expect_structure(alone, X[b : b + 1])
        check(
            np.allclose(batch[b], alone[0], **MHA_TOLERANCE),
            f"sequence {b} (Y of length {length}) gives other outputs in the batch than alone: "
            "its queries see Y's padding, or the other sequences.",
            about=batch,
        )


@points(1, checks="cross_attention")
def test_cross_attention_when_b_equals_h(student, reference, rng):
    """B = h = 3, the handout's silent case: every head uses its own sequence's key mask"""
    X, Y = rng.normal(size=(HEADS, 5, C)), rng.normal(size=(HEADS, 6, C))
    expect_cross(student, reference, X, Y, [6, 1, 3], projections(rng))
