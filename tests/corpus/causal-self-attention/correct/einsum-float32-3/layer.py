"""CORRECT: np.einsum with head-reshaped weights, float32 throughout, -1e9 mask via np.where
Affects: __init__, attention_weights, forward (all).

A causal self-attention layer in NumPy using ``np.einsum`` and float32 throughout (weights,
activations and the returned arrays). Weights in ``x @ W`` layout; head i owns columns
``i * d_head : (i + 1) * d_head``; ``mask`` True means "may attend".
"""

import numpy as np


def softmax(scores):
    """A stable softmax over the last axis (given)."""
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class CausalSelfAttention:
    """Multi-head causal self-attention with an output bias."""

    DTYPE = np.float32

    def __init__(self, n_embed, n_head, context_length, seed=0):
        if n_head < 1 or n_embed % n_head != 0:
            raise ValueError(f"{n_embed} channels cannot be split into {n_head} heads")
        self.n_embed, self.n_head, self.context_length = n_embed, n_head, context_length
        self.d_head = n_embed // n_head
        rng = np.random.default_rng(seed)
        draws = rng.standard_normal((4, n_embed, n_embed), dtype=self.DTYPE)
        draws /= self.DTYPE(np.sqrt(n_embed))
        self.W_q, self.W_k, self.W_v, self.W_o = (draws[i].copy() for i in range(4))
        self.b_o = np.zeros(n_embed, dtype=self.DTYPE)
        self.mask = np.tri(context_length, dtype=bool)

    def _check(self, x):
        x = np.asarray(x)
        if x.ndim != 3 or x.shape[2] != self.n_embed or x.shape[1] > self.context_length:
            raise ValueError(f"bad input shape {x.shape}")
        return x.astype(self.DTYPE)

    def _heads(self, x, W):
        B, T, _ = x.shape
        W = np.asarray(W, dtype=self.DTYPE).reshape(self.n_embed, self.n_head, self.d_head)
        return np.einsum("btc,chd->bhtd", x, W)

    def _weights(self, x):
        T = x.shape[1]
        q = self._heads(x, self.W_q)
        k = self._heads(x, self.W_k)
        scores = np.einsum("bhtd,bhsd->bhts", q, k) * self.DTYPE(1.0 / np.sqrt(self.d_head))
        scores = np.where(np.asarray(self.mask)[:T, :T], scores, self.DTYPE(-1e9))
        return softmax(scores)

    def attention_weights(self, x):
        return self._weights(self._check(x))

    def forward(self, x):
        x = self._check(x)
        w = self._weights(x)
        v = self._heads(x, self.W_v)
        heads = np.einsum("bhts,bhsd->bhtd", w, v)
        W_o = np.asarray(self.W_o, dtype=self.DTYPE).reshape(self.n_head, self.d_head, self.n_embed)
        return np.einsum("bhtd,hdc->btc", heads, W_o) + np.asarray(self.b_o, dtype=self.DTYPE)
