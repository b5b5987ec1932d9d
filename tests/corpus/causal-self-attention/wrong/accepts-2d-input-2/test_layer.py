"""MISTAKE: no check that x is 3-D; the code is written with negative axes, so a 2-D (T, C) input is silently treated as one unbatched sequence instead of raising ValueError.
Affects: attention_weights and forward (input validation).

The student's own tests (test_layer.py, completed; identical in every
folder of this corpus). Each test receives ``Layer``, a class with the API of
``CausalSelfAttention`` (see README.md); plain ``assert`` and NumPy only.
"""

import numpy as np

RNG = np.random.default_rng(2024)
N_EMBED, N_HEAD, CONTEXT = 24, 3, 10

# Loose enough for a float32 layer, -1e9 masking, einsum or loops; tight enough for bugs.
RTOL, ATOL = 1e-4, 1e-6


def layer_with_weights(Layer, n_head=N_HEAD, bias=True):
    """A layer whose weights and bias are set by the test (random, but known).

    Returns the layer and the dict of the arrays that were assigned (our own copies)."""
    layer = Layer(N_EMBED, n_head, CONTEXT, seed=1)
    params = {
        name: RNG.normal(size=(N_EMBED, N_EMBED)) / np.sqrt(N_EMBED)
        for name in ("W_q", "W_k", "W_v", "W_o")
    }
    params["b_o"] = RNG.normal(size=N_EMBED) if bias else np.zeros(N_EMBED)
    for name, value in params.items():
        setattr(layer, name, value.copy())
    return layer, params


def causal(T):
    return np.tril(np.ones((T, T), dtype=bool))


def reference(params, x, n_head, mask=None):
    """Plain float64 reference: (weights (B,H,T,T), output (B,T,C))."""
    x = np.asarray(x, dtype=np.float64)
    B, T, C = x.shape
    d = C // n_head
    mask = causal(T) if mask is None else np.asarray(mask, dtype=bool)[:T, :T]
    q, k, v = x @ params["W_q"], x @ params["W_k"], x @ params["W_v"]
    weights = np.zeros((B, n_head, T, T))
    joined = np.zeros((B, T, C))
    for b in range(B):
        for h in range(n_head):
            cols = slice(h * d, (h + 1) * d)
            s = q[b][:, cols] @ k[b][:, cols].T / np.sqrt(d)
            s = np.where(mask, s, -np.inf)
            s = s - s.max(axis=-1, keepdims=True)
            e = np.exp(s)
            w = e / e.sum(axis=-1, keepdims=True)
            weights[b, h] = w
            joined[b, :, cols] = w @ v[b][:, cols]
    return weights, joined @ params["W_o"] + params["b_o"]


def close(a, b, rtol=RTOL, atol=ATOL):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol))


def raises_value_error(fn, *args):
    try:
        fn(*args)
    except ValueError:
        return True
    except Exception:  # noqa: BLE001 (any other error breaks the promise too)
        return False
    return False


# --------------------------------------------------------------------------- required


def test_future_cannot_leak(Layer):
    for n_head in (3, 4):
        layer, _ = layer_with_weights(Layer, n_head)
        x = RNG.normal(size=(2, CONTEXT, N_EMBED))
        out = np.asarray(layer.forward(x), dtype=np.float64)
        w = np.asarray(layer.attention_weights(x), dtype=np.float64)
        # the weights on future keys are zero
        future = ~causal(CONTEXT)
        assert np.all(np.abs(w[:, :, future]) < 1e-9), "a query attends to a future key"
        for t in range(CONTEXT - 1):
            x2 = x.copy()
            x2[:, t + 1:] = 3.0 * RNG.normal(size=(2, CONTEXT - t - 1, N_EMBED))
            out2 = np.asarray(layer.forward(x2), dtype=np.float64)
            w2 = np.asarray(layer.attention_weights(x2), dtype=np.float64)
            assert close(out[:, : t + 1], out2[:, : t + 1]), f"outputs 0..{t} changed (heads={n_head})"
            assert close(w[:, :, : t + 1], w2[:, :, : t + 1]), f"weights 0..{t} changed (heads={n_head})"
            assert not close(out[:, t + 1:], out2[:, t + 1:]), "later outputs ignore their own tokens"
        # a prefix run gives the same first outputs as the full run
        for T in range(1, CONTEXT + 1):
            outT = np.asarray(layer.forward(x[:, :T]), dtype=np.float64)
            assert close(outT, out[:, :T]), f"a prefix of length {T} disagrees with the full run"


