"""MISTAKE: k.size(-1) is ported as len(k), so the scores are scaled by 1/sqrt(n_k) (number of keys) instead of 1/sqrt(d_k).
Affects: masked_attention (and multi_head_attention through it)

Line by line from the lecture's PyTorch:
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
    att = F.softmax(att, dim=-1)
    y = att @ v
    y = y.transpose(1, 2).contiguous().view(B, T, C)
"""

import math

import numpy as np


def masked_fill(x, mask, value):
    """torch.Tensor.masked_fill: a copy of x with value wherever mask is True."""
    out = np.array(x, copy=True)
    out[mask] = value
    return out


def softmax(x, dim=-1):
    """F.softmax(x, dim): stable, and a row that is all -inf becomes all 0 (as in SDPA)."""
    x_max = np.max(x, axis=dim, keepdims=True)
    x_max = np.where(np.isfinite(x_max), x_max, 0.0)
    e = np.exp(x - x_max)
    s = np.sum(e, axis=dim, keepdims=True)
    return np.divide(e, s, out=np.zeros_like(e), where=s > 0)


def causal_mask(n):
    """self.bias = torch.tril(torch.ones(T, T)), as booleans: True where j <= i."""
    return np.tril(np.ones((n, n))).astype(bool)


def masked_attention(Q, K, V, mask=None):
    """Scaled dot-product attention; returns (weights, output) = (att, y)."""
    q, k, v = np.asarray(Q), np.asarray(K), np.asarray(V)
    att = (q @ k.swapaxes(-2, -1)) * (1.0 / math.sqrt(len(k)))
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        att = masked_fill(att, ~mask, float('-inf'))
    att = softmax(att, dim=-1)
    y = att @ v
    return att, y


def split_heads(X, h):
    """k.view(B, T, n_head, C // n_head).transpose(1, 2), without the batch axis."""
    X = np.asarray(X)
    T, C = X.shape
    if h <= 0 or C % h != 0:
        raise ValueError(f"n_head={h} must divide n_embd={C}")
    return X.reshape(T, h, C // h).swapaxes(0, 1)


def merge_heads(Xh):
    """y.transpose(1, 2).contiguous().view(B, T, C), without the batch axis."""
    Xh = np.asarray(Xh)
    n_head, T, hs = Xh.shape
    return np.ascontiguousarray(Xh.swapaxes(0, 1)).reshape(T, n_head * hs)


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, causal=True):
    """CausalSelfAttention.forward for one sequence; returns (T, C)."""
    X = np.asarray(X)
    T, C = X.shape
    q = X @ Wq
    k = X @ Wk
    v = X @ Wv
    q = split_heads(q, h)  # (nh, T, hs)
    k = split_heads(k, h)
    v = split_heads(v, h)
    mask = causal_mask(T) if causal else None
    ys = [masked_attention(q[i], k[i], v[i], mask)[1] for i in range(h)]
    y = np.stack(ys)       # (nh, T, hs)
    y = merge_heads(y)     # (T, C)
    y = y @ Wo             # self.c_proj
    return y
