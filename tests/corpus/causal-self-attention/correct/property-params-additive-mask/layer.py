"""CORRECT: parameters stored in a dict behind properties, additive -1e9 mask, scale applied to q before the matmul
Affects: __init__, attention_weights, forward (all).

A causal self-attention layer whose parameters live in a dict behind properties (so
``layer.W_q = W`` still works), with an additive -1e9 mask and the 1/sqrt(d_head) scale
applied to q before the matmul. Weights in ``x @ W`` layout; ``mask`` True = "may attend".
"""

import numpy as np


def softmax(scores):
    """A stable softmax over the last axis (given)."""
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _param(name):
    def get(self):
        return self._params[name]

    def set(self, value):
        self._params[name] = np.asarray(value)

    return property(get, set)


class CausalSelfAttention:
    """Multi-head causal self-attention with an output bias."""

    W_q = _param("W_q")
    W_k = _param("W_k")
    W_v = _param("W_v")
    W_o = _param("W_o")
    b_o = _param("b_o")

    def __init__(self, n_embed, n_head, context_length, seed=0):
        if not isinstance(n_head, (int, np.integer)) or n_head <= 0 or n_embed % n_head:
            raise ValueError("head_size = n_embed // n_head must be a whole number")
        self.config = {"n_embed": n_embed, "n_head": n_head, "context_length": context_length}
        self._params = {}
        rng = np.random.default_rng(seed)
        std = n_embed ** -0.5
        for name in ("W_k", "W_q", "W_o", "W_v"):
            self._params[name] = std * rng.standard_normal((n_embed, n_embed))
        self._params["b_o"] = np.zeros(n_embed)
        # the buffer: built once for the longest sequence
        i = np.arange(context_length)
        self.mask = i[:, None] >= i[None, :]

    def _input(self, x):
        x = np.asarray(x)
        cfg = self.config
        if x.ndim != 3:
            raise ValueError("x must have shape (B, T, C)")
        if x.shape[-1] != cfg["n_embed"]:
            raise ValueError("x's last axis must be n_embed")
        if x.shape[-2] > cfg["context_length"]:
            raise ValueError("T exceeds context_length")
        return x

    def _project(self, x, W):
        B, T, C = x.shape
        h = self.config["n_head"]
        return np.swapaxes((x @ W).reshape(B, T, h, C // h), 1, 2)

    def _weights(self, x):
        T = x.shape[1]
        d_head = self.config["n_embed"] // self.config["n_head"]
        q = self._project(x, self.W_q) * (1.0 / np.sqrt(d_head))
        k = self._project(x, self.W_k)
        additive = np.where(np.asarray(self.mask)[:T, :T], 0.0, -1e9)
        return softmax(q @ np.swapaxes(k, -1, -2) + additive)

    def attention_weights(self, x):
        return self._weights(self._input(x))

    def forward(self, x):
        x = self._input(x)
        B, T, C = x.shape
        v = self._project(x, self.W_v)
        out = self._weights(x) @ v  # (B, h, T, d)
        out = np.swapaxes(out, 1, 2).reshape(B, T, C)
        return out @ self.W_o + self.b_o
