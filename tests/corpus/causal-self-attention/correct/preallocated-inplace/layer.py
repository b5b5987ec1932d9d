"""CORRECT: preallocated buffers and in-place ops (matmul out=, copyto where=, in-place stable softmax), fused qkv per call.
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


def _softmax_inplace(s):
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    return s


class CausalSelfAttention:
    """Multi-head causal self-attention with an output bias."""

    def __init__(self, n_embed, n_head, context_length, seed=0):
        """Raise ValueError unless n_head divides n_embed. Draw W_q, W_k, W_v and W_o, each
        (n_embed, n_embed), from np.random.default_rng(seed), scaled by 1 / sqrt(n_embed);
        b_o starts at zeros, shape (n_embed,). Build ``mask``, the (context_length,
        context_length) lower-triangular boolean buffer, once."""
        if n_head <= 0 or n_embed % n_head:
            raise ValueError("n_head does not divide n_embed")
        self.n_embed = int(n_embed)
        self.n_head = int(n_head)
        self.d_head = self.n_embed // self.n_head
        self.context_length = int(context_length)
        rng = np.random.default_rng(seed)
        for name in ("W_q", "W_k", "W_v", "W_o"):
            W = np.empty((n_embed, n_embed))
            W[...] = rng.standard_normal((n_embed, n_embed))
            W *= 1.0 / np.sqrt(n_embed)
            setattr(self, name, W)
        self.b_o = np.zeros(n_embed)
        rows = np.arange(context_length)
        self.mask = np.empty((context_length, context_length), dtype=bool)
        np.greater_equal(rows[:, None], rows[None, :], out=self.mask)

    def _check(self, x):
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 3:
            raise ValueError("x must be 3-D")
        if x.shape[2] != self.n_embed:
            raise ValueError("x.shape[-1] != n_embed")
        if x.shape[1] > self.context_length:
            raise ValueError("too many tokens for context_length")
        return x

    def _qkv(self, x):
        B, T, C = x.shape
        W = np.concatenate([self.W_q, self.W_k, self.W_v], axis=1)  # read the attributes now
        qkv = np.empty((B, T, 3 * C))
        np.matmul(x, W, out=qkv)
        # (B, T, 3, H, d) -> (3, B, H, T, d)
        qkv = qkv.reshape(B, T, 3, self.n_head, self.d_head).transpose(2, 0, 3, 1, 4)
        return qkv[0], qkv[1], qkv[2]

    def _weights(self, q, k, T):
        B, H = q.shape[:2]
        s = np.empty((B, H, T, T))
        np.matmul(q, k.swapaxes(-1, -2), out=s)
        s *= 1.0 / np.sqrt(self.d_head)
        np.copyto(s, -np.inf, where=~self.mask[:T, :T])
        return _softmax_inplace(s)

    def attention_weights(self, x):
        """The weights of every head, shape (B, n_head, T, T): softmax over the keys of
        (q k^T) / sqrt(d_head), with the future masked. Raise ValueError when x is not 3-D,
        when its last axis is not n_embed, or when T > context_length."""
        x = self._check(x)
        q, k, _ = self._qkv(x)
        return self._weights(q, k, x.shape[1])

    def forward(self, x):
        """The layer's output, shape (B, T, C): each head's weights times its values, the
        heads joined side by side in order, then @ W_o + b_o. The same errors as
        attention_weights."""
        x = self._check(x)
        B, T, C = x.shape
        q, k, v = self._qkv(x)
        w = self._weights(q, k, T)
        heads = np.empty((B, self.n_head, T, self.d_head))
        np.matmul(w, v, out=heads)
        joined = np.empty((B, T, self.n_head, self.d_head))
        joined[...] = heads.transpose(0, 2, 1, 3)
        out = np.empty((B, T, C))
        np.matmul(joined.reshape(B, T, C), self.W_o, out=out)
        out += self.b_o
        return out
