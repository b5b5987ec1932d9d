"""MISTAKE: the heads are joined with y.reshape(B, T, C) straight from (B, nh, T, hs), without swapaxes(1, 2) first.
Affects: forward.

A causal self-attention layer in NumPy, as a transformer block uses it (x @ W layout,
head i owns columns i*d_head:(i+1)*d_head, mask True meaning "may attend").
"""

import math

import numpy as np


def softmax(scores):
    """A stable softmax over the last axis (given)."""
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def masked_fill(t, cond, value):
    """torch.Tensor.masked_fill: value where cond is True, t elsewhere (cond broadcasts)."""
    return np.where(cond, value, t)


def F_softmax(t, dim=-1):
    """torch.nn.functional.softmax(t, dim=dim), stable."""
    t = t - t.max(axis=dim, keepdims=True)
    e = np.exp(t)
    return e / e.sum(axis=dim, keepdims=True)


class CausalSelfAttention:
    """Multi-head causal self-attention with an output bias."""

    def __init__(self, n_embed, n_head, context_length, seed=0):
        """Raise ValueError unless n_head divides n_embed; weights from default_rng(seed)
        scaled by 1/sqrt(n_embed); b_o zeros; the mask built once."""
        if n_embed % n_head != 0:  # assert config.n_embd % config.n_head == 0
            raise ValueError("n_embd must be divisible by n_head")
        self.n_embd = n_embed
        self.n_head = n_head
        self.block_size = context_length
        rng = np.random.default_rng(seed)
        self.W_q = rng.standard_normal((n_embed, n_embed)) / math.sqrt(n_embed)
        self.W_k = rng.standard_normal((n_embed, n_embed)) / math.sqrt(n_embed)
        self.W_v = rng.standard_normal((n_embed, n_embed)) / math.sqrt(n_embed)
        self.W_o = rng.standard_normal((n_embed, n_embed)) / math.sqrt(n_embed)
        self.b_o = np.zeros(n_embed)
        # self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))
        self.mask = np.tril(np.ones((context_length, context_length))).astype(bool)

    def _check(self, x):
        x = np.asarray(x, dtype=float)
        if x.ndim != 3:
            raise ValueError("x must be (B, T, C)")
        B, T, C = x.shape
        if C != self.n_embd:
            raise ValueError("C must equal n_embd")
        if T > self.block_size:
            raise ValueError("Cannot forward sequence longer than block size")
        return x

    def _attn(self, x):
        B, T, C = x.shape  # batch size, sequence length, embedding dimensionality (n_embd)
        hs = C // self.n_head
        # calculate query, key, values for all heads in batch and move head forward to be the batch dim
        q = x @ self.W_q
        k = x @ self.W_k
        v = x @ self.W_v
        k = k.reshape(B, T, self.n_head, hs).swapaxes(1, 2)  # (B, nh, T, hs)
        q = q.reshape(B, T, self.n_head, hs).swapaxes(1, 2)  # (B, nh, T, hs)
        v = v.reshape(B, T, self.n_head, hs).swapaxes(1, 2)  # (B, nh, T, hs)
        # causal self-attention; Self-attend: (B, nh, T, hs) x (B, nh, hs, T) -> (B, nh, T, T)
        att = (q @ k.swapaxes(-2, -1)) * (1.0 / math.sqrt(k.shape[-1]))
        att = masked_fill(att, self.mask[:T, :T] == 0, float("-inf"))
        att = F_softmax(att, dim=-1)
        return att, v

    def attention_weights(self, x):
        """(B, n_head, T, T) weights; ValueError on bad x."""
        x = self._check(x)
        att, _ = self._attn(x)
        return att

    def forward(self, x):
        """(B, T, C) output: heads joined in order, then @ W_o + b_o; ValueError on bad x."""
        x = self._check(x)
        B, T, C = x.shape
        att, v = self._attn(x)
        y = att @ v  # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
        y = y.reshape(B, T, C)  # re-assemble all head outputs side by side
        # output projection
        y = y @ self.W_o + self.b_o
        return y
