"""CORRECT: explicit Python loops over sequences, heads and query rows (column slices per head).
Affects: padding_mask, attention_mask, batched_attention, multi_head_attention, cross_attention.

Attention over a batch of padded sequences, in NumPy, written the long way round so that every
index is visible. Right padding; a mask is boolean and True means "may attend"; a query with
no allowed key gets weights 0 and output 0.
"""

import math

import numpy as np


def padding_mask(lengths, T):
    """Return the (B, T) padding mask: entry [b, t] is True when t < lengths[b].

    Raise ValueError when a length is below 0 or above T.
    """
    lengths = [int(n) for n in np.asarray(lengths).reshape(-1)]
    for n in lengths:
        if n < 0 or n > T:
            raise ValueError(f"length {n} is outside 0 .. {T}")
    mask = np.zeros((len(lengths), T), dtype=bool)
    for b, n in enumerate(lengths):
        for t in range(n):
            mask[b, t] = True
    return mask


def attention_mask(lengths, T, causal=True):
    """Return the (B, T, T) mask: [b, i, j] is True when key j is real (and j <= i if causal)."""
    real = padding_mask(lengths, T)
    B = real.shape[0]
    mask = np.zeros((B, T, T), dtype=bool)
    for b in range(B):
        for i in range(T):
            for j in range(T):
                allowed = bool(real[b, j])
                if causal and j > i:
                    allowed = False
                mask[b, i, j] = allowed
    return mask


def _attend_one(q, K, V, allowed, scale):
    """One query row: q (d,), K (S, d), V (S, d_v), allowed (S,) bool -> weights (S,), out (d_v,)."""
    S = K.shape[0]
    weights = np.zeros(S, dtype=np.float64)
    idx = [j for j in range(S) if allowed[j]]
    if not idx:
        return weights, np.zeros(V.shape[1], dtype=np.float64)
    scores = [float(np.dot(q, K[j])) * scale for j in idx]
    m = max(scores)
    exps = [math.exp(s - m) for s in scores]
    z = sum(exps)
    for j, e in zip(idx, exps):
        weights[j] = e / z
    out = np.zeros(V.shape[1], dtype=np.float64)
    for j in idx:
        out += weights[j] * V[j]
    return weights, out


def batched_attention(Q, K, V, mask=None):
    """Scaled dot-product attention over any number of leading (batch, head) dimensions.

    Returns (weights, output) with shapes (..., T, S) and (..., T, d_v).
    """
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    T, d = Q.shape[-2:]
    S = K.shape[-2]
    d_v = V.shape[-1]
    if mask is None:
        mask = np.ones((T, S), dtype=bool)
    mask = np.asarray(mask, dtype=bool)
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2], mask.shape[:-2])
    Qb = np.broadcast_to(Q, lead + (T, d)).reshape(-1, T, d)
    Kb = np.broadcast_to(K, lead + (S, d)).reshape(-1, S, d)
    Vb = np.broadcast_to(V, lead + (S, d_v)).reshape(-1, S, d_v)
    Mb = np.broadcast_to(mask, lead + (T, S)).reshape(-1, T, S)
    n = Qb.shape[0]
    weights = np.zeros((n, T, S), dtype=np.float64)
    output = np.zeros((n, T, d_v), dtype=np.float64)
    scale = 1.0 / math.sqrt(d)
    for m in range(n):
        for i in range(T):
            weights[m, i], output[m, i] = _attend_one(Qb[m, i], Kb[m], Vb[m], Mb[m, i], scale)
    return weights.reshape(lead + (T, S)), output.reshape(lead + (T, d_v))


def multi_head_attention(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention over a padded batch X (B, T, C); returns (B, T, C)."""
    X = np.asarray(X, dtype=np.float64)
    B, T, C = X.shape
    dh = C // h
    Qa, Ka, Va = X @ Wq, X @ Wk, X @ Wv
    mask = attention_mask(lengths, T, causal)
    merged = np.zeros((B, T, C), dtype=np.float64)
    for b in range(B):
        for i in range(h):
            cols = slice(i * dh, (i + 1) * dh)
            _, out = batched_attention(Qa[b, :, cols], Ka[b, :, cols], Va[b, :, cols], mask[b])
            merged[b, :, cols] = out
    return merged @ Wo


def cross_attention(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    """Multi-head cross-attention: queries from X (B, T, C), keys/values from Y (B, S, C)."""
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    B, T, C = X.shape
    S = Y.shape[1]
    dh = C // h
    Qa, Ka, Va = X @ Wq, Y @ Wk, Y @ Wv
    real = padding_mask(y_lengths, S)
    merged = np.zeros((B, T, C), dtype=np.float64)
    for b in range(B):
        key_mask = np.broadcast_to(real[b], (T, S))
        for i in range(h):
            cols = slice(i * dh, (i + 1) * dh)
            _, out = batched_attention(Qa[b, :, cols], Ka[b, :, cols], Va[b, :, cols], key_mask)
            merged[b, :, cols] = out
    return merged @ Wo
