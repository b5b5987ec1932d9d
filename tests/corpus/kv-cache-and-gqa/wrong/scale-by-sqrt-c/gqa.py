"""MISTAKE: the scores are divided by sqrt(C) (the model width) instead of sqrt(d_head).
Affects: _attend, used by grouped_query_attention and decode_step.

Grouped-query attention and a KV cache, in NumPy.
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
    if n_rep == 1:
        return x.copy()
    return np.repeat(x, n_rep, axis=0)


def causal_mask(T, S):
    """The (T, S) bottom-right aligned causal mask: True where j <= i + (S - T)."""
    i = np.arange(T)[:, None]
    j = np.arange(S)[None, :]
    return j <= i + (S - T)


def _check_heads(C, n_head, n_kv_head):
    if n_head <= 0 or n_kv_head <= 0:
        raise ValueError("n_head and n_kv_head must be positive")
    if n_head % n_kv_head != 0:
        raise ValueError(f"n_kv_head={n_kv_head} does not divide n_head={n_head}")
    if C % n_head != 0:
        raise ValueError(f"n_head={n_head} does not divide C={C}")
    return C // n_head, n_head // n_kv_head


def _split(M, n_heads, d_head):
    """(T, n_heads * d_head) -> (n_heads, T, d_head), head g = columns g*d:(g+1)*d."""
    T = M.shape[0]
    return M.reshape(T, n_heads, d_head).transpose(1, 0, 2)


def _attend(q, k, v, mask):
    """q (H, t, d), k and v (H, S, d), mask (t, S) or None -> (t, H*d)."""
    H, t, d = q.shape
    heads = []
    for h in range(H):
        scores = q[h] @ k[h].T / np.sqrt(H * d)  # sqrt(C)
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        heads.append(softmax(scores) @ v[h])
    return np.concatenate(heads, axis=-1)


def grouped_query_attention(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    """Grouped-query self-attention of X, shape (T, C); returns (T, C)."""
    X = np.asarray(X)
    T, C = X.shape
    d_head, n_rep = _check_heads(C, n_head, n_kv_head)
    q = _split(X @ Wq, n_head, d_head)
    k = repeat_kv(_split(X @ Wk, n_kv_head, d_head), n_rep)
    v = repeat_kv(_split(X @ Wv, n_kv_head, d_head), n_rep)
    mask = causal_mask(T, T) if causal else None
    return _attend(q, k, v, mask) @ Wo


class KVCache:
    """The keys and values of every token seen so far (one layer), kept as a list of chunks."""

    def __init__(self):
        self._k_chunks = []
        self._v_chunks = []
        self._len = 0

    @property
    def keys(self):
        if not self._k_chunks:
            return None
        return np.concatenate(self._k_chunks, axis=1)

    @property
    def values(self):
        if not self._v_chunks:
            return None
        return np.concatenate(self._v_chunks, axis=1)

    def append(self, k, v):
        k = np.array(k, copy=True)
        v = np.array(v, copy=True)
        if k.ndim != 3 or v.ndim != 3 or k.shape[1] != v.shape[1]:
            raise ValueError("k and v must be (n_kv_head, t, d_head) with the same t")
        self._k_chunks.append(k)
        self._v_chunks.append(v)
        self._len += k.shape[1]

    def __len__(self):
        return self._len


def decode_step(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    """Attention for t new tokens x, shape (t, C), that follow everything in cache."""
    x = np.asarray(x)
    t, C = x.shape
    d_head, n_rep = _check_heads(C, n_head, n_kv_head)
    q = _split(x @ Wq, n_head, d_head)
    cache.append(_split(x @ Wk, n_kv_head, d_head), _split(x @ Wv, n_kv_head, d_head))
    S = len(cache)
    k = repeat_kv(cache.keys, n_rep)
    v = repeat_kv(cache.values, n_rep)
    return _attend(q, k, v, causal_mask(t, S)) @ Wo


def kv_cache_bytes(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    """Bytes a KV cache needs: keys AND values, for every layer, kv head, position and
    sequence of the batch. Returns an int."""
    sizes = (n_layers, n_kv_head, d_head, seq_len, batch, bytes_per_value)
    total = 2
    for n in sizes:
        total *= int(n)  # Python ints: exact, no overflow of a NumPy int32 argument
    return total
