"""MISTAKE: masked scores are set to -1e9 and an ordinary softmax follows with no guard: a row with no allowed key gets uniform weights 1/S and the mean of V instead of weights 0 and output 0.
Affects: batched_attention (empty rows; and through it cross_attention with y_length 0).

Attention over a batch of padded sequences, in NumPy.
"""

import numpy as np


def padding_mask(lengths, T):
    """Return the (B, T) padding mask: entry [b, t] is True when t < lengths[b].

    Raise ValueError when a length is below 0 or above T.
    """
    lengths = np.asarray(lengths)
    if lengths.ndim != 1:
        raise ValueError("lengths must be a 1-D sequence of ints")
    if lengths.size and (lengths.min() < 0 or lengths.max() > T):
        raise ValueError(f"every length must lie in 0 .. {T}")
    return np.arange(T)[None, :] < lengths[:, None]


def attention_mask(lengths, T, causal=True):
    """Return the (B, T, T) mask: key j real, and j <= i when causal."""
    mask = padding_mask(lengths, T)[:, None, :]  # (B, 1, T): varies along the keys
    mask = np.broadcast_to(mask, (mask.shape[0], T, T))
    if causal:
        mask = mask & np.tril(np.ones((T, T), dtype=bool))
    return np.array(mask, dtype=bool)


def batched_attention(Q, K, V, mask=None):
    """Scaled dot-product attention over any number of leading dimensions.

    Returns (weights, output) with shapes (..., T, S) and (..., T, d_v).
    """
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    d = Q.shape[-1]
    scores = (Q @ np.swapaxes(K, -1, -2)) / np.sqrt(d)
    if mask is not None:
        scores = np.where(np.asarray(mask, dtype=bool), scores, -1e9)
    top = np.max(scores, axis=-1, keepdims=True)
    e = np.exp(scores - top)
    weights = e / e.sum(axis=-1, keepdims=True)
    output = weights @ V
    return weights, output


def _split_heads(M, h):
    """(B, T, C) -> (B, h, T, C // h); head i = columns i*d:(i+1)*d."""
    B, T, C = M.shape
    return M.reshape(B, T, h, C // h).transpose(0, 2, 1, 3)


def _merge_heads(M):
    """(B, h, T, d) -> (B, T, h * d)."""
    B, h, T, d = M.shape
    return M.transpose(0, 2, 1, 3).reshape(B, T, h * d)


def multi_head_attention(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention over a padded batch X of shape (B, T, C)."""
    X = np.asarray(X)
    B, T, C = X.shape
    q, k, v = (_split_heads(X @ W, h) for W in (Wq, Wk, Wv))
    mask = attention_mask(lengths, T, causal)[:, None, :, :]  # the same for every head
    _, out = batched_attention(q, k, v, mask)
    return _merge_heads(out) @ Wo


def cross_attention(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    """Multi-head cross-attention: queries from X (B, T, C), keys and values from Y (B, S, C)."""
    X, Y = np.asarray(X), np.asarray(Y)
    S = Y.shape[1]
    q = _split_heads(X @ Wq, h)
    k = _split_heads(Y @ Wk, h)
    v = _split_heads(Y @ Wv, h)
    mask = padding_mask(y_lengths, S)[:, None, None, :]  # (B, 1, 1, S): keys of Y only
    _, out = batched_attention(q, k, v, mask)
    return _merge_heads(out) @ Wo
