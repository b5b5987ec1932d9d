"""CORRECT: float32 arithmetic throughout, q scaled before the product, np.where(-inf) mask.
Functions: causal_mask, masked_attention, split_heads, merge_heads, multi_head_attention.

Conventions used throughout:

- A mask is a boolean array; True means "may attend".
- Weight matrices are in ``x @ W`` layout, shape (d_model, d_model).
- Head i owns the contiguous columns ``i * d_head : (i + 1) * d_head``.
"""

import numpy as np

DTYPE = np.float32


def causal_mask(n):
    """Return the (n, n) causal mask.

    Entry [i, j] is True when position i may look at position j, that is when j <= i.

    >>> causal_mask(3).astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]])
    """
    return np.tri(n, n, 0, dtype=bool)


def masked_attention(Q, K, V, mask=None):
    """Scaled dot-product attention with an optional boolean mask.

    Q has shape (n_q, d_k), K has shape (n_k, d_k) and V has shape (n_k, d_v).
    mask, if given, has shape (n_q, n_k); where it is False the score becomes -inf
    BEFORE the softmax, so that position gets weight exactly 0.

    The softmax must be numerically stable (subtract the row maximum first).
    A query row whose keys are all masked gets weights of 0 and an output of 0.

    Returns (weights, output) with shapes (n_q, n_k) and (n_q, d_v).
    """
    Q = np.asarray(Q, dtype=DTYPE)
    K = np.asarray(K, dtype=DTYPE)
    V = np.asarray(V, dtype=DTYPE)
    d_k = Q.shape[1]
    q_scaled = Q * DTYPE(1.0 / np.sqrt(d_k))  # scale q first, then take the product
    scores = q_scaled @ K.T
    if mask is not None:
        scores = np.where(np.asarray(mask, dtype=bool), scores, DTYPE(-np.inf))
    top = scores.max(axis=1, keepdims=True)
    top[~np.isfinite(top)] = 0
    e = np.exp(scores - top)
    denom = e.sum(axis=1, keepdims=True)
    denom[denom == 0] = 1  # fully masked row: e is all 0, so the weights stay 0
    weights = (e / denom).astype(DTYPE)
    output = (weights @ V).astype(DTYPE)
    return weights, output


def split_heads(X, h):
    """Split (n, d) into h heads: return an array of shape (h, n, d // h).

    Head i is made of columns i * d // h up to (i + 1) * d // h of X.
    Raise ValueError when h does not divide d.
    """
    X = np.asarray(X)
    n, d = X.shape
    if h <= 0 or d % h:
        raise ValueError(f"{h} heads do not divide width {d}")
    return np.stack(np.split(X, h, axis=1))


def merge_heads(Xh):
    """Join heads again: the inverse of split_heads, (h, n, d_head) -> (n, h * d_head)."""
    return np.concatenate(list(np.asarray(Xh)), axis=1)


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention of X, shape (n, d_model).

    Project X with Wq, Wk and Wv (x @ W layout), split each result into h heads, run
    masked_attention in every head (with the causal mask when causal is True), merge
    the heads and multiply by Wo. Return the (n, d_model) output.
    """
    X = np.asarray(X, dtype=DTYPE)
    Wq, Wk, Wv, Wo = (np.asarray(W, dtype=DTYPE) for W in (Wq, Wk, Wv, Wo))
    n = X.shape[0]
    Qh, Kh, Vh = (split_heads(X @ W, h) for W in (Wq, Wk, Wv))
    mask = causal_mask(n) if causal else None
    heads = np.stack([masked_attention(q, k, v, mask)[1] for q, k, v in zip(Qh, Kh, Vh)])
    return merge_heads(heads) @ Wo
