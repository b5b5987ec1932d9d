"""Tests you write for a causal self-attention layer.

Each test receives ``Layer``, a class with the API of ``CausalSelfAttention`` (see README.md),
and must pass for every correct implementation and fail for buggy ones. Use plain ``assert``
and NumPy; build layers with ``Layer(n_embed, n_head, context_length, seed=...)``, and set
``W_q``, ``W_k``, ``W_v``, ``W_o`` and ``b_o`` yourself when you need known weights, by
assigning whole arrays (``layer.W_q = W``): the layer you get may live in another process, so
changing an array you read from it (``layer.mask[0, 0] = ...``) changes only your copy. You
may add more tests: every function whose name starts with ``test_`` is run.
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


def _weights_of(layer):
    return [np.array(getattr(layer, name), dtype=float) for name in ("W_q", "W_k", "W_v", "W_o")]


def reference(layer, x, n_head, mask=None):
    """Straightforward float64 attention, written from the README, one head at a time."""
    W_q, W_k, W_v, W_o = _weights_of(layer)
    b_o = np.array(layer.b_o, dtype=float)
    B, T, C = x.shape
    d = C // n_head
    if mask is None:
        mask = np.tril(np.ones((T, T), dtype=bool))
    else:
        mask = np.asarray(mask, dtype=bool)[:T, :T]
    q, k, v = x @ W_q, x @ W_k, x @ W_v
    weights = np.zeros((B, n_head, T, T))
    heads = []
    for h in range(n_head):
        cols = slice(h * d, (h + 1) * d)
        s = q[:, :, cols] @ np.swapaxes(k[:, :, cols], 1, 2) / np.sqrt(d)
        s = np.where(mask, s, -np.inf)
        s = s - s.max(axis=-1, keepdims=True)
        e = np.exp(s)
        w = e / e.sum(axis=-1, keepdims=True)
        weights[:, h] = w
        heads.append(w @ v[:, :, cols])
    out = np.concatenate(heads, axis=-1) @ W_o + b_o
    return weights, out


def _raises_value_error(fn):
    try:
        fn()
    except ValueError:
        return True
    except Exception:  # noqa: BLE001 (another exception is not the promised one)
        return False
    return False


def test_future_cannot_leak(Layer):
    for n_head in (3, 4):
        layer = layer_with_weights(Layer, n_head)
        x = RNG.normal(size=(2, CONTEXT, N_EMBED))
        out = np.array(layer.forward(x))
        weights = np.array(layer.attention_weights(x))
        # nothing above the diagonal, in any head of any sequence
        upper = np.triu(np.ones((CONTEXT, CONTEXT), dtype=bool), k=1)
        assert np.all(np.abs(weights[..., upper]) < 1e-12), "weight on a future token"
        for t in range(CONTEXT - 1):
            x2 = x.copy()
            x2[:, t + 1:] = RNG.normal(size=(2, CONTEXT - t - 1, N_EMBED)) * 3.0
            out2 = np.array(layer.forward(x2))
            w2 = np.array(layer.attention_weights(x2))
            assert np.allclose(out2[:, : t + 1], out[:, : t + 1], rtol=1e-5, atol=1e-7), (
                f"output at positions <= {t} changed when tokens after {t} changed"
            )
            assert np.allclose(w2[:, :, : t + 1], weights[:, :, : t + 1], rtol=1e-5, atol=1e-9), (
                f"weights of queries <= {t} changed when tokens after {t} changed"
            )
            # and the future really is used: the later outputs do change
            assert not np.allclose(out2[:, t + 1:], out[:, t + 1:])


def test_rows_sum_to_one(Layer):
    for n_head in (3, 4):
        layer = layer_with_weights(Layer, n_head)
        for scale in (1.0, 30.0):
            for T in (1, 5, CONTEXT):
                x = RNG.normal(size=(3, T, N_EMBED)) * scale
                w = np.array(layer.attention_weights(x), dtype=float)
                assert w.shape == (3, n_head, T, T)
                assert np.all(np.isfinite(w)), f"non-finite weights at scale {scale}"
                assert np.all(w >= 0)
                assert np.allclose(w.sum(axis=-1), 1.0, atol=1e-6), (
                    f"rows do not sum to 1 at scale {scale}"
                )
                out = np.array(layer.forward(x), dtype=float)
                assert out.shape == (3, T, N_EMBED)
                assert np.all(np.isfinite(out)), f"non-finite output at scale {scale}"


def test_values_match_a_reference(Layer):
    for n_head in (3, 4):
        layer = layer_with_weights(Layer, n_head)
        for B, T in ((2, 1), (3, 4), (2, CONTEXT)):
            x = RNG.normal(size=(B, T, N_EMBED))
            w_ref, out_ref = reference(layer, x, n_head)
            w = np.array(layer.attention_weights(x), dtype=float)
            out = np.array(layer.forward(x), dtype=float)
            assert w.shape == (B, n_head, T, T) and out.shape == (B, T, N_EMBED)
            assert np.allclose(w, w_ref, rtol=1e-4, atol=1e-6), f"weights differ, T={T}"
            assert np.allclose(out, out_ref, rtol=1e-4, atol=1e-5), f"forward differs, T={T}"


def test_weights_set_later_are_used(Layer):
    layer = layer_with_weights(Layer)
    x = RNG.normal(size=(2, 6, N_EMBED))
    before_w = np.array(layer.attention_weights(x))
    before_out = np.array(layer.forward(x))
    layer.W_q, layer.W_k = (RNG.normal(size=(N_EMBED, N_EMBED)) for _ in range(2))
    layer.W_v, layer.W_o = (RNG.normal(size=(N_EMBED, N_EMBED)) for _ in range(2))
    layer.b_o = RNG.normal(size=N_EMBED) * 5
    w_ref, out_ref = reference(layer, x, N_HEAD)
    assert not np.allclose(before_w, w_ref) and not np.allclose(before_out, out_ref)
    assert np.allclose(np.array(layer.attention_weights(x)), w_ref, rtol=1e-4, atol=1e-6)
    assert np.allclose(np.array(layer.forward(x)), out_ref, rtol=1e-4, atol=1e-5)


def test_bias_is_added_after_output_projection(Layer):
    layer = layer_with_weights(Layer)
    x = RNG.normal(size=(2, 5, N_EMBED))
    out0 = np.array(layer.forward(x))
    bump = RNG.normal(size=N_EMBED)
    layer.b_o = np.array(layer.b_o) + bump
    out1 = np.array(layer.forward(x))
    assert np.allclose(out1 - out0, bump, atol=1e-6), "b_o is not simply added at the end"


def test_mask_buffer_is_used(Layer):
    layer = layer_with_weights(Layer)
    # a lower-triangular pattern with the diagonal kept but some past positions blocked,
    # deliberately not the same along its diagonals (so a wrong slice shows)
    pattern = np.tril(np.ones((CONTEXT, CONTEXT), dtype=bool))
    pattern &= RNG.random((CONTEXT, CONTEXT)) < 0.5
    pattern[np.arange(CONTEXT), np.arange(CONTEXT)] = True
    pattern[CONTEXT - 1, 0] = True
    pattern[1, 0] = False
    layer.mask = pattern
    for T in (2, 7, CONTEXT):
        x = RNG.normal(size=(2, T, N_EMBED))
        w_ref, out_ref = reference(layer, x, N_HEAD, mask=pattern)
        w = np.array(layer.attention_weights(x), dtype=float)
        assert np.allclose(w, w_ref, rtol=1e-4, atol=1e-6), f"weights ignore the mask, T={T}"
        assert np.allclose(np.array(layer.forward(x)), out_ref, rtol=1e-4, atol=1e-5)
        assert np.all(w[..., ~pattern[:T, :T]] < 1e-12)


def test_mask_survives_calls(Layer):
    layer = Layer(N_EMBED, N_HEAD, CONTEXT, seed=0)
    for T in (3, 1, CONTEXT, 4, CONTEXT):
        x = RNG.normal(size=(2, T, N_EMBED))
        w = np.array(layer.attention_weights(x))
        assert w.shape == (2, N_HEAD, T, T)
        assert np.array(layer.forward(x)).shape == (2, T, N_EMBED)
        mask = np.array(layer.mask)
        assert mask.shape == (CONTEXT, CONTEXT) and mask.dtype == bool


def test_init(Layer):
    for n_embed, n_head, context in ((24, 3, 10), (24, 4, 7), (64, 4, 5), (10, 1, 3)):
        layer = Layer(n_embed, n_head, context, seed=3)
        ws = _weights_of(layer)
        for w in ws:
            assert w.shape == (n_embed, n_embed)
        b_o = np.array(layer.b_o)
        assert b_o.shape == (n_embed,) and np.all(b_o == 0)
        mask = np.array(layer.mask)
        assert mask.dtype == bool and mask.shape == (context, context)
        assert np.array_equal(mask, np.tril(np.ones((context, context), dtype=bool)))
        assert int(mask.sum()) == context * (context + 1) // 2
    # standard deviation 1/sqrt(n_embed), from many draws
    for n_embed in (24, 64):
        values = np.concatenate(
            [w.ravel() for seed in range(4) for w in _weights_of(Layer(n_embed, 4, 4, seed=seed))]
        )
        assert abs(values.std() / (1 / np.sqrt(n_embed)) - 1) < 0.08, "wrong weight scale"
        assert abs(values.mean()) < 0.1 / np.sqrt(n_embed) * 3
        # a normal, not a uniform: about 68% within one standard deviation
        inside = np.mean(np.abs(values) < 1 / np.sqrt(n_embed))
        assert 0.64 < inside < 0.72
    # the same seed gives the same weights, another seed other weights
    a, b, c = (Layer(24, 3, 10, seed=s) for s in (7, 7, 8))
    for wa, wb, wc in zip(_weights_of(a), _weights_of(b), _weights_of(c)):
        assert np.array_equal(wa, wb)
        assert not np.allclose(wa, wc)
    x = RNG.normal(size=(2, 5, 24))
    assert np.array_equal(np.array(a.forward(x)), np.array(b.forward(x)))


def test_errors(Layer):
    for n_embed, n_head in ((16, 3), (24, 5), (10, 4), (64, 5)):
        assert _raises_value_error(lambda: Layer(n_embed, n_head, 6)), (n_embed, n_head)
    layer = Layer(N_EMBED, N_HEAD, CONTEXT, seed=0)
    bad = [
        np.zeros((2, CONTEXT + 1, N_EMBED)),
        np.zeros((1, 2 * CONTEXT, N_EMBED)),
        np.zeros((5, N_EMBED)),
        np.zeros((2, 3, N_EMBED + 1)),
        np.zeros((2, 3, N_EMBED - N_HEAD)),
        np.zeros((1, 2, 3, N_EMBED)),
        np.zeros(N_EMBED),
    ]
    for x in bad:
        assert _raises_value_error(lambda: layer.forward(x)), f"forward accepted {x.shape}"
        assert _raises_value_error(lambda: layer.attention_weights(x)), (
            f"attention_weights accepted {x.shape}"
        )
    # exactly context_length tokens is allowed
    x = RNG.normal(size=(1, CONTEXT, N_EMBED))
    assert np.array(layer.forward(x)).shape == (1, CONTEXT, N_EMBED)
    assert np.array(layer.attention_weights(x)).shape == (1, N_HEAD, CONTEXT, CONTEXT)


def test_first_row_and_single_token(Layer):
    layer = layer_with_weights(Layer)
    x = RNG.normal(size=(3, 6, N_EMBED))
    w = np.array(layer.attention_weights(x))
    assert np.allclose(w[:, :, 0, 0], 1.0) and np.allclose(w[:, :, 0, 1:], 0.0)
    # one token: the output is its value, through W_o, plus b_o
    x1 = x[:, :1]
    expected = x1 @ np.array(layer.W_v) @ np.array(layer.W_o) + np.array(layer.b_o)
    assert np.allclose(np.array(layer.forward(x1)), expected, rtol=1e-4, atol=1e-5)
