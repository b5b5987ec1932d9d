"""CORRECT: float32 arithmetic throughout, preallocated buffers and in-place ufuncs (out=...).
Affects: padding_mask, attention_mask, batched_attention, multi_head_attention, cross_attention.

Attention over a batch of padded sequences. Right padding; True means "may attend". All
floating-point work is done in float32 (the handout's tolerance allows it), reusing one
buffer for scores, exponentials and weights.
"""

import numpy as np

DTYPE = np.float32


def padding_mask(lengths, T):
    """(B, T) bool, True at t < lengths[b]; ValueError for a length below 0 or above T."""
    lengths = np.asarray(lengths)
    if lengths.ndim != 1:
        lengths = lengths.reshape(-1)
    if lengths.size and (lengths.min() < 0 or lengths.max() > T):
        raise ValueError(f"lengths must lie in [0, {T}]")
    out = np.empty((lengths.shape[0], T), dtype=bool)
    np.less(np.arange(T)[None, :], lengths[:, None], out=out)
    return out


def attention_mask(lengths, T, causal=True):
    """(B, T, T) bool: key j real, and j <= i when causal."""
    real = padding_mask(lengths, T)
    out = np.empty((real.shape[0], T, T), dtype=bool)
    out[...] = real[:, None, :]
    if causal:
        np.logical_and(out, np.tri(T, T, 0, dtype=bool), out=out)
    return out


def batched_attention(Q, K, V, mask=None):
    """Scaled dot-product attention over any leading dims; returns (weights, output)."""
    Q = np.asarray(Q, dtype=DTYPE)
    K = np.asarray(K, dtype=DTYPE)
    V = np.asarray(V, dtype=DTYPE)
    d = Q.shape[-1]
    buf = np.matmul(Q, np.swapaxes(K, -1, -2))  # new float32 buffer (..., T, S)
    buf *= DTYPE(1.0 / np.sqrt(d))
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        full = np.broadcast_shapes(buf.shape, mask.shape)
        if full != buf.shape:
            buf = np.array(np.broadcast_to(buf, full))
        np.copyto(buf, DTYPE(-np.inf), where=~mask)
    row_max = buf.max(axis=-1, keepdims=True, initial=-np.inf)
    row_max[~np.isfinite(row_max)] = 0  # a row of -inf: leave it at -inf, exp gives 0
    buf -= row_max
    np.exp(buf, out=buf)
    total = buf.sum(axis=-1, keepdims=True)
    empty = total == 0
    total[empty] = 1
    buf /= total  # empty rows are all 0 already, divided by 1
    output = np.matmul(buf, V)
    return buf, output


def _split(A, B, T, h):
    return A.reshape(B, T, h, -1).transpose(0, 2, 1, 3)


def multi_head_attention(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention over X (B, T, C); returns (B, T, C)."""
    X = np.asarray(X, dtype=DTYPE)
    B, T, C = X.shape
    W = [np.asarray(M, dtype=DTYPE) for M in (Wq, Wk, Wv, Wo)]
    proj = np.empty((3, B, T, C), dtype=DTYPE)
    for k in range(3):
        np.matmul(X, W[k], out=proj[k])
    mask = attention_mask(lengths, T, causal)[:, None, :, :]
    _, heads = batched_attention(_split(proj[0], B, T, h), _split(proj[1], B, T, h),
                                 _split(proj[2], B, T, h), mask)
    merged = np.empty((B, T, h, C // h), dtype=DTYPE)
    merged[...] = heads.transpose(0, 2, 1, 3)
    out = np.empty((B, T, C), dtype=DTYPE)
    np.matmul(merged.reshape(B, T, C), W[3], out=out)
    return out


def cross_attention(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    """Multi-head cross-attention, queries from X (B, T, C), keys/values from Y (B, S, C)."""
    X = np.asarray(X, dtype=DTYPE)
    Y = np.asarray(Y, dtype=DTYPE)
    B, T, C = X.shape
    S = Y.shape[1]
    Wq, Wk, Wv, Wo = (np.asarray(M, dtype=DTYPE) for M in (Wq, Wk, Wv, Wo))
    Q = _split(X @ Wq, B, T, h)
    K = _split(Y @ Wk, B, S, h)
    V = _split(Y @ Wv, B, S, h)
    key_mask = padding_mask(y_lengths, S)[:, None, None, :]
    _, heads = batched_attention(Q, K, V, key_mask)
    merged = np.ascontiguousarray(heads.transpose(0, 2, 1, 3)).reshape(B, T, C)
    out = np.empty((B, T, C), dtype=DTYPE)
    np.matmul(merged, Wo, out=out)
    return out
