"""CORRECT: 1/sqrt(d_head) folded into W_q at call time, tensordot projections, mask built as ~triu(k=1), additive -inf bias, forward via a shared private core.
Functions: __init__, attention_weights, forward (all in this style).

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
        head_size, remainder = divmod(n_embed, n_head) if n_head > 0 else (0, 1)
        if remainder:
            raise ValueError("n_embed is not divisible by n_head")
        self.n_embed, self.n_head, self.head_size = n_embed, n_head, head_size
        self.context_length = context_length
        rng = np.random.default_rng(seed)
        draw = lambda: rng.standard_normal((n_embed, n_embed)) / np.sqrt(n_embed)  # noqa: E731
        self.W_q, self.W_k, self.W_v, self.W_o = draw(), draw(), draw(), draw()
        self.b_o = np.zeros(n_embed)
        self.mask = ~np.triu(np.ones((context_length, context_length), dtype=bool), k=1)

    def _core(self, x):
        """Validate x, then return (weights, heads joined side by side)."""
        x = np.asarray(x, dtype=float)
        if x.ndim != 3:
            raise ValueError(f"need (B, T, C), got ndim={x.ndim}")
        B, T, C = x.shape
        if C != self.n_embed:
            raise ValueError(f"need C={self.n_embed}, got {C}")
        if T > self.context_length:
            raise ValueError(f"T={T} > context_length={self.context_length}")
        H, d = self.n_head, self.head_size
        q = np.tensordot(x, self.W_q * (1.0 / np.sqrt(d)), axes=([2], [0]))
        k = np.tensordot(x, self.W_k, axes=([2], [0]))
        v = np.tensordot(x, self.W_v, axes=([2], [0]))
        q, k, v = (t.reshape(B, T, H, d).swapaxes(1, 2) for t in (q, k, v))
        bias = np.zeros((T, T))
        bias[~self.mask[:T, :T]] = -np.inf
        weights = softmax(np.matmul(q, k.swapaxes(2, 3)) + bias)
        joined = np.matmul(weights, v).swapaxes(1, 2).reshape(B, T, C)
        return weights, joined

    def attention_weights(self, x):
        """The weights of every head, shape (B, n_head, T, T): softmax over the keys of
        (q k^T) / sqrt(d_head), with the future masked. Raise ValueError when x is not 3-D,
        when its last axis is not n_embed, or when T > context_length."""
        return self._core(x)[0]

    def forward(self, x):
        """The layer's output, shape (B, T, C): each head's weights times its values, the
        heads joined side by side in order, then @ W_o + b_o. The same errors as
        attention_weights."""
        joined = self._core(x)[1]
        return np.tensordot(joined, self.W_o, axes=([2], [0])) + self.b_o
