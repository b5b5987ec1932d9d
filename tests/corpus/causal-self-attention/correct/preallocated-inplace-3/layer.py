"""CORRECT: preallocated buffers, loop over heads writing into views, in-place softmax with out=, boolean-index -inf mask
Affects: __init__, attention_weights, forward (all).

A causal self-attention layer that preallocates its output buffers, loops over heads, and
runs the (stable) softmax in place with ``out=`` arguments. The scale is applied after the
q k^T matmul. Weights in ``x @ W`` layout; ``mask`` True = "may attend".
"""

import numpy as np


def softmax(scores):
    """A stable softmax over the last axis (given)."""
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _softmax_inplace(s):
    np.subtract(s, s.max(axis=-1, keepdims=True), out=s)
    np.exp(s, out=s)
    np.divide(s, s.sum(axis=-1, keepdims=True), out=s)
    return s


class CausalSelfAttention:
    """Multi-head causal self-attention with an output bias."""

    def __init__(self, n_embed, n_head, context_length, seed=0):
        if n_head <= 0 or n_embed % n_head != 0:
            raise ValueError("n_head must divide n_embed")
        self.n_embed = int(n_embed)
        self.n_head = int(n_head)
        self.d_head = self.n_embed // self.n_head
        self.context_length = int(context_length)
        rng = np.random.default_rng(seed)
        shape = (n_embed, n_embed)
        self.W_q = np.empty(shape)
        self.W_k = np.empty(shape)
        self.W_v = np.empty(shape)
        self.W_o = np.empty(shape)
        for W in (self.W_q, self.W_k, self.W_v, self.W_o):
            rng.standard_normal(out=W)
            W *= 1.0 / np.sqrt(n_embed)
        self.b_o = np.zeros(n_embed)
        self.mask = np.ones((context_length, context_length), dtype=bool)
        np.copyto(self.mask, np.tril(self.mask))

    def _check(self, x):
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 3:
            raise ValueError("x must be (B, T, C)")
        if x.shape[2] != self.n_embed:
            raise ValueError("channel mismatch")
        if x.shape[1] > self.context_length:
            raise ValueError("too many tokens")
        return x

    def _run(self, x, want_output):
        B, T, C = x.shape
        d = self.d_head
        blocked = ~np.asarray(self.mask, dtype=bool)[:T, :T]
        q = x @ self.W_q
        k = x @ self.W_k
        v = x @ self.W_v if want_output else None
        weights = np.empty((B, self.n_head, T, T))
        joined = np.empty((B, T, C)) if want_output else None
        scale = 1.0 / np.sqrt(d)
        for h in range(self.n_head):
            cols = slice(h * d, (h + 1) * d)
            s = weights[:, h]  # a view: written in place
            np.matmul(q[:, :, cols], k[:, :, cols].transpose(0, 2, 1), out=s)
            s *= scale
            s[:, blocked] = -np.inf
            _softmax_inplace(s)
            if want_output:
                np.matmul(s, v[:, :, cols], out=joined[:, :, cols])
        return weights, joined

    def attention_weights(self, x):
        return self._run(self._check(x), False)[0]

    def forward(self, x):
        x = self._check(x)
        _, joined = self._run(x, True)
        out = joined @ self.W_o
        out += self.b_o
        return out
