"""MISTAKE: the mask is the upper triangle (np.triu) instead of the lower one: tokens see the future, not the past.
Affects: __init__ (otherwise the einsum-float32 implementation).

A causal self-attention layer in NumPy, as a transformer block uses it.

Conventions used throughout:

- x is a batch of sequences, shape (B, T, C) with C == n_embed.
- Weight matrices are in ``x @ W`` layout, (n_embed, n_embed); head i owns the contiguous
  columns ``i * d_head : (i + 1) * d_head`` with d_head = n_embed // n_head.
- ``mask`` is boolean, True meaning "may attend": the lower triangle, built once for the
  longest sequence the layer accepts, and sliced to (T, T) for a shorter one.
"""

import numpy as np


def softmax(scores):
    """A stable softmax over the last axis (given)."""
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


NEG = np.float32(-1e9)


class CausalSelfAttention:
    """Multi-head causal self-attention with an output bias."""

    def __init__(self, n_embed, n_head, context_length, seed=0):
        """Raise ValueError unless n_head divides n_embed. Draw W_q, W_k, W_v and W_o, each
        (n_embed, n_embed), from np.random.default_rng(seed), scaled by 1 / sqrt(n_embed);
        b_o starts at zeros, shape (n_embed,). Build ``mask``, the (context_length,
        context_length) lower-triangular boolean buffer, once."""
        if n_head <= 0 or n_embed % n_head != 0:
            raise ValueError("n_head must divide n_embed")
        self.n_embed, self.n_head, self.context_length = n_embed, n_head, context_length
        self.d_head = n_embed // n_head
        rng = np.random.default_rng(seed)
        # one draw, four matrices; the order is ours: q, k, v, o
        W = (rng.standard_normal((4, n_embed, n_embed)) / np.sqrt(n_embed)).astype(np.float32)
        self.W_q, self.W_k, self.W_v, self.W_o = W[0].copy(), W[1].copy(), W[2].copy(), W[3].copy()
        self.b_o = np.zeros(n_embed, dtype=np.float32)
        self.mask = np.triu(np.ones((context_length, context_length), dtype=bool))

    def _check(self, x):
        x = np.asarray(x)
        if x.ndim != 3:
            raise ValueError("expected x of shape (B, T, C)")
        B, T, C = x.shape
        if C != self.n_embed:
            raise ValueError("wrong number of channels")
        if T > self.context_length:
            raise ValueError("T exceeds context_length")
        return x.astype(np.float32)

    def _heads(self, x, W):
        """x (B, T, C) @ W (C, C) -> (B, n_head, T, d_head)."""
        B, T, _ = x.shape
        W = np.asarray(W, dtype=np.float32).reshape(self.n_embed, self.n_head, self.d_head)
        return np.einsum("btc,chd->bhtd", x, W)

    def _attn(self, x):
        T = x.shape[1]
        q = self._heads(x, self.W_q)
        k = self._heads(x, self.W_k)
        scores = np.einsum("bhid,bhjd->bhij", q, k) * np.float32(1.0 / np.sqrt(self.d_head))
        bias = np.where(self.mask[:T, :T], np.float32(0.0), NEG)
        return softmax(scores + bias)

    def attention_weights(self, x):
        """The weights of every head, shape (B, n_head, T, T): softmax over the keys of
        (q k^T) / sqrt(d_head), with the future masked. Raise ValueError when x is not 3-D,
        when its last axis is not n_embed, or when T > context_length."""
        return self._attn(self._check(x))

    def forward(self, x):
        """The layer's output, shape (B, T, C): each head's weights times its values, the
        heads joined side by side in order, then @ W_o + b_o. The same errors as
        attention_weights."""
        x = self._check(x)
        w = self._attn(x)
        v = self._heads(x, self.W_v)
        heads = np.einsum("bhij,bhjd->bhid", w, v)
        W_o = np.asarray(self.W_o, dtype=np.float32).reshape(self.n_head, self.d_head, self.n_embed)
        # joining heads side by side then @ W_o == summing each head through its rows of W_o
        out = np.einsum("bhtd,hdc->btc", heads, W_o)
        return out + np.asarray(self.b_o, dtype=np.float32)
