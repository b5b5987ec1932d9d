"""MISTAKE: heads are split with a.reshape(n, T, d) directly instead of reshape(T, n, d) then transpose, mixing positions and heads.
Affects: grouped_query_attention, decode_step (and the cache contents).

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
    """Repeat each kv head n_rep times: (n_kv_head, T, d) -> (n_kv_head * n_rep, T, d).

    Head h of the result is head h // n_rep of x, so copies of one head sit next to each
    other: [k0, k0, k1, k1] for two kv heads and n_rep = 2.
    """
    x = np.asarray(x)
    n_kv, T, d = x.shape
    # (n_kv, 1, T, d) -> (n_kv, n_rep, T, d) -> (n_kv * n_rep, T, d)
    return np.broadcast_to(x[:, None], (n_kv, n_rep, T, d)).reshape(n_kv * n_rep, T, d)


def causal_mask(T, S):
    """The (T, S) causal mask of T queries that are the LAST T of S positions.

    Query i sits at position i + (S - T), so it may look at key j when j <= i + (S - T):
    the mask is aligned bottom-right. With T == S it is the usual lower triangle.
    """
    i = np.arange(T)[:, None]
    j = np.arange(S)[None, :]
    return j <= i + (S - T)


def _validate(C, n_head, n_kv_head):
    if n_kv_head <= 0 or n_head <= 0 or n_head % n_kv_head != 0:
        raise ValueError("n_kv_head must divide n_head")
    if C % n_head != 0:
        raise ValueError("n_head must divide C")


def _split(a, n):
    """(T, n * d) -> (n, T, d)."""
    T, width = a.shape
    return a.reshape(n, T, width // n)


def _grouped_attend(q, k, v, mask):
    """q (n_head, t, d), k / v (n_kv, S, d), mask (t, S) bool or None -> (t, n_head * d)."""
    n_head, t, d = q.shape
    n_kv = k.shape[0]
    n_rep = n_head // n_kv
    qg = q.reshape(n_kv, n_rep, t, d)  # query head h = g * n_rep + r
    scores = np.einsum("grtd,gsd->grts", qg, k) / np.sqrt(d)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    w = softmax(scores)
    out = np.einsum("grts,gsd->grtd", w, v).reshape(n_head, t, d)
    return np.einsum("htd->thd", out).reshape(t, n_head * d)


def grouped_query_attention(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    """Grouped-query self-attention of X, shape (T, C); returns (T, C).

    n_head query heads share n_kv_head heads of keys and values, n_head // n_kv_head each.
    n_kv_head == n_head is multi-head attention; n_kv_head == 1 is multi-query attention.
    Raise ValueError when n_head % n_kv_head != 0 or C % n_head != 0.
    """
    X = np.asarray(X)
    T, C = X.shape
    _validate(C, n_head, n_kv_head)
    q = _split(X @ Wq, n_head)
    k = _split(X @ Wk, n_kv_head)
    v = _split(X @ Wv, n_kv_head)
    mask = causal_mask(T, T) if causal else None
    return _grouped_attend(q, k, v, mask) @ Wo


class KVCache:
    """The keys and values of every token seen so far (one layer).

    ``KVCache()`` starts empty: ``len(cache) == 0`` and ``keys`` and ``values`` are None.
    ``append(k, v)`` takes (n_kv_head, t, d_head) arrays and grows ``keys`` and ``values``
    along t, so they are (n_kv_head, S, d_head) with S = len(cache).
    """

    def __init__(self):
        self.keys = None
        self.values = None

    def append(self, k, v):
        k, v = np.asarray(k), np.asarray(v)
        self.keys = k if self.keys is None else np.concatenate((self.keys, k), axis=-2)
        self.values = v if self.values is None else np.concatenate((self.values, v), axis=-2)

    def __len__(self):
        return 0 if self.keys is None else self.keys.shape[-2]


def decode_step(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    """Attention for t new tokens x, shape (t, C), that follow everything in cache.

    Project x, append the new tokens' keys and values (n_kv_head, t, d_head) to the cache,
    then let the new queries attend over everything cached with causal_mask(t, len(cache)).
    Returns the new tokens' outputs, shape (t, C): the same rows that the full causal
    grouped_query_attention gives for these positions.
    """
    x = np.asarray(x)
    t, C = x.shape
    _validate(C, n_head, n_kv_head)
    q = _split(x @ Wq, n_head)
    cache.append(_split(x @ Wk, n_kv_head), _split(x @ Wv, n_kv_head))
    mask = causal_mask(t, len(cache))
    return _grouped_attend(q, cache.keys, cache.values, mask) @ Wo


def kv_cache_bytes(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    """Bytes a KV cache needs: keys AND values, for every layer, kv head, position and
    sequence of the batch. Returns an int."""
    return int(np.prod([2, n_layers, n_kv_head, d_head, seq_len, batch, bytes_per_value],
                       dtype=object))
