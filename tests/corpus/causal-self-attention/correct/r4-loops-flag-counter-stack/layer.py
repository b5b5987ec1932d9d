"""CORRECT: students' loops -- one loop over sequences, heads and query rows, each row of weights built with a counter and a "found" flag, math.exp softmax, rows appended and np.stack-ed at the end.
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


class CausalSelfAttention:
    """Multi-head causal self-attention with an output bias."""

    def __init__(self, n_embed, n_head, context_length, seed=0):
        """Raise ValueError unless n_head divides n_embed; weights from default_rng(seed)
        scaled by 1/sqrt(n_embed); b_o zeros; the mask built once."""
        if n_head < 1 or n_embed % n_head != 0:
            raise ValueError("n_embed must be a multiple of n_head")
        self.n_embed = n_embed
        self.n_head = n_head
        self.head_size = n_embed // n_head
        self.context_length = context_length
        rng = np.random.default_rng(seed)
        weights = []
        for _ in range(4):
            weights.append(rng.standard_normal(size=(n_embed, n_embed)) / math.sqrt(n_embed))
        self.W_q = weights[0]
        self.W_k = weights[1]
        self.W_v = weights[2]
        self.W_o = weights[3]
        self.b_o = np.zeros(n_embed)
        mask = np.zeros((context_length, context_length), dtype=bool)
        for i in range(context_length):
            for j in range(i + 1):
                mask[i, j] = True
        self.mask = mask

    def _validate(self, x):
        x = np.asarray(x, dtype=np.float64)
        if len(x.shape) != 3:
            raise ValueError("expected x of shape (B, T, C)")
        B, T, C = x.shape
        if C != self.n_embed:
            raise ValueError("wrong number of channels")
        if T > self.context_length:
            raise ValueError("sequence longer than context_length")
        return x

    def _row_weights(self, scores_row, allowed_row):
        """Softmax over the allowed entries of one row, zero elsewhere."""
        T = len(scores_row)
        found = False
        biggest = 0.0
        for j in range(T):
            if allowed_row[j]:
                if not found or scores_row[j] > biggest:
                    biggest = scores_row[j]
                found = True
        row = np.zeros(T)
        if not found:
            row[:] = np.nan
            return row
        total = 0.0
        for j in range(T):
            if allowed_row[j]:
                row[j] = math.exp(scores_row[j] - biggest)
                total += math.exp(scores_row[j] - biggest)
        for j in range(T):
            row[j] = row[j] / total
        return row

    def _all_weights(self, x):
        B, T, C = x.shape
        hs = self.head_size
        allowed = self.mask[:T, :T]
        per_batch = []
        values = []
        for b in range(B):
            q = x[b] @ self.W_q
            k = x[b] @ self.W_k
            v = x[b] @ self.W_v
            values.append(v)
            per_head = []
            for h in range(self.n_head):
                start = h * hs
                stop = start + hs
                rows = []
                for i in range(T):
                    scores = np.zeros(T)
                    count = 0
                    for j in range(T):
                        scores[j] = np.dot(q[i, start:stop], k[j, start:stop]) / math.sqrt(hs)
                        count += 1
                    assert count == T
                    rows.append(self._row_weights(scores, allowed[i]))
                per_head.append(np.stack(rows) if rows else np.zeros((0, 0)))
            per_batch.append(np.stack(per_head))
        return np.stack(per_batch), values

    def attention_weights(self, x):
        """(B, n_head, T, T) weights; ValueError on bad x."""
        x = self._validate(x)
        w, _ = self._all_weights(x)
        return w

    def forward(self, x):
        """(B, T, C) output: heads joined in order, then @ W_o + b_o; ValueError on bad x."""
        x = self._validate(x)
        B, T, C = x.shape
        hs = self.head_size
        w, values = self._all_weights(x)
        outputs = []
        for b in range(B):
            pieces = []
            for h in range(self.n_head):
                pieces.append(w[b, h] @ values[b][:, h * hs:(h + 1) * hs])
            joined = np.concatenate(pieces, axis=1)
            outputs.append(joined @ self.W_o + self.b_o)
        return np.stack(outputs).reshape(B, T, C)
