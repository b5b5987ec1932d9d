"""Hidden tests for causal-self-attention: 56 points of Part 2 for the layer (the other 14
grade the student's own tests, declared in suite.yaml).

The layer is the student's object, living in the worker; the tests reach it through a handle.
Tests of attention_weights and forward set W_q, W_k, W_v, W_o, b_o and mask themselves, so
that a mistake in __init__ costs only __init__'s tests. Dimensions expose bugs: n_embed = 24
with 3 heads gives d_head = 8, so d_head, sqrt(d_head), n_embed and sqrt(n_embed) all differ;
B = 2, T >= 5, context_length = 12 > T. Expected values come from the reference.
"""

import numpy as np

from autograder.suite import check, expect, expect_structure, points, raises, tolerance

N_EMBED, N_HEAD, CONTEXT = 24, 3, 12
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}  # four projections: room for a float32 answer
LAYER = "CausalSelfAttention"


def build(module, rng, n_embed=N_EMBED, n_head=N_HEAD, context=CONTEXT):
    """A layer of module's with every graded attribute set by the test."""
    layer = getattr(module, LAYER)(n_embed, n_head, context, seed=5)
    layer.W_q, layer.W_k, layer.W_v, layer.W_o = (
        rng.normal(size=(n_embed, n_embed)) / np.sqrt(n_embed) for _ in range(4)
    )
    layer.b_o = rng.normal(size=n_embed)
    layer.mask = np.tril(np.ones((context, context), dtype=bool))
    return layer


def twins(student, reference, rng, **sizes):
    """The student's layer and the reference's, with the same weights."""
    state = rng.bit_generator.state
    mine = build(student, rng, **sizes)
    rng.bit_generator.state = state
    return mine, build(reference, rng, **sizes)


# -- __init__: 12 ---------------------------------------------------------------------------


@points(4, checks="CausalSelfAttention.__init__")
def test_init_builds_the_mask_buffer(student, reference):
    """mask is the (context_length, context_length) lower-triangular boolean buffer"""
    layer = student.CausalSelfAttention(N_EMBED, N_HEAD, CONTEXT)
    expect(layer.mask, reference.CausalSelfAttention(N_EMBED, N_HEAD, CONTEXT).mask)


@points(3, checks="CausalSelfAttention.__init__")
def test_init_weights_are_scaled(student):
    """W_q, W_k, W_v, W_o are (n_embed, n_embed), drawn with a spread of 1 / sqrt(n_embed),
    from np.random.default_rng(seed): the same seed gives the same weights, another seed
    others (which weights a seed gives is not fixed: the draw order is free)"""
    layer = student.CausalSelfAttention(256, 4, 8, seed=0)
    for name in ("W_q", "W_k", "W_v", "W_o"):
        weights = getattr(layer, name)
        expect_structure(weights, np.zeros((256, 256)))
        spread = float(np.std(weights)) * 16
        check(
            abs(spread - 1) < 0.1,
            f"{name} has a standard deviation of {spread / 16:.4f}; with n_embed = 256 the "
            "weights should be drawn with 1 / sqrt(256) = 0.0625.",
            weights,
        )
    first, again, other = (
        student.CausalSelfAttention(N_EMBED, N_HEAD, CONTEXT, seed=s) for s in (1, 1, 2)
    )
    names = ("W_q", "W_k", "W_v", "W_o")
    same = all(np.array_equal(getattr(first, n), getattr(again, n)) for n in names)
    check(
        same,
        "two layers built with seed=1 have different weights: draw them from "
        "np.random.default_rng(seed), and nothing else random.",
        cause="the seed does not fix the weights: is it passed to np.random.default_rng, and "
        "is nothing else random drawn?",
    )
    moved = any(not np.array_equal(getattr(first, n), getattr(other, n)) for n in names)
    check(
        moved,
        "layers built with seed=1 and seed=2 have the same weights: is the seed passed to "
        "np.random.default_rng?",
        cause="every seed gives the same weights: the seed is not passed to np.random.default_rng",
    )


@points(2, checks="CausalSelfAttention.__init__")
def test_init_bias_starts_at_zero(student):
    """b_o is (n_embed,) zeros"""
    expect(student.CausalSelfAttention(N_EMBED, N_HEAD, CONTEXT).b_o, np.zeros(N_EMBED))


@points(3, checks="CausalSelfAttention.__init__")
def test_init_rejects_heads_that_do_not_divide(student):
    """ValueError when n_head does not divide n_embed"""
    with raises("ValueError"):
        student.CausalSelfAttention(20, 3, CONTEXT)


# -- attention_weights: 22 ------------------------------------------------------------------


@points(8, checks="CausalSelfAttention.attention_weights")
def test_weights_values(student, reference, rng):
    """softmax((q k^T) / sqrt(d_head)) with the future masked, for every head"""
    mine, ref = twins(student, reference, rng)
    x = rng.normal(size=(2, 6, N_EMBED))
    expect(mine.attention_weights(x), ref.attention_weights(x))


@points(2, checks="CausalSelfAttention.attention_weights")
def test_weights_shape(student, reference, rng):
    """(B, n_head, T, T)"""
    mine, ref = twins(student, reference, rng)
    x = rng.normal(size=(2, 5, N_EMBED))
    expect_structure(mine.attention_weights(x), ref.attention_weights(x))


