"""CORRECT: np.einsum everywhere, additive -1e9 mask, heads batched in one masked_attention call.
Functions: causal_mask, masked_attention, split_heads, merge_heads, multi_head_attention.

Conventions used throughout:

- A mask is a boolean array; True means "may attend".
- Weight matrices are in ``x @ W`` layout, shape (d_model, d_model).
- Head i owns the contiguous columns ``i * d_head : (i + 1) * d_head``.

masked_attention also accepts leading batch axes (..., n, d), which lets
multi_head_attention run every head in a single call.
"""

import numpy as np

_NEG = -1e9  # large negative instead of -inf; fully masked rows are zeroed explicitly


def causal_mask(n):
    """Return the (n, n) causal mask.

    Entry [i, j] is True when position i may look at position j, that is when j <= i.

    >>> causal_mask(3).astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]])
    """
    idx = np.arange(n)
    return idx[:, None] >= idx[None, :]


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
    d_k = Q.shape[-1]
    scores = np.einsum("...qd,...kd->...qk", Q, K) / np.sqrt(d_k)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        scores = scores + np.where(mask, 0.0, _NEG)
    scores = scores - scores.max(axis=-1, keepdims=True)
    e = np.exp(scores)
    weights = e / np.einsum("...k->...", e)[..., None]
    if mask is not None:
        # a row with no allowed key would otherwise be uniform: give it weight 0
        weights = weights * mask.any(axis=-1, keepdims=True)
        # and make sure masked entries are exactly 0
        weights = np.where(mask, weights, 0.0)
    output = np.einsum("...qk,...kv->...qv", weights, V)
    return weights, output


def split_heads(X, h):
    """Split (n, d) into h heads: return an array of shape (h, n, d // h).

    Head i is made of columns i * d // h up to (i + 1) * d // h of X.
    Raise ValueError when h does not divide d.
    """
    X = np.asarray(X)
    n, d = X.shape
    if not (isinstance(h, (int, np.integer)) and h > 0 and d % h == 0):
        raise ValueError(f"cannot split width {d} into {h} heads")
    return np.einsum("nhc->hnc", X.reshape(n, h, d // h))


def merge_heads(Xh):
    """Join heads again: the inverse of split_heads, (h, n, d_head) -> (n, h * d_head)."""
    Xh = np.asarray(Xh)
    h, n, d_head = Xh.shape
    return np.einsum("hnc->nhc", Xh).reshape(n, h * d_head)


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention of X, shape (n, d_model).

    Project X with Wq, Wk and Wv (x @ W layout), split each result into h heads, run
    masked_attention in every head (with the causal mask when causal is True), merge
    the heads and multiply by Wo. Return the (n, d_model) output.
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    Qh = split_heads(np.einsum("nd,de->ne", X, Wq), h)
    Kh = split_heads(np.einsum("nd,de->ne", X, Wk), h)
    Vh = split_heads(np.einsum("nd,de->ne", X, Wv), h)
    mask = causal_mask(n) if causal else None
    _, heads_out = masked_attention(Qh, Kh, Vh, mask)  # all h heads at once, mask broadcast
    return np.einsum("nd,de->ne", merge_heads(heads_out), Wo)
