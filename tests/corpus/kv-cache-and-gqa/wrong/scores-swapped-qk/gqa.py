"""MISTAKE: scores are computed as k @ q^T instead of q @ k^T (arguments swapped), so rows index keys and the softmax normalises over queries.
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

DTYPE = np.float32


def softmax(scores):
    """A stable softmax over the last axis; a row that is all -inf gets weights 0 (given)."""
    top = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1.0)


def repeat_kv(x, n_rep):
    """Repeat each kv head n_rep times: (n_kv_head, T, d) -> (n_kv_head * n_rep, T, d)."""
    x = np.asarray(x)
    G, T, d = x.shape
    out = np.empty((G * n_rep, T, d), dtype=x.dtype)
    for r in range(n_rep):
        out[r::n_rep] = x          # copy r of every head lands at g * n_rep + r
    return out


def causal_mask(T, S):
    """The (T, S) causal mask of T queries that are the LAST T of S positions."""
    return np.greater_equal.outer(np.arange(T) + (S - T), np.arange(S))


def _check(C, n_head, n_kv_head):
    if n_head < 1 or n_kv_head < 1 or n_head % n_kv_head != 0:
        raise ValueError("n_head must be a multiple of n_kv_head")
    if C % n_head != 0:
        raise ValueError("C must be a multiple of n_head")


def _split(Y, n):
    t = Y.shape[0]
    return np.ascontiguousarray(Y.reshape(t, n, -1).swapaxes(0, 1))


def _attend(q, k, v, mask, n_rep):
    H, t, d = q.shape
    k = repeat_kv(k, n_rep)
    v = repeat_kv(v, n_rep)
    scores = np.matmul(k, q.swapaxes(-1, -2))
    scores *= DTYPE(1.0 / np.sqrt(d))
    if mask is not None:
        scores[:, ~mask] = -np.inf
    out = np.matmul(softmax(scores), v)
    return out.swapaxes(0, 1).reshape(t, H * d)


def grouped_query_attention(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    """Grouped-query self-attention of X, shape (T, C); returns (T, C)."""
    X = np.asarray(X, dtype=DTYPE)
    T, C = X.shape
    _check(C, n_head, n_kv_head)
    Wq, Wk, Wv, Wo = (np.asarray(W, dtype=DTYPE) for W in (Wq, Wk, Wv, Wo))
    q, k, v = _split(X @ Wq, n_head), _split(X @ Wk, n_kv_head), _split(X @ Wv, n_kv_head)
    mask = causal_mask(T, T) if causal else None
    return _attend(q, k, v, mask, n_head // n_kv_head) @ Wo


class KVCache:
    """The keys and values of every token seen so far (one layer), in a growing buffer."""

    def __init__(self):
        self._k = None
        self._v = None
        self._n = 0

    def _grow(self, need, like_k, like_v):
        if self._k is None:
            cap = max(16, need)
            G, _, d = like_k.shape
            self._k = np.empty((G, cap, d), dtype=DTYPE)
            self._v = np.empty((like_v.shape[0], cap, like_v.shape[2]), dtype=DTYPE)
            return
        cap = self._k.shape[1]
        if need <= cap:
            return
        while cap < need:
            cap *= 2
        k_new = np.empty((self._k.shape[0], cap, self._k.shape[2]), dtype=DTYPE)
        v_new = np.empty((self._v.shape[0], cap, self._v.shape[2]), dtype=DTYPE)
        k_new[:, :self._n] = self._k[:, :self._n]
        v_new[:, :self._n] = self._v[:, :self._n]
        self._k, self._v = k_new, v_new

    def append(self, k, v):
        k = np.asarray(k)
        v = np.asarray(v)
        t = k.shape[1]
        self._grow(self._n + t, k, v)
        self._k[:, self._n:self._n + t] = k
        self._v[:, self._n:self._n + t] = v
        self._n += t

    @property
    def keys(self):
        return None if self._k is None else self._k[:, :self._n]

    @property
    def values(self):
        return None if self._v is None else self._v[:, :self._n]

    def __len__(self):
        return self._n


def decode_step(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    """Attention for t new tokens x, shape (t, C), that follow everything in cache."""
    x = np.asarray(x, dtype=DTYPE)
    t, C = x.shape
    _check(C, n_head, n_kv_head)
    Wq, Wk, Wv, Wo = (np.asarray(W, dtype=DTYPE) for W in (Wq, Wk, Wv, Wo))
    q = _split(x @ Wq, n_head)
    cache.append(_split(x @ Wk, n_kv_head), _split(x @ Wv, n_kv_head))
    mask = causal_mask(t, len(cache))
    return _attend(q, cache.keys, cache.values, mask, n_head // n_kv_head) @ Wo


def kv_cache_bytes(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    """Bytes a KV cache needs: keys AND values. Returns an int."""
    return int(np.prod([2, n_layers, n_kv_head, d_head, seq_len, batch, bytes_per_value],
                       dtype=np.int64))
