"""CORRECT: float32 throughout, np.einsum over grouped heads (n_kv_head, n_rep, ...) without repeating kv, q scaled before the product; the cache is a preallocated buffer that doubles its capacity.
Affects: repeat_kv, causal_mask, grouped_query_attention, KVCache, decode_step, kv_cache_bytes (all, alternative style).

Grouped-query attention and a KV cache, in NumPy.
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
    """(n_kv_head, T, d) -> (n_kv_head * n_rep, T, d); head h is head h // n_rep of x."""
    x = np.asarray(x)
    G, T, d = x.shape
    out = np.broadcast_to(x[:, None, :, :], (G, n_rep, T, d))
    return out.reshape(G * n_rep, T, d)  # reshape of a broadcast view copies


def causal_mask(T, S):
    """(T, S) bool, True where j <= i + (S - T) (aligned bottom-right)."""
    return np.tri(T, S, k=S - T, dtype=bool)


def _sizes(C, n_head, n_kv_head):
    if not (isinstance(n_head, (int, np.integer)) and isinstance(n_kv_head, (int, np.integer))):
        raise ValueError("head counts must be integers")
    if n_head < 1 or n_kv_head < 1 or n_head % n_kv_head:
        raise ValueError("n_kv_head must divide n_head")
    if C % n_head:
        raise ValueError("n_head must divide C")
    return C // n_head, n_head // n_kv_head


def _project(x, Wq, Wk, Wv, n_head, n_kv_head):
    """float32 projections; q as (G, R, t, d) grouped by kv head, k and v as (G, t, d)."""
    x = np.asarray(x, dtype=np.float32)
    t, C = x.shape
    d, R = _sizes(C, n_head, n_kv_head)
    G = n_kv_head
    q = np.einsum("tc,cgrd->grtd", x, np.asarray(Wq, np.float32).reshape(C, G, R, d))
    k = np.einsum("tc,cgd->gtd", x, np.asarray(Wk, np.float32).reshape(C, G, d))
    v = np.einsum("tc,cgd->gtd", x, np.asarray(Wv, np.float32).reshape(C, G, d))
    return q, k, v, d


def _attend(q, k, v, mask, Wo):
    """q (G, R, t, d); k, v (G, S, d); mask (t, S) or None -> (t, C) after Wo."""
    G, R, t, d = q.shape
    q = q * np.float32(1.0 / math.sqrt(d))
    scores = np.einsum("grtd,gsd->grts", q, k)
    if mask is not None:
        scores = np.where(mask, scores, np.float32(-np.inf))
    w = softmax(scores)
    heads = np.einsum("grts,gsd->tgrd", w, v)  # head h = g * R + r
    return heads.reshape(t, G * R * d) @ np.asarray(Wo, np.float32)


def grouped_query_attention(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    """Grouped-query self-attention of X, shape (T, C); returns (T, C)."""
    q, k, v, _ = _project(X, Wq, Wk, Wv, n_head, n_kv_head)
    T = q.shape[2]
    return _attend(q, k, v, causal_mask(T, T) if causal else None, Wo)


class KVCache:
    """Keys and values in a preallocated buffer that grows by doubling; keys and values are
    read-only properties returning the filled part."""

    def __init__(self):
        self._kbuf = None
        self._vbuf = None
        self._n = 0

    @property
    def keys(self):
        return None if self._kbuf is None else self._kbuf[:, : self._n].copy()

    @property
    def values(self):
        return None if self._vbuf is None else self._vbuf[:, : self._n].copy()

    def append(self, k, v):
        k = np.asarray(k)
        v = np.asarray(v)
        t = k.shape[1]
        if v.shape[1] != t:
            raise ValueError("k and v must hold the same number of positions")
        if self._kbuf is None:
            cap = max(4, t)
            self._kbuf = np.empty((k.shape[0], cap, k.shape[2]), dtype=k.dtype)
            self._vbuf = np.empty((v.shape[0], cap, v.shape[2]), dtype=v.dtype)
        need = self._n + t
        if need > self._kbuf.shape[1]:
            cap = max(need, 2 * self._kbuf.shape[1])
            for name in ("_kbuf", "_vbuf"):
                old = getattr(self, name)
                new = np.empty((old.shape[0], cap, old.shape[2]),
                               dtype=np.result_type(old, k if name == "_kbuf" else v))
                new[:, : self._n] = old[:, : self._n]
                setattr(self, name, new)
        elif np.result_type(self._kbuf, k) != self._kbuf.dtype or \
                np.result_type(self._vbuf, v) != self._vbuf.dtype:
            self._kbuf = self._kbuf.astype(np.result_type(self._kbuf, k))
            self._vbuf = self._vbuf.astype(np.result_type(self._vbuf, v))
        self._kbuf[:, self._n: need] = k
        self._vbuf[:, self._n: need] = v
        self._n = need

    def __len__(self):
        return self._n


def decode_step(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    """Attention for t new tokens x, shape (t, C), that follow everything in cache."""
    q, k, v, _ = _project(x, Wq, Wk, Wv, n_head, n_kv_head)
    cache.append(k, v)
    t = q.shape[2]
    S = len(cache)
    K = np.asarray(cache.keys, dtype=np.float32)
    V = np.asarray(cache.values, dtype=np.float32)
    return _attend(q, K, V, causal_mask(t, S), Wo)


def kv_cache_bytes(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    """Bytes of keys AND values for every layer, kv head, position and sequence. An int."""
    return math.prod(int(n) for n in (2, n_layers, n_kv_head, d_head, seq_len, batch,
                                      bytes_per_value))
