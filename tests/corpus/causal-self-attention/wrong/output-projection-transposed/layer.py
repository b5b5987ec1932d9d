"""MISTAKE: the output projection is joined @ W_o.T instead of joined @ W_o.
Affects: forward (otherwise the loops-python implementation).

A causal self-attention layer in NumPy, as a transformer block uses it.

Conventions used throughout:

- x is a batch of sequences, shape (B, T, C) with C == n_embed.
- Weight matrices are in ``x @ W`` layout, (n_embed, n_embed); head i owns the contiguous
  columns ``i * d_head : (i + 1) * d_head`` with d_head = n_embed // n_head.
- ``mask`` is boolean, True meaning "may attend": the lower triangle, built once for the
  longest sequence the layer accepts, and sliced to (T, T) for a shorter one.
"""

import math

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
        if n_head < 1 or n_embed % n_head:
            raise ValueError("n_embed must be a multiple of n_head")
        self.n_embed = n_embed
        self.n_head = n_head
        self.head_size = n_embed // n_head
        self.context_length = context_length
        rng = np.random.default_rng(seed)
        std = 1 / math.sqrt(n_embed)
        self.W_q = rng.normal(0.0, std, size=(n_embed, n_embed))
        self.W_k = rng.normal(0.0, std, size=(n_embed, n_embed))
        self.W_v = rng.normal(0.0, std, size=(n_embed, n_embed))
        self.W_o = rng.normal(0.0, std, size=(n_embed, n_embed))
        self.b_o = np.zeros(n_embed)
        mask = np.zeros((context_length, context_length), dtype=bool)
        for i in range(context_length):
            for j in range(i + 1):
                mask[i, j] = True
        self.mask = mask

    def _validate(self, x):
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 3:
            raise ValueError("x must have shape (B, T, C)")
        if x.shape[2] != self.n_embed:
            raise ValueError("x's last axis must be n_embed")
        if x.shape[1] > self.context_length:
            raise ValueError("sequence longer than context_length")
        return x

    def _project(self, x, W):
        B, T, C = x.shape
        out = np.zeros((B, T, W.shape[1]))
        for b in range(B):
            for t in range(T):
                out[b, t] = np.dot(x[b, t], W)
        return out

    def _weights(self, x):
        B, T, _ = x.shape
        q = self._project(x, self.W_q)
        k = self._project(x, self.W_k)
        mask = self.mask[:T, :T]
        hs = self.head_size
        scale = 1 / math.sqrt(hs)
        weights = np.zeros((B, self.n_head, T, T))
        for b in range(B):
            for h in range(self.n_head):
                cols = slice(h * hs, (h + 1) * hs)
                for i in range(T):
                    row = [-math.inf] * T
                    for j in range(T):
                        if mask[i, j]:
                            row[j] = float(np.dot(q[b, i, cols], k[b, j, cols])) * scale
                    top = max(row)
                    exps = [math.exp(s - top) if s != -math.inf else 0.0 for s in row]
                    total = sum(exps)
                    for j in range(T):
                        # a row with nothing allowed behaves like softmax of all -inf: NaN
                        weights[b, h, i, j] = exps[j] / total if total else math.nan
        return weights

    def attention_weights(self, x):
        """The weights of every head, shape (B, n_head, T, T): softmax over the keys of
        (q k^T) / sqrt(d_head), with the future masked. Raise ValueError when x is not 3-D,
        when its last axis is not n_embed, or when T > context_length."""
        return self._weights(self._validate(x))

    def forward(self, x):
        """The layer's output, shape (B, T, C): each head's weights times its values, the
        heads joined side by side in order, then @ W_o + b_o. The same errors as
        attention_weights."""
        x = self._validate(x)
        B, T, C = x.shape
        weights = self._weights(x)
        v = self._project(x, self.W_v)
        hs = self.head_size
        joined = np.zeros((B, T, C))
        for b in range(B):
            for h in range(self.n_head):
                for i in range(T):
                    acc = np.zeros(hs)
                    for j in range(T):
                        acc += weights[b, h, i, j] * v[b, j, h * hs:(h + 1) * hs]
                    joined[b, i, h * hs:(h + 1) * hs] = acc
        out = self._project(joined, self.W_o.T)
        for b in range(B):
            for t in range(T):
                out[b, t] += self.b_o
        return out
