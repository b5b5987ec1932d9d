"""MISTAKE: the mask is applied after the softmax (weights * mask) without renormalising, so rows no longer sum to 1
Affects: attention_weights and forward.

(This file: the student's own tests, the same in every folder of the corpus.)

Tests you write for a causal self-attention layer: each receives ``Layer``, a class with the API of
``CausalSelfAttention`` (see README.md), must pass for every correct implementation and fail for
buggy ones. Plain ``assert`` and NumPy only.
"""

import numpy as np

RNG = np.random.default_rng(2024)
N_EMBED, N_HEAD, CONTEXT = 24, 3, 10

# Loose enough for float32 / einsum / -1e9 layers, far tighter than any real bug.
RTOL, ATOL = 1e-4, 1e-6


def layer_with_weights(Layer, n_head=N_HEAD, context=CONTEXT):
    """A layer whose weights and bias are set by the test (random, but known)."""
    layer = Layer(N_EMBED, n_head, context, seed=1)
    layer.W_q, layer.W_k, layer.W_v, layer.W_o = (
        RNG.normal(size=(N_EMBED, N_EMBED)) / np.sqrt(N_EMBED) for _ in range(4)
    )
    layer.b_o = RNG.normal(size=N_EMBED)
    return layer


def _softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def reference(x, W_q, W_k, W_v, W_o, b_o, n_head, mask):
    """Straightforward loop-over-heads reference (float64)."""
    x = np.asarray(x, dtype=np.float64)
    B, T, C = x.shape
    d = C // n_head
    q, k, v = x @ W_q, x @ W_k, x @ W_v
    weights = np.zeros((B, n_head, T, T))
    joined = np.zeros((B, T, C))
    allowed = np.asarray(mask, dtype=bool)[:T, :T]
    for h in range(n_head):
        cols = slice(h * d, (h + 1) * d)
        s = q[:, :, cols] @ np.swapaxes(k[:, :, cols], 1, 2) / np.sqrt(d)
        s = np.where(allowed, s, -np.inf)
        w = _softmax(s)
        weights[:, h] = w
        joined[:, :, cols] = w @ v[:, :, cols]
    return weights, joined @ W_o + b_o


def _known(Layer, n_head=N_HEAD, context=CONTEXT):
    layer = layer_with_weights(Layer, n_head, context)
    W = [np.array(getattr(layer, n), dtype=np.float64) for n in ("W_q", "W_k", "W_v", "W_o", "b_o")]
    return layer, W


def _raises(fn, *args):
    try:
        fn(*args)
    except ValueError:
        return True
    return False


# --------------------------------------------------------------------------- required


def test_future_cannot_leak(Layer):
    for n_head in (3, 4):
        layer = layer_with_weights(Layer, n_head)
        x = RNG.normal(size=(2, CONTEXT, N_EMBED))
        out = np.asarray(layer.forward(x))
        w = np.asarray(layer.attention_weights(x))
        # nothing above the diagonal
        upper = np.triu(np.ones((CONTEXT, CONTEXT), dtype=bool), k=1)
        assert np.all(np.abs(w[..., upper]) <= 1e-12), "weight on a future token"
        for t in range(CONTEXT - 1):
            y = x.copy()
            y[:, t + 1:] = RNG.normal(size=y[:, t + 1:].shape) * 5
            out2 = np.asarray(layer.forward(y))
            w2 = np.asarray(layer.attention_weights(y))
            assert np.allclose(out2[:, : t + 1], out[:, : t + 1], rtol=RTOL, atol=ATOL), (
                f"changing tokens after {t} changed forward outputs 0..{t}"
            )
            assert np.allclose(w2[:, :, : t + 1], w[:, :, : t + 1], rtol=RTOL, atol=ATOL), (
                f"changing tokens after {t} changed weights of rows 0..{t}"
            )
        # the past does matter: the last position sees the first token
        y = x.copy()
        y[:, 0] += 3.0
        assert not np.allclose(np.asarray(layer.forward(y))[:, -1], out[:, -1]), (
            "last position ignores the first token"
        )


def test_rows_sum_to_one(Layer):
    for n_head in (3, 4):
        layer = layer_with_weights(Layer, n_head)
        for scale in (1.0, 30.0, 100.0):
            for T in (1, 4, CONTEXT):
                x = RNG.normal(size=(3, T, N_EMBED)) * scale
                w = np.asarray(layer.attention_weights(x))
                assert w.shape == (3, n_head, T, T)
                assert np.all(np.isfinite(w)), f"non-finite weights at scale {scale}"
                assert np.all(w >= -1e-12), "negative weights"
                assert np.allclose(w.sum(axis=-1), 1.0, rtol=1e-5, atol=1e-6), (
                    f"rows do not sum to 1 at scale {scale}"
                )
                out = np.asarray(layer.forward(x))
                assert out.shape == (3, T, N_EMBED)
                assert np.all(np.isfinite(out)), f"non-finite forward at scale {scale}"


# --------------------------------------------------------------------------- values


