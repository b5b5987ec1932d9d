"""CORRECT: additive mask of -1e9, in-place ufuncs on one score buffer, preallocated head buffers, explicit zeroing of fully masked rows.
Affects: causal_mask, masked_attention, split_heads, merge_heads, multi_head_attention.

Masked attention and multi-head attention in NumPy.

Conventions used throughout:

- A mask is a boolean array; True means "may attend".
- Weight matrices are in ``x @ W`` layout, shape (d_model, d_model).
- Head i owns the contiguous columns ``i * d_head : (i + 1) * d_head``.
"""

import numpy as np

NEG = -1e9  # "minus infinity" that stays finite; exp(NEG - max) is exactly 0.0 in float64


def causal_mask(n):
    """Return the (n, n) causal mask.

    Entry [i, j] is True when position i may look at position j, that is when j <= i.

    >>> causal_mask(3).astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]])
    """
    out = np.ones((n, n), dtype=bool)
    out[np.triu_indices(n, k=1)] = False
    return out


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

    buf = np.empty((n_q, n_k), dtype=np.float64)
    np.matmul(Q, K.T, out=buf)          # fresh buffer: the inputs are never modified
    buf *= 1.0 / np.sqrt(d_k)

    dead = None
    if mask is not None:
        allowed = np.asarray(mask, dtype=bool)
        additive = np.zeros((n_q, n_k), dtype=np.float64)
        additive[~np.broadcast_to(allowed, (n_q, n_k))] = NEG
        buf += additive
        dead = ~np.broadcast_to(allowed, (n_q, n_k)).any(axis=1)

    row_max = buf.max(axis=1, keepdims=True)
    buf -= row_max
    np.exp(buf, out=buf)
    if mask is not None:
        buf[~np.broadcast_to(allowed, (n_q, n_k))] = 0.0   # make the zeros exact in every case
    denom = buf.sum(axis=1, keepdims=True)
    denom[denom == 0.0] = 1.0
    buf /= denom
    if dead is not None and dead.any():
        buf[dead] = 0.0                 # fully masked row: weights 0, output 0

    out = np.empty((n_q, d_v), dtype=np.float64)
    np.matmul(buf, V, out=out)
    return buf, out


def split_heads(X, h):
    """Split (n, d) into h heads: return an array of shape (h, n, d // h).

    Head i is made of columns i * d // h up to (i + 1) * d // h of X.
    Raise ValueError when h does not divide d.
    """
    X = np.asarray(X)
    n, d = X.shape
    if h <= 0 or d % h != 0:
        raise ValueError(f"cannot split a width of {d} into {h} heads")
    d_head = d // h
    heads = np.empty((h, n, d_head), dtype=X.dtype)
    for i in range(h):
        heads[i] = X[:, i * d_head:(i + 1) * d_head]
    return heads


def merge_heads(Xh):
    """Join heads again: the inverse of split_heads, (h, n, d_head) -> (n, h * d_head)."""
    Xh = np.asarray(Xh)
    h, n, d_head = Xh.shape
    out = np.empty((n, h * d_head), dtype=Xh.dtype)
    for i in range(h):
        out[:, i * d_head:(i + 1) * d_head] = Xh[i]
    return out


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention of X, shape (n, d_model).

    Project X with Wq, Wk and Wv (x @ W layout), split each result into h heads, run
    masked_attention in every head (with the causal mask when causal is True), merge
    the heads and multiply by Wo. Return the (n, d_model) output.
    """
    X = np.asarray(X, dtype=np.float64)
    n, d_model = X.shape
    Qh = split_heads(X @ Wq, h)
    Kh = split_heads(X @ Wk, h)
    Vh = split_heads(X @ Wv, h)
    mask = causal_mask(n) if causal else None
    heads_out = np.empty((h, n, Vh.shape[2]), dtype=np.float64)
    for i in range(h):
        heads_out[i] = masked_attention(Qh[i], Kh[i], Vh[i], mask)[1]
    result = np.empty((n, np.shape(Wo)[1]), dtype=np.float64)
    np.matmul(merge_heads(heads_out), np.asarray(Wo, dtype=np.float64), out=result)
    return result
