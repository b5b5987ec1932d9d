"""CORRECT: exponentiate, then zero the forbidden entries with np.where and renormalise each row; the max is taken over the allowed entries only.
Affects: causal_mask, masked_attention, split_heads, merge_heads, multi_head_attention.

Masked attention and multi-head attention in NumPy.

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
    return np.subtract.outer(np.arange(n), np.arange(n)) >= 0


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
    S = Q @ K.T
    S /= np.sqrt(Q.shape[1])
    if mask is None:
        allowed = np.ones_like(S, dtype=bool)
    else:
        allowed = np.broadcast_to(np.asarray(mask, dtype=bool), S.shape)
    # the row maximum of the ALLOWED scores (a masked score may be the largest one)
    m = np.max(S, axis=1, keepdims=True, where=allowed, initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0.0)
    # clamp at 0 so a masked score above m cannot overflow; those entries are dropped next
    E = np.exp(np.minimum(S - m, 0.0))
    E = np.where(allowed, E, 0.0)           # same as -inf before the softmax
    Z = E.sum(axis=1, keepdims=True)
    A = np.divide(E, Z, out=np.zeros_like(E), where=Z > 0)
    return A, A @ V


def split_heads(X, h):
    """Split (n, d) into h heads: return an array of shape (h, n, d // h).

    Head i is made of columns i * d // h up to (i + 1) * d // h of X.
    Raise ValueError when h does not divide d.
    """
    X = np.asarray(X)
    n, d = X.shape
    if h <= 0 or d % h != 0:
        raise ValueError("h must divide d")
    return np.ascontiguousarray(np.swapaxes(X.reshape(n, h, d // h), 0, 1))


def merge_heads(Xh):
    """Join heads again: the inverse of split_heads, (h, n, d_head) -> (n, h * d_head)."""
    Xh = np.asarray(Xh)
    h, n, d_head = Xh.shape
    return np.swapaxes(Xh, 0, 1).reshape(n, -1)


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention of X, shape (n, d_model).

    Project X with Wq, Wk and Wv (x @ W layout), split each result into h heads, run
    masked_attention in every head (with the causal mask when causal is True), merge
    the heads and multiply by Wo. Return the (n, d_model) output.
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    Qh, Kh, Vh = (split_heads(X @ W, h) for W in (Wq, Wk, Wv))
    mask = causal_mask(n) if causal else None
    outs = np.empty_like(Vh, dtype=np.float64)
    for i in range(h):
        outs[i] = masked_attention(Qh[i], Kh[i], Vh[i], mask)[1]
    return merge_heads(outs) @ Wo
