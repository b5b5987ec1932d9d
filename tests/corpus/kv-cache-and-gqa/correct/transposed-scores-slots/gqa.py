"""CORRECT: scores built key-major as K @ Q^T then transposed; np.tri mask; per-group loop sharing one kv head; KVCache with __slots__; math.prod for bytes.
Affects: repeat_kv, causal_mask, grouped_query_attention, KVCache, decode_step, kv_cache_bytes.

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
    """Repeat each kv head n_rep times: (n_kv_head, T, d) -> (n_kv_head * n_rep, T, d).

    Head h of the result is head h // n_rep of x, so copies of one head sit next to each
    other: [k0, k0, k1, k1] for two kv heads and n_rep = 2.
    """
    x = np.asarray(x)
    return np.concatenate([np.repeat(x[g:g + 1], n_rep, axis=0) for g in range(x.shape[0])]
                          or [x[:0]], axis=0)


def causal_mask(T, S):
    """The (T, S) causal mask of T queries that are the LAST T of S positions.

    Query i sits at position i + (S - T), so it may look at key j when j <= i + (S - T):
    the mask is aligned bottom-right. With T == S it is the usual lower triangle.
    """
    return np.tri(T, S, k=S - T, dtype=bool)


def _dims(C, n_head, n_kv_head):
    if n_kv_head <= 0 or n_head % n_kv_head != 0:
        raise ValueError("n_kv_head does not divide n_head")
    if n_head <= 0 or C % n_head != 0:
        raise ValueError("n_head does not divide C")
    return C // n_head, n_head // n_kv_head


def _attend(Q, K, V, mask, n_kv_head, d_head, n_rep):
    """Q (t, n_head*d); K, V (n_kv, S, d) kv heads; mask (t, S) or None -> (t, n_head*d)."""
    t = Q.shape[0]
    out = np.empty((t, n_kv_head * n_rep * d_head), dtype=np.result_type(Q, K, V, float))
    for g in range(n_kv_head):
        k, v = K[g], V[g]                            # one kv head, shared by its group
        for r in range(n_rep):
            h = g * n_rep + r
            q = Q[:, h * d_head:(h + 1) * d_head]
            scores_T = (k @ q.T) / math.sqrt(d_head)  # (S, t): key-major
            scores = scores_T.T                       # (t, S)
            if mask is not None:
                scores = np.where(mask, scores, -np.inf)
            out[:, h * d_head:(h + 1) * d_head] = softmax(scores) @ v
    return out


def grouped_query_attention(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    """Grouped-query self-attention of X, shape (T, C); returns (T, C).

    n_head query heads share n_kv_head heads of keys and values, n_head // n_kv_head each.
    n_kv_head == n_head is multi-head attention; n_kv_head == 1 is multi-query attention.
    Raise ValueError when n_head % n_kv_head != 0 or C % n_head != 0.
    """
    X = np.asarray(X)
    T, C = X.shape
    d_head, n_rep = _dims(C, n_head, n_kv_head)
    K = (X @ Wk).reshape(T, n_kv_head, d_head).transpose(1, 0, 2)
    V = (X @ Wv).reshape(T, n_kv_head, d_head).transpose(1, 0, 2)
    mask = causal_mask(T, T) if causal else None
    return _attend(X @ Wq, K, V, mask, n_kv_head, d_head, n_rep) @ Wo


class KVCache:
    """The keys and values of every token seen so far (one layer).

    ``KVCache()`` starts empty: ``len(cache) == 0`` and ``keys`` and ``values`` are None.
    ``append(k, v)`` takes (n_kv_head, t, d_head) arrays and grows ``keys`` and ``values``
    along t, so they are (n_kv_head, S, d_head) with S = len(cache).
    """

    __slots__ = ("keys", "values")

    def __init__(self):
        self.keys = None
        self.values = None

    def append(self, k, v):
        stacked = [(self.keys, k), (self.values, v)]
        self.keys, self.values = (
            np.asarray(new) if old is None else np.concatenate([old, new], axis=1)
            for old, new in stacked
        )

    def __len__(self):
        return 0 if self.keys is None else int(np.shape(self.keys)[1])


def decode_step(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    """Attention for t new tokens x, shape (t, C), that follow everything in cache.

    Project x, append the new tokens' keys and values (n_kv_head, t, d_head) to the cache,
    then let the new queries attend over everything cached with causal_mask(t, len(cache)).
    Returns the new tokens' outputs, shape (t, C): the same rows that the full causal
    grouped_query_attention gives for these positions.
    """
    x = np.asarray(x)
    t, C = x.shape
    d_head, n_rep = _dims(C, n_head, n_kv_head)
    k_new = (x @ Wk).reshape(t, n_kv_head, d_head).transpose(1, 0, 2)
    v_new = (x @ Wv).reshape(t, n_kv_head, d_head).transpose(1, 0, 2)
    cache.append(k_new, v_new)
    K, V = np.asarray(cache.keys), np.asarray(cache.values)
    mask = causal_mask(t, len(cache))
    return _attend(x @ Wq, K, V, mask, n_kv_head, d_head, n_rep) @ Wo


def kv_cache_bytes(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    """Bytes a KV cache needs: keys AND values, for every layer, kv head, position and
    sequence of the batch. Returns an int."""
    return 2 * math.prod((n_layers, n_kv_head, d_head, seq_len, batch, bytes_per_value))
