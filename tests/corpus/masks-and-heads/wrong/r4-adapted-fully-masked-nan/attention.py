"""MISTAKE: the core softmax has no policy for a fully masked row: max is -inf, -inf - (-inf) = NaN, and the row's weights and output are NaN instead of 0.
Affects: masked_attention

The private helpers (_attention_bhtd, _split_bthd, _merge_bhtd, _blocked_to_bias) were
written for batched 4-D arrays and a "True = blocked" mask; the handout's functions wrap
them: add the leading batch/head axes, invert the boolean mask, and drop the axes again.
"""

import numpy as np


# ----------------------------------------------------------------- batched core
def _blocked_to_bias(blocked):
    """True = blocked  ->  additive float bias, -inf where blocked and 0 elsewhere."""
    return np.where(blocked, -np.inf, 0.0)


def _attention_bhtd(q, k, v, attn_bias=None):
    """q (B, H, Tq, D), k (B, H, Tk, D), v (B, H, Tk, Dv); bias broadcastable to (B, H, Tq, Tk)."""
    scale = 1.0 / np.sqrt(q.shape[-1])
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    if attn_bias is not None:
        s = s + attn_bias
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)
    p = e / e.sum(axis=-1, keepdims=True)
    return p, np.matmul(p, v)


def _split_bthd(x, n_head):
    """(B, T, C) -> (B, H, T, C // H)."""
    B, T, C = x.shape
    if n_head <= 0 or C % n_head != 0:
        raise ValueError(f"{n_head} heads do not divide a width of {C}")
    return x.reshape(B, T, n_head, C // n_head).transpose(0, 2, 1, 3)


def _merge_bhtd(x):
    """(B, H, T, D) -> (B, T, H * D)."""
    B, H, T, D = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, T, H * D)


# ----------------------------------------------------------------- handout API
def causal_mask(n):
    """(n, n) bool, True where j <= i (the core's 'blocked' mask is the strict upper triangle)."""
    blocked = np.triu(np.ones((n, n), dtype=bool), k=1)
    return ~blocked


def masked_attention(Q, K, V, mask=None):
    """Returns (weights, output) with shapes (n_q, n_k) and (n_q, d_v)."""
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    bias = None
    if mask is not None:
        blocked = ~np.asarray(mask, dtype=bool)     # handout: True = may attend
        bias = _blocked_to_bias(blocked)[None, None]
    p, o = _attention_bhtd(Q[None, None], K[None, None], V[None, None], bias)
    return p[0, 0], o[0, 0]


def split_heads(X, h):
    """(n, d) -> (h, n, d // h)."""
    return _split_bthd(np.asarray(X)[None], h)[0]


def merge_heads(Xh):
    """(h, n, d_head) -> (n, h * d_head)."""
    return _merge_bhtd(np.asarray(Xh)[None])[0]


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, causal=True):
    """(n, d_model) -> (n, d_model), one head at a time through masked_attention."""
    X = np.asarray(X)
    n = X.shape[0]
    Qh = split_heads(X @ Wq, h)
    Kh = split_heads(X @ Wk, h)
    Vh = split_heads(X @ Wv, h)
    mask = causal_mask(n) if causal else None
    heads = np.stack([masked_attention(Qh[i], Kh[i], Vh[i], mask)[1] for i in range(Qh.shape[0])])
    return merge_heads(heads) @ Wo
