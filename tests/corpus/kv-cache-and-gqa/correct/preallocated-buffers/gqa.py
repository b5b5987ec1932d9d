"""CORRECT: KVCache with a preallocated, doubling buffer exposed through keys/values properties; in-place ops (out=) in attention; mask from ~np.triu.
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
    out = np.empty((n_kv * n_rep, T, d), dtype=x.dtype)
    for r in range(n_rep):
        out[r::n_rep] = x          # rows g*n_rep + r are head g
    return out


def causal_mask(T, S):
    """The (T, S) causal mask of T queries that are the LAST T of S positions.

    Query i sits at position i + (S - T), so it may look at key j when j <= i + (S - T):
    the mask is aligned bottom-right. With T == S it is the usual lower triangle.
    """
    # strictly-future keys are j >= i + (S - T) + 1; everything else may be attended
    return ~np.triu(np.ones((T, S), dtype=bool), k=S - T + 1)


def _check(C, n_head, n_kv_head):
    if n_kv_head < 1 or n_head % n_kv_head != 0:
        raise ValueError("n_head must be a multiple of n_kv_head")
    if n_head < 1 or C % n_head != 0:
        raise ValueError("C must be a multiple of n_head")


def _attend_into(out, q, k, v, mask):
    """Write attention of q (t, n_head*d) over k, v (n_kv, S, d) into out (t, n_head*d)."""
    n_kv, S, d = k.shape
    t = q.shape[0]
    n_head = q.shape[1] // d
    n_rep = n_head // n_kv
    scale = 1.0 / np.sqrt(d)
    scores = np.empty((t, S), dtype=np.result_type(q, k, float))
    for h in range(n_head):
        g = h // n_rep
        cols = slice(h * d, (h + 1) * d)
        np.matmul(q[:, cols], k[g].T, out=scores)
        np.multiply(scores, scale, out=scores)
        if mask is not None:
            scores[~mask] = -np.inf
        w = softmax(scores)
        np.matmul(w, v[g], out=out[:, cols])
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
    d = C // n_head
    q = X @ Wq
    k = (X @ Wk).reshape(T, n_kv_head, d).transpose(1, 0, 2)
    v = (X @ Wv).reshape(T, n_kv_head, d).transpose(1, 0, 2)
    heads = np.empty((T, C), dtype=np.result_type(q, k, v, float))
    _attend_into(heads, q, k, v, causal_mask(T, T) if causal else None)
    return heads @ Wo


class KVCache:
    """The keys and values of every token seen so far (one layer).

    ``KVCache()`` starts empty: ``len(cache) == 0`` and ``keys`` and ``values`` are None.
    ``append(k, v)`` takes (n_kv_head, t, d_head) arrays and grows ``keys`` and ``values``
    along t, so they are (n_kv_head, S, d_head) with S = len(cache).

    Storage is a buffer with spare capacity along the positions, doubled when full;
    ``keys`` and ``values`` are views of the filled part.
    """

    def __init__(self):
        self._kbuf = None
        self._vbuf = None
        self._klen = 0
        self._vlen = 0

    # --- views of the filled part; setting them replaces the storage ---------------
    @property
    def keys(self):
        return None if self._kbuf is None else self._kbuf[:, :self._klen]

    @keys.setter
    def keys(self, value):
        if value is None:
            self._kbuf, self._klen = None, 0
        else:
            value = np.array(value)
            self._kbuf, self._klen = value, value.shape[1]

    @property
    def values(self):
        return None if self._vbuf is None else self._vbuf[:, :self._vlen]

    @values.setter
    def values(self, value):
        if value is None:
            self._vbuf, self._vlen = None, 0
        else:
            value = np.array(value)
            self._vbuf, self._vlen = value, value.shape[1]

    @staticmethod
    def _grow(buf, used, new):
        """Return a buffer holding buf[:, :used] with room for new appended; write new."""
        t = new.shape[1]
        if buf is None:
            cap = max(8, 2 * t)
            buf = np.empty((new.shape[0], cap) + new.shape[2:], dtype=new.dtype)
        elif used + t > buf.shape[1] or np.result_type(buf, new) != buf.dtype:
            cap = max(2 * buf.shape[1], used + t)
            bigger = np.empty((buf.shape[0], cap) + buf.shape[2:],
                              dtype=np.result_type(buf, new))
            bigger[:, :used] = buf[:, :used]
            buf = bigger
        buf[:, used:used + t] = new
        return buf, used + t

    def append(self, k, v):
        k, v = np.asarray(k), np.asarray(v)
        self._kbuf, self._klen = self._grow(self._kbuf, self._klen, k)
        self._vbuf, self._vlen = self._grow(self._vbuf, self._vlen, v)

    def __len__(self):
        return self._klen


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
    d = C // n_head
    q = x @ Wq
    k_new = (x @ Wk).reshape(t, n_kv_head, d).transpose(1, 0, 2)
    v_new = (x @ Wv).reshape(t, n_kv_head, d).transpose(1, 0, 2)
    cache.append(k_new, v_new)
    keys, values = np.asarray(cache.keys), np.asarray(cache.values)
    heads = np.empty((t, C), dtype=np.result_type(q, keys, values, float))
    _attend_into(heads, q, keys, values, causal_mask(t, len(cache)))
    return heads @ Wo


def kv_cache_bytes(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    """Bytes a KV cache needs: keys AND values, for every layer, kv head, position and
    sequence of the batch. Returns an int."""
    per_position = n_kv_head * d_head * bytes_per_value      # one key (or one value)
    return int(2 * n_layers * per_position * seq_len * batch)