@points(4, checks="CausalSelfAttention.attention_weights")
def test_weights_are_causal_distributions(student, reference, rng):
    """each row sums to 1, and every weight on a later position is exactly 0"""
    mine, _ = twins(student, reference, rng)
    weights = mine.attention_weights(rng.normal(size=(2, 7, N_EMBED)))
    expect_structure(weights, np.zeros((2, N_HEAD, 7, 7)))
    future = ~np.tril(np.ones((7, 7), dtype=bool))
    check(
        np.all(weights[..., future] == 0),
        "a weight on a later position is not 0.",
        weights,
        cause="the future still gets weight: a mask that allows it, or masked scores not set "
        "to -inf before the softmax?",
    )
    check(
        np.allclose(weights.sum(axis=-1), 1),
        "rows of weights do not sum to 1.",
        weights,
        cause="each query's weights are not a distribution over the keys: is the softmax "
        "taken over the last axis, with the mask applied before it?",
    )
    # large scores (inputs x30: scores in the hundreds or thousands) must stay distributions
    large = mine.attention_weights(30.0 * rng.normal(size=(2, 7, N_EMBED)))
    check(
        np.all(np.isfinite(large)) and np.allclose(large.sum(axis=-1), 1),
        "with large scores the weights have inf or NaN in them, or rows that do not sum to 1: "
        "is each row's maximum subtracted before exp, as a stable softmax does?",
        large,
        cause="the softmax overflows on large scores: is each row's maximum subtracted before exp?",
    )


@points(4, checks="CausalSelfAttention.attention_weights")
def test_weights_use_the_mask_buffer(student, reference, rng):
    """the mask buffer is sliced to (T, T), not rebuilt: a changed buffer is obeyed"""
    mine, ref = twins(student, reference, rng)
    window = np.tril(np.ones((CONTEXT, CONTEXT), dtype=bool)) & ~np.tril(
        np.ones((CONTEXT, CONTEXT), dtype=bool), k=-3
    )
    window[5:, 2] = True  # not the same band everywhere: the buffer's top-left (T, T) is used
    mine.mask, ref.mask = window, window
    x = rng.normal(size=(2, 8, N_EMBED))
    expect(mine.attention_weights(x), ref.attention_weights(x))


@points(4, checks="CausalSelfAttention.attention_weights")
def test_weights_reject_bad_input(student, reference, rng):
    """ValueError for x that is not 3-D, has the wrong width, or is longer than context"""
    for bad in ((5, N_EMBED), (2, 5, N_EMBED + 1), (1, CONTEXT + 2, N_EMBED)):
        # a fresh layer for each input: the diagnosis rebuilds a layer by replaying every call
        # that touched it, and an earlier call that raised would stop that replay
        mine, _ = twins(student, reference, rng)
        with raises("ValueError"):
            mine.attention_weights(rng.normal(size=bad))
    # context_length 1: its (1, 1) mask broadcasts over any T, so only a check of T raises
    mine, _ = twins(student, reference, rng, context=1)
    with raises("ValueError"):
        mine.attention_weights(rng.normal(size=(1, 3, N_EMBED)))


# -- forward: 22 ----------------------------------------------------------------------------


@points(8, checks="CausalSelfAttention.forward")
def test_forward_values(student, reference, rng):
    """heads joined in order, @ W_o + b_o"""
    mine, ref = twins(student, reference, rng)
    x = rng.normal(size=(2, 6, N_EMBED))
    expect(mine.forward(x), ref.forward(x), **TOLERANCE)


@points(4, checks="CausalSelfAttention.forward")
def test_forward_other_sizes(student, reference, rng):
    """4 heads of width 6 on n_embed = 24, T = 1 and T = context_length"""
    mine, ref = twins(student, reference, rng, n_head=4)
    for T in (1, CONTEXT):
        x = rng.normal(size=(3, T, N_EMBED))
        expect(mine.forward(x), ref.forward(x), **TOLERANCE)


@points(3, checks="CausalSelfAttention.forward")
def test_forward_bias_is_added_last(student, reference, rng):
    """with zero weights everywhere but W_o = I, the output is exactly b_o"""
    mine, _ = twins(student, reference, rng)
    mine.W_o = np.eye(N_EMBED)
    mine.W_v = np.zeros((N_EMBED, N_EMBED))
    bias = np.arange(N_EMBED) / 10.0
    mine.b_o = bias
    expect(mine.forward(rng.normal(size=(2, 4, N_EMBED))), np.broadcast_to(bias, (2, 4, N_EMBED)))


@points(4, checks="CausalSelfAttention.forward")
def test_forward_future_cannot_leak(student, reference, rng):
    """changing the tokens after position t leaves outputs 0..t unchanged"""
    mine, _ = twins(student, reference, rng)
    x = rng.normal(size=(2, 7, N_EMBED))
    before = mine.forward(x)
    expect_structure(before, x)
    for t in range(6):
        changed = x.copy()
        changed[:, t + 1 :] += 5 * rng.normal(size=changed[:, t + 1 :].shape)
        after = mine.forward(changed)
        rtol, atol = tolerance(after, before)  # widened for a float32 answer
        check(
            np.allclose(after[:, : t + 1], before[:, : t + 1], rtol=rtol, atol=atol),
            f"changing the tokens after position {t} changed the output at position {t} or "
            "before: the future leaks.",
            after,
            cause="an output depends on later tokens: the future is not masked out of the "
            "weights that forward uses",
        )


@points(3, checks="CausalSelfAttention.forward")
def test_forward_rejects_too_long_sequences(student, reference, rng):
    """ValueError when T > context_length"""
    mine, _ = twins(student, reference, rng)
    with raises("ValueError"):
        mine.forward(rng.normal(size=(1, CONTEXT + 1, N_EMBED)))
    short, _ = twins(student, reference, rng, context=1)  # a (1, 1) mask broadcasts
    with raises("ValueError"):
        short.forward(rng.normal(size=(1, 3, N_EMBED)))
