"""CORRECT: Q scaled by 1/sqrt(d_k) before the product, softmax as exp(s - logsumexp(s)), heads via np.split / np.concatenate.
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
    return np.tril(np.ones((n, n), dtype=bool))


def _logsumexp_rows(S):
    """Stable log(sum(exp(S), axis=1)); -inf for a row that is all -inf."""
    m = np.max(S, axis=1, keepdims=True)
    finite = np.isfinite(m)
    m_safe = np.where(finite, m, 0.0)
    with np.errstate(divide="ignore"):
        lse = m_safe + np.log(np.sum(np.exp(S - m_safe), axis=1, keepdims=True))
    return np.where(finite, lse, -np.inf)


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
    d_k = Q.shape[1]
    S = (Q / np.sqrt(d_k)) @ K.T
    if mask is not None:
        S = S.copy()
        S[~np.broadcast_to(np.asarray(mask, dtype=bool), S.shape)] = -np.inf
    lse = _logsumexp_rows(S)
    dead = np.isneginf(lse)                      # every key masked in this row
    W = np.exp(S - np.where(dead, 0.0, lse))     # exp(-inf) = 0 exactly
    W[dead[:, 0]] = 0.0
    # one renormalisation step removes the last rounding of exp(s - lse)
    tot = W.sum(axis=1, keepdims=True)
    W = np.divide(W, tot, out=np.zeros_like(W), where=tot > 0)
    return W, W @ V


def split_heads(X, h):
    """Split (n, d) into h heads: return an array of shape (h, n, d // h).

    Head i is made of columns i * d // h up to (i + 1) * d // h of X.
    Raise ValueError when h does not divide d.
    """
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError("X must be 2-D")
    if h <= 0:
        raise ValueError("h must be a positive number of heads")
    if X.shape[1] % h != 0:
        raise ValueError(f"h={h} does not divide d={X.shape[1]}")
    return np.stack(np.split(X, h, axis=1))


def merge_heads(Xh):
    """Join heads again: the inverse of split_heads, (h, n, d_head) -> (n, h * d_head)."""
    Xh = np.asarray(Xh)
    return np.concatenate(list(Xh), axis=1)


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention of X, shape (n, d_model).

    Project X with Wq, Wk and Wv (x @ W layout), split each result into h heads, run
    masked_attention in every head (with the causal mask when causal is True), merge
    the heads and multiply by Wo. Return the (n, d_model) output.
    """
    X = np.asarray(X, dtype=float)
    mask = causal_mask(len(X)) if causal else None
    projected = [split_heads(X @ np.asarray(W, dtype=float), h) for W in (Wq, Wk, Wv)]
    outputs = [masked_attention(q, k, v, mask)[1] for q, k, v in zip(*projected)]
    return merge_heads(np.array(outputs)) @ np.asarray(Wo, dtype=float)
