"""MISTAKE: the initial weights are standard normal, not scaled by 1/sqrt(n_embed).
Affects: __init__ (otherwise the reshape-where-inf implementation).

Tests written for a causal self-attention layer (the student's completed test_layer.py; the
same tests in every folder of the corpus).

Each test receives ``Layer``, a class with the API of ``CausalSelfAttention`` (see README.md),
and must pass for every correct implementation and fail for buggy ones. Only plain ``assert``
and NumPy; weights are set by assigning whole arrays.
"""

import numpy as np

RNG = np.random.default_rng(2024)
N_EMBED, N_HEAD, CONTEXT = 24, 3, 10


def layer_with_weights(Layer, n_head=N_HEAD):
    """A layer whose weights and bias are set by the test (random, but known)."""
    layer = Layer(N_EMBED, n_head, CONTEXT, seed=1)
    layer.W_q, layer.W_k, layer.W_v, layer.W_o = (
        RNG.normal(size=(N_EMBED, N_EMBED)) / np.sqrt(N_EMBED) for _ in range(4)
    )
    layer.b_o = RNG.normal(size=N_EMBED)
    return layer


def set_weights(layer, n_embed=N_EMBED):
    """Assign fresh known weights (whole arrays) and return them."""
    params = {name: RNG.normal(size=(n_embed, n_embed)) / np.sqrt(n_embed)
              for name in ("W_q", "W_k", "W_v", "W_o")}
    params["b_o"] = RNG.normal(size=n_embed)
    for name, value in params.items():
        setattr(layer, name, value)
    return params


