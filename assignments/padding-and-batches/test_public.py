"""Public tests: run them with `pytest` in this folder.

They check shapes, a few sanity properties and the handout's worked examples. Passing them
does not mean full marks: the hidden tests check values on more inputs (see README.md).
"""

import numpy as np
import pytest
from batches import (
    attention_mask,
    batched_attention,
    cross_attention,
    multi_head_attention,
    padding_mask,
)


def test_padding_mask_docstring_example():
    assert padding_mask([3, 1], 4).dtype == bool
    assert padding_mask([3, 1], 4).tolist() == [
        [True, True, True, False],
        [True, False, False, False],
    ]


def test_padding_mask_rejects_a_length_above_T():
    with pytest.raises(ValueError):
        padding_mask([2, 5], 4)


def test_attention_mask_worked_example():
    # the handout's example: lengths [3, 1], T = 4, causal
    mask = attention_mask([3, 1], 4)
    assert mask.shape == (2, 4, 4) and mask.dtype == bool
    assert mask[0].astype(int).tolist() == [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 0]]
    assert mask[1].astype(int).tolist() == [[1, 0, 0, 0]] * 4


def test_batched_attention_shapes_and_rows():
    rng = np.random.default_rng(0)
    Q, K, V = (
        rng.normal(size=(2, 3, 4, 8)),
        rng.normal(size=(2, 3, 5, 8)),
        rng.normal(size=(2, 3, 5, 6)),
    )
    mask = padding_mask([5, 2], 5)[:, None, None, :]
    weights, output = batched_attention(Q, K, V, mask)
    assert weights.shape == (2, 3, 4, 5) and output.shape == (2, 3, 4, 6)
    np.testing.assert_allclose(weights.sum(axis=-1), 1)
    assert np.all(weights[1, :, :, 2:] == 0)


def test_batched_attention_worked_example():
    # the handout's padded row: scaled scores [0.3, 0.9, 1.7] with the last key padded
    d = 4
    Q = np.array([[1.0, 0.0, 0.0, 0.0]]) * np.sqrt(d)
    K = np.array([[0.3, 0, 0, 0], [0.9, 0, 0, 0], [1.7, 0, 0, 0]])
    V = np.eye(3, 4)
    weights, _ = batched_attention(Q, K, V, np.array([True, True, False]))
    np.testing.assert_allclose(weights, [[0.354344, 0.645656, 0.0]], atol=1e-6)


def test_multi_head_attention_shape_and_padding():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(2, 5, 12))
    W = [rng.normal(size=(12, 12)) / np.sqrt(12) for _ in range(4)]
    out = multi_head_attention(X, [5, 3], *W, 2, causal=False)
    assert out.shape == (2, 5, 12)
    changed = X.copy()
    changed[1, 3:] = 50.0  # padding of sequence 1
    again = multi_head_attention(changed, [5, 3], *W, 2, causal=False)
    np.testing.assert_allclose(again[1, :3], out[1, :3], atol=1e-9)


def test_cross_attention_shape():
    # B = 2 sequences and h = 3 heads: B != h, so a mask without its head axis cannot pass
    rng = np.random.default_rng(2)
    X, Y = rng.normal(size=(2, 3, 12)), rng.normal(size=(2, 6, 12))
    W = [rng.normal(size=(12, 12)) / np.sqrt(12) for _ in range(4)]
    assert cross_attention(X, Y, [6, 2], *W, 3).shape == (2, 3, 12)
