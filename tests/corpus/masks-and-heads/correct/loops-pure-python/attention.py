"""CORRECT: explicit Python loops and math.exp, one query row at a time, lists turned into arrays at the end.
Affects: causal_mask, masked_attention, split_heads, merge_heads, multi_head_attention.

Masked attention and multi-head attention in NumPy.

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
        for j in range(n):
            if j <= i:
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
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    V = np.asarray(V, dtype=float)
    n_q, d_k = Q.shape
    n_k, d_v = V.shape
    scale = 1.0 / math.sqrt(d_k)
    weights = []
    output = []
    for i in range(n_q):
        scores = []
        for j in range(n_k):
            if mask is not None and not mask[i][j]:
                scores.append(-math.inf)
            else:
                dot = 0.0
                for t in range(d_k):
                    dot += float(Q[i, t]) * float(K[j, t])
                scores.append(dot * scale)
        best = max(scores) if scores else -math.inf
        if best == -math.inf:
            # every key is masked: weights 0 and output 0
            row = [0.0] * n_k
        else:
            exps = [math.exp(s - best) if s != -math.inf else 0.0 for s in scores]
            total = sum(exps)
            row = [e / total for e in exps]
        weights.append(row)
        out_row = []
        for c in range(d_v):
            acc = 0.0
            for j in range(n_k):
                acc += row[j] * float(V[j, c])
            out_row.append(acc)
        output.append(out_row)
    return (np.array(weights, dtype=float).reshape(n_q, n_k),
            np.array(output, dtype=float).reshape(n_q, d_v))


def split_heads(X, h):
    """Split (n, d) into h heads: return an array of shape (h, n, d // h).

    Head i is made of columns i * d // h up to (i + 1) * d // h of X.
    Raise ValueError when h does not divide d.
    """
    X = np.asarray(X)
    n, d = X.shape
    if h <= 0 or d % h != 0:
        raise ValueError("the number of heads must divide the width")
    d_head = d // h
    heads = np.empty((h, n, d_head), dtype=X.dtype)
    for i in range(h):
        for r in range(n):
            for c in range(d_head):
                heads[i, r, c] = X[r, i * d_head + c]
    return heads


def merge_heads(Xh):
    """Join heads again: the inverse of split_heads, (h, n, d_head) -> (n, h * d_head)."""
    Xh = np.asarray(Xh)
    h, n, d_head = Xh.shape
    out = np.empty((n, h * d_head), dtype=Xh.dtype)
    for i in range(h):
        for r in range(n):
            for c in range(d_head):
                out[r, i * d_head + c] = Xh[i, r, c]
    return out


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention of X, shape (n, d_model).

    Project X with Wq, Wk and Wv (x @ W layout), split each result into h heads, run
    masked_attention in every head (with the causal mask when causal is True), merge
    the heads and multiply by Wo. Return the (n, d_model) output.
    """
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    Q = X @ np.asarray(Wq, dtype=float)
    K = X @ np.asarray(Wk, dtype=float)
    V = X @ np.asarray(Wv, dtype=float)
    Qh, Kh, Vh = split_heads(Q, h), split_heads(K, h), split_heads(V, h)
    mask = causal_mask(n) if causal else None
    head_outputs = []
    for i in range(h):
        _, out = masked_attention(Qh[i], Kh[i], Vh[i], mask)
        head_outputs.append(out)
    merged = merge_heads(np.array(head_outputs))
    return merged @ np.asarray(Wo, dtype=float)
