"""CORRECT: code written for another API and adapted at its edge -- a PyTorch-like module with a __call__, Linear layers in (out, in) layout acting on column vectors (y = W x + b, one sequence as the columns of a (C, T) array), wrapped in the handout's x @ W class; the modules are rebuilt from the current attributes at every call.
Affects: CausalSelfAttention.__init__, attention_weights, forward.

A causal self-attention layer in NumPy, as a transformer block uses it (x @ W layout,
head i owns columns i*d_head:(i+1)*d_head, mask True meaning "may attend").
"""

import numpy as np


def softmax(scores):
    """A stable softmax over the last axis (given)."""
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class _Linear:
    """y = W x + b on column vectors; W has the PyTorch (out_features, in_features) layout."""

    def __init__(self, weight, bias=None):
        self.weight = np.asarray(weight, dtype=float)
        self.bias = None if bias is None else np.asarray(bias, dtype=float)

    def __call__(self, X):  # X: (in_features, N) -> (out_features, N)
        Y = self.weight @ X
        if self.bias is not None:
            Y = Y + self.bias[:, None]
        return Y


class _ColumnCausalAttention:
    """Multi-head attention on one sequence stored as columns, X: (C, T)."""

    def __init__(self, q_proj, k_proj, v_proj, o_proj, n_head, allowed):
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = q_proj, k_proj, v_proj, o_proj
        self.n_head = n_head
        self.allowed = allowed  # (T, T) bool, [query, key], True = may attend

    def __call__(self, X):
        C, T = X.shape
        d = C // self.n_head
        Q, K, V = self.q_proj(X), self.k_proj(X), self.v_proj(X)  # (C, T) each
        outs, probs = [], []
        for h in range(self.n_head):
            rows = slice(h * d, (h + 1) * d)  # head h = rows of the column layout
            S = Q[rows].T @ K[rows] / np.sqrt(d)  # (T queries, T keys)
            S = np.where(self.allowed, S, -np.inf)
            P = softmax(S)  # over keys
            outs.append(V[rows] @ P.T)  # (d, T): column t = sum_s P[t, s] v_s
            probs.append(P)
        Y = self.o_proj(np.concatenate(outs, axis=0))  # (C, T)
        return Y, np.stack(probs)


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
        scale = 1.0 / np.sqrt(n_embed)
        self.W_q = rng.standard_normal((n_embed, n_embed)) * scale
        self.W_k = rng.standard_normal((n_embed, n_embed)) * scale
        self.W_v = rng.standard_normal((n_embed, n_embed)) * scale
        self.W_o = rng.standard_normal((n_embed, n_embed)) * scale
        self.b_o = np.zeros(n_embed)
        self.mask = np.tril(np.ones((context_length, context_length), dtype=bool))

    def _module(self, T):
        # x @ W (row layout) == (W^T @ x^T)^T, so the column module gets W^T
        return _ColumnCausalAttention(
            _Linear(np.asarray(self.W_q).T),
            _Linear(np.asarray(self.W_k).T),
            _Linear(np.asarray(self.W_v).T),
            _Linear(np.asarray(self.W_o).T, self.b_o),
            self.n_head,
            np.asarray(self.mask, dtype=bool)[:T, :T],
        )

    def _run(self, x):
        x = np.asarray(x, dtype=float)
        if x.ndim != 3:
            raise ValueError("x must be (B, T, C)")
        B, T, C = x.shape
        if C != self.n_embed:
            raise ValueError("last axis must be n_embed")
        if T > self.context_length:
            raise ValueError("T exceeds context_length")
        module = self._module(T)
        ys, ps = [], []
        for b in range(B):
            Y, P = module(x[b].T)  # rows -> columns
            ys.append(Y.T)  # columns -> rows
            ps.append(P)
        return np.stack(ys).reshape(B, T, C), np.stack(ps).reshape(B, self.n_head, T, T)

    def attention_weights(self, x):
        """(B, n_head, T, T) weights; ValueError on bad x."""
        return self._run(x)[1]

    def forward(self, x):
        """(B, T, C) output: heads joined in order, then @ W_o + b_o; ValueError on bad x."""
        return self._run(x)[0]
