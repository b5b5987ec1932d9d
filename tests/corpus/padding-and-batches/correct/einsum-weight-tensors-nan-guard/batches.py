"""CORRECT: weight matrices viewed as (C, h, d_head) tensors and contracted with einsum; naive -inf softmax whose NaN rows are then replaced by 0.
Affects: padding_mask, attention_mask, batched_attention, multi_head_attention, cross_attention.

Attention over a batch of padded sequences. Right padding; True means "may attend". The
softmax subtracts each row's max; rows whose keys are all masked come out as NaN
(-inf - -inf) and are then set to weights 0, so their output is 0 too.
"""

import numpy as np


def padding_mask(lengths, T):
    """(B, T) bool, True at t < lengths[b]; ValueError for a length below 0 or above T."""
    lengths = np.atleast_1d(np.asarray(lengths))
    too_small = lengths < 0
    too_large = lengths > T
    if too_small.any() or too_large.any():
        raise ValueError(f"invalid lengths for T={T}: {lengths.tolist()}")
    # cumulative trick: position t is real while fewer than lengths[b] positions came before
    return np.cumsum(np.ones((lengths.shape[0], T), dtype=np.int64), axis=1) <= lengths[:, None]


def attention_mask(lengths, T, causal=True):
    """(B, T, T) bool: key j real, and j <= i when causal."""
    real = padding_mask(lengths, T)
    i = np.arange(T).reshape(1, T, 1)
    j = np.arange(T).reshape(1, 1, T)
    mask = np.logical_and(real[:, None, :], (j <= i) if causal else True)
    return np.broadcast_to(mask, (real.shape[0], T, T)).copy()


def batched_attention(Q, K, V, mask=None):
    """Scaled dot-product attention over any leading dims; returns (weights, output)."""
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    scores = np.einsum("...td,...sd->...ts", Q, K) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    with np.errstate(invalid="ignore"):
        shifted = scores - scores.max(axis=-1, keepdims=True)
        e = np.exp(shifted)
        weights = e / e.sum(axis=-1, keepdims=True)
    weights = np.where(np.isnan(weights), 0.0, weights)
    output = np.einsum("...ts,...sv->...tv", weights, V)
    return weights, output


def _heads(W, h):
    C = W.shape[0]
    return np.asarray(W, dtype=np.float64).reshape(C, h, C // h)  # column i*dh+k -> [.., i, k]


def multi_head_attention(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention over X (B, T, C); returns (B, T, C)."""
    X = np.asarray(X, dtype=np.float64)
    B, T, C = X.shape
    Q = np.einsum("btc,chk->bhtk", X, _heads(Wq, h))
    K = np.einsum("btc,chk->bhtk", X, _heads(Wk, h))
    V = np.einsum("btc,chk->bhtk", X, _heads(Wv, h))
    _, heads = batched_attention(Q, K, V, attention_mask(lengths, T, causal)[:, None])
    Wo_heads = np.asarray(Wo, dtype=np.float64).reshape(h, C // h, C)  # row i*dh+k -> [i, k, ..]
    return np.einsum("bhtk,hkc->btc", heads, Wo_heads)


def cross_attention(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    """Multi-head cross-attention, queries from X (B, T, C), keys/values from Y (B, S, C)."""
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    B, T, C = X.shape
    S = Y.shape[1]
    Q = np.einsum("btc,chk->bhtk", X, _heads(Wq, h))
    K = np.einsum("bsc,chk->bhsk", Y, _heads(Wk, h))
    V = np.einsum("bsc,chk->bhsk", Y, _heads(Wv, h))
    key_mask = padding_mask(y_lengths, S)[:, None, None, :]
    _, heads = batched_attention(Q, K, V, key_mask)
    Wo_heads = np.asarray(Wo, dtype=np.float64).reshape(h, C // h, C)
    return np.einsum("bhtk,hkc->btc", heads, Wo_heads)
