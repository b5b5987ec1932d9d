"""MISTAKE: causal mask built with np.triu, so each token sees the future instead of the past.
Affects: causal_mask (and multi_head_attention through it).

Conventions used throughout:

- A mask is a boolean array; True means "may attend".
- Weight matrices are in ``x @ W`` layout, shape (d_model, d_model).
- Head i owns the contiguous columns ``i * d_head : (i + 1) * d_head``.
"""

import numpy as np


def causal_mask(n):
    """Return the (n, n) causal mask.

    Entry [i, j] is True when position i may look at position j, that is when j <= i.

    >>> causal_mask(3).astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]])
    """
    return np.triu(np.ones((n, n), dtype=bool))


def _masked_softmax(scores, mask):
    """Row softmax of scores (last axis); False in mask means weight exactly 0."""
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    row_max = scores.max(axis=-1, keepdims=True)
    # a fully masked row has max -inf; use 0 so that exp(-inf - 0) = 0, not NaN
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    e = np.exp(scores - row_max)
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def masked_attention(Q, K, V, mask=None):
    """Scaled dot-product attention with an optional boolean mask.

    Q has shape (n_q, d_k), K has shape (n_k, d_k) and V has shape (n_k, d_v).
    mask, if given, has shape (n_q, n_k); where it is False the score becomes -inf
    BEFORE the softmax, so that position gets weight exactly 0.

    The softmax must be numerically stable (subtract the row maximum first).
    A query row whose keys are all masked gets weights of 0 and an output of 0.

    Returns (weights, output) with shapes (n_q, n_k) and (n_q, d_v).
    """
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    V = np.asarray(V, dtype=float)
    d_k = Q.shape[-1]
    scores = Q @ K.T / np.sqrt(d_k)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
    weights = _masked_softmax(scores, mask)
    output = weights @ V
    return weights, output


def split_heads(X, h):
    """Split (n, d) into h heads: return an array of shape (h, n, d // h).

    Head i is made of columns i * d // h up to (i + 1) * d // h of X.
    Raise ValueError when h does not divide d.
    """
    X = np.asarray(X)
    n, d = X.shape
    if h <= 0 or d % h != 0:
        raise ValueError(f"h={h} does not divide d={d}")
    return X.reshape(n, h, d // h).transpose(1, 0, 2)


def merge_heads(Xh):
    """Join heads again: the inverse of split_heads, (h, n, d_head) -> (n, h * d_head)."""
    Xh = np.asarray(Xh)
    h, n, d_head = Xh.shape
    return Xh.transpose(1, 0, 2).reshape(n, h * d_head)


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention of X, shape (n, d_model).

    Project X with Wq, Wk and Wv (x @ W layout), split each result into h heads, run
    masked_attention in every head (with the causal mask when causal is True), merge
    the heads and multiply by Wo. Return the (n, d_model) output.
    """
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    Qh = split_heads(X @ Wq, h)
    Kh = split_heads(X @ Wk, h)
    Vh = split_heads(X @ Wv, h)
    mask = causal_mask(n) if causal else None
    outputs = [masked_attention(Qh[i], Kh[i], Vh[i], mask)[1] for i in range(h)]
    return merge_heads(np.stack(outputs)) @ Wo
