"""CORRECT: small classes hold the state (per-head column slices of W), log-sum-exp softmax.
Functions: causal_mask, masked_attention, split_heads, merge_heads, multi_head_attention.

Conventions used throughout:

- A mask is a boolean array; True means "may attend".
- Weight matrices are in ``x @ W`` layout, shape (d_model, d_model).
- Head i owns the contiguous columns ``i * d_head : (i + 1) * d_head``.

multi_head_attention builds one _Head per head from the column slices of Wq, Wk
and Wv (X @ Wq[:, cols] is exactly head i of split_heads(X @ Wq, h)) and lets a
_MultiHead object merge them and apply Wo.
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
    rows, cols = np.indices((n, n))
    return cols <= rows


class _RowSoftmax:
    """Softmax along the last axis, computed as exp(s - logsumexp(s))."""

    def __call__(self, scores, allowed):
        s = np.where(allowed, scores, -np.inf)
        m = np.max(s, axis=-1, keepdims=True)
        has_key = np.isfinite(m)
        m = np.where(has_key, m, 0.0)
        with np.errstate(divide="ignore"):
            lse = m + np.log(np.sum(np.exp(s - m), axis=-1, keepdims=True))
        w = np.exp(s - np.where(has_key, lse, 0.0))
        return np.where(has_key & allowed, w, 0.0)


_softmax = _RowSoftmax()


def masked_attention(Q, K, V, mask=None):
    """Scaled dot-product attention with an optional boolean mask.

    Q has shape (n_q, d_k), K has shape (n_k, d_k) and V has shape (n_k, d_v).
    mask, if given, has shape (n_q, n_k); where it is False the score becomes -inf
    BEFORE the softmax, so that position gets weight exactly 0.

    The softmax must be numerically stable (subtract the row maximum first).
    A query row whose keys are all masked gets weights of 0 and an output of 0.

    Returns (weights, output) with shapes (n_q, n_k) and (n_q, d_v).
    """
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    n_q, d_k = Q.shape
    n_k = K.shape[0]
    scores = np.dot(Q, K.T) * (d_k ** -0.5)
    allowed = np.ones((n_q, n_k), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    weights = _softmax(scores, allowed)
    return weights, np.dot(weights, V)


def split_heads(X, h):
    """Split (n, d) into h heads: return an array of shape (h, n, d // h).

    Head i is made of columns i * d // h up to (i + 1) * d // h of X.
    Raise ValueError when h does not divide d.
    """
    X = np.asarray(X)
    n, d = X.shape
    if h <= 0 or d % h:
        raise ValueError("h must divide d")
    # (n, d) -> (d, n) -> (h, d_head, n) -> (h, n, d_head)
    return X.T.reshape(h, d // h, n).transpose(0, 2, 1).copy()


def merge_heads(Xh):
    """Join heads again: the inverse of split_heads, (h, n, d_head) -> (n, h * d_head)."""
    Xh = np.asarray(Xh)
    return np.hstack(tuple(Xh[i] for i in range(Xh.shape[0])))


class _Head:
    """One attention head: its own column slices of Wq, Wk and Wv."""

    def __init__(self, wq, wk, wv):
        self.wq, self.wk, self.wv = wq, wk, wv

    def __call__(self, X, mask):
        _, out = masked_attention(X @ self.wq, X @ self.wk, X @ self.wv, mask)
        return out


class _MultiHead:
    def __init__(self, Wq, Wk, Wv, Wo, h):
        d_model = Wq.shape[1]
        if h <= 0 or d_model % h:
            raise ValueError("h must divide d_model")
        dh = d_model // h
        cols = [slice(i * dh, (i + 1) * dh) for i in range(h)]
        self.heads = [_Head(Wq[:, c], Wk[:, c], Wv[:, c]) for c in cols]
        self.Wo = Wo

    def __call__(self, X, causal):
        mask = causal_mask(X.shape[0]) if causal else None
        outs = np.stack([head(X, mask) for head in self.heads])
        return merge_heads(outs) @ self.Wo


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention of X, shape (n, d_model).

    Project X with Wq, Wk and Wv (x @ W layout), split each result into h heads, run
    masked_attention in every head (with the causal mask when causal is True), merge
    the heads and multiply by Wo. Return the (n, d_model) output.
    """
    X = np.asarray(X, dtype=np.float64)
    Wq, Wk, Wv, Wo = (np.asarray(W, dtype=np.float64) for W in (Wq, Wk, Wv, Wo))
    return _MultiHead(Wq, Wk, Wv, Wo, h)(X, causal)
