"""CORRECT: explicit Python loops over sequences, heads and query rows; float64; -inf masking.
Affects: __init__, attention_weights, forward (whole module).

Every head is computed one (T, d_head) slice at a time, every row of scores is masked with
np.where(mask_row, row, -inf) and passed through the given stable softmax.
"""

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
        if n_head <= 0 or n_embed % n_head != 0:
            raise ValueError(f"n_head = {n_head} does not divide n_embed = {n_embed}")
        self.n_embed = int(n_embed)
        self.n_head = int(n_head)
        self.d_head = self.n_embed // self.n_head
        self.context_length = int(context_length)

        rng = np.random.default_rng(seed)
        scale = 1.0 / np.sqrt(self.n_embed)
        self.W_q = rng.standard_normal((n_embed, n_embed)) * scale
        self.W_k = rng.standard_normal((n_embed, n_embed)) * scale
        self.W_v = rng.standard_normal((n_embed, n_embed)) * scale
        self.W_o = rng.standard_normal((n_embed, n_embed)) * scale
        self.b_o = np.zeros(n_embed)

        L = self.context_length
        mask = np.zeros((L, L), dtype=bool)
        for i in range(L):
            for j in range(i + 1):
                mask[i, j] = True
        self.mask = mask

    def _validate(self, x):
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 3:
            raise ValueError(f"x must be 3-D (B, T, C), got shape {x.shape}")
        if x.shape[2] != self.n_embed:
            raise ValueError(f"last axis of x is {x.shape[2]}, expected {self.n_embed}")
        if x.shape[1] > self.context_length:
            raise ValueError(f"T = {x.shape[1]} exceeds context_length = {self.context_length}")
        return x

    def _attend(self, x):
        """Weights (B, H, T, T) and the joined heads (B, T, C), before W_o."""
        x = self._validate(x)
        B, T, C = x.shape
        H, d = self.n_head, self.d_head
        mask = np.asarray(self.mask[:T, :T], dtype=bool)
        weights = np.zeros((B, H, T, T))
        joined = np.zeros((B, T, C))
        for b in range(B):
            q = x[b] @ self.W_q
            k = x[b] @ self.W_k
            v = x[b] @ self.W_v
            for h in range(H):
                cols = slice(h * d, (h + 1) * d)
                qh, kh, vh = q[:, cols], k[:, cols], v[:, cols]
                for i in range(T):
                    row = np.array([qh[i] @ kh[j] for j in range(T)]) / np.sqrt(d)
                    row = np.where(mask[i], row, -np.inf)
                    weights[b, h, i] = softmax(row)
                    joined[b, i, cols] = weights[b, h, i] @ vh
        return weights, joined

    def attention_weights(self, x):
        """The weights of every head, shape (B, n_head, T, T): softmax over the keys of
        (q k^T) / sqrt(d_head), with the future masked. Raise ValueError when x is not 3-D,
        when its last axis is not n_embed, or when T > context_length."""
        weights, _ = self._attend(x)
        return weights

    def forward(self, x):
        """The layer's output, shape (B, T, C): each head's weights times its values, the
        heads joined side by side in order, then @ W_o + b_o. The same errors as
        attention_weights."""
        _, joined = self._attend(x)
        return joined @ self.W_o + self.b_o
