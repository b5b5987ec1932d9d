"""MISTAKE: the core wants True = blocked, but the edge passes self.mask (True = may attend) without inverting it.
Affects: attention_weights, forward.

A causal self-attention layer in NumPy, as a transformer block uses it (x @ W layout,
head i owns columns i*d_head:(i+1)*d_head, mask True meaning "may attend").
"""

import numpy as np


def softmax(scores):
    """A stable softmax over the last axis (given)."""
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# --------------------------------------------------------------------------------------
# Core, from my earlier attention code: (B, H, T, d) tensors, additive masks, and boolean
# masks in the "True = blocked" convention (like torch's attn_mask / key_padding_mask).
# --------------------------------------------------------------------------------------


def _init_weight(shape, rng=None):
    rng = np.random.default_rng() if rng is None else rng
    return rng.standard_normal(shape) / np.sqrt(shape[0])


def _blocked_to_additive(blocked):
    """Boolean (True = blocked) -> additive float mask, 0 where allowed and -inf where blocked."""
    return np.where(blocked, -np.inf, 0.0)


def _sdpa(q, k, v, attn_bias):
    """Scaled dot-product attention on (B, H, T, d) arrays with an additive (T, T) bias."""
    d = q.shape[-1]
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) / np.sqrt(d) + attn_bias
    p = softmax(scores)
    return np.matmul(p, v), p


def _split_heads(t, n_head):
    """(B, T, C) -> (B, H, T, d)."""
    B, T, C = t.shape
    return t.reshape(B, T, n_head, C // n_head).transpose(0, 2, 1, 3)


def _merge_heads(t):
    """(B, H, T, d) -> (B, T, H * d)."""
    B, H, T, d = t.shape
    return t.transpose(0, 2, 1, 3).reshape(B, T, H * d)


# --------------------------------------------------------------------------------------
# The handout's API, converting at the edge.
# --------------------------------------------------------------------------------------


class CausalSelfAttention:
    """Multi-head causal self-attention with an output bias."""

    def __init__(self, n_embed, n_head, context_length, seed=0):
        """Raise ValueError unless n_head divides n_embed; weights from default_rng(seed)
        scaled by 1/sqrt(n_embed); b_o zeros; the mask built once."""
        if n_head < 1 or n_embed % n_head != 0:
            raise ValueError("n_head must divide n_embed")
        self.n_embed = n_embed
        self.n_head = n_head
        self.context_length = context_length
        rng = np.random.default_rng(seed)
        shape = (n_embed, n_embed)
        self.W_q = _init_weight(shape, rng)
        self.W_k = _init_weight(shape, rng)
        self.W_v = _init_weight(shape, rng)
        self.W_o = _init_weight(shape, rng)
        self.b_o = np.zeros(n_embed)
        self.mask = np.tril(np.ones((context_length, context_length), dtype=bool))

    def _edge(self, x):
        """Validate x and return (B, H, T, d) q, k, v and the additive (T, T) bias."""
        x = np.asarray(x, dtype=float)
        if x.ndim != 3:
            raise ValueError("x must have shape (B, T, C)")
        if x.shape[-1] != self.n_embed:
            raise ValueError("x's last axis must be n_embed")
        T = x.shape[1]
        if T > self.context_length:
            raise ValueError("T > context_length")
        blocked = np.asarray(self.mask, dtype=bool)[:T, :T]  # handout: True = may attend
        attn_bias = _blocked_to_additive(blocked)
        q = _split_heads(x @ self.W_q, self.n_head)
        k = _split_heads(x @ self.W_k, self.n_head)
        v = _split_heads(x @ self.W_v, self.n_head)
        return q, k, v, attn_bias

    def attention_weights(self, x):
        """(B, n_head, T, T) weights; ValueError on bad x."""
        q, k, v, attn_bias = self._edge(x)
        _, p = _sdpa(q, k, v, attn_bias)
        return p

    def forward(self, x):
        """(B, T, C) output: heads joined in order, then @ W_o + b_o; ValueError on bad x."""
        q, k, v, attn_bias = self._edge(x)
        out, _ = _sdpa(q, k, v, attn_bias)
        return _merge_heads(out) @ self.W_o + self.b_o
