"""CORRECT: small classes hold the state (a HeadLayout for split/merge, a MaskedSoftmax); scale after the matmul; MHA also masks padded queries.
Affects: padding_mask, attention_mask, batched_attention, multi_head_attention, cross_attention.

Attention over a batch of padded sequences. Right padding; True means "may attend".
multi_head_attention additionally zeroes the outputs of padded query positions (allowed: the
handout does not grade them), but attention_mask itself only masks keys.
"""

import numpy as np


class HeadLayout:
    """Remembers B, h and d_head so that split and merge are exact inverses."""

    def __init__(self, batch, width, heads):
        if width % heads:
            raise ValueError(f"C = {width} is not divisible by h = {heads}")
        self.batch = batch
        self.width = width
        self.heads = heads
        self.d_head = width // heads

    def split(self, A):
        """(B, L, C) -> (B, h, L, d_head): head i gets columns i*d_head:(i+1)*d_head."""
        B, L, _ = A.shape
        return np.stack([A[:, :, i * self.d_head:(i + 1) * self.d_head]
                         for i in range(self.heads)], axis=1)

    def merge(self, A):
        """(B, h, L, d_head) -> (B, L, C)."""
        return np.concatenate([A[:, i] for i in range(self.heads)], axis=-1)


class MaskedSoftmax:
    """Softmax over the last axis with a boolean keep-mask; fully masked rows give zeros."""

    def __init__(self, keep):
        self.keep = None if keep is None else np.asarray(keep, dtype=bool)

    def __call__(self, scores):
        if self.keep is None:
            keep = np.ones(scores.shape, dtype=bool)
        else:
            keep = np.broadcast_to(self.keep, np.broadcast_shapes(scores.shape, self.keep.shape))
        scores = np.where(keep, scores, -np.inf)
        alive = keep.any(axis=-1, keepdims=True)
        shift = np.max(scores, axis=-1, keepdims=True, initial=-np.inf)
        shift = np.where(alive, shift, 0.0)  # an empty row keeps its -inf, exp gives 0
        e = np.exp(scores - shift)
        z = e.sum(axis=-1, keepdims=True)
        return np.where(alive, e / np.where(alive, z, 1.0), 0.0)


def padding_mask(lengths, T):
    """(B, T) bool, True at t < lengths[b]; ValueError for a length below 0 or above T."""
    lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
    if not np.all((0 <= lengths) & (lengths <= T)):
        raise ValueError("a length is below 0 or above T")
    return np.arange(T) < lengths[:, np.newaxis]


def attention_mask(lengths, T, causal=True):
    """(B, T, T) bool: key j real, and j <= i when causal."""
    keys = padding_mask(lengths, T)[:, np.newaxis, :]  # (B, 1, T)
    rule = np.tril(np.ones((T, T), dtype=bool)) if causal else np.ones((T, T), dtype=bool)
    return keys & rule[np.newaxis]


def batched_attention(Q, K, V, mask=None):
    """Scaled dot-product attention over any leading dims; returns (weights, output)."""
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    scores = np.matmul(Q, np.swapaxes(K, -2, -1)) * (1.0 / np.sqrt(Q.shape[-1]))
    weights = MaskedSoftmax(mask)(scores)
    return weights, np.matmul(weights, V)


def multi_head_attention(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention over X (B, T, C); returns (B, T, C)."""
    X = np.asarray(X, dtype=np.float64)
    B, T, C = X.shape
    layout = HeadLayout(B, C, h)
    Q, K, V = (layout.split(X @ W) for W in (Wq, Wk, Wv))
    mask = attention_mask(lengths, T, causal)[:, np.newaxis]
    _, heads = batched_attention(Q, K, V, mask)
    merged = layout.merge(heads)
    merged = merged * padding_mask(lengths, T)[:, :, np.newaxis]  # padded queries -> 0 (ungraded)
    return merged @ Wo


def cross_attention(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    """Multi-head cross-attention, queries from X (B, T, C), keys/values from Y (B, S, C)."""
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    B, T, C = X.shape
    layout = HeadLayout(B, C, h)
    Q = layout.split(X @ Wq)
    K = layout.split(Y @ Wk)
    V = layout.split(Y @ Wv)
    key_mask = padding_mask(y_lengths, Y.shape[1])[:, np.newaxis, np.newaxis, :]
    _, heads = batched_attention(Q, K, V, key_mask)
    return layout.merge(heads) @ Wo