def test_rows_sum_to_one(Layer):
    for n_head in (3, 4):
        layer, _ = layer_with_weights(Layer, n_head)
        for scale in (1.0, 30.0):
            for T in (1, 4, CONTEXT):
                x = scale * RNG.normal(size=(3, T, N_EMBED))
                w = np.asarray(layer.attention_weights(x), dtype=np.float64)
                assert w.shape == (3, n_head, T, T)
                assert np.all(np.isfinite(w)), f"non-finite weights at scale {scale}"
                assert np.all(w >= -1e-12), "negative weights"
                assert np.allclose(w.sum(axis=-1), 1.0, atol=1e-5), f"rows do not sum to 1 (scale {scale})"
                out = np.asarray(layer.forward(x), dtype=np.float64)
                assert out.shape == (3, T, N_EMBED)
                assert np.all(np.isfinite(out)), f"non-finite output at scale {scale}"


# --------------------------------------------------------------------------- more


def test_weights_match_reference(Layer):
    for n_head in (3, 4):
        layer, params = layer_with_weights(Layer, n_head)
        for T in range(1, CONTEXT + 1):
            x = RNG.normal(size=(2, T, N_EMBED))
            ref_w, _ = reference(params, x, n_head)
            got = layer.attention_weights(x)
            assert close(got, ref_w), f"weights differ from q k^T / sqrt(d_head) (heads={n_head}, T={T})"


def test_forward_matches_reference(Layer):
    for n_head in (3, 4):
        layer, params = layer_with_weights(Layer, n_head)
        for T in range(1, CONTEXT + 1):
            x = RNG.normal(size=(3, T, N_EMBED))
            _, ref_out = reference(params, x, n_head)
            got = layer.forward(x)
            assert close(got, ref_out), f"forward differs from the reference (heads={n_head}, T={T})"


def test_head_order_and_bias(Layer):
    # W_o = identity exposes the joined heads directly: head i in columns i*d:(i+1)*d
    layer, params = layer_with_weights(Layer, 4)
    params["W_o"] = np.eye(N_EMBED)
    params["b_o"] = np.zeros(N_EMBED)
    layer.W_o, layer.b_o = params["W_o"].copy(), params["b_o"].copy()
    x = RNG.normal(size=(2, 6, N_EMBED))
    _, ref_out = reference(params, x, 4)
    assert close(layer.forward(x), ref_out), "heads not joined side by side in order"
    # W_o = 0: the output is exactly the bias, so the bias is added after W_o
    b = RNG.normal(size=N_EMBED)
    layer.W_o, layer.b_o = np.zeros((N_EMBED, N_EMBED)), b.copy()
    out = np.asarray(layer.forward(x), dtype=np.float64)
    assert close(out, np.broadcast_to(b, out.shape)), "the bias is not added after W_o"


def test_mask_buffer_is_used(Layer):
    layer, params = layer_with_weights(Layer, 3)
    # a lower-triangular pattern with a full diagonal, not a band: slicing [:T, :T] matters
    pattern = np.tril(RNG.random((CONTEXT, CONTEXT)) < 0.5)
    np.fill_diagonal(pattern, True)
    layer.mask = pattern.copy()
    for T in (3, 7, CONTEXT):
        x = RNG.normal(size=(2, T, N_EMBED))
        w = np.asarray(layer.attention_weights(x), dtype=np.float64)
        assert np.all(np.abs(w[:, :, ~pattern[:T, :T]]) < 1e-9), "weights ignore layer.mask"
        ref_w, ref_out = reference(params, x, 3, mask=pattern)
        assert close(w, ref_w), f"weights do not follow layer.mask (T={T})"
        assert close(layer.forward(x), ref_out), f"forward does not follow layer.mask (T={T})"


