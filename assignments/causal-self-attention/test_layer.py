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
    # YOUR CODE HERE
    raise NotImplementedError()


def test_rows_sum_to_one(Layer):
    # YOUR CODE HERE
    raise NotImplementedError()