def test_weights_match_reference(Layer):
    for n_head in (3, 4):
        layer, W = _known(Layer, n_head)
        for B, T in ((2, 1), (3, 5), (2, CONTEXT)):
            x = RNG.normal(size=(B, T, N_EMBED))
            ref_w, _ = reference(x, *W, n_head, np.tril(np.ones((CONTEXT, CONTEXT), bool)))
            w = np.asarray(layer.attention_weights(x))
            assert w.shape == ref_w.shape
            assert np.allclose(w, ref_w, rtol=RTOL, atol=ATOL), "attention weights differ"


def test_forward_matches_reference(Layer):
    for n_head in (3, 4):
        layer, W = _known(Layer, n_head)
        for B, T in ((2, 1), (3, 6), (2, CONTEXT)):
            x = RNG.normal(size=(B, T, N_EMBED))
            _, ref_out = reference(x, *W, n_head, np.tril(np.ones((CONTEXT, CONTEXT), bool)))
            out = np.asarray(layer.forward(x))
            assert out.shape == ref_out.shape
            assert np.allclose(out, ref_out, rtol=RTOL, atol=1e-5), "forward output differs"


def test_large_scores_values(Layer):
    layer, W = _known(Layer, 4)
    x = RNG.normal(size=(2, CONTEXT, N_EMBED)) * 30
    ref_w, ref_out = reference(x, *W, 4, np.tril(np.ones((CONTEXT, CONTEXT), bool)))
    w = np.asarray(layer.attention_weights(x))
    out = np.asarray(layer.forward(x))
    # loose: float32 layers lose a few digits when scores are in the thousands
    assert np.allclose(w, ref_w, rtol=1e-2, atol=1e-3), "weights wrong for large scores"
    assert np.allclose(out, ref_out, rtol=1e-2, atol=1e-3), "forward wrong for large scores"


def test_bias_added_after_projection(Layer):
    layer, W = _known(Layer)
    x = RNG.normal(size=(2, 4, N_EMBED))
    base = np.asarray(layer.forward(x))
    layer.b_o = np.asarray(W[4]) + 1.0
    shifted = np.asarray(layer.forward(x))
    assert np.allclose(shifted - base, 1.0, rtol=RTOL, atol=1e-5), "b_o not added after W_o"
    # a zero W_o leaves exactly the bias
    layer.W_o = np.zeros((N_EMBED, N_EMBED))
    layer.b_o = np.arange(N_EMBED, dtype=float)
    out = np.asarray(layer.forward(x))
    assert np.allclose(out, np.arange(N_EMBED), atol=1e-5), "bias must be added after W_o"


def test_head_order_identity_projections(Layer):
    """With W_v = W_o = I and b_o = 0, forward returns the joined heads themselves."""
    for n_head in (3, 4):
        layer, W = _known(Layer, n_head)
        layer.W_v = np.eye(N_EMBED)
        layer.W_o = np.eye(N_EMBED)
        layer.b_o = np.zeros(N_EMBED)
        x = RNG.normal(size=(2, 7, N_EMBED))
        w = np.asarray(layer.attention_weights(x))
        out = np.asarray(layer.forward(x))
        d = N_EMBED // n_head
        for h in range(n_head):
            cols = slice(h * d, (h + 1) * d)
            assert np.allclose(out[:, :, cols], w[:, h] @ x[:, :, cols], rtol=RTOL, atol=1e-5), (
                f"head {h} not in columns {h * d}:{(h + 1) * d}"
            )


# --------------------------------------------------------------------------- the mask buffer


def test_mask_attribute(Layer):
    layer = Layer(N_EMBED, N_HEAD, CONTEXT, seed=0)
    mask = np.asarray(layer.mask)
    assert mask.shape == (CONTEXT, CONTEXT)
    assert mask.dtype == bool
    assert np.array_equal(mask, np.tril(np.ones((CONTEXT, CONTEXT), dtype=bool)))
    other = Layer(N_EMBED, N_HEAD, 7, seed=0)
    assert np.asarray(other.mask).shape == (7, 7)


def test_mask_buffer_is_used(Layer):
    layer, W = _known(Layer)
    rng = np.random.default_rng(5)
    pattern = rng.random((CONTEXT, CONTEXT)) < 0.5
    np.fill_diagonal(pattern, True)  # every row keeps at least one key
    layer.mask = pattern
    for T in (4, CONTEXT):
        x = RNG.normal(size=(2, T, N_EMBED))
        ref_w, ref_out = reference(x, *W, N_HEAD, pattern)
        w = np.asarray(layer.attention_weights(x))
        assert np.allclose(w, ref_w, rtol=RTOL, atol=ATOL), "weights ignore the mask buffer"
        assert np.allclose(np.asarray(layer.forward(x)), ref_out, rtol=RTOL, atol=1e-5), (
            "forward ignores the mask buffer"
        )
    # the identity mask: every token attends only to itself
    layer.mask = np.eye(CONTEXT, dtype=bool)
    x = RNG.normal(size=(2, 6, N_EMBED))
    w = np.asarray(layer.attention_weights(x))
    assert np.allclose(w, np.broadcast_to(np.eye(6), w.shape), atol=1e-6)
    expected = x @ W[2] @ W[3] + W[4]
    assert np.allclose(np.asarray(layer.forward(x)), expected, rtol=RTOL, atol=1e-5)


