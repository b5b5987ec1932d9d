"""CORRECT: lecture code ported to NumPy -- the "Attention Is All You Need" slide, MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O with head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V), written with einsum and a loop over heads.
Affects: CausalSelfAttention.__init__, attention_weights, forward.

A causal self-attention layer in NumPy, as a transformer block uses it (x @ W layout,
head i owns columns i*d_head:(i+1)*d_head, mask True meaning "may attend").
"""

import math

import numpy as np


def softmax(scores):
    """A stable softmax over the last axis (given)."""
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def Attention(Q, K, V, M):
    """softmax(Q K^T / sqrt(d_k) + M) V  with M = -1e9 where masked (slide 14)."""
    d_k = Q.shape[-1]
    S = np.einsum("btd,bsd->bts", Q, K) / math.sqrt(d_k)
    S = np.where(M, S, -1e9)
    A = softmax(S)
    return np.einsum("bts,bsd->btd", A, V), A


class CausalSelfAttention:
    """Multi-head causal self-attention with an output bias."""

    def __init__(self, n_embed, n_head, context_length, seed=0):
        """Raise ValueError unless n_head divides n_embed; weights from default_rng(seed)
        scaled by 1/sqrt(n_embed); b_o zeros; the mask built once."""
        d_model, h = n_embed, n_head
        if h <= 0 or d_model % h:
            raise ValueError("d_model must be divisible by h")
        self.d_model = d_model
        self.h = h
        self.d_k = d_model // h
        self.context_length = context_length
        rng = np.random.default_rng(seed)
        W = rng.normal(0.0, 1.0, size=(4, d_model, d_model)) / np.sqrt(d_model)
        self.W_q, self.W_k, self.W_v, self.W_o = W[0].copy(), W[1].copy(), W[2].copy(), W[3].copy()
        self.b_o = np.zeros(d_model)
        i, j = np.indices((context_length, context_length))
        self.mask = j <= i

    def _input(self, x):
        x = np.asarray(x, dtype=float)
        if x.ndim != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"expected (B, T, {self.d_model}), got {x.shape}")
        if x.shape[1] > self.context_length:
            raise ValueError("T > context_length")
        return x

    def _heads(self, x):
        T = x.shape[1]
        M = self.mask[:T, :T]
        Q, K, V = x @ self.W_q, x @ self.W_k, x @ self.W_v
        heads, weights = [], []
        for i in range(self.h):
            cols = slice(i * self.d_k, (i + 1) * self.d_k)
            head_i, A_i = Attention(Q[..., cols], K[..., cols], V[..., cols], M)
            heads.append(head_i)
            weights.append(A_i)
        return heads, weights

    def attention_weights(self, x):
        """(B, n_head, T, T) weights; ValueError on bad x."""
        x = self._input(x)
        _, weights = self._heads(x)
        return np.stack(weights, axis=1)

    def forward(self, x):
        """(B, T, C) output: heads joined in order, then @ W_o + b_o; ValueError on bad x."""
        x = self._input(x)
        heads, _ = self._heads(x)
        return np.concatenate(heads, axis=-1) @ self.W_o + self.b_o
