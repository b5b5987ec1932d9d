"""MISTAKE: the softmax is taken over all keys and the future is zeroed afterwards (weights * mask), without renormalising; rows no longer sum to 1.
Affects: attention_weights (and so forward).

Everything else in this file is a correct, vectorised implementation.
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
        self.W_q = rng.normal(size=(n_embed, n_embed)) * scale
        self.W_k = rng.normal(size=(n_embed, n_embed)) * scale
        self.W_v = rng.normal(size=(n_embed, n_embed)) * scale
        self.W_o = rng.normal(size=(n_embed, n_embed)) * scale
        self.b_o = np.zeros(n_embed)
        self.mask = np.tril(np.ones((context_length, context_length), dtype=bool))

    def _check(self, x):
        x = np.asarray(x, dtype=float)
        if x.ndim != 3:
            raise ValueError(f"x must be (B, T, C), got shape {x.shape}")
        if x.shape[-1] != self.n_embed:
            raise ValueError(f"last axis must be n_embed={self.n_embed}, got {x.shape[-1]}")
        if x.shape[1] > self.context_length:
            raise ValueError(f"T={x.shape[1]} exceeds context_length={self.context_length}")
        return x

    def _split(self, t):
        """(B, T, C) -> (B, n_head, T, d_head)."""
        B, T, _ = t.shape
        return t.reshape(B, T, self.n_head, self.d_head).transpose(0, 2, 1, 3)

    def _join(self, heads):
        """(B, n_head, T, d_head) -> (B, T, C), head i in columns i*d:(i+1)*d."""
        B, H, T, d = heads.shape
        return heads.transpose(0, 2, 1, 3).reshape(B, T, H * d)

    def _project(self, x):
        return x @ self.W_q, x @ self.W_k, x @ self.W_v

    def _weights_and_values(self, x):
        x = self._check(x)
        T = x.shape[1]
        q, k, v = (self._split(t) for t in self._project(x))
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(self.d_head)
        mask = self.mask[:T, :T]
        weights = softmax(scores) * mask
        return weights, v

    def attention_weights(self, x):
        """The weights of every head, shape (B, n_head, T, T): softmax over the keys of
        (q k^T) / sqrt(d_head), with the future masked. Raise ValueError when x is not 3-D,
        when its last axis is not n_embed, or when T > context_length."""
        weights, _ = self._weights_and_values(x)
        return weights

    def forward(self, x):
        """The layer's output, shape (B, T, C): each head's weights times its values, the
        heads joined side by side in order, then @ W_o + b_o. The same errors as
        attention_weights."""
        weights, v = self._weights_and_values(x)
        joined = self._join(weights @ v)
        return joined @ self.W_o + self.b_o
