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


def layer_with_weights(Layer):
    """A layer whose weights and bias are set by the test (random, but known)."""
    layer = Layer(N_EMBED, N_HEAD, CONTEXT, seed=1)
    layer.W_q, layer.W_k, layer.W_v, layer.W_o = (
        RNG.normal(size=(N_EMBED, N_EMBED)) / np.sqrt(N_EMBED) for _ in range(4)
    )
    layer.b_o = RNG.normal(size=N_EMBED)
    return layer


def test_future_cannot_leak(Layer):
    ### BEGIN SOLUTION
    # The model answer checks more than its name: the promises of the API too.
    layer = layer_with_weights(Layer)
    x = RNG.normal(size=(2, 7, N_EMBED))
    before = layer.forward(x)
    for t in range(7):
        changed = x.copy()
        changed[:, t + 1 :] = RNG.normal(size=changed[:, t + 1 :].shape)
        after = layer.forward(changed)
        assert np.allclose(after[:, : t + 1], before[:, : t + 1]), f"position {t} saw the future"
    fresh = Layer(N_EMBED, N_HEAD, CONTEXT, seed=3)
    assert fresh.mask.dtype == bool
    assert np.array_equal(fresh.mask, np.tril(np.ones((CONTEXT, CONTEXT), dtype=bool)))
    assert np.array_equal(fresh.b_o, np.zeros(N_EMBED))
    big = Layer(256, 4, 8, seed=0)
    assert abs(big.W_q.std() * np.sqrt(256) - 1) < 0.1, "weights not scaled by 1/sqrt(n_embed)"
    too_long = np.zeros((1, CONTEXT + 1, N_EMBED))
    for bad in (lambda: Layer(10, 3, 8), lambda: fresh.forward(too_long)):
        try:
            bad()
        except ValueError:
            continue
        raise AssertionError("a ValueError was expected")
    ### END SOLUTION


def test_rows_sum_to_one(Layer):
    ### BEGIN SOLUTION
    # The model answer checks more than its name: every value, against the formula.
    layer = layer_with_weights(Layer)
    x = RNG.normal(size=(2, 5, N_EMBED))
    weights = layer.attention_weights(x)
    assert weights.shape == (2, N_HEAD, 5, 5)
    assert np.allclose(weights.sum(axis=-1), 1)
    d = N_EMBED // N_HEAD
    heads, expected = [], []
    for h in range(N_HEAD):
        cols = slice(h * d, (h + 1) * d)
        q, k, v = (x @ W[:, cols] for W in (layer.W_q, layer.W_k, layer.W_v))
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(d)
        scores = np.where(np.tril(np.ones((5, 5), dtype=bool)), scores, -np.inf)
        w = np.exp(scores - scores.max(axis=-1, keepdims=True))
        w /= w.sum(axis=-1, keepdims=True)
        expected.append(w)
        heads.append(w @ v)
    assert np.allclose(weights, np.stack(expected, axis=1))
    output = np.concatenate(heads, axis=-1) @ layer.W_o + layer.b_o
    assert np.allclose(layer.forward(x), output, atol=1e-5)  # float32 is correct too
    banded = np.tril(np.ones((CONTEXT, CONTEXT), dtype=bool), k=-2)  # the buffer is used
    banded[np.diag_indices(CONTEXT)] = True
    layer.mask = banded  # assign whole arrays: the layer may live elsewhere
    banded = layer.attention_weights(x)
    assert np.all(banded[..., 2, 1] == 0) and np.allclose(banded.sum(axis=-1), 1)
    ### END SOLUTION
