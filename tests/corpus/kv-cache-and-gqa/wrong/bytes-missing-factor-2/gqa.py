"""MISTAKE: kv_cache_bytes counts only the keys (forgets the factor 2 for keys AND values).
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
    which = np.arange(x.shape[0] * n_rep) // n_rep
    return np.take(x, which, axis=0)


def causal_mask(T, S):
    """The (T, S) causal mask of T queries that are the LAST T of S positions.

    Query i sits at position i + (S - T), so it may look at key j when j <= i + (S - T):
    the mask is aligned bottom-right. With T == S it is the usual lower triangle.
    """
    position = np.arange(S - T, S)          # absolute position of each query
    return np.arange(S)[None, :] <= position[:, None]


def _heads_or_raise(C, n_head, n_kv_head):
    if n_kv_head < 1 or n_head < 1:
        raise ValueError("need at least one head")
    if n_head % n_kv_head:
        raise ValueError("n_kv_head must divide n_head")
    if C % n_head:
        raise ValueError("n_head must divide C")
    return C // n_head, n_head // n_kv_head


def _to_heads(a, n_heads, d_head):
    """(t, n_heads * d_head) -> (n_heads, t, d_head)."""
    return np.stack([a[:, h * d_head:(h + 1) * d_head] for h in range(n_heads)])


def _attention(q, k, v, mask, n_rep):
    """q (n_head, t, d); k, v (n_kv, S, d); returns (t, n_head * d)."""
    k = repeat_kv(k, n_rep)
    v = repeat_kv(v, n_rep)
    d = q.shape[-1]
    scores = np.einsum("htd,hsd->hts", q, k)
    scores = scores / np.sqrt(d)            # scale after the product
    if mask is not None:
        scores = np.where(mask[None], scores, -np.inf)
    out = np.einsum("hts,hsd->htd", softmax(scores), v)
    return np.concatenate(list(out), axis=-1)   # heads side by side: (t, n_head * d)


def grouped_query_attention(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    """Grouped-query self-attention of X, shape (T, C); returns (T, C).

    n_head query heads share n_kv_head heads of keys and values, n_head // n_kv_head each.
    n_kv_head == n_head is multi-head attention; n_kv_head == 1 is multi-query attention.
    Raise ValueError when n_head % n_kv_head != 0 or C % n_head != 0.
    """
    X = np.asarray(X)
    T, C = X.shape
    d_head, n_rep = _heads_or_raise(C, n_head, n_kv_head)
    q = _to_heads(X @ Wq, n_head, d_head)
    k = _to_heads(X @ Wk, n_kv_head, d_head)
    v = _to_heads(X @ Wv, n_kv_head, d_head)
    mask = causal_mask(T, T) if causal else None
    return _attention(q, k, v, mask, n_rep) @ Wo


class KVCache:
    """The keys and values of every token seen so far (one layer).

    ``KVCache()`` starts empty: ``len(cache) == 0`` and ``keys`` and ``values`` are None.
    ``append(k, v)`` takes (n_kv_head, t, d_head) arrays and grows ``keys`` and ``values``
    along t, so they are (n_kv_head, S, d_head) with S = len(cache).

    Appended chunks are kept in lists and joined lazily (and the join is memoised).
    """

    def __init__(self):
        self._k_chunks = []
        self._v_chunks = []

    @staticmethod
    def _joined(chunks):
        if not chunks:
            return None
        if len(chunks) > 1:
            chunks[:] = [np.concatenate(chunks, axis=1)]
        return chunks[0]

    @property
    def keys(self):
        return self._joined(self._k_chunks)

    @keys.setter
    def keys(self, value):
        self._k_chunks = [] if value is None else [np.asarray(value)]

    @property
    def values(self):
        return self._joined(self._v_chunks)

    @values.setter
    def values(self, value):
        self._v_chunks = [] if value is None else [np.asarray(value)]

    def append(self, k, v):
        self._k_chunks.append(np.array(k))
        self._v_chunks.append(np.array(v))

    def __len__(self):
        return sum(chunk.shape[1] for chunk in self._k_chunks)


def decode_step(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    """Attention for t new tokens x, shape (t, C), that follow everything in cache.

    Project x, append the new tokens' keys and values (n_kv_head, t, d_head) to the cache,
    then let the new queries attend over everything cached with causal_mask(t, len(cache)).
    Returns the new tokens' outputs, shape (t, C): the same rows that the full causal
    grouped_query_attention gives for these positions.
    """
    x = np.asarray(x)
    t, C = x.shape
    d_head, n_rep = _heads_or_raise(C, n_head, n_kv_head)
    q = _to_heads(x @ Wq, n_head, d_head)
    cache.append(_to_heads(x @ Wk, n_kv_head, d_head), _to_heads(x @ Wv, n_kv_head, d_head))
    S = len(cache)
    return _attention(q, cache.keys, cache.values, causal_mask(t, S), n_rep) @ Wo


def kv_cache_bytes(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    """Bytes a KV cache needs: keys AND values, for every layer, kv head, position and
    sequence of the batch. Returns an int."""
    keys_bytes = n_layers * n_kv_head * d_head * seq_len * batch * bytes_per_value
    values_bytes = keys_bytes
    return int(keys_bytes)
