"""Public tests: run them with `pytest` in this folder.

They check shapes, a few sanity properties and the chapter's worked example. Passing them
does not mean full marks: the hidden tests check values on more inputs (see README.md).
"""

import numpy as np
import pytest
from attention import causal_mask, masked_attention, merge_heads, multi_head_attention, split_heads


def test_causal_mask_small():
    assert causal_mask(3).dtype == bool
    assert causal_mask(3).tolist() == [
        [True, False, False],
        [True, True, False],
        [True, True, True],
    ]


def test_chapter_worked_example():
    q, keys, values = np.array([[1.0, 0.0]]), np.eye(2), 2 * np.eye(2)
    weights, output = masked_attention(q, keys, values)
    np.testing.assert_allclose(weights, [[0.669762, 0.330238]], atol=1e-6)
    np.testing.assert_allclose(output, [[1.339523, 0.660477]], atol=1e-6)


def test_chapter_example_with_only_the_first_key():
    q, keys, values = np.array([[1.0, 0.0]]), np.eye(2), 2 * np.eye(2)
    weights, output = masked_attention(q, keys, values, np.array([[True, False]]))
    assert weights[0, 1] == 0
    np.testing.assert_allclose(output, [[2.0, 0.0]])


def test_masked_attention_shapes_and_rows():
    rng = np.random.default_rng(0)
    Q, K, V = rng.normal(size=(4, 8)), rng.normal(size=(4, 8)), rng.normal(size=(4, 3))
    weights, output = masked_attention(Q, K, V, causal_mask(4))
    assert weights.shape == (4, 4) and output.shape == (4, 3)
    np.testing.assert_allclose(weights.sum(axis=1), 1)
    assert np.all(weights[~causal_mask(4)] == 0)


def test_split_and_merge_heads():
    X = np.arange(5 * 8, dtype=float).reshape(5, 8)
    heads = split_heads(X, 2)
    assert heads.shape == (2, 5, 4)
    np.testing.assert_array_equal(heads[1], X[:, 4:])
    np.testing.assert_array_equal(merge_heads(heads), X)
    with pytest.raises(ValueError):
        split_heads(X, 3)


def test_multi_head_attention_shape():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(5, 8))
    Wq, Wk, Wv, Wo = (rng.normal(size=(8, 8)) for _ in range(4))
    assert multi_head_attention(X, Wq, Wk, Wv, Wo, 2).shape == (5, 8)
