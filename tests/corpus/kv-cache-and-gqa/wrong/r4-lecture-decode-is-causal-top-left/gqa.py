"""MISTAKE: decode_step calls the SDPA port with is_causal=True, the top-left aligned lower triangle, instead of the bottom-right causal_mask(t, len(cache)).
Affects: decode_step.
Style: lecture code ported to NumPy (PyTorch SDPA reference); everything else is correct.

Grouped-query attention and a KV cache, in NumPy.

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
    # key.repeat_interleave(n_rep, dim=-3)
    return np.repeat(x, n_rep, axis=-3)


def causal_mask(T, S):
    """The (T, S) causal mask of T queries that are the LAST T of S positions.

    Query i sits at position i + (S - T), so it may look at key j when j <= i + (S - T):
    the mask is aligned bottom-right. With T == S it is the usual lower triangle.
    """
    i = np.arange(T)[:, None]
    j = np.arange(S)[None, :]
    return j <= i + (S - T)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False,
                                 scale=None, enable_gqa=False):
    """NumPy port of the reference in the torch.nn.functional docs (no dropout)."""
    L, S = query.shape[-2], key.shape[-2]
    scale_factor = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    attn_bias = np.zeros((L, S), dtype=query.dtype)
    if is_causal:
        temp_mask = np.tril(np.ones((L, S), dtype=bool), k=0)
        attn_bias = np.where(np.logical_not(temp_mask), float("-inf"), attn_bias)
    if attn_mask is not None:
        if attn_mask.dtype == bool:
            attn_bias = np.where(np.logical_not(attn_mask), float("-inf"), attn_bias)
        else:
            attn_bias = attn_mask + attn_bias
    if enable_gqa:
        key = repeat_kv(key, query.shape[-3] // key.shape[-3])
        value = repeat_kv(value, query.shape[-3] // value.shape[-3])
    attn_weight = query @ np.swapaxes(key, -2, -1) * scale_factor
    attn_weight = attn_weight + attn_bias
    attn_weight = softmax(attn_weight)  # torch.softmax(attn_weight, dim=-1)
    return attn_weight @ value


def _check(C, n_head, n_kv_head):
    if n_kv_head < 1 or n_head < 1 or n_head % n_kv_head != 0:
        raise ValueError(f"n_kv_head={n_kv_head} does not divide n_head={n_head}")
    if C % n_head != 0:
        raise ValueError(f"n_head={n_head} does not divide C={C}")


def _split(t, n, hs):
    # t.view(T, n, hs).transpose(0, 1)
    return t.reshape(t.shape[0], n, hs).swapaxes(0, 1)


def _merge(y):
    # y.transpose(0, 1).contiguous().view(T, C)
    n, T, hs = y.shape
    return y.swapaxes(0, 1).reshape(T, n * hs)


def grouped_query_attention(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    """Grouped-query self-attention of X, shape (T, C); returns (T, C).

    n_head query heads share n_kv_head heads of keys and values, n_head // n_kv_head each.
    n_kv_head == n_head is multi-head attention; n_kv_head == 1 is multi-query attention.
    Raise ValueError when n_head % n_kv_head != 0 or C % n_head != 0.
    """
    X = np.asarray(X)
    T, C = X.shape
    _check(C, n_head, n_kv_head)
    hs = C // n_head
    q = _split(X @ Wq, n_head, hs)
    k = _split(X @ Wk, n_kv_head, hs)
    v = _split(X @ Wv, n_kv_head, hs)
    # self-attention over the whole sequence: top-left and bottom-right coincide (T == S)
    y = scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    return _merge(y) @ Wo


class KVCache:
    """The keys and values of every token seen so far (one layer).

    ``KVCache()`` starts empty: ``len(cache) == 0`` and ``keys`` and ``values`` are None.
    ``append(k, v)`` takes (n_kv_head, t, d_head) arrays and grows ``keys`` and ``values``
    along t, so they are (n_kv_head, S, d_head) with S = len(cache).
    """

    def __init__(self):
        self.keys = None
        self.values = None
        self.seq_len = 0

    def append(self, k, v):
        k, v = np.asarray(k), np.asarray(v)
        self.keys = k.copy() if self.keys is None else np.concatenate((self.keys, k), axis=1)
        self.values = v.copy() if self.values is None else np.concatenate((self.values, v), axis=1)
        self.seq_len += k.shape[1]

    def __len__(self):
        return self.seq_len


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
    hs = C // n_head
    q = _split(x @ Wq, n_head, hs)
    cache.append(_split(x @ Wk, n_kv_head, hs), _split(x @ Wv, n_kv_head, hs))
    # with a cache, is_causal=True would be top-left aligned: pass the bottom-right mask
    y = scaled_dot_product_attention(q, cache.keys, cache.values,
                                     is_causal=True, enable_gqa=True)
    return _merge(y) @ Wo


def kv_cache_bytes(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    """Bytes a KV cache needs: keys AND values, for every layer, kv head, position and
    sequence of the batch. Returns an int."""
    return math.prod(int(n) for n in (2, n_layers, n_kv_head, d_head, seq_len, batch,
                                      bytes_per_value))