def reference(x, p, n_head, mask):
    """Straightforward multi-head attention, the handout's formulas, in float64."""
    B, T, C = x.shape
    d = C // n_head

    def split(t):
        return t.reshape(B, T, n_head, d).transpose(0, 2, 1, 3)

    q, k, v = split(x @ p["W_q"]), split(x @ p["W_k"]), split(x @ p["W_v"])
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d)
    s = np.where(mask[:T, :T], s, -np.inf)
    s = s - s.max(axis=-1, keepdims=True)
    w = np.exp(s)
    w = w / w.sum(axis=-1, keepdims=True)
    joined = (w @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
    return w, joined @ p["W_o"] + p["b_o"]


def causal(n):
    return np.tril(np.ones((n, n), dtype=bool))


def close(a, b, rtol=1e-4, atol=1e-5):
    a = np.asarray(a, dtype=float)
    return a.shape == np.shape(b) and np.allclose(a, b, rtol=rtol, atol=atol)


def raises_value_error(fn, *args):
    try:
        fn(*args)
    except ValueError:
        return True
    except Exception:  # another exception is not the promised ValueError
        return False
    return False


def test_future_cannot_leak(Layer):
    for n_head in (3, 4):
        layer = layer_with_weights(Layer, n_head)
        x = RNG.normal(size=(2, CONTEXT, N_EMBED))
        out = np.asarray(layer.forward(x), dtype=float)
        w = np.asarray(layer.attention_weights(x), dtype=float)
        # no weight on a future key, ever
        future = ~causal(CONTEXT)
        assert np.all(np.abs(w[..., future]) < 1e-12), "weight on a future position"
        for t in range(CONTEXT - 1):
            x2 = x.copy()
            x2[:, t + 1:] = 3.0 * RNG.normal(size=(2, CONTEXT - t - 1, N_EMBED))
            out2 = np.asarray(layer.forward(x2), dtype=float)
            w2 = np.asarray(layer.attention_weights(x2), dtype=float)
            assert close(out2[:, :t + 1], out[:, :t + 1], 1e-5, 1e-6), f"forward leaks after t={t}"
            assert close(w2[:, :, :t + 1], w[:, :, :t + 1], 1e-5, 1e-8), f"weights leak after t={t}"
            # a shorter sequence is the prefix of a longer one
            short = np.asarray(layer.forward(x[:, :t + 1]), dtype=float)
            assert close(short, out[:, :t + 1], 1e-5, 1e-6), f"prefix of length {t + 1} differs"
        # and the future does matter for the last position (the layer is not trivially constant)
        x3 = x.copy()
        x3[:, -1] += 1.0
        assert not np.allclose(np.asarray(layer.forward(x3))[:, -1], out[:, -1])


def test_rows_sum_to_one(Layer):
    for n_head in (3, 4):
        layer = layer_with_weights(Layer, n_head)
        for B, T in ((2, CONTEXT), (3, 4), (2, 1)):
            w = np.asarray(layer.attention_weights(RNG.normal(size=(B, T, N_EMBED))), dtype=float)
            assert w.shape == (B, n_head, T, T)
            assert np.all(np.isfinite(w))
            assert np.all(w >= 0)
            assert np.allclose(w.sum(axis=-1), 1.0, atol=1e-6)
            # the first position can only attend to itself
            assert np.allclose(w[:, :, 0, 0], 1.0, atol=1e-6)


def test_large_inputs_stay_finite(Layer):
    layer = layer_with_weights(Layer)
    x = 300.0 * RNG.normal(size=(2, CONTEXT, N_EMBED))  # scores in the thousands
    w = np.asarray(layer.attention_weights(x), dtype=float)
    out = np.asarray(layer.forward(x), dtype=float)
    assert np.all(np.isfinite(w)) and np.all(np.isfinite(out))
    assert np.allclose(w.sum(axis=-1), 1.0, atol=1e-6)


def test_matches_reference_values(Layer):
    for n_head in (3, 4):
        layer = Layer(N_EMBED, n_head, CONTEXT, seed=3)
        p = set_weights(layer)
        for B, T in ((2, CONTEXT), (3, 5), (2, 1)):
            x = RNG.normal(size=(B, T, N_EMBED))
            w_ref, out_ref = reference(x, p, n_head, causal(CONTEXT))
            assert close(layer.attention_weights(x), w_ref), f"weights differ (n_head={n_head}, T={T})"
            assert close(layer.forward(x), out_ref), f"forward differs (n_head={n_head}, T={T})"
        # weights assigned again are used again
        p2 = set_weights(layer)
        x = RNG.normal(size=(2, 6, N_EMBED))
        w_ref, out_ref = reference(x, p2, n_head, causal(CONTEXT))
        assert close(layer.forward(x), out_ref), "new weights were not used"


def test_first_position_ignores_query_and_key_weights(Layer):
    layer = layer_with_weights(Layer)
    x = RNG.normal(size=(2, 5, N_EMBED))
    out = np.asarray(layer.forward(x), dtype=float)
    layer.W_q = RNG.normal(size=(N_EMBED, N_EMBED))
    layer.W_k = RNG.normal(size=(N_EMBED, N_EMBED))
    out2 = np.asarray(layer.forward(x), dtype=float)
    assert close(out2[:, 0], out[:, 0], 1e-5, 1e-6)


def test_bias_is_added_after_output_projection(Layer):
    layer = layer_with_weights(Layer)
    x = RNG.normal(size=(2, 4, N_EMBED))
    layer.b_o = np.zeros(N_EMBED)
    base = np.asarray(layer.forward(x), dtype=float)
    b = RNG.normal(size=N_EMBED)
    layer.b_o = b
    shifted = np.asarray(layer.forward(x), dtype=float)
    assert close(shifted - base, np.broadcast_to(b, base.shape), 1e-5, 1e-5)


def test_mask_buffer(Layer):
    layer = Layer(N_EMBED, N_HEAD, CONTEXT, seed=0)
    mask = np.asarray(layer.mask)
    assert mask.shape == (CONTEXT, CONTEXT) and mask.dtype == bool
    assert np.array_equal(mask, causal(CONTEXT))
    # another pattern: random, not triangular, but every row may attend to itself
    pattern = RNG.random((CONTEXT, CONTEXT)) < 0.5
    np.fill_diagonal(pattern, True)
    pattern[0, CONTEXT - 1] = True
    pattern[CONTEXT - 1, 0] = False
    p = set_weights(layer)
    layer.mask = pattern
    for B, T in ((2, CONTEXT), (3, 6), (2, 3)):
        x = RNG.normal(size=(B, T, N_EMBED))
        w = np.asarray(layer.attention_weights(x), dtype=float)
        assert np.all(np.abs(w[..., ~pattern[:T, :T]]) < 1e-12), f"weights ignore the buffer (T={T})"
        w_ref, out_ref = reference(x, p, N_HEAD, pattern)
        assert close(w, w_ref), f"weights do not follow the buffer (T={T})"
        assert close(layer.forward(x), out_ref), f"forward does not follow the buffer (T={T})"


def test_errors(Layer):
    assert raises_value_error(Layer, 24, 5, CONTEXT)
    assert raises_value_error(Layer, 24, 7, CONTEXT)
    assert raises_value_error(Layer, 64, 5, CONTEXT)
    layer = Layer(N_EMBED, N_HEAD, CONTEXT, seed=0)
    bad = [
        RNG.normal(size=(CONTEXT, N_EMBED)),             # 2-D
        RNG.normal(size=(1, 2, 3, N_EMBED)),             # 4-D
        RNG.normal(size=(2, 3, N_EMBED - 1)),            # wrong channels
        RNG.normal(size=(2, 3, N_EMBED + 3)),            # wrong channels, still divisible
        RNG.normal(size=(2, CONTEXT + 1, N_EMBED)),      # too long
        RNG.normal(size=(1, 2 * CONTEXT, N_EMBED)),      # much too long
    ]
    for x in bad:
        assert raises_value_error(layer.forward, x), f"forward accepted shape {x.shape}"
        assert raises_value_error(layer.attention_weights, x), f"attention_weights accepted {x.shape}"
    # exactly context_length tokens is fine
    x = RNG.normal(size=(2, CONTEXT, N_EMBED))
    assert np.shape(layer.forward(x)) == (2, CONTEXT, N_EMBED)
    assert np.shape(layer.attention_weights(x)) == (2, N_HEAD, CONTEXT, CONTEXT)


def test_initialisation(Layer):
    n_embed = 64
    layer = Layer(n_embed, 4, 8, seed=5)
    mats = [np.asarray(getattr(layer, name), dtype=float) for name in ("W_q", "W_k", "W_v", "W_o")]
    for W in mats:
        assert W.shape == (n_embed, n_embed)
        ratio = W.std() * np.sqrt(n_embed)
        assert 0.5 < ratio < 1.5, f"spread {W.std()} is not about 1/sqrt(n_embed)"
    for i in range(4):
        for j in range(i + 1, 4):
            assert not np.allclose(mats[i], mats[j]), "two weight matrices are the same"
    b = np.asarray(layer.b_o)
    assert b.shape == (n_embed,) and np.all(b == 0)
    mask = np.asarray(layer.mask)
    assert mask.shape == (8, 8) and mask.dtype == bool and np.array_equal(mask, causal(8))
    # the seed decides the weights
    again = Layer(n_embed, 4, 8, seed=5)
    other = Layer(n_embed, 4, 8, seed=6)
    for name, W in zip(("W_q", "W_k", "W_v", "W_o"), mats):
        assert np.array_equal(np.asarray(getattr(again, name), dtype=float), W), "same seed, other weights"
        assert not np.allclose(np.asarray(getattr(other, name), dtype=float), W), "seed ignored"
    # shapes on the public sizes
    layer = Layer(N_EMBED, 4, CONTEXT, seed=0)
    x = RNG.normal(size=(3, 7, N_EMBED))
    assert np.shape(layer.forward(x)) == (3, 7, N_EMBED)
    assert np.shape(layer.attention_weights(x)) == (3, 4, 7, 7)
