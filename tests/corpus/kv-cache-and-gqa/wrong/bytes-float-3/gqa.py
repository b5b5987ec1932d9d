"""MISTAKE: kv_cache_bytes counts bits and converts with / 8, returning a float instead of an int.
Affects: kv_cache_bytes.

Conventions used throughout:

- A mask is a boolean array; True means "may attend".
- Weight matrices are in ``x @ W`` layout. With d_head = C // n_head:
  Wq and Wo are (C, C); Wk and Wv are (C, n_kv_head * d_head).
- Query head h owns columns ``h * d_head : (h + 1) * d_head`` of ``X @ Wq``; kv head g owns
  the same columns of ``X @ Wk`` and ``X @ Wv``. Query head h uses kv head ``h // n_rep``,
  where n_rep = n_head // n_kv_head.
- A query row whose keys are all masked gets weights 0 and output 0.
"""

import math

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
    idx = np.arange(x.shape[0] * n_rep) // n_rep
    return x[idx]


def causal_mask(T, S):
    """The (T, S) causal mask of T queries that are the LAST T of S positions."""
    rows = np.arange(T).reshape(-1, 1)
    cols = np.arange(S).reshape(1, -1)
    return (cols - rows) <= (S - T)


def _project(x, Wq, Wk, Wv, n_head, n_kv_head):
    x = np.asarray(x)
    t, C = x.shape
    if n_kv_head <= 0 or n_head <= 0 or n_head % n_kv_head != 0:
        raise ValueError(f"n_kv_head ({n_kv_head}) must divide n_head ({n_head})")
    if C % n_head != 0:
        raise ValueError(f"n_head ({n_head}) must divide C ({C})")
    d = C // n_head
    q = (x @ Wq).reshape(t, n_head, d).transpose(1, 0, 2)
    k = (x @ Wk).reshape(t, n_kv_head, d).transpose(1, 0, 2)
    v = (x @ Wv).reshape(t, n_kv_head, d).transpose(1, 0, 2)
    return q, k, v


def _group_attention(q, k, v, mask):
    """q (H, t, d), k/v (G, S, d) -> (t, H*d), query heads g*n_rep..(g+1)*n_rep-1 use group g."""
    H, t, d = q.shape
    G = k.shape[0]
    n_rep = H // G
    out = np.empty((t, H, d), dtype=np.result_type(q, k, v))
    for g in range(G):
        qs = q[g * n_rep:(g + 1) * n_rep]               # (n_rep, t, d)
        s = (qs @ k[g].T) / math.sqrt(d)                 # (n_rep, t, S)
        if mask is not None:
            s = np.where(mask[None], s, -np.inf)
        out[:, g * n_rep:(g + 1) * n_rep] = (softmax(s) @ v[g]).transpose(1, 0, 2)
    return out.reshape(t, H * d)


def grouped_query_attention(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    """Grouped-query self-attention of X, shape (T, C); returns (T, C)."""
    q, k, v = _project(X, Wq, Wk, Wv, n_head, n_kv_head)
    T = q.shape[1]
    return _group_attention(q, k, v, causal_mask(T, T) if causal else None) @ Wo


class KVCache:
    """The keys and values of every token seen so far (one layer), as lists of chunks."""

    __slots__ = ("_k_chunks", "_v_chunks")

    def __init__(self):
        self._k_chunks = []
        self._v_chunks = []

    def append(self, k, v):
        self._k_chunks.append(np.array(k))
        self._v_chunks.append(np.array(v))

    @property
    def keys(self):
        return np.concatenate(self._k_chunks, axis=1) if self._k_chunks else None

    @property
    def values(self):
        return np.concatenate(self._v_chunks, axis=1) if self._v_chunks else None

    def __len__(self):
        return sum(c.shape[1] for c in self._k_chunks)


def decode_step(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    """Attention for t new tokens x, shape (t, C), that follow everything in cache."""
    q, k, v = _project(x, Wq, Wk, Wv, n_head, n_kv_head)
    cache.append(k, v)
    t = q.shape[1]
    return _group_attention(q, cache.keys, cache.values, causal_mask(t, len(cache))) @ Wo


def kv_cache_bytes(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    """Bytes a KV cache needs: keys AND values. Returns an int."""
    bits = math.prod((2, n_layers, n_kv_head, d_head, seq_len, batch, bytes_per_value * 8))
    return bits / 8
