"""CORRECT: lecture code ported to NumPy -- "Attention Is All You Need" pseudocode with einsum, np.where and -1e9.
Affects: causal_mask, masked_attention, split_heads, merge_heads, multi_head_attention.

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V
    MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O,  head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

The masked scores are set to -1e9 (as in the Annotated Transformer); the weights are then
set to exactly 0 where the mask is False, and a row with no allowed key is set to 0.
"""

import numpy as np

NEG_INF = -1e9


def softmax(x, axis=-1):
    x = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)


def causal_mask(n):
    """subsequent_mask: True where j <= i."""
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    return j <= i


def masked_attention(Q, K, V, mask=None):
    """Scaled dot-product attention; returns (p_attn, p_attn V)."""
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    d_k = Q.shape[-1]
    scores = np.einsum("qd,kd->qk", Q, K) / np.sqrt(d_k)
    if mask is not None:
        mask = np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape)
        scores = np.where(mask, scores, NEG_INF)
    p_attn = softmax(scores, axis=-1)
    if mask is not None:
        p_attn = np.where(mask, p_attn, 0.0)
        p_attn = np.where(mask.any(axis=-1, keepdims=True), p_attn, 0.0)
    output = np.einsum("qk,kv->qv", p_attn, V)
    return p_attn, output


def split_heads(X, h):
    """[X_1, ..., X_h]: head i is the slice of width d_k = d_model / h."""
    X = np.asarray(X)
    d_model = X.shape[-1]
    if h <= 0 or d_model % h != 0:
        raise ValueError("d_model must be a multiple of h")
    d_k = d_model // h
    return np.stack([X[:, i * d_k:(i + 1) * d_k] for i in range(h)])


def merge_heads(Xh):
    """Concat(head_1, ..., head_h) along the feature axis."""
    Xh = np.asarray(Xh)
    return np.concatenate([Xh[i] for i in range(Xh.shape[0])], axis=-1)


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, causal=True):
    """MultiHead(X, X, X) with the subsequent mask when causal."""
    X = np.asarray(X)
    n = X.shape[0]
    Q = np.einsum("nd,de->ne", X, Wq)
    K = np.einsum("nd,de->ne", X, Wk)
    V = np.einsum("nd,de->ne", X, Wv)
    Qh, Kh, Vh = split_heads(Q, h), split_heads(K, h), split_heads(V, h)
    mask = causal_mask(n) if causal else None
    heads = [masked_attention(Qh[i], Kh[i], Vh[i], mask)[1] for i in range(h)]
    concat = merge_heads(np.stack(heads))
    return np.einsum("nd,de->ne", concat, Wo)
