"""CORRECT: np.einsum throughout, computing in float32, masking with -1e9 instead of -inf.
Affects: __init__, attention_weights, forward (whole module).

Weights are stored as float32 at init; whatever the tests assign is cast to float32 at call
time (never cached), and the outputs are float32. The handout allows float32 and -1e9.
"""

import numpy as np


def softmax(scores):
    """A stable softmax over the last axis (given)."""
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


_NEG = np.float32(-1e9)


class CausalSelfAttention:
    """Multi-head causal self-attention with an output bias."""

    def __init__(self, n_embed, n_head, context_length, seed=0):
        """Raise ValueError unless n_head divides n_embed. Draw W_q, W_k, W_v and W_o, each
        (n_embed, n_embed), from np.random.default_rng(seed), scaled by 1 / sqrt(n_embed);
        b_o starts at zeros, shape (n_embed,). Build ``mask``, the (context_length,
        context_length) lower-triangular boolean buffer, once."""
        if not (n_head > 0 and n_embed % n_head == 0):
            raise ValueError("n_embed must be a multiple of n_head")
        self.n_embed, self.n_head, self.context_length = n_embed, n_head, context_length
        rng = np.random.default_rng(seed)
        # one draw of all four matrices, then split (the order of the draws is ours)
        W = (rng.standard_normal((4, n_embed, n_embed)) / np.sqrt(n_embed)).astype(np.float32)
        self.W_q, self.W_k, self.W_v, self.W_o = W[0].copy(), W[1].copy(), W[2].copy(), W[3].copy()
        self.b_o = np.zeros(n_embed, dtype=np.float32)
        idx = np.arange(context_length)
        self.mask = idx[:, None] >= idx[None, :]

    def _check(self, x):
        x = np.asarray(x)
        if x.ndim != 3 or x.shape[-1] != self.n_embed or x.shape[1] > self.context_length:
            raise ValueError(
                f"x has shape {x.shape}; expected (B, T <= {self.context_length}, {self.n_embed})"
            )
        return x.astype(np.float32)

    def _heads(self, x):
        """(weights (B,H,T,T), values per head (B,T,H,d)) in float32."""
        x = self._check(x)
        B, T, C = x.shape
        H = self.n_head
        d = C // H
        f32 = lambda a: np.asarray(a, dtype=np.float32)  # noqa: E731
        q = np.einsum("btc,cd->btd", x, f32(self.W_q)).reshape(B, T, H, d)
        k = np.einsum("btc,cd->btd", x, f32(self.W_k)).reshape(B, T, H, d)
        v = np.einsum("btc,cd->btd", x, f32(self.W_v)).reshape(B, T, H, d)
        scores = np.einsum("bqhd,bkhd->bhqk", q, k) * np.float32(1.0 / np.sqrt(d))
        allowed = np.asarray(self.mask, dtype=bool)[:T, :T]
        scores = np.where(allowed, scores, _NEG).astype(np.float32)
        return softmax(scores), v

    def attention_weights(self, x):
        """The weights of every head, shape (B, n_head, T, T): softmax over the keys of
        (q k^T) / sqrt(d_head), with the future masked. Raise ValueError when x is not 3-D,
        when its last axis is not n_embed, or when T > context_length."""
        weights, _ = self._heads(x)
        return weights

    def forward(self, x):
        """The layer's output, shape (B, T, C): each head's weights times its values, the
        heads joined side by side in order, then @ W_o + b_o. The same errors as
        attention_weights."""
        weights, v = self._heads(x)
        B, T, H, d = v.shape
        joined = np.einsum("bhqk,bkhd->bqhd", weights, v).reshape(B, T, H * d)
        out = np.einsum("btc,cd->btd", joined, np.asarray(self.W_o, dtype=np.float32))
        return out + np.asarray(self.b_o, dtype=np.float32)