# --------------------------------------------------------------------------- __init__


def test_init_weights(Layer):
    n = 64
    layer = Layer(n, 4, 8, seed=3)
    for name in ("W_q", "W_k", "W_v", "W_o"):
        W = np.asarray(getattr(layer, name))
        assert W.shape == (n, n), name
        assert abs(W.std() - 1 / np.sqrt(n)) < 0.1 / np.sqrt(n), f"{name} std {W.std()}"
        assert abs(W.mean()) < 0.1 / np.sqrt(n), f"{name} mean {W.mean()}"
    b = np.asarray(layer.b_o)
    assert b.shape == (n,) and np.all(b == 0)
    names = ("W_q", "W_k", "W_v", "W_o")
    mats = [np.asarray(getattr(layer, nm)) for nm in names]
    for i in range(4):
        for j in range(i + 1, 4):
            assert not np.allclose(mats[i], mats[j]), f"{names[i]} equals {names[j]}"


def test_seed(Layer):
    a = Layer(N_EMBED, N_HEAD, CONTEXT, seed=7)
    b = Layer(N_EMBED, N_HEAD, CONTEXT, seed=7)
    c = Layer(N_EMBED, N_HEAD, CONTEXT, seed=8)
    for name in ("W_q", "W_k", "W_v", "W_o"):
        assert np.array_equal(np.asarray(getattr(a, name)), np.asarray(getattr(b, name))), (
            f"same seed, different {name}"
        )
        assert not np.allclose(np.asarray(getattr(a, name)), np.asarray(getattr(c, name))), (
            f"different seeds, same {name}"
        )
    x = RNG.normal(size=(2, 5, N_EMBED))
    assert np.allclose(np.asarray(a.forward(x)), np.asarray(b.forward(x)))


def test_default_weights_are_used(Layer):
    layer = Layer(N_EMBED, N_HEAD, CONTEXT, seed=4)
    W = [np.asarray(getattr(layer, n), dtype=np.float64) for n in ("W_q", "W_k", "W_v", "W_o", "b_o")]
    x = RNG.normal(size=(2, 6, N_EMBED))
    ref_w, ref_out = reference(x, *W, N_HEAD, np.tril(np.ones((CONTEXT, CONTEXT), bool)))
    assert np.allclose(np.asarray(layer.attention_weights(x)), ref_w, rtol=RTOL, atol=ATOL)
    assert np.allclose(np.asarray(layer.forward(x)), ref_out, rtol=RTOL, atol=1e-5)


# --------------------------------------------------------------------------- errors


def test_errors(Layer):
    for n_embed, n_head in ((16, 3), (24, 5), (64, 5), (10, 4)):
        assert _raises(Layer, n_embed, n_head, 8), f"n_embed={n_embed}, n_head={n_head} accepted"
    layer = Layer(N_EMBED, N_HEAD, CONTEXT, seed=0)
    bad = (
        np.zeros((5, N_EMBED)),  # 2-D
        np.zeros((N_EMBED,)),  # 1-D
        np.zeros((1, 2, 3, N_EMBED)),  # 4-D
        np.zeros((2, 3, N_EMBED + 1)),  # wrong channels
        np.zeros((2, 3, N_EMBED - 8)),  # wrong channels, divisible by heads
        np.zeros((1, CONTEXT + 1, N_EMBED)),  # too long
        np.zeros((2, 3 * CONTEXT, N_EMBED)),  # much too long
    )
    for x in bad:
        assert _raises(layer.forward, x), f"forward accepted shape {x.shape}"
        assert _raises(layer.attention_weights, x), f"attention_weights accepted shape {x.shape}"


def test_longest_and_shortest_sequences_accepted(Layer):
    for n_head in (3, 4):
        layer = layer_with_weights(Layer, n_head)
        for T in (1, CONTEXT):
            x = RNG.normal(size=(2, T, N_EMBED))
            assert np.asarray(layer.forward(x)).shape == (2, T, N_EMBED)
            w = np.asarray(layer.attention_weights(x))
            assert w.shape == (2, n_head, T, T)
        one = np.asarray(layer.attention_weights(RNG.normal(size=(3, 1, N_EMBED))))
        assert np.allclose(one, 1.0)


def test_batch_items_independent(Layer):
    layer = layer_with_weights(Layer, 4)
    x = RNG.normal(size=(3, 6, N_EMBED))
    out = np.asarray(layer.forward(x))
    w = np.asarray(layer.attention_weights(x))
    for b in range(3):
        assert np.allclose(np.asarray(layer.forward(x[b:b + 1]))[0], out[b], rtol=RTOL, atol=1e-5)
        assert np.allclose(np.asarray(layer.attention_weights(x[b:b + 1]))[0], w[b], rtol=RTOL, atol=ATOL)
