"""Public tests: run them with `pytest` in this folder.

They check shapes, a few sanity properties, the handout's worked example, and the memory
bound. Passing them does not mean full marks: the hidden tests check values on more inputs
(see README.md).
"""

import tracemalloc

import numpy as np
import pytest
from flash import attention_flops, chunked_attention, online_softmax_update, score_bytes

# The hidden tests' tolerances (README.md, "What is graded"), so float32 passes here too.
UPDATE = {"rtol": 1e-5, "atol": 1e-7}
CHUNKED = {"rtol": 1e-5, "atol": 1e-6}


def dense_attention(Q, K, V, causal=False):
    """softmax(Q Kᵀ / sqrt(d)) V the direct way, to compare with."""
    scores = Q @ K.T / np.sqrt(Q.shape[1])
    if causal:
        scores = np.where(np.tril(np.ones(scores.shape, dtype=bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    return weights @ V / weights.sum(axis=1, keepdims=True)


def test_counting():
    assert attention_flops(2, 12, 512, 64) == 1_610_612_736
    assert score_bytes(2, 12, 512) == 25_165_824
    assert score_bytes(1, 1, 3, bytes_per_value=8) == 72


def test_worked_example_update():
    m, l, acc = online_softmax_update(
        np.array([0.0]), np.array([1.0]), np.array([[2.0, 1.0]]),
        np.array([[1.5, 0.5]]), np.array([[1.0, 1.0], [0.0, 3.0]]),
    )  # fmt: skip
    np.testing.assert_allclose(m, [1.5])
    np.testing.assert_allclose(l, [1.591010], atol=1e-6)
    np.testing.assert_allclose(acc, [[1.446260, 2.326768]], atol=1e-6)


def test_update_from_the_empty_state():
    rng = np.random.default_rng(0)
    scores, V_block = rng.normal(size=(3, 4)), rng.normal(size=(4, 2))
    m, l, acc = online_softmax_update(
        np.full(3, -np.inf), np.zeros(3), np.zeros((3, 2)), scores, V_block
    )
    assert m.shape == (3,) and l.shape == (3,) and acc.shape == (3, 2)
    np.testing.assert_allclose(m, scores.max(axis=1), **UPDATE)
    weights = np.exp(scores - m[:, None])  # relative to the running max
    np.testing.assert_allclose(l, weights.sum(axis=1), **UPDATE)
    np.testing.assert_allclose(acc, weights @ V_block, **UPDATE)


@pytest.mark.parametrize("block_size", [4, 5, 128])
@pytest.mark.parametrize("causal", [False, True])
def test_chunked_equals_dense(block_size, causal):
    rng = np.random.default_rng(block_size)
    Q, K, V = rng.normal(size=(13, 6)), rng.normal(size=(13, 6)), rng.normal(size=(13, 3))
    output, lse = chunked_attention(Q, K, V, block_size=block_size, causal=causal)
    assert output.shape == (13, 3) and lse.shape == (13,)
    np.testing.assert_allclose(output, dense_attention(Q, K, V, causal), **CHUNKED)


def test_memory():
    """The hidden test's bound: at T = S = 4096, d = 64, block_size=128, at most 16 MiB."""
    rng = np.random.default_rng(1)
    Q, K, V = (rng.normal(size=(4096, 64)) for _ in range(3))
    for causal in (False, True):
        tracemalloc.start()
        try:
            chunked_attention(Q, K, V, block_size=128, causal=causal)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak <= 16 << 20, f"causal={causal}: peak {peak / 2**20:.1f} MiB, bound 16 MiB"
