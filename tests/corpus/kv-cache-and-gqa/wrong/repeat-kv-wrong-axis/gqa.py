"""MISTAKE: repeat_kv repeats along axis 1 (the positions) instead of axis 0 (the heads).
Affects: repeat_kv (and through it grouped_query_attention, decode_step).

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
    """Repeat each kv head n_rep times: (n_kv_head, T, d) -> (n_kv_head * n_rep, T, d).

    Head h of the result is head h // n_rep of x, so copies of one head sit next to each
    other: [k0, k0, k1, k1] for two kv heads and n_rep = 2.
    """
    return np.repeat(np.asarray(x), n_rep, axis=1)


def causal_mask(T, S):
    """The (T, S) causal mask of T queries that are the LAST T of S positions.

    Query i sits at position i + (S - T), so it may look at key j when j <= i + (S - T):
    the mask is aligned bottom-right. With T == S it is the usual lower triangle.
    """
    return np.tril(np.ones((T, S), dtype=bool), k=S - T)


def _heads(a, n):
    t = a.shape[0]
    return np.ascontiguousarray(a.reshape(t, n, -1).swapaxes(0, 1))


def _attention(q, k, v, mask):
    """q (n_head, t, d), k, v (n_kv, S, d) float32; mask (t, S) bool or None."""
    n_head, t, d = q.shape
    n_rep = n_head // k.shape[0]
    k = repeat_kv(k, n_rep)
    v = repeat_kv(v, n_rep)
    q = q * DTYPE(1.0 / np.sqrt(d))          # scale q before the product
    scores = q @ k.swapaxes(-1, -2)           # (n_head, t, S)
    if mask is not None:
        bias = np.where(mask, DTYPE(0.0), DTYPE(-np.inf)).astype(DTYPE)
        scores = scores + bias                # additive mask
    w = softmax(scores).astype(DTYPE)
    out = w @ v                               # (n_head, t, d)
    return out.swapaxes(0, 1).reshape(t, n_head * d)


def _check_heads(C, n_head, n_kv_head):
    if not (n_kv_head >= 1 and n_head >= 1 and n_head % n_kv_head == 0):
        raise ValueError(f"n_kv_head ({n_kv_head}) must divide n_head ({n_head})")
    if C % n_head:
        raise ValueError(f"n_head ({n_head}) must divide C ({C})")


def grouped_query_attention(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    """Grouped-query self-attention of X, shape (T, C); returns (T, C).

    n_head query heads share n_kv_head heads of keys and values, n_head // n_kv_head each.
    n_kv_head == n_head is multi-head attention; n_kv_head == 1 is multi-query attention.
    Raise ValueError when n_head % n_kv_head != 0 or C % n_head != 0.
    """
    X = np.asarray(X, dtype=DTYPE)
    T, C = X.shape
    _check_heads(C, n_head, n_kv_head)
    Wq, Wk, Wv, Wo = (np.asarray(W, dtype=DTYPE) for W in (Wq, Wk, Wv, Wo))
    q = _heads(X @ Wq, n_head)
    k = _heads(X @ Wk, n_kv_head)
    v = _heads(X @ Wv, n_kv_head)
    out = _attention(q, k, v, causal_mask(T, T) if causal else None)
    return out @ Wo


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
        # stored as given (decode_step hands over float32); concatenate promotes if mixed
        k, v = np.asarray(k), np.asarray(v)
        if self.keys is not None:
            k = np.concatenate([np.asarray(self.keys), k], axis=1)
            v = np.concatenate([np.asarray(self.values), v], axis=1)
        self.keys, self.values = k, v

    def __len__(self):
        return 0 if self.keys is None else int(np.shape(self.keys)[1])


def decode_step(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    """Attention for t new tokens x, shape (t, C), that follow everything in cache.

    Project x, append the new tokens' keys and values (n_kv_head, t, d_head) to the cache,
    then let the new queries attend over everything cached with causal_mask(t, len(cache)).
    Returns the new tokens' outputs, shape (t, C): the same rows that the full causal
    grouped_query_attention gives for these positions.
    """
    x = np.asarray(x, dtype=DTYPE)
    t, C = x.shape
    _check_heads(C, n_head, n_kv_head)
    Wq, Wk, Wv, Wo = (np.asarray(W, dtype=DTYPE) for W in (Wq, Wk, Wv, Wo))
    q = _heads(x @ Wq, n_head)
    cache.append(_heads(x @ Wk, n_kv_head), _heads(x @ Wv, n_kv_head))
    keys = np.asarray(cache.keys, dtype=DTYPE)
    values = np.asarray(cache.values, dtype=DTYPE)
    out = _attention(q, keys, values, causal_mask(t, len(cache)))
    return out @ Wo


def kv_cache_bytes(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    """Bytes a KV cache needs: keys AND values, for every layer, kv head, position and
    sequence of the batch. Returns an int."""
    return 2 * n_layers * n_kv_head * d_head * seq_len * batch * bytes_per_value
