"""CORRECT: np.einsum everywhere, scale Q before the product, additive -1e9 bias, guard on the mask.
Affects: padding_mask, attention_mask, batched_attention, multi_head_attention, cross_attention.

Attention over a batch of padded sequences. Right padding; True means "may attend". Masked
scores get a large negative bias instead of -inf; rows whose mask allows no key are set to
weights 0 explicitly, so they do not become a uniform average.
"""

import numpy as np

_NEG = -1e9


def padding_mask(lengths, T):
    """(B, T) bool, True at t < lengths[b]; ValueError for a length below 0 or above T."""
    lengths = np.array(lengths, dtype=np.int64, ndmin=1)
    bad = (lengths < 0) | (lengths > T)
    if bad.any():
        raise ValueError(f"lengths must be between 0 and T={T}: {lengths[bad].tolist()}")
    positions = np.arange(T)
    return np.greater.outer(lengths, positions)  # [b, t] = lengths[b] > t


def attention_mask(lengths, T, causal=True):
    """(B, T, T) bool: key j real, and j <= i when causal."""
    real = padding_mask(lengths, T)
    allow = np.einsum("bj,i->bij", real.astype(np.int8), np.ones(T, dtype=np.int8)).astype(bool)
    if causal:
        i = np.arange(T)[:, None]
        j = np.arange(T)[None, :]
        allow = allow & (j <= i)
    return allow


def batched_attention(Q, K, V, mask=None):
    """Scaled dot-product attention over any leading dims; returns (weights, output)."""
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    d = Q.shape[-1]
    scores = np.einsum("...td,...sd->...ts", Q / np.sqrt(d), K)
    if mask is None:
        allowed = np.ones(scores.shape, dtype=bool)
    else:
        allowed = np.broadcast_to(np.asarray(mask, dtype=bool),
                                  np.broadcast_shapes(scores.shape, np.shape(mask)))
        scores = np.broadcast_to(scores, allowed.shape)
    scores = scores + np.where(allowed, 0.0, _NEG)
    scores = scores - scores.max(axis=-1, keepdims=True)
    e = np.exp(scores) * allowed  # exact zeros on masked keys
    z = e.sum(axis=-1, keepdims=True)
    has_key = allowed.any(axis=-1, keepdims=True)
    weights = np.where(has_key, e / np.where(z > 0, z, 1.0), 0.0)
    output = np.einsum("...ts,...sv->...tv", weights, V)
    return weights, output


def multi_head_attention(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention over X (B, T, C); returns (B, T, C)."""
    X = np.asarray(X, dtype=np.float64)
    B, T, C = X.shape
    dh = C // h
    Q = np.einsum("btc,ce->bte", X, Wq).reshape(B, T, h, dh)
    K = np.einsum("btc,ce->bte", X, Wk).reshape(B, T, h, dh)
    V = np.einsum("btc,ce->bte", X, Wv).reshape(B, T, h, dh)
    Q, K, V = (np.einsum("bthd->bhtd", A) for A in (Q, K, V))
    mask = attention_mask(lengths, T, causal)[:, None]
    _, out = batched_attention(Q, K, V, mask)
    merged = np.einsum("bhtd->bthd", out).reshape(B, T, C)
    return np.einsum("btc,ce->bte", merged, Wo)


def cross_attention(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    """Multi-head cross-attention, queries from X (B, T, C), keys/values from Y (B, S, C)."""
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    B, T, C = X.shape
    S = Y.shape[1]
    dh = C // h
    Q = np.einsum("bthd->bhtd", np.einsum("btc,ce->bte", X, Wq).reshape(B, T, h, dh))
    K = np.einsum("bshd->bhsd", np.einsum("bsc,ce->bse", Y, Wk).reshape(B, S, h, dh))
    V = np.einsum("bshd->bhsd", np.einsum("bsc,ce->bse", Y, Wv).reshape(B, S, h, dh))
    key_mask = padding_mask(y_lengths, S)[:, None, None, :]
    _, out = batched_attention(Q, K, V, key_mask)
    merged = np.einsum("bhtd->bthd", out).reshape(B, T, C)
    return np.einsum("btc,ce->bte", merged, Wo)
