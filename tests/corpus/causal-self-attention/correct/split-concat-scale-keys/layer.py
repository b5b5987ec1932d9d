"""CORRECT: np.split / np.concatenate per head, scale folded into the keys, own masked softmax without -inf
Affects: __init__, attention_weights, forward (all).

A causal self-attention layer built from per-head lists: ``np.split`` into heads,
``np.concatenate`` to join them, the 1/sqrt(d_head) scale folded into the keys, and its own
masked softmax (max over the allowed keys, exp, zero the blocked ones, normalise).
Weights in ``x @ W`` layout; ``mask`` True = "may attend".
"""

import numpy as np


def softmax(scores):
    """A stable softmax over the last axis (given)."""
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def masked_softmax(scores, allowed):
    """Stable softmax over the last axis restricted to ``allowed`` (no -inf involved)."""
    row_max = np.max(np.where(allowed, scores, np.finfo(scores.dtype).min), axis=-1, keepdims=True)
    e = np.exp(np.where(allowed, scores - row_max, 0.0)) * allowed
    return e / e.sum(axis=-1, keepdims=True)


class CausalSelfAttention:
    """Multi-head causal self-attention with an output bias."""

    def __init__(self, n_embed, n_head, context_length, seed=0):
        head_size, rest = divmod(n_embed, n_head) if n_head else (0, 1)
        if rest:
            raise ValueError(f"head_size = {n_embed}/{n_head} is not an integer")
        self.n_embed, self.n_head, self.head_size = n_embed, n_head, head_size
        self.context_length = context_length
        rng = np.random.default_rng(seed)
        self.W_q, self.W_k, self.W_v, self.W_o = [
            rng.standard_normal(size=(n_embed, n_embed)) / np.sqrt(n_embed) for _ in range(4)
        ]
        self.b_o = np.zeros(n_embed)
        self.mask = np.tril(np.full((context_length, context_length), True))

    def _check(self, x):
        x = np.asarray(x)
        if x.ndim != 3:
            raise ValueError("x must be 3-D")
        if x.shape[-1] != self.n_embed:
            raise ValueError("x's channels must equal n_embed")
        if x.shape[1] > self.context_length:
            raise ValueError("sequence longer than the mask")
        return x

    def _per_head(self, x):
        T = x.shape[1]
        allowed = np.asarray(self.mask, dtype=bool)[:T, :T]
        qs = np.split(x @ self.W_q, self.n_head, axis=-1)
        ks = np.split((x @ self.W_k) / np.sqrt(self.head_size), self.n_head, axis=-1)
        vs = np.split(x @ self.W_v, self.n_head, axis=-1)
        weights = [masked_softmax(q @ np.swapaxes(k, 1, 2), allowed) for q, k in zip(qs, ks)]
        return weights, vs

    def attention_weights(self, x):
        weights, _ = self._per_head(self._check(x))
        return np.stack(weights, axis=1)

    def forward(self, x):
        weights, vs = self._per_head(self._check(x))
        heads = [w @ v for w, v in zip(weights, vs)]
        return np.concatenate(heads, axis=-1) @ self.W_o + self.b_o
