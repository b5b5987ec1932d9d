"""CORRECT: parameters kept in a dict behind read/write properties, mask from an arange comparison, additive -inf bias, einsum scores.
Functions: __init__ (state storage), attention_weights, forward.

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


def _param(name):
    def get(self):
        return self._params[name]

    def set(self, value):
        self._params[name] = np.array(value, dtype=float)

    return property(get, set)


class CausalSelfAttention:
    """Multi-head causal self-attention with an output bias."""

    W_q = _param("W_q")
    W_k = _param("W_k")
    W_v = _param("W_v")
    W_o = _param("W_o")
    b_o = _param("b_o")

    def __init__(self, n_embed, n_head, context_length, seed=0):
        """Raise ValueError unless n_head divides n_embed. Draw W_q, W_k, W_v and W_o, each
        (n_embed, n_embed), from np.random.default_rng(seed), scaled by 1 / sqrt(n_embed);
        b_o starts at zeros, shape (n_embed,). Build ``mask``, the (context_length,
        context_length) lower-triangular boolean buffer, once."""
        if n_head <= 0 or n_embed % n_head != 0:
            raise ValueError(f"cannot split {n_embed} channels into {n_head} heads")
        self.config = {"n_embed": n_embed, "n_head": n_head, "context_length": context_length,
                       "d_head": n_embed // n_head}
        self._params = {}
        rng = np.random.default_rng(seed)
        for name in ("W_v", "W_q", "W_o", "W_k"):
            self._params[name] = rng.normal(size=(n_embed, n_embed)) / np.sqrt(n_embed)
        self._params["b_o"] = np.zeros(n_embed)
        idx = np.arange(context_length)
        self.mask = idx[:, None] >= idx[None, :]

    def _validated(self, x):
        x = np.asarray(x, dtype=float)
        cfg = self.config
        if x.ndim != 3:
            raise ValueError("x must be (B, T, C)")
        if x.shape[-1] != cfg["n_embed"]:
            raise ValueError("channel mismatch")
        if x.shape[1] > cfg["context_length"]:
            raise ValueError("sequence too long")
        return x

    def _split(self, y):
        B, T, C = y.shape
        return y.reshape(B, T, self.config["n_head"], self.config["d_head"])  # (B, T, H, d)

    def _weights(self, x):
        T = x.shape[1]
        q = self._split(x @ self.W_q)
        k = self._split(x @ self.W_k)
        scores = np.einsum("bihd,bjhd->bhij", q, k) / np.sqrt(self.config["d_head"])
        bias = np.where(np.asarray(self.mask)[:T, :T], 0.0, -np.inf)
        return softmax(scores + bias)

    def attention_weights(self, x):
        """The weights of every head, shape (B, n_head, T, T): softmax over the keys of
        (q k^T) / sqrt(d_head), with the future masked. Raise ValueError when x is not 3-D,
        when its last axis is not n_embed, or when T > context_length."""
        return self._weights(self._validated(x))

    def forward(self, x):
        """The layer's output, shape (B, T, C): each head's weights times its values, the
        heads joined side by side in order, then @ W_o + b_o. The same errors as
        attention_weights."""
        x = self._validated(x)
        B, T, C = x.shape
        w = self._weights(x)
        v = self._split(x @ self.W_v)
        joined = np.einsum("bhij,bjhd->bihd", w, v).reshape(B, T, C)
        return joined @ self.W_o + self.b_o
