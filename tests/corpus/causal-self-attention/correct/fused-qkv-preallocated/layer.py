"""CORRECT: fused QKV matmul rebuilt each call, q scaled before q k^T, masked-exp softmax, preallocated head buffer.
Affects: __init__, attention_weights, forward (whole module).

The (C, 3C) fused matrix is concatenated from the current W_q, W_k, W_v on every call, so
weights assigned by a test are always used. The softmax takes the max over allowed keys
only, exponentiates, and zeroes the masked entries with the mask itself.
"""

import numpy as np


def softmax(scores):
    """A stable softmax over the last axis (given)."""
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _masked_softmax(scores, allowed):
    """Stable softmax over the last axis restricted to ``allowed`` (broadcast to scores)."""
    allowed = np.broadcast_to(allowed, scores.shape)
    row_max = np.max(scores, axis=-1, keepdims=True, where=allowed, initial=-np.inf)
    shifted = np.where(allowed, scores - row_max, -np.inf)
    e = np.exp(shifted)
    return e / np.sum(e, axis=-1, keepdims=True)


class CausalSelfAttention:
    """Multi-head causal self-attention with an output bias."""

    def __init__(self, n_embed, n_head, context_length, seed=0):
        """Raise ValueError unless n_head divides n_embed. Draw W_q, W_k, W_v and W_o, each
        (n_embed, n_embed), from np.random.default_rng(seed), scaled by 1 / sqrt(n_embed);
        b_o starts at zeros, shape (n_embed,). Build ``mask``, the (context_length,
        context_length) lower-triangular boolean buffer, once."""
        if n_head < 1 or n_embed % n_head:
            raise ValueError(f"cannot split n_embed={n_embed} into {n_head} heads")
        self._C = n_embed
        self._H = n_head
        self._L = context_length
        rng = np.random.default_rng(seed)
        s = n_embed ** -0.5
        # draw order: output first, then v, k, q (the order is ours to pick)
        self.W_o = rng.normal(0.0, s, size=(n_embed, n_embed))
        self.W_v = rng.normal(0.0, s, size=(n_embed, n_embed))
        self.W_k = rng.normal(0.0, s, size=(n_embed, n_embed))
        self.W_q = rng.normal(0.0, s, size=(n_embed, n_embed))
        self.b_o = np.zeros((n_embed,), dtype=np.float64)
        self.mask = np.tril(np.ones((context_length, context_length))).astype(bool)

    def _checked(self, x):
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 3:
            raise ValueError("expected x of shape (B, T, C)")
        B, T, C = x.shape
        if C != self._C:
            raise ValueError(f"expected C = {self._C}, got {C}")
        if T > self._L:
            raise ValueError(f"T = {T} > context_length = {self._L}")
        return x

    def _qkv(self, x):
        B, T, C = x.shape
        H, d = self._H, C // self._H
        W = np.concatenate([self.W_q, self.W_k, self.W_v], axis=1)  # (C, 3C), fresh each call
        qkv = (x.reshape(B * T, C) @ W).reshape(B, T, 3, H, d)
        qkv = qkv.transpose(2, 0, 3, 1, 4)  # (3, B, H, T, d)
        return qkv[0], qkv[1], qkv[2]

    def _weights(self, x):
        B, T, C = x.shape
        q, k, v = self._qkv(x)
        d = q.shape[-1]
        scores = (q / np.sqrt(d)) @ np.swapaxes(k, -1, -2)  # (B, H, T, T)
        allowed = np.asarray(self.mask[:T, :T], dtype=bool)
        return _masked_softmax(scores, allowed), v

    def attention_weights(self, x):
        """The weights of every head, shape (B, n_head, T, T): softmax over the keys of
        (q k^T) / sqrt(d_head), with the future masked. Raise ValueError when x is not 3-D,
        when its last axis is not n_embed, or when T > context_length."""
        x = self._checked(x)
        return self._weights(x)[0]

    def forward(self, x):
        """The layer's output, shape (B, T, C): each head's weights times its values, the
        heads joined side by side in order, then @ W_o + b_o. The same errors as
        attention_weights."""
        x = self._checked(x)
        B, T, C = x.shape
        weights, v = self._weights(x)
        d = C // self._H
        joined = np.empty((B, T, C))
        for h in range(self._H):
            np.matmul(weights[:, h], v[:, h], out=joined[:, :, h * d:(h + 1) * d])
        out = joined @ self.W_o
        out += self.b_o
        return out
