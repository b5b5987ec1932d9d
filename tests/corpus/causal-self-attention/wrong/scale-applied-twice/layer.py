"""MISTAKE: q is scaled by 1/sqrt(d_head) and the scores are divided by sqrt(d_head) again (overall 1/d_head).
Affects: attention_weights, forward (_head_weights) (otherwise the head-loop-prescaled-q implementation).

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
        if n_head < 1 or n_embed % n_head != 0:
            raise ValueError("head_size = n_embed // n_head must be an integer")
        self.n_embed = n_embed
        self.n_head = n_head
        self.head_size = n_embed // n_head
        self.context_length = context_length
        rng = np.random.default_rng(seed)
        s = n_embed ** -0.5
        self.W_o = s * rng.standard_normal((n_embed, n_embed))
        self.W_v = s * rng.standard_normal((n_embed, n_embed))
        self.W_k = s * rng.standard_normal((n_embed, n_embed))
        self.W_q = s * rng.standard_normal((n_embed, n_embed))
        self.b_o = np.zeros((n_embed,))
        self.mask = np.tri(context_length, context_length, 0, dtype=bool)

    def _check(self, x):
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 3:
            raise ValueError("x must be (B, T, C)")
        if x.shape[-1] != self.n_embed:
            raise ValueError("last axis of x must equal n_embed")
        if x.shape[-2] > self.context_length:
            raise ValueError("T > context_length")
        return x

    def _head_weights(self, x, h):
        T = x.shape[1]
        cols = slice(h * self.head_size, (h + 1) * self.head_size)
        q = (x @ self.W_q[:, cols]) / np.sqrt(self.head_size)
        k = x @ self.W_k[:, cols]
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(self.head_size)
        scores = np.where(self.mask[:T, :T], scores, -1e9)
        return softmax(scores)

    def attention_weights(self, x):
        """The weights of every head, shape (B, n_head, T, T): softmax over the keys of
        (q k^T) / sqrt(d_head), with the future masked. Raise ValueError when x is not 3-D,
        when its last axis is not n_embed, or when T > context_length."""
        x = self._check(x)
        return np.stack([self._head_weights(x, h) for h in range(self.n_head)], axis=1)

    def forward(self, x):
        """The layer's output, shape (B, T, C): each head's weights times its values, the
        heads joined side by side in order, then @ W_o + b_o. The same errors as
        attention_weights."""
        x = self._check(x)
        outs = []
        for h in range(self.n_head):
            cols = slice(h * self.head_size, (h + 1) * self.head_size)
            v = x @ self.W_v[:, cols]
            outs.append(self._head_weights(x, h) @ v)
        joined = np.concatenate(outs, axis=-1)
        return joined @ self.W_o + self.b_o
