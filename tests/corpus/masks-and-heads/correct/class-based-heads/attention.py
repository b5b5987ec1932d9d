"""CORRECT: small classes (a Head holding its own column slices of W_Q, W_K, W_V) behind the required functions; weights are split per head instead of the projections.
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
    rows, cols = np.indices((n, n))
    return cols <= rows


class _StableSoftmax:
    """Row softmax over the allowed entries only; a row with nothing allowed is all zeros."""

    def __call__(self, scores, allowed):
        out = np.zeros_like(scores)
        for i in range(scores.shape[0]):
            keep = allowed[i]
            if not keep.any():
                continue
            s = scores[i, keep]
            e = np.exp(s - s.max())
            out[i, keep] = e / e.sum()
        return out


_softmax = _StableSoftmax()


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
    scores = (Q @ K.T) / np.sqrt(K.shape[1])
    if mask is None:
        allowed = np.ones(scores.shape, dtype=bool)
    else:
        allowed = np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape)
    # entries outside `allowed` are treated as -inf: they never enter the softmax
    weights = _softmax(scores, allowed)
    return weights, weights @ V


def split_heads(X, h):
    """Split (n, d) into h heads: return an array of shape (h, n, d // h).

    Head i is made of columns i * d // h up to (i + 1) * d // h of X.
    Raise ValueError when h does not divide d.
    """
    X = np.asarray(X)
    d = X.shape[-1]
    if h < 1 or d % h:
        raise ValueError(f"{h} heads cannot share a width of {d} equally")
    d_head = d // h
    return np.array([X[:, i * d_head:(i + 1) * d_head] for i in range(h)])


def merge_heads(Xh):
    """Join heads again: the inverse of split_heads, (h, n, d_head) -> (n, h * d_head)."""
    Xh = np.asarray(Xh)
    return np.hstack([Xh[i] for i in range(Xh.shape[0])])


class Head:
    """One attention head: the columns of W_Q, W_K and W_V it owns."""

    def __init__(self, wq, wk, wv):
        self.wq, self.wk, self.wv = wq, wk, wv

    def __call__(self, X, mask):
        return masked_attention(X @ self.wq, X @ self.wk, X @ self.wv, mask)[1]


class MultiHeadAttention:
    """h heads made from column slices of the four d_model x d_model matrices."""

    def __init__(self, Wq, Wk, Wv, Wo, h):
        Wq, Wk, Wv = (np.asarray(W, dtype=np.float64) for W in (Wq, Wk, Wv))
        # split_heads of a (d_model, d_model) matrix gives its column blocks: head i owns
        # columns i*d_head:(i+1)*d_head of each projection, exactly as (X @ W) would split.
        self.heads = [Head(q, k, v) for q, k, v in
                      zip(split_heads(Wq, h), split_heads(Wk, h), split_heads(Wv, h))]
        self.Wo = np.asarray(Wo, dtype=np.float64)

    def __call__(self, X, causal=True):
        X = np.asarray(X, dtype=np.float64)
        mask = causal_mask(X.shape[0]) if causal else None
        outs = np.stack([head(X, mask) for head in self.heads])
        return merge_heads(outs) @ self.Wo


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention of X, shape (n, d_model).

    Project X with Wq, Wk and Wv (x @ W layout), split each result into h heads, run
    masked_attention in every head (with the causal mask when causal is True), merge
    the heads and multiply by Wo. Return the (n, d_model) output.
    """
    return MultiHeadAttention(Wq, Wk, Wv, Wo, h)(X, causal=causal)
