"""CORRECT: explicit Python loops over batch, head, query and key; math.exp softmax with max subtraction
Affects: __init__, attention_weights, forward (all).

A causal self-attention layer in NumPy, written with explicit Python loops over batch, head,
query and key (slow but obvious). Weights in ``x @ W`` layout; head i owns columns
``i * d_head : (i + 1) * d_head``; ``mask`` True means "may attend".
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
        if n_head <= 0 or n_embed % n_head:
            raise ValueError("n_embed must be divisible by n_head")
        self.n_embed = n_embed
        self.n_head = n_head
        self.head_size = n_embed // n_head
        self.context_length = context_length
        rng = np.random.default_rng(seed)
        # draw order: W_o first, then v, k, q (the order is free)
        self.W_o = rng.normal(0.0, 1.0, size=(n_embed, n_embed)) / math.sqrt(n_embed)
        self.W_v = rng.normal(0.0, 1.0, size=(n_embed, n_embed)) / math.sqrt(n_embed)
        self.W_k = rng.normal(0.0, 1.0, size=(n_embed, n_embed)) / math.sqrt(n_embed)
        self.W_q = rng.normal(0.0, 1.0, size=(n_embed, n_embed)) / math.sqrt(n_embed)
        self.b_o = np.zeros((n_embed,))
        m = np.zeros((context_length, context_length), dtype=bool)
        for i in range(context_length):
            for j in range(i + 1):
                m[i, j] = True
        self.mask = m

    def _validate(self, x):
        x = np.asarray(x, dtype=float)
        if len(x.shape) != 3:
            raise ValueError("expected (B, T, C)")
        B, T, C = x.shape
        if C != self.n_embed:
            raise ValueError("wrong number of channels")
        if T > self.context_length:
            raise ValueError("sequence longer than context_length")
        return x

    def _weights_and_values(self, x):
        B, T, C = x.shape
        hs = self.head_size
        mask = self.mask[:T, :T]
        q = x @ self.W_q
        k = x @ self.W_k
        v = x @ self.W_v
        weights = np.zeros((B, self.n_head, T, T))
        for b in range(B):
            for h in range(self.n_head):
                lo, hi = h * hs, (h + 1) * hs
                for i in range(T):
                    row = []
                    for j in range(T):
                        if mask[i, j]:
                            row.append(float(np.dot(q[b, i, lo:hi], k[b, j, lo:hi])) / math.sqrt(hs))
                        else:
                            row.append(-math.inf)
                    m = max(row)
                    ex = [math.exp(s - m) if s != -math.inf else 0.0 for s in row]
                    tot = sum(ex)
                    for j in range(T):
                        weights[b, h, i, j] = ex[j] / tot
        return weights, v

    def attention_weights(self, x):
        x = self._validate(x)
        return self._weights_and_values(x)[0]

    def forward(self, x):
        x = self._validate(x)
        B, T, C = x.shape
        hs = self.head_size
        weights, v = self._weights_and_values(x)
        joined = np.zeros((B, T, C))
        for b in range(B):
            for h in range(self.n_head):
                lo, hi = h * hs, (h + 1) * hs
                for i in range(T):
                    acc = np.zeros(hs)
                    for j in range(T):
                        acc += weights[b, h, i, j] * v[b, j, lo:hi]
                    joined[b, i, lo:hi] = acc
        out = np.zeros((B, T, C))
        for b in range(B):
            for i in range(T):
                out[b, i] = joined[b, i] @ self.W_o + self.b_o
        return out
