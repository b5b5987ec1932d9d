"""Grouped-query attention and a KV cache, in NumPy.

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
    ### BEGIN SOLUTION
    return np.repeat(x, n_rep, axis=0)
    ### END SOLUTION


def causal_mask(T, S):
    """The (T, S) causal mask of T queries that are the LAST T of S positions.

    Query i sits at position i + (S - T), so it may look at key j when j <= i + (S - T):
    the mask is aligned bottom-right. With T == S it is the usual lower triangle.
    """
    ### BEGIN SOLUTION
    i = np.arange(T)[:, None]
    j = np.arange(S)[None, :]
    return j <= i + (S - T)
    ### END SOLUTION


def grouped_query_attention(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    """Grouped-query self-attention of X, shape (T, C); returns (T, C).

    n_head query heads share n_kv_head heads of keys and values, n_head // n_kv_head each.
    n_kv_head == n_head is multi-head attention; n_kv_head == 1 is multi-query attention.
    Raise ValueError when n_head % n_kv_head != 0 or C % n_head != 0.
    """
    ### BEGIN SOLUTION
    T, C = X.shape
    if n_head % n_kv_head or C % n_head:
        raise ValueError("n_head must divide C, and n_kv_head must divide n_head")
    d_head = C // n_head
    q = (X @ Wq).reshape(T, n_head, d_head).transpose(1, 0, 2)  # (n_head, T, d_head)
    k = (X @ Wk).reshape(T, n_kv_head, d_head).transpose(1, 0, 2)  # (n_kv_head, T, d_head)
    v = (X @ Wv).reshape(T, n_kv_head, d_head).transpose(1, 0, 2)
    k, v = repeat_kv(k, n_head // n_kv_head), repeat_kv(v, n_head // n_kv_head)
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(d_head)
    if causal:
        scores = np.where(causal_mask(T, T), scores, -np.inf)
    out = softmax(scores) @ v  # (n_head, T, d_head)
    return out.transpose(1, 0, 2).reshape(T, C) @ Wo
    ### END SOLUTION


class KVCache:
    """The keys and values of every token seen so far (one layer).

    ``KVCache()`` starts empty: ``len(cache) == 0`` and ``keys`` and ``values`` are None.
    ``append(k, v)`` takes (n_kv_head, t, d_head) arrays and grows ``keys`` and ``values``
    along t, so they are (n_kv_head, S, d_head) with S = len(cache).
    """

    def __init__(self):
        ### BEGIN SOLUTION
        self.keys = None
        self.values = None
        ### END SOLUTION

    def append(self, k, v):
        ### BEGIN SOLUTION
        if self.keys is None:
            self.keys, self.values = k, v
        else:
            self.keys = np.concatenate([self.keys, k], axis=1)
            self.values = np.concatenate([self.values, v], axis=1)
        ### END SOLUTION

    def __len__(self):
        ### BEGIN SOLUTION
        return 0 if self.keys is None else self.keys.shape[1]
        ### END SOLUTION


def decode_step(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    """Attention for t new tokens x, shape (t, C), that follow everything in cache.

    Project x, append the new tokens' keys and values (n_kv_head, t, d_head) to the cache,
    then let the new queries attend over everything cached with causal_mask(t, len(cache)).
    Returns the new tokens' outputs, shape (t, C): the same rows that the full causal
    grouped_query_attention gives for these positions.
    """
    ### BEGIN SOLUTION
    t, C = x.shape
    d_head = C // n_head
    q = (x @ Wq).reshape(t, n_head, d_head).transpose(1, 0, 2)
    k = (x @ Wk).reshape(t, n_kv_head, d_head).transpose(1, 0, 2)
    v = (x @ Wv).reshape(t, n_kv_head, d_head).transpose(1, 0, 2)
    cache.append(k, v)
    n_rep = n_head // n_kv_head
    keys, values = repeat_kv(cache.keys, n_rep), repeat_kv(cache.values, n_rep)
    scores = q @ keys.transpose(0, 2, 1) / np.sqrt(d_head)
    scores = np.where(causal_mask(t, len(cache)), scores, -np.inf)
    out = softmax(scores) @ values
    return out.transpose(1, 0, 2).reshape(t, C) @ Wo
    ### END SOLUTION


def kv_cache_bytes(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    """Bytes a KV cache needs: keys AND values, for every layer, kv head, position and
    sequence of the batch. Returns an int."""
    ### BEGIN SOLUTION
    return 2 * n_layers * n_kv_head * d_head * seq_len * batch * bytes_per_value
    ### END SOLUTION
