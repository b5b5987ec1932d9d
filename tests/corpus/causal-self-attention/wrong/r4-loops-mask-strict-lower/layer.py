"""MISTAKE: the mask loop uses j < i, so the diagonal is blocked (a token cannot attend to itself and the first row has nothing to attend to).
Affects: __init__ (mask), hence attention_weights and forward.

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


def _softmax_row(scores):
    """Softmax of one row of scores; None marks a masked (not allowed) entry."""
    biggest = None
    for s in scores:
        if s is not None:
            if biggest is None or s > biggest:
                biggest = s
    if biggest is None:  # nothing allowed in this row
        return [float("nan")] * len(scores)
    exps = []
    total = 0.0
    for s in scores:
        if s is None:
            exps.append(0.0)
        else:
            e = math.exp(s - biggest)
            exps.append(e)
            total += e
    row = []
    for e in exps:
        row.append(e / total)
    return row


def _matmul_rows(rows, W):
    """rows: list of lists (N, C_in); W: list of lists (C_in, C_out) -> list (N, C_out)."""
    out = []
    for r in range(len(rows)):
        new_row = []
        for c in range(len(W[0])):
            total = 0.0
            for k in range(len(W)):
                total += rows[r][k] * W[k][c]
            new_row.append(total)
        out.append(new_row)
    return out


class CausalSelfAttention:
    """Multi-head causal self-attention with an output bias."""

    def __init__(self, n_embed, n_head, context_length, seed=0):
        """Raise ValueError unless n_head divides n_embed. Draw W_q, W_k, W_v and W_o, each
        (n_embed, n_embed), from np.random.default_rng(seed), scaled by 1 / sqrt(n_embed);
        b_o starts at zeros, shape (n_embed,). Build ``mask``, the (context_length,
        context_length) lower-triangular boolean buffer, once."""
        if n_head <= 0 or n_embed % n_head != 0:
            raise ValueError(f"n_head={n_head} does not divide n_embed={n_embed}")
        self.n_embed = n_embed
        self.n_head = n_head
        self.d_head = n_embed // n_head
        self.context_length = context_length
        rng = np.random.default_rng(seed)
        std = 1.0 / math.sqrt(n_embed)
        self.W_q = rng.standard_normal((n_embed, n_embed)) * std
        self.W_k = rng.standard_normal((n_embed, n_embed)) * std
        self.W_v = rng.standard_normal((n_embed, n_embed)) * std
        self.W_o = rng.standard_normal((n_embed, n_embed)) * std
        self.b_o = np.zeros(n_embed)
        rows = []
        for i in range(context_length):
            row = []
            for j in range(context_length):
                if j < i:
                    row.append(True)
                else:
                    row.append(False)
            rows.append(row)
        self.mask = np.array(rows, dtype=bool).reshape(context_length, context_length)

    def _check(self, x):
        x = np.asarray(x, dtype=float)
        if x.ndim != 3:
            raise ValueError(f"x must be 3-D (B, T, C), got shape {x.shape}")
        if x.shape[2] != self.n_embed:
            raise ValueError(f"last axis of x is {x.shape[2]}, expected {self.n_embed}")
        if x.shape[1] > self.context_length:
            raise ValueError(f"T={x.shape[1]} exceeds context_length={self.context_length}")
        return x

    def _weights_lists(self, x):
        """Returns (weights as nested lists [b][h][i][j], values as lists [b][t][c])."""
        B, T, C = x.shape
        H = self.n_head
        d = self.d_head
        Wq = np.asarray(self.W_q, dtype=float).tolist()
        Wk = np.asarray(self.W_k, dtype=float).tolist()
        Wv = np.asarray(self.W_v, dtype=float).tolist()
        q, k, v = [], [], []
        for b in range(B):
            tokens = x[b].tolist()
            q.append(_matmul_rows(tokens, Wq))
            k.append(_matmul_rows(tokens, Wk))
            v.append(_matmul_rows(tokens, Wv))
        m = np.asarray(self.mask)[:T, :T].tolist()
        scale = 1.0 / d ** 0.5
        all_weights = []
        for b in range(B):
            heads = []
            for h in range(H):
                lo = h * d
                hi = lo + d
                rows = []
                for i in range(T):
                    scores = []
                    for j in range(T):
                        if m[i][j]:
                            s = 0.0
                            for c in range(lo, hi):
                                s += q[b][i][c] * k[b][j][c]
                            scores.append(s * scale)
                        else:
                            scores.append(None)
                    rows.append(_softmax_row(scores))
                heads.append(rows)
            all_weights.append(heads)
        return all_weights, v

    def attention_weights(self, x):
        """The weights of every head, shape (B, n_head, T, T): softmax over the keys of
        (q k^T) / sqrt(d_head), with the future masked. Raise ValueError when x is not 3-D,
        when its last axis is not n_embed, or when T > context_length."""
        x = self._check(x)
        B, T, C = x.shape
        w, _ = self._weights_lists(x)
        return np.array(w, dtype=float).reshape(B, self.n_head, T, T)

    def forward(self, x):
        """The layer's output, shape (B, T, C): each head's weights times its values, the
        heads joined side by side in order, then @ W_o + b_o. The same errors as
        attention_weights."""
        x = self._check(x)
        B, T, C = x.shape
        H = self.n_head
        d = self.d_head
        w, v = self._weights_lists(x)
        Wo = np.asarray(self.W_o, dtype=float).tolist()
        bo = np.asarray(self.b_o, dtype=float).tolist()
        out = []
        for b in range(B):
            rows = []
            for t in range(T):
                joined = []
                for h in range(H):
                    for c in range(d):
                        s = 0.0
                        for j in range(T):
                            s += w[b][h][t][j] * v[b][j][h * d + c]
                        joined.append(s)
                row = []
                for c in range(C):
                    total = bo[c]
                    for kk in range(C):
                        total += joined[kk] * Wo[kk][c]
                    row.append(total)
                rows.append(row)
            out.append(rows)
        return np.array(out, dtype=float).reshape(B, T, C)
