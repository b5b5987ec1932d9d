"""CORRECT: masked_attention written for any leading batch axes (einsum '...qd,...kd->...qk'), so multi_head_attention runs all heads in one call.
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
    return ~np.triu(np.ones((n, n), dtype=bool), k=1)


def masked_attention(Q, K, V, mask=None):
    """Scaled dot-product attention with an optional boolean mask.

    Q has shape (n_q, d_k), K has shape (n_k, d_k) and V has shape (n_k, d_v).
    mask, if given, has shape (n_q, n_k); where it is False the score becomes -inf
    BEFORE the softmax, so that position gets weight exactly 0.

    The softmax must be numerically stable (subtract the row maximum first).
    A query row whose keys are all masked gets weights of 0 and an output of 0.

    Returns (weights, output) with shapes (n_q, n_k) and (n_q, d_v).
    (Extra leading axes, e.g. one per head, are carried through unchanged.)
    """
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    scores = np.einsum("...qd,...kd->...qk", Q, K) * (1.0 / np.sqrt(Q.shape[-1]))
    if mask is not None:
        scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    top = np.max(scores, axis=-1, keepdims=True)
    empty = np.isneginf(top)
    e = np.exp(scores - np.where(empty, 0.0, top))
    s = np.sum(e, axis=-1, keepdims=True)
    weights = e / np.where(empty, 1.0, s)
    return weights, np.einsum("...qk,...kv->...qv", weights, V)


def split_heads(X, h):
    """Split (n, d) into h heads: return an array of shape (h, n, d // h).

    Head i is made of columns i * d // h up to (i + 1) * d // h of X.
    Raise ValueError when h does not divide d.
    """
    X = np.asarray(X)
    n, d = X.shape
    if h <= 0 or d % h:
        raise ValueError(f"split_heads: {d} is not a multiple of {h}")
    return np.moveaxis(X.reshape(n, h, d // h), 1, 0)


def merge_heads(Xh):
    """Join heads again: the inverse of split_heads, (h, n, d_head) -> (n, h * d_head)."""
    Xh = np.asarray(Xh)
    h, n, d_head = Xh.shape
    return np.moveaxis(Xh, 0, 1).reshape(n, h * d_head)


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention of X, shape (n, d_model).

    Project X with Wq, Wk and Wv (x @ W layout), split each result into h heads, run
    masked_attention in every head (with the causal mask when causal is True), merge
    the heads and multiply by Wo. Return the (n, d_model) output.
    """
    X = np.asarray(X, dtype=np.float64)
    Qh = split_heads(X @ Wq, h)           # (h, n, d_head)
    Kh = split_heads(X @ Wk, h)
    Vh = split_heads(X @ Wv, h)
    mask = causal_mask(X.shape[0]) if causal else None   # broadcast over the head axis
    _, heads = masked_attention(Qh, Kh, Vh, mask)
    return merge_heads(heads) @ Wo
