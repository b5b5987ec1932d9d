"""CORRECT: np.einsum everywhere; float32 inputs give float32 results (float64 inputs stay float64), accumulating in float64 inside.
Affects: causal_mask, masked_attention, split_heads, merge_heads, multi_head_attention.

Masked attention and multi-head attention in NumPy.

The handout allows float32. Doing the arithmetic itself in float32 is not safe at a relative
tolerance of 1e-5: with inputs scaled by 30 or 40 a score of a few thousand rounded to float32
moves the softmax by about 1e-4. So the scores, the softmax and the products are accumulated
in float64, and the result is handed back in float32 only when the caller gave float32 arrays.

Conventions used throughout:

- A mask is a boolean array; True means "may attend".
- Weight matrices are in ``x @ W`` layout, shape (d_model, d_model).
- Head i owns the contiguous columns ``i * d_head : (i + 1) * d_head``.
"""

import numpy as np


def _out_dtype(*arrays):
    """float32 when every input is float32 (or narrower), float64 otherwise."""
    dt = np.result_type(*[np.asarray(a).dtype for a in arrays], np.float32)
    return np.float32 if dt == np.float32 else np.float64


def causal_mask(n):
    """Return the (n, n) causal mask.

    Entry [i, j] is True when position i may look at position j, that is when j <= i.

    >>> causal_mask(3).astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]])
    """
    return np.tri(n, n, k=0, dtype=bool)


def _attention64(Q, K, V, mask):
    d_k = Q.shape[1]
    scores = np.einsum("qd,kd->qk", Q, K) / np.sqrt(d_k)
    if mask is None:
        allowed = np.ones(scores.shape, dtype=bool)
    else:
        allowed = np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape)
    scores = np.where(allowed, scores, -np.inf)
    any_allowed = allowed.any(axis=1, keepdims=True)
    row_max = np.where(any_allowed, scores.max(axis=1, keepdims=True, initial=-np.inf), 0.0)
    e = np.exp(scores - row_max)  # exp(-inf) == 0 exactly
    total = np.einsum("qk->q", e)[:, None]
    weights = np.where(any_allowed, e / np.where(any_allowed, total, 1.0), 0.0)
    output = np.einsum("qk,kv->qv", weights, V)
    return weights, output


def masked_attention(Q, K, V, mask=None):
    """Scaled dot-product attention with an optional boolean mask.

    Q has shape (n_q, d_k), K has shape (n_k, d_k) and V has shape (n_k, d_v).
    mask, if given, has shape (n_q, n_k); where it is False the score becomes -inf
    BEFORE the softmax, so that position gets weight exactly 0.

    The softmax must be numerically stable (subtract the row maximum first).
    A query row whose keys are all masked gets weights of 0 and an output of 0.

    Returns (weights, output) with shapes (n_q, n_k) and (n_q, d_v).
    """
    dt = _out_dtype(Q, K, V)
    weights, output = _attention64(np.asarray(Q, dtype=np.float64), np.asarray(K, dtype=np.float64),
                                   np.asarray(V, dtype=np.float64), mask)
    return weights.astype(dt), output.astype(dt)


def split_heads(X, h):
    """Split (n, d) into h heads: return an array of shape (h, n, d // h).

    Head i is made of columns i * d // h up to (i + 1) * d // h of X.
    Raise ValueError when h does not divide d.
    """
    X = np.asarray(X)
    n, d = X.shape
    if h < 1 or d % h:
        raise ValueError(f"{h} heads do not divide a width of {d}")
    return np.einsum("nhe->hne", X.reshape(n, h, d // h)).copy()


def merge_heads(Xh):
    """Join heads again: the inverse of split_heads, (h, n, d_head) -> (n, h * d_head)."""
    Xh = np.asarray(Xh)
    h, n, d_head = Xh.shape
    return np.einsum("hne->nhe", Xh).reshape(n, h * d_head)


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention of X, shape (n, d_model).

    Project X with Wq, Wk and Wv (x @ W layout), split each result into h heads, run
    masked_attention in every head (with the causal mask when causal is True), merge
    the heads and multiply by Wo. Return the (n, d_model) output.
    """
    dt = _out_dtype(X, Wq, Wk, Wv, Wo)
    X64 = np.asarray(X, dtype=np.float64)
    Wq, Wk, Wv, Wo = (np.asarray(W, dtype=np.float64) for W in (Wq, Wk, Wv, Wo))
    n = X64.shape[0]
    Qh = split_heads(np.einsum("nd,de->ne", X64, Wq), h)
    Kh = split_heads(np.einsum("nd,de->ne", X64, Wk), h)
    Vh = split_heads(np.einsum("nd,de->ne", X64, Wv), h)
    mask = causal_mask(n) if causal else None
    # the head inputs are float64, so masked_attention keeps its results in float64 here
    heads = np.stack([masked_attention(Qh[i], Kh[i], Vh[i], mask)[1] for i in range(h)])
    return np.einsum("ne,ed->nd", merge_heads(heads), Wo).astype(dt)
