"""MISTAKE: repeat_kv uses np.tile, so the kv heads come out [k0, k1, k0, k1] instead of [k0, k0, k1, k1] (right only for MQA or MHA).
Affects: repeat_kv (and so grouped_query_attention, decode_step).

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
    return np.tile(np.asarray(x), (n_rep, 1, 1))


def causal_mask(T, S):
    """The (T, S) causal mask of T queries that are the LAST T of S positions."""
    i = np.arange(T)[:, None]
    j = np.arange(S)[None, :]
    return j <= i + (S - T)


def _check(C, n_head, n_kv_head):
    if n_head <= 0 or n_kv_head <= 0:
        raise ValueError("n_head and n_kv_head must be positive")
    if n_head % n_kv_head != 0:
        raise ValueError(f"n_kv_head={n_kv_head} does not divide n_head={n_head}")
    if C % n_head != 0:
        raise ValueError(f"n_head={n_head} does not divide C={C}")


def _split(Y, n):
    """(T, n * d) -> (n, T, d)."""
    T, width = Y.shape
    return Y.reshape(T, n, width // n).transpose(1, 0, 2)


def _attend(q, k, v, mask):
    """q (H, T, d), k/v (H, S, d), mask (T, S) or None -> (H, T, d)."""
    d_head = q.shape[-1]
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(d_head)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return softmax(scores) @ v


def _merge(o):
    """(H, T, d) -> (T, H * d)."""
    H, T, d = o.shape
    return o.transpose(1, 0, 2).reshape(T, H * d)


def grouped_query_attention(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    """Grouped-query self-attention of X, shape (T, C); returns (T, C)."""
    X = np.asarray(X)
    T, C = X.shape
    _check(C, n_head, n_kv_head)
    n_rep = n_head // n_kv_head
    q = _split(X @ Wq, n_head)
    k = repeat_kv(_split(X @ Wk, n_kv_head), n_rep)
    v = repeat_kv(_split(X @ Wv, n_kv_head), n_rep)
    mask = causal_mask(T, T) if causal else None
    return _merge(_attend(q, k, v, mask)) @ Wo


class KVCache:
    """The keys and values of every token seen so far (one layer)."""

    def __init__(self):
        self.keys = None
        self.values = None

    def append(self, k, v):
        k = np.asarray(k)
        v = np.asarray(v)
        if self.keys is None:
            self.keys = k.copy()
            self.values = v.copy()
        else:
            self.keys = np.concatenate([self.keys, k], axis=1)
            self.values = np.concatenate([self.values, v], axis=1)

    def __len__(self):
        return 0 if self.keys is None else self.keys.shape[1]


def decode_step(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    """Attention for t new tokens x, shape (t, C), that follow everything in cache."""
    x = np.asarray(x)
    t, C = x.shape
    _check(C, n_head, n_kv_head)
    n_rep = n_head // n_kv_head
    q = _split(x @ Wq, n_head)
    cache.append(_split(x @ Wk, n_kv_head), _split(x @ Wv, n_kv_head))
    k = repeat_kv(cache.keys, n_rep)
    v = repeat_kv(cache.values, n_rep)
    mask = causal_mask(t, len(cache))
    return _merge(_attend(q, k, v, mask)) @ Wo


def kv_cache_bytes(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    """Bytes a KV cache needs: keys AND values. Returns an int."""
    return int(2 * n_layers * n_kv_head * d_head * seq_len * batch * bytes_per_value)
