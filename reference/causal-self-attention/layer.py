"""A causal self-attention layer in NumPy, as a transformer block uses it.

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
        ### BEGIN SOLUTION
        if n_embed % n_head != 0:
            raise ValueError(f"n_head = {n_head} does not divide n_embed = {n_embed}")
        self.n_embed, self.n_head, self.context_length = n_embed, n_head, context_length
        rng = np.random.default_rng(seed)
        scale = 1 / np.sqrt(n_embed)
        self.W_q, self.W_k, self.W_v, self.W_o = (
            rng.normal(size=(n_embed, n_embed)) * scale for _ in range(4)
        )
        self.b_o = np.zeros(n_embed)
        self.mask = np.tril(np.ones((context_length, context_length), dtype=bool))
        ### END SOLUTION

    def attention_weights(self, x):
        """The weights of every head, shape (B, n_head, T, T): softmax over the keys of
        (q k^T) / sqrt(d_head), with the future masked. Raise ValueError when x is not 3-D,
        when its last axis is not n_embed, or when T > context_length."""
        ### BEGIN SOLUTION
        if x.ndim != 3 or x.shape[2] != self.n_embed:
            raise ValueError(f"x must be (B, T, {self.n_embed}), not {x.shape}")
        B, T, C = x.shape
        if T > self.context_length:
            raise ValueError(f"T = {T} is longer than context_length = {self.context_length}")
        d_head = C // self.n_head
        q = (x @ self.W_q).reshape(B, T, self.n_head, d_head).transpose(0, 2, 1, 3)
        k = (x @ self.W_k).reshape(B, T, self.n_head, d_head).transpose(0, 2, 1, 3)
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_head)  # (B, n_head, T, T)
        scores = np.where(self.mask[:T, :T], scores, -np.inf)
        return softmax(scores)
        ### END SOLUTION

    def forward(self, x):
        """The layer's output, shape (B, T, C): each head's weights times its values, the
        heads joined side by side in order, then @ W_o + b_o. The same errors as
        attention_weights."""
        ### BEGIN SOLUTION
        weights = self.attention_weights(x)
        B, T, C = x.shape
        v = (x @ self.W_v).reshape(B, T, self.n_head, C // self.n_head).transpose(0, 2, 1, 3)
        heads = weights @ v  # (B, n_head, T, d_head)
        return heads.transpose(0, 2, 1, 3).reshape(B, T, C) @ self.W_o + self.b_o
        ### END SOLUTION
