"""CORRECT: lecture code ported to NumPy -- nanoGPT-style q/k/v, view->reshape, transpose->swapaxes, masked_fill.
Affects: repeat_kv, causal_mask, grouped_query_attention, KVCache, decode_step, kv_cache_bytes.

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


# --- tiny torch-like helpers, so the lecture code reads the same -------------------------

def masked_fill(t, mask, value):
    """torch.Tensor.masked_fill: put value where mask is True."""
    return np.where(mask, value, t)


def F_softmax(att, dim=-1):
    """F.softmax(att, dim=-1), via the given stable softmax."""
    if dim != -1:
        att = np.swapaxes(att, dim, -1)
        return np.swapaxes(softmax(att), dim, -1)
    return softmax(att)


def repeat_kv(x, n_rep):
    """Repeat each kv head n_rep times: (n_kv_head, T, d) -> (n_kv_head * n_rep, T, d).

    Head h of the result is head h // n_rep of x, so copies of one head sit next to each
    other: [k0, k0, k1, k1] for two kv heads and n_rep = 2.
    """
    # Llama: x[:, :, :, None, :].expand(bs, slen, n_kv_heads, n_rep, head_dim).reshape(...)
    # here the head axis comes first: (n_kv_head, T, d) -> (n_kv_head, n_rep, T, d)
    n_kv_head, T, head_dim = x.shape
    if n_rep == 1:
        return x
    x = np.broadcast_to(x[:, None, :, :], (n_kv_head, n_rep, T, head_dim))
    return x.reshape(n_kv_head * n_rep, T, head_dim)


def causal_mask(T, S):
    """The (T, S) causal mask of T queries that are the LAST T of S positions.

    Query i sits at position i + (S - T), so it may look at key j when j <= i + (S - T):
    the mask is aligned bottom-right. With T == S it is the usual lower triangle.
    """
    # torch.ones(T, S, dtype=torch.bool).tril(diagonal=S - T)
    return np.tril(np.ones((T, S), dtype=bool), k=S - T)


def _check_heads(C, n_head, n_kv_head):
    if n_kv_head <= 0 or n_head % n_kv_head != 0:
        raise ValueError("n_head must be a multiple of n_kv_head")
    if n_head <= 0 or C % n_head != 0:
        raise ValueError("C must be a multiple of n_head")


def _attention(q, k, v, n_rep, mask):
    """q (nh, T, hs); k, v (n_kv, S, hs); mask (T, S) bool or None -> y (nh, T, hs)."""
    k = repeat_kv(k, n_rep)
    v = repeat_kv(v, n_rep)
    att = (q @ np.swapaxes(k, -2, -1)) * (1.0 / math.sqrt(k.shape[-1]))
    if mask is not None:
        att = masked_fill(att, ~mask, float('-inf'))
    att = F_softmax(att, dim=-1)
    y = att @ v
    return y


def grouped_query_attention(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    """Grouped-query self-attention of X, shape (T, C); returns (T, C).

    n_head query heads share n_kv_head heads of keys and values, n_head // n_kv_head each.
    n_kv_head == n_head is multi-head attention; n_kv_head == 1 is multi-query attention.
    Raise ValueError when n_head % n_kv_head != 0 or C % n_head != 0.
    """
    T, C = X.shape  # sequence length, embedding dimensionality (n_embd)
    _check_heads(C, n_head, n_kv_head)
    hs = C // n_head
    n_rep = n_head // n_kv_head

    q = X @ Wq
    k = X @ Wk
    v = X @ Wv
    q = q.reshape(T, n_head, hs).swapaxes(0, 1)     # (nh, T, hs)
    k = k.reshape(T, n_kv_head, hs).swapaxes(0, 1)  # (n_kv, T, hs)
    v = v.reshape(T, n_kv_head, hs).swapaxes(0, 1)  # (n_kv, T, hs)

    mask = causal_mask(T, T) if causal else None
    y = _attention(q, k, v, n_rep, mask)
    y = y.swapaxes(0, 1).reshape(T, C)  # re-assemble all head outputs side by side
    y = y @ Wo  # output projection
    return y


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
        if self.keys is None:
            self.keys, self.values = np.array(k), np.array(v)
        else:
            # torch.cat([cache_k, xk], dim=-2)
            self.keys = np.concatenate([self.keys, k], axis=-2)
            self.values = np.concatenate([self.values, v], axis=-2)

    def __len__(self):
        return 0 if self.keys is None else self.keys.shape[-2]


def decode_step(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    """Attention for t new tokens x, shape (t, C), that follow everything in cache.

    Project x, append the new tokens' keys and values (n_kv_head, t, d_head) to the cache,
    then let the new queries attend over everything cached with causal_mask(t, len(cache)).
    Returns the new tokens' outputs, shape (t, C): the same rows that the full causal
    grouped_query_attention gives for these positions.
    """
    t, C = x.shape
    _check_heads(C, n_head, n_kv_head)
    hs = C // n_head
    n_rep = n_head // n_kv_head

    q = (x @ Wq).reshape(t, n_head, hs).swapaxes(0, 1)
    k = (x @ Wk).reshape(t, n_kv_head, hs).swapaxes(0, 1)
    v = (x @ Wv).reshape(t, n_kv_head, hs).swapaxes(0, 1)
    cache.append(k, v)

    keys, values = cache.keys, cache.values
    mask = causal_mask(t, len(cache))
    y = _attention(q, keys, values, n_rep, mask)
    y = y.swapaxes(0, 1).reshape(t, C)
    return y @ Wo


def kv_cache_bytes(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    """Bytes a KV cache needs: keys AND values, for every layer, kv head, position and
    sequence of the batch. Returns an int."""
    return int(2 * n_layers * n_kv_head * d_head * seq_len * batch * bytes_per_value)
