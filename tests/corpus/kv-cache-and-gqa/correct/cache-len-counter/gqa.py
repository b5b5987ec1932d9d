"""MISTAKE: len(cache) returns a counter kept by append, so it is wrong when keys and values are set directly.
Affects: KVCache.__init__, KVCache.append, KVCache.__len__.

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
    heads = []
    for g in range(x.shape[0]):
        for _ in range(n_rep):
            heads.append(x[g])
    if not heads:
        return np.zeros((0,) + x.shape[1:], dtype=x.dtype)
    return np.stack(heads, axis=0)


def causal_mask(T, S):
    """The (T, S) causal mask of T queries that are the LAST T of S positions.

    Query i sits at position i + (S - T), so it may look at key j when j <= i + (S - T):
    the mask is aligned bottom-right. With T == S it is the usual lower triangle.
    """
    mask = np.zeros((T, S), dtype=bool)
    offset = S - T
    for i in range(T):
        for j in range(S):
            if j <= i + offset:
                mask[i, j] = True
    return mask


def _check(C, n_head, n_kv_head):
    if n_head < 1 or n_kv_head < 1:
        raise ValueError("n_head and n_kv_head must be positive")
    if n_head % n_kv_head != 0:
        raise ValueError(f"n_kv_head={n_kv_head} does not divide n_head={n_head}")
    if C % n_head != 0:
        raise ValueError(f"n_head={n_head} does not divide C={C}")


def _attend(q_all, k_all, v_all, mask, n_head, n_kv_head):
    """q_all (t, C), k_all / v_all (S, n_kv_head * d_head), mask (t, S) or None -> (t, C)."""
    t, C = q_all.shape
    S = k_all.shape[0]
    d_head = C // n_head
    n_rep = n_head // n_kv_head
    scale = 1.0 / math.sqrt(d_head)
    out = np.zeros((t, C), dtype=np.result_type(q_all, k_all, v_all))
    for h in range(n_head):
        g = h // n_rep
        q = q_all[:, h * d_head:(h + 1) * d_head]
        k = k_all[:, g * d_head:(g + 1) * d_head]
        v = v_all[:, g * d_head:(g + 1) * d_head]
        for i in range(t):
            scores = np.full(S, -np.inf)
            for j in range(S):
                if mask is None or mask[i, j]:
                    scores[j] = np.dot(q[i], k[j]) * scale
            w = softmax(scores)
            row = np.zeros(d_head)
            for j in range(S):
                row = row + w[j] * v[j]
            out[i, h * d_head:(h + 1) * d_head] = row
    return out


def grouped_query_attention(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    """Grouped-query self-attention of X, shape (T, C); returns (T, C).

    n_head query heads share n_kv_head heads of keys and values, n_head // n_kv_head each.
    n_kv_head == n_head is multi-head attention; n_kv_head == 1 is multi-query attention.
    Raise ValueError when n_head % n_kv_head != 0 or C % n_head != 0.
    """
    X = np.asarray(X)
    T, C = X.shape
    _check(C, n_head, n_kv_head)
    mask = causal_mask(T, T) if causal else None
    heads = _attend(X @ Wq, X @ Wk, X @ Wv, mask, n_head, n_kv_head)
    return heads @ Wo


class KVCache:
    """The keys and values of every token seen so far (one layer).

    ``KVCache()`` starts empty: ``len(cache) == 0`` and ``keys`` and ``values`` are None.
    ``append(k, v)`` takes (n_kv_head, t, d_head) arrays and grows ``keys`` and ``values``
    along t, so they are (n_kv_head, S, d_head) with S = len(cache).
    """

    def __init__(self):
        self.keys = None
        self.values = None
        self.n_tokens = 0

    def append(self, k, v):
        k = np.asarray(k)
        v = np.asarray(v)
        self.n_tokens += k.shape[1]
        if self.keys is None:
            self.keys = k.copy()
            self.values = v.copy()
        else:
            self.keys = np.concatenate([self.keys, k], axis=1)
            self.values = np.concatenate([self.values, v], axis=1)

    def __len__(self):
        return self.n_tokens


def decode_step(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    """Attention for t new tokens x, shape (t, C), that follow everything in cache.

    Project x, append the new tokens' keys and values (n_kv_head, t, d_head) to the cache,
    then let the new queries attend over everything cached with causal_mask(t, len(cache)).
    Returns the new tokens' outputs, shape (t, C): the same rows that the full causal
    grouped_query_attention gives for these positions.
    """
    x = np.asarray(x)
    t, C = x.shape
    _check(C, n_head, n_kv_head)
    d_head = C // n_head
    q = x @ Wq
    k_new = x @ Wk
    v_new = x @ Wv
    # split into kv heads: (n_kv_head, t, d_head)
    k_heads = np.zeros((n_kv_head, t, d_head), dtype=k_new.dtype)
    v_heads = np.zeros((n_kv_head, t, d_head), dtype=v_new.dtype)
    for g in range(n_kv_head):
        k_heads[g] = k_new[:, g * d_head:(g + 1) * d_head]
        v_heads[g] = v_new[:, g * d_head:(g + 1) * d_head]
    cache.append(k_heads, v_heads)
    S = len(cache)
    # back to (S, n_kv_head * d_head) columns for _attend
    k_all = np.concatenate([cache.keys[g] for g in range(n_kv_head)], axis=1)
    v_all = np.concatenate([cache.values[g] for g in range(n_kv_head)], axis=1)
    heads = _attend(q, k_all, v_all, causal_mask(t, S), n_head, n_kv_head)
    return heads @ Wo


def kv_cache_bytes(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    """Bytes a KV cache needs: keys AND values, for every layer, kv head, position and
    sequence of the batch. Returns an int."""
    total = 2
    for factor in (n_layers, n_kv_head, d_head, seq_len, batch, bytes_per_value):
        total *= int(factor)
    return total
