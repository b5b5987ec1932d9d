"""MISTAKE: the length check is T >= context_length, so a sequence of exactly context_length tokens is refused
Affects: attention_weights and forward (_check).

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


class CausalSelfAttention:
    """Multi-head causal self-attention with an output bias."""

    def __init__(self, n_embed, n_head, context_length, seed=0):
        """Raise ValueError unless n_head divides n_embed. Draw W_q, W_k, W_v and W_o, each
        (n_embed, n_embed), from np.random.default_rng(seed), scaled by 1 / sqrt(n_embed);
        b_o starts at zeros, shape (n_embed,). Build ``mask``, the (context_length,
        context_length) lower-triangular boolean buffer, once."""
        if n_head <= 0 or n_embed % n_head != 0:
            raise ValueError(f"n_head={n_head} does not divide n_embed={n_embed}")
        self.n_embed = n_embed
        self.n_head = n_head
        self.d_head = n_embed // n_head
        self.context_length = context_length
        rng = np.random.default_rng(seed)
        scale = 1.0 / np.sqrt(n_embed)
        self.W_q = rng.standard_normal((n_embed, n_embed)) * scale
        self.W_k = rng.standard_normal((n_embed, n_embed)) * scale
        self.W_v = rng.standard_normal((n_embed, n_embed)) * scale
        self.W_o = rng.standard_normal((n_embed, n_embed)) * scale
        self.b_o = np.zeros(n_embed)
        self.mask = np.tril(np.ones((context_length, context_length), dtype=bool))

    def _check(self, x):
        x = np.asarray(x)
        if x.ndim != 3:
            raise ValueError(f"x must be 3-D (B, T, C), got shape {x.shape}")
        if x.shape[-1] != self.n_embed:
            raise ValueError(f"last axis must be n_embed={self.n_embed}, got {x.shape[-1]}")
        if x.shape[1] >= self.context_length:
            raise ValueError(f"T={x.shape[1]} exceeds context_length={self.context_length}")
        return x

    def _split(self, a):
        """(B, T, C) -> (B, n_head, T, d_head)."""
        B, T, _ = a.shape
        return a.reshape(B, T, self.n_head, self.d_head).transpose(0, 2, 1, 3)

    def _weights(self, x):
        T = x.shape[1]
        q = self._split(x @ self.W_q)
        k = self._split(x @ self.W_k)
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(self.d_head)
        mask = self.mask[:T, :T]
        scores = np.where(mask, scores, -np.inf)
        return softmax(scores)

    def attention_weights(self, x):
        """The weights of every head, shape (B, n_head, T, T): softmax over the keys of
        (q k^T) / sqrt(d_head), with the future masked. Raise ValueError when x is not 3-D,
        when its last axis is not n_embed, or when T > context_length."""
        x = self._check(x)
        return self._weights(x)

    def forward(self, x):
        """The layer's output, shape (B, T, C): each head's weights times its values, the
        heads joined side by side in order, then @ W_o + b_o. The same errors as
        attention_weights."""
        x = self._check(x)
        B, T, C = x.shape
        weights = self._weights(x)
        v = self._split(x @ self.W_v)
        heads = weights @ v
        joined = heads.transpose(0, 2, 1, 3).reshape(B, T, C)
        return joined @ self.W_o + self.b_o
