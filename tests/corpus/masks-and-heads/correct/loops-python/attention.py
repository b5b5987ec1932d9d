"""CORRECT: explicit Python loops over rows, keys and heads (math.exp, max over allowed keys only).
Functions: causal_mask, masked_attention, split_heads, merge_heads, multi_head_attention.

Conventions used throughout:

- A mask is a boolean array; True means "may attend".
- Weight matrices are in ``x @ W`` layout, shape (d_model, d_model).
- Head i owns the contiguous columns ``i * d_head : (i + 1) * d_head``.
"""

import math

import numpy as np


def causal_mask(n):
    """Return the (n, n) causal mask.

    Entry [i, j] is True when position i may look at position j, that is when j <= i.

    >>> causal_mask(3).astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]])
    """
    mask = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(i + 1):
            mask[i, j] = True
    return mask


def masked_attention(Q, K, V, mask=None):
    """Scaled dot-product attention with an optional boolean mask.

    Q has shape (n_q, d_k), K has shape (n_k, d_k) and V has shape (n_k, d_v).
    mask, if given, has shape (n_q, n_k); where it is False the score becomes -inf
    BEFORE the softmax, so that position gets weight exactly 0.

    The softmax must be numerically stable (subtract the row maximum first).
    A query row whose keys are all masked gets weights of 0 and an output of 0.

    Returns (weights, output) with shapes (n_q, n_k) and (n_q, d_v).
    """
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    n_q, d_k = Q.shape
    n_k, d_v = V.shape
    scale = 1.0 / math.sqrt(d_k)
    weights = np.zeros((n_q, n_k))
    output = np.zeros((n_q, d_v))
    for i in range(n_q):
        # scores of the keys this query may see; forbidden keys count as -inf
        allowed = []
        scores = []
        for j in range(n_k):
            if mask is None or bool(mask[i][j]):
                allowed.append(j)
                scores.append(float(np.dot(Q[i], K[j])) * scale)
        if not allowed:
            continue  # fully masked row: weights 0, output 0
        top = max(scores)
        exps = [math.exp(s - top) for s in scores]
        total = math.fsum(exps)
        for j, e in zip(allowed, exps):
            weights[i, j] = e / total
        for j in allowed:
            output[i] += weights[i, j] * V[j]
    return weights, output


def split_heads(X, h):
    """Split (n, d) into h heads: return an array of shape (h, n, d // h).

    Head i is made of columns i * d // h up to (i + 1) * d // h of X.
    Raise ValueError when h does not divide d.
    """
    X = np.asarray(X)
    n, d = X.shape
    if h < 1 or d % h != 0:
        raise ValueError("the number of heads must divide the width")
    d_head = d // h
    heads = np.empty((h, n, d_head), dtype=X.dtype)
    for i in range(h):
        heads[i] = X[:, i * d_head:(i + 1) * d_head]
    return heads


def merge_heads(Xh):
    """Join heads again: the inverse of split_heads, (h, n, d_head) -> (n, h * d_head)."""
    Xh = np.asarray(Xh)
    h, n, d_head = Xh.shape
    merged = np.empty((n, h * d_head), dtype=Xh.dtype)
    for i in range(h):
        merged[:, i * d_head:(i + 1) * d_head] = Xh[i]
    return merged


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention of X, shape (n, d_model).

    Project X with Wq, Wk and Wv (x @ W layout), split each result into h heads, run
    masked_attention in every head (with the causal mask when causal is True), merge
    the heads and multiply by Wo. Return the (n, d_model) output.
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    Qh = split_heads(X @ Wq, h)
    Kh = split_heads(X @ Wk, h)
    Vh = split_heads(X @ Wv, h)
    mask = causal_mask(n) if causal else None
    head_outputs = np.empty_like(Vh, dtype=np.float64)
    for i in range(h):
        _, head_outputs[i] = masked_attention(Qh[i], Kh[i], Vh[i], mask)
    return merge_heads(head_outputs) @ np.asarray(Wo, dtype=np.float64)
