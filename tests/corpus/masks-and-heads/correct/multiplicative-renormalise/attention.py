"""CORRECT: mask as 0/1 factor on the exponentials then renormalise; max taken over allowed keys only.
Functions: causal_mask, masked_attention, split_heads, merge_heads, multi_head_attention.

Conventions used throughout:

- A mask is a boolean array; True means "may attend".
- Weight matrices are in ``x @ W`` layout, shape (d_model, d_model).
- Head i owns the contiguous columns ``i * d_head : (i + 1) * d_head``.

Multiplying exp(s - m) by the 0/1 mask and dividing by the sum of what remains is the
same as putting -inf into the scores before the softmax, provided m is the maximum
over the allowed keys (otherwise the allowed exponentials could underflow).
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
    return ~np.triu(np.ones((n, n), dtype=bool), k=1)


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
    n_q, n_k = Q.shape[0], K.shape[0]
    d_k = K.shape[1]
    keep = np.ones((n_q, n_k), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)

    scores = np.matmul(Q, K.T)
    scores /= np.sqrt(d_k)                       # scale after the product

    # row maximum over the allowed keys only (0 for a row with none)
    m = np.max(np.where(keep, scores, -np.inf), axis=1, keepdims=True)
    m[~keep.any(axis=1)] = 0.0
    shifted = np.where(keep, scores - m, 0.0)    # <= 0 wherever allowed, no overflow
    e = np.exp(shifted) * keep                   # forbidden entries become exactly 0
    z = e.sum(axis=1, keepdims=True)
    z[z == 0] = 1.0
    weights = e / z
    return weights, weights @ V


def split_heads(X, h):
    """Split (n, d) into h heads: return an array of shape (h, n, d // h).

    Head i is made of columns i * d // h up to (i + 1) * d // h of X.
    Raise ValueError when h does not divide d.
    """
    X = np.asarray(X)
    d = X.shape[1]
    if h <= 0 or d % h:
        raise ValueError("number of heads must divide the model width")
    d_head = d // h
    return np.array([X[:, i * d_head:(i + 1) * d_head] for i in range(h)])


def merge_heads(Xh):
    """Join heads again: the inverse of split_heads, (h, n, d_head) -> (n, h * d_head)."""
    Xh = np.asarray(Xh)
    h, n, d_head = Xh.shape
    return np.swapaxes(Xh, 0, 1).reshape(n, h * d_head)


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention of X, shape (n, d_model).

    Project X with Wq, Wk and Wv (x @ W layout), split each result into h heads, run
    masked_attention in every head (with the causal mask when causal is True), merge
    the heads and multiply by Wo. Return the (n, d_model) output.
    """
    X = np.asarray(X, dtype=float)
    n = len(X)
    Q, K, V = X @ Wq, X @ Wk, X @ Wv
    Qh, Kh, Vh = split_heads(Q, h), split_heads(K, h), split_heads(V, h)
    mask = None
    if causal:
        mask = causal_mask(n)
    results = []
    for q, k, v in zip(Qh, Kh, Vh):
        _, o = masked_attention(q, k, v, mask=mask)
        results.append(o)
    return np.matmul(merge_heads(np.array(results)), Wo)
