"""CORRECT: explicit Python loops (over lengths, over flattened leading dims, over rows), an additive -1e9 bias instead of -inf with an explicit any()-guard for empty rows, np.einsum for the per-head projections; the padded queries are masked too in multi_head_attention (allowed).
Affects: padding_mask, attention_mask, batched_attention, multi_head_attention, cross_attention (all, alternative style).

Attention over a batch of padded sequences, in NumPy.
"""

import math

import numpy as np

_NEG = -1e9


def padding_mask(lengths, T):
    """Return the (B, T) padding mask: entry [b, t] is True when t < lengths[b].

    Raise ValueError when a length is below 0 or above T.
    """
    lengths = [int(n) for n in np.asarray(lengths).reshape(-1)]
    mask = np.zeros((len(lengths), T), dtype=bool)
    for b, n in enumerate(lengths):
        if n < 0 or n > T:
            raise ValueError(f"length {n} of sequence {b} is outside 0 .. {T}")
        mask[b, :n] = True
    return mask


def attention_mask(lengths, T, causal=True):
    """Return the (B, T, T) mask: key j real, and j <= i when causal."""
    real = padding_mask(lengths, T)
    B = real.shape[0]
    mask = np.zeros((B, T, T), dtype=bool)
    for b in range(B):
        for i in range(T):
            allowed = real[b].copy()
            if causal:
                allowed[i + 1:] = False
            mask[b, i] = allowed
    return mask


def batched_attention(Q, K, V, mask=None):
    """Scaled dot-product attention over any number of leading dimensions.

    Returns (weights, output) with shapes (..., T, S) and (..., T, d_v).
    """
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    V = np.asarray(V, dtype=float)
    T, d = Q.shape[-2:]
    S, d_v = V.shape[-2:]
    if mask is None:
        mask = np.ones((T, S), dtype=bool)
    mask = np.asarray(mask, dtype=bool)
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2], mask.shape[:-2])
    Qf = np.broadcast_to(Q, lead + (T, d)).reshape(-1, T, d)
    Kf = np.broadcast_to(K, lead + (S, d)).reshape(-1, S, d)
    Vf = np.broadcast_to(V, lead + (S, d_v)).reshape(-1, S, d_v)
    Mf = np.broadcast_to(mask, lead + (T, S)).reshape(-1, T, S)
    N = Qf.shape[0]
    weights = np.zeros((N, T, S))
    output = np.zeros((N, T, d_v))
    scale = 1.0 / math.sqrt(d)
    for n in range(N):
        bias = np.where(Mf[n], 0.0, _NEG)
        for i in range(T):
            if not Mf[n, i].any():
                continue  # nothing to attend to: weights 0, output 0
            row = Kf[n] @ Qf[n, i] * scale + bias[i]
            e = np.exp(row - row[Mf[n, i]].max())  # max over the allowed keys
            e[~Mf[n, i]] = 0.0  # exactly 0, whatever the bias did
            w = e / e.sum()
            weights[n, i] = w
            output[n, i] = w @ Vf[n]
    return weights.reshape(lead + (T, S)), output.reshape(lead + (T, d_v))


def _heads(M, W, h):
    """M (L, C) @ W (C, C) split into heads: (h, L, C // h) via einsum."""
    C = W.shape[0]
    return np.einsum("lc,chd->hld", M, W.reshape(C, h, C // h))


def multi_head_attention(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention over a padded batch X of shape (B, T, C)."""
    X = np.asarray(X, dtype=float)
    B, T, C = X.shape
    mask = attention_mask(lengths, T, causal)
    real = padding_mask(lengths, T)
    out = np.zeros((B, T, C))
    for b in range(B):
        q, k, v = (_heads(X[b], W, h) for W in (Wq, Wk, Wv))
        m = mask[b] & real[b][:, None]  # also drop the padded query rows (allowed)
        _, o = batched_attention(q, k, v, m[None])  # (h, T, d)
        out[b] = o.transpose(1, 0, 2).reshape(T, C) @ Wo
    return out


def cross_attention(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    """Multi-head cross-attention: queries from X (B, T, C), keys and values from Y (B, S, C)."""
    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float)
    B, T, C = X.shape
    S = Y.shape[1]
    real = padding_mask(y_lengths, S)
    out = np.zeros((B, T, C))
    for b in range(B):
        q = _heads(X[b], Wq, h)
        k = _heads(Y[b], Wk, h)
        v = _heads(Y[b], Wv, h)
        _, o = batched_attention(q, k, v, real[b][None, None, :])
        out[b] = o.transpose(1, 0, 2).reshape(T, C) @ Wo
    return out
