"""MISTAKE: query head h uses kv head h % n_kv_head instead of h // n_rep (the np.tile bug written as an index).
Affects: grouped_query_attention, decode_step.

Conventions used throughout:

- A mask is a boolean array; True means "may attend".
- Weight matrices are in ``x @ W`` layout. With d_head = C // n_head:
  Wq and Wo are (C, C); Wk and Wv are (C, n_kv_head * d_head).
- Query head h owns columns ``h * d_head : (h + 1) * d_head`` of ``X @ Wq``; kv head g owns
  the same columns of ``X @ Wk`` and ``X @ Wv``. Query head h uses kv head ``h // n_rep``,
  where n_rep = n_head // n_kv_head.
- A query row whose keys are all masked gets weights 0 and output 0.
"""

import numpy as np


def softmax(scores):
    """A stable softmax over the last axis; a row that is all -inf gets weights 0 (given)."""
    top = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1.0)


def repeat_kv(x, n_rep):
    """Repeat each kv head n_rep times: (n_kv_head, T, d) -> (n_kv_head * n_rep, T, d)."""
    x = np.asarray(x)
    heads = []
    for g in range(x.shape[0]):
        for _ in range(n_rep):
            heads.append(x[g])
    if not heads:
        return np.zeros((0,) + x.shape[1:], dtype=x.dtype)
    return np.stack(heads, axis=0)


def causal_mask(T, S):
    """The (T, S) causal mask of T queries that are the LAST T of S positions."""
    mask = np.zeros((T, S), dtype=bool)
    offset = S - T
    for i in range(T):
        for j in range(S):
            if j <= i + offset:
                mask[i, j] = True
    return mask


def _validate(C, n_head, n_kv_head):
    if n_kv_head < 1 or n_head < 1 or n_head % n_kv_head != 0:
        raise ValueError("n_kv_head must divide n_head")
    if C % n_head != 0:
        raise ValueError("n_head must divide C")


def _attention_rows(Q, K, V, n_head, n_kv_head, mask):
    """Q (t, C) of the queries, K, V (S, n_kv_head*d) of all keys; returns concatenated heads (t, C)."""
    t, C = Q.shape
    S = K.shape[0]
    d_head = C // n_head
    n_rep = n_head // n_kv_head
    out = np.zeros((t, C), dtype=np.result_type(Q, K, V))
    for h in range(n_head):
        g = h % n_kv_head
        q = Q[:, h * d_head:(h + 1) * d_head]
        k = K[:, g * d_head:(g + 1) * d_head]
        v = V[:, g * d_head:(g + 1) * d_head]
        for i in range(t):
            scores = np.empty(S)
            for j in range(S):
                scores[j] = np.dot(q[i], k[j]) / np.sqrt(d_head)
            if mask is not None:
                scores[~mask[i]] = -np.inf
            w = softmax(scores)
            out[i, h * d_head:(h + 1) * d_head] = w @ v
    return out


def grouped_query_attention(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    """Grouped-query self-attention of X, shape (T, C); returns (T, C)."""
    X = np.asarray(X)
    T, C = X.shape
    _validate(C, n_head, n_kv_head)
    mask = causal_mask(T, T) if causal else None
    heads = _attention_rows(X @ Wq, X @ Wk, X @ Wv, n_head, n_kv_head, mask)
    return heads @ Wo


class KVCache:
    """The keys and values of every token seen so far (one layer)."""

    def __init__(self):
        self.keys = None
        self.values = None
        self.length = 0

    def append(self, k, v):
        k = np.array(k)
        v = np.array(v)
        if self.keys is None:
            self.keys, self.values = k, v
        else:
            self.keys = np.concatenate((self.keys, k), axis=1)
            self.values = np.concatenate((self.values, v), axis=1)
        self.length += k.shape[1]

    def __len__(self):
        return self.length


def decode_step(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    """Attention for t new tokens x, shape (t, C), that follow everything in cache."""
    x = np.asarray(x)
    t, C = x.shape
    _validate(C, n_head, n_kv_head)
    d_head = C // n_head
    Kx, Vx = x @ Wk, x @ Wv
    k_new = np.stack([Kx[:, g * d_head:(g + 1) * d_head] for g in range(n_kv_head)])
    v_new = np.stack([Vx[:, g * d_head:(g + 1) * d_head] for g in range(n_kv_head)])
    cache.append(k_new, v_new)
    S = len(cache)
    # back to (S, n_kv_head * d_head) so the same row loop serves both paths
    K_all = np.concatenate([cache.keys[g] for g in range(n_kv_head)], axis=1)
    V_all = np.concatenate([cache.values[g] for g in range(n_kv_head)], axis=1)
    heads = _attention_rows(x @ Wq, K_all, V_all, n_head, n_kv_head, causal_mask(t, S))
    return heads @ Wo


def kv_cache_bytes(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    """Bytes a KV cache needs: keys AND values. Returns an int."""
    total = 1
    for n in (2, n_layers, n_kv_head, d_head, seq_len, batch, bytes_per_value):
        total *= int(n)
    return total