def test_assigned_weights_are_used_after_a_call(Layer):
    layer, params = layer_with_weights(Layer, 3)
    x = RNG.normal(size=(2, 5, N_EMBED))
    layer.forward(x)
    layer.attention_weights(x)
    for name in ("W_q", "W_k", "W_v", "W_o"):
        params[name] = RNG.normal(size=(N_EMBED, N_EMBED)) / np.sqrt(N_EMBED)
        setattr(layer, name, params[name].copy())
    params["b_o"] = RNG.normal(size=N_EMBED)
    layer.b_o = params["b_o"].copy()
    ref_w, ref_out = reference(params, x, 3)
    assert close(layer.attention_weights(x), ref_w), "stale W_q/W_k after reassignment"
    assert close(layer.forward(x), ref_out), "stale weights after reassignment"


def test_batch_items_are_independent_and_input_untouched(Layer):
    layer, _ = layer_with_weights(Layer, 4)
    x = RNG.normal(size=(3, 8, N_EMBED))
    keep = x.copy()
    out = np.asarray(layer.forward(x), dtype=np.float64)
    w = np.asarray(layer.attention_weights(x), dtype=np.float64)
    assert np.array_equal(x, keep), "the input was modified"
    for b in range(3):
        assert close(layer.forward(x[b:b + 1]), out[b:b + 1]), "batch items interact"
        assert close(layer.attention_weights(x[b:b + 1]), w[b:b + 1]), "batch items interact"


def test_errors(Layer):
    assert raises_value_error(Layer, 24, 5, CONTEXT), "n_head must divide n_embed"
    assert raises_value_error(Layer, 64, 5, CONTEXT), "64 / 5 heads must be refused"
    layer, _ = layer_with_weights(Layer, 3)
    bad = [
        RNG.normal(size=(CONTEXT, N_EMBED)),  # 2-D
        RNG.normal(size=(1, 2, CONTEXT, N_EMBED)),  # 4-D
        RNG.normal(size=(2, 4, N_EMBED + 1)),  # wrong C
        RNG.normal(size=(2, 4, N_EMBED // 2)),  # wrong C
        RNG.normal(size=(2, CONTEXT + 1, N_EMBED)),  # too long
        RNG.normal(size=(1, 3 * CONTEXT, N_EMBED)),  # much too long
    ]
    for x in bad:
        assert raises_value_error(layer.forward, x), f"forward accepted shape {x.shape}"
        assert raises_value_error(layer.attention_weights, x), f"attention_weights accepted {x.shape}"
    # the longest allowed sequence works
    x = RNG.normal(size=(2, CONTEXT, N_EMBED))
    assert np.asarray(layer.forward(x)).shape == (2, CONTEXT, N_EMBED)
    assert np.asarray(layer.attention_weights(x)).shape == (2, 3, CONTEXT, CONTEXT)


def test_init(Layer):
    for n_embed, n_head, ctx in ((64, 4, 12), (24, 3, 5), (10, 1, 1)):
        layer = Layer(n_embed, n_head, ctx, seed=3)
        mats = [np.asarray(getattr(layer, n), dtype=np.float64) for n in ("W_q", "W_k", "W_v", "W_o")]
        for m in mats:
            assert m.shape == (n_embed, n_embed)
            assert np.all(np.isfinite(m))
        b_o = np.asarray(layer.b_o)
        assert b_o.shape == (n_embed,) and np.all(b_o == 0), "b_o must start at zeros"
        mask = np.asarray(layer.mask)
        assert mask.dtype == bool and mask.shape == (ctx, ctx)
        assert np.array_equal(mask, causal(ctx)), "mask must be the lower triangle"
        for i in range(4):
            for j in range(i + 1, 4):
                assert not np.allclose(mats[i], mats[j]), "two weight matrices are the same draw"
        if n_embed == 64:
            std = np.std(np.stack(mats))
            ratio = std * np.sqrt(n_embed)
            assert 0.3 < ratio < 2.0, f"weights not scaled by 1/sqrt(n_embed) (std={std:.4f})"


def test_seed(Layer):
    a, b, c = Layer(24, 3, 8, seed=7), Layer(24, 3, 8, seed=7), Layer(24, 3, 8, seed=8)
    for name in ("W_q", "W_k", "W_v", "W_o"):
        assert np.array_equal(np.asarray(getattr(a, name)), np.asarray(getattr(b, name))), "same seed, different weights"
    assert not np.allclose(np.asarray(a.W_q), np.asarray(c.W_q)), "different seeds, same weights"
    x = RNG.normal(size=(2, 8, 24))
    assert close(a.forward(x), b.forward(x)), "same seed, different outputs"
