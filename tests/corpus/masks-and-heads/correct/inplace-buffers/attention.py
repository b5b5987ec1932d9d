"""CORRECT: preallocated buffers and in-place ufuncs (out=, copyto), inputs never modified.
Functions: causal_mask, masked_attention, split_heads, merge_heads, multi_head_attention.

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
    mask = np.ones((n, n), dtype=bool)
    # forbid the strict upper triangle, in place
    mask[np.triu_indices(n, k=1)] = False
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

    buf = np.empty((n_q, n_k))              # scores, then exponentials, then weights
    np.matmul(Q, K.T, out=buf)
    buf *= 1.0 / np.sqrt(d_k)
    if mask is not None:
        forbidden = ~np.asarray(mask, dtype=bool)
        np.copyto(buf, -np.inf, where=forbidden)

    row_max = np.empty((n_q, 1))
    np.max(buf, axis=1, keepdims=True, out=row_max)
    row_max[np.isneginf(row_max)] = 0.0     # fully masked row
    np.subtract(buf, row_max, out=buf)
    np.exp(buf, out=buf)

    row_sum = np.empty((n_q, 1))
    np.sum(buf, axis=1, keepdims=True, out=row_sum)
    empty_rows = row_sum[:, 0] == 0
    row_sum[empty_rows] = 1.0
    np.divide(buf, row_sum, out=buf)

    output = np.empty((n_q, d_v))
    np.matmul(buf, V, out=output)
    return buf, output


def split_heads(X, h):
    """Split (n, d) into h heads: return an array of shape (h, n, d // h).

    Head i is made of columns i * d // h up to (i + 1) * d // h of X.
    Raise ValueError when h does not divide d.
    """
    X = np.asarray(X)
    n, d = X.shape
    if h <= 0 or d % h != 0:
        raise ValueError(f"split_heads: h={h} must divide d={d}")
    out = np.empty((h, n, d // h), dtype=X.dtype)
    np.copyto(out, X.reshape(n, h, d // h).swapaxes(0, 1))
    return out


def merge_heads(Xh):
    """Join heads again: the inverse of split_heads, (h, n, d_head) -> (n, h * d_head)."""
    Xh = np.asarray(Xh)
    h, n, d_head = Xh.shape
    out = np.empty((n, h, d_head), dtype=Xh.dtype)
    np.copyto(out, Xh.swapaxes(0, 1))
    return out.reshape(n, h * d_head)


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention of X, shape (n, d_model).

    Project X with Wq, Wk and Wv (x @ W layout), split each result into h heads, run
    masked_attention in every head (with the causal mask when causal is True), merge
    the heads and multiply by Wo. Return the (n, d_model) output.
    """
    X = np.asarray(X, dtype=np.float64)
    n, d_model = X.shape
    proj = np.empty((3, n, d_model))
    for slot, W in enumerate((Wq, Wk, Wv)):
        np.matmul(X, np.asarray(W, dtype=np.float64), out=proj[slot])
    Qh, Kh, Vh = (split_heads(p, h) for p in proj)
    mask = causal_mask(n) if causal else None
    head_out = np.empty((h, n, d_model // h))
    for i in range(h):
        _, head_out[i] = masked_attention(Qh[i], Kh[i], Vh[i], mask)
    Wo = np.asarray(Wo, dtype=np.float64)
    out = np.empty((n, Wo.shape[1]))
    np.matmul(merge_heads(head_out), Wo, out=out)
    return out
