"""MISTAKE: the cache counter adds 1 per append call instead of the number of positions t, so len(cache) counts chunks.
Affects: KVCache.__len__ / KVCache.append (and decode_step's mask width).
Style: students' loops; everything else is correct.

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
    x = np.asarray(x)
    heads = []
    for g in range(x.shape[0]):
        for r in range(n_rep):
            heads.append(x[g].copy())
    if len(heads) == 0:
        return np.zeros((0,) + x.shape[1:], dtype=x.dtype)
    return np.stack(heads, axis=0)


def causal_mask(T, S):
    """The (T, S) causal mask of T queries that are the LAST T of S positions.

    Query i sits at position i + (S - T), so it may look at key j when j <= i + (S - T):
    the mask is aligned bottom-right. With T == S it is the usual lower triangle.
    """
    offset = S - T
    rows = []
    for i in range(T):
        row = []
        for j in range(S):
            if j <= i + offset:
                row.append(True)
            else:
                row.append(False)
        rows.append(row)
    return np.array(rows, dtype=bool).reshape(T, S)


def _my_softmax_row(row_scores, row_mask):
    """Softmax of one row by hand; masked entries get 0, an all-masked row gets all 0."""
    biggest = None
    for j in range(len(row_scores)):
        if row_mask[j]:
            if biggest is None or row_scores[j] > biggest:
                biggest = row_scores[j]
    weights = [0.0] * len(row_scores)
    if biggest is None:
        return weights
    total = 0.0
    for j in range(len(row_scores)):
        if row_mask[j]:
            weights[j] = math.exp(row_scores[j] - biggest)
            total += weights[j]
    for j in range(len(row_scores)):
        weights[j] = weights[j] / total
    return weights


def _attend(q_heads, k_heads, v_heads, n_rep, mask):
    """q_heads (n_head, t, d); k_heads, v_heads (n_kv_head, S, d); mask (t, S) or None.

    Returns the merged heads, (t, n_head * d)."""
    n_head = len(q_heads)
    t = q_heads[0].shape[0] if n_head > 0 else 0
    d = q_heads[0].shape[1]
    S = k_heads[0].shape[0]
    scale = 1.0 / math.sqrt(d)
    out_rows = []
    for i in range(t):
        row_out = []
        for h in range(n_head):
            g = h // n_rep
            scores = []
            allowed = []
            for j in range(S):
                s = 0.0
                for c in range(d):
                    s += float(q_heads[h][i, c]) * float(k_heads[g][j, c])
                scores.append(s * scale)
                if mask is None:
                    allowed.append(True)
                else:
                    allowed.append(bool(mask[i, j]))
            w = _my_softmax_row(scores, allowed)
            head_out = [0.0] * d
            for j in range(S):
                if w[j] != 0.0:
                    for c in range(d):
                        head_out[c] += w[j] * float(v_heads[g][j, c])
            row_out.extend(head_out)
        out_rows.append(row_out)
    return np.array(out_rows, dtype=np.float64).reshape(t, n_head * d)


def _split_heads(M, n, d):
    """(T, n*d) -> list of n arrays (T, d); head h owns columns h*d:(h+1)*d."""
    heads = []
    for h in range(n):
        heads.append(M[:, h * d:(h + 1) * d])
    return heads


def _check(C, n_head, n_kv_head):
    if n_head <= 0 or n_kv_head <= 0:
        raise ValueError("n_head and n_kv_head must be positive")
    if n_head % n_kv_head != 0:
        raise ValueError("n_kv_head must divide n_head")
    if C % n_head != 0:
        raise ValueError("n_head must divide C")


def grouped_query_attention(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    """Grouped-query self-attention of X, shape (T, C); returns (T, C).

    n_head query heads share n_kv_head heads of keys and values, n_head // n_kv_head each.
    n_kv_head == n_head is multi-head attention; n_kv_head == 1 is multi-query attention.
    Raise ValueError when n_head % n_kv_head != 0 or C % n_head != 0.
    """
    X = np.asarray(X, dtype=np.float64)
    T, C = X.shape
    _check(C, n_head, n_kv_head)
    d_head = C // n_head
    n_rep = n_head // n_kv_head
    Q = X @ Wq
    K = X @ Wk
    V = X @ Wv
    q_heads = _split_heads(Q, n_head, d_head)
    k_heads = _split_heads(K, n_kv_head, d_head)
    v_heads = _split_heads(V, n_kv_head, d_head)
    if causal:
        mask = causal_mask(T, T)
    else:
        mask = None
    merged = _attend(q_heads, k_heads, v_heads, n_rep, mask)
    return merged @ Wo


class KVCache:
    """The keys and values of every token seen so far (one layer).

    ``KVCache()`` starts empty: ``len(cache) == 0`` and ``keys`` and ``values`` are None.
    ``append(k, v)`` takes (n_kv_head, t, d_head) arrays and grows ``keys`` and ``values``
    along t, so they are (n_kv_head, S, d_head) with S = len(cache).
    """

    def __init__(self):
        self.keys = None
        self.values = None
        self.count = 0

    def append(self, k, v):
        k = np.asarray(k)
        v = np.asarray(v)
        if self.keys is None:
            self.keys = k.copy()
            self.values = v.copy()
        else:
            self.keys = np.concatenate([self.keys, k], axis=1)
            self.values = np.concatenate([self.values, v], axis=1)
        self.count = self.count + 1

    def __len__(self):
        return self.count


def decode_step(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    """Attention for t new tokens x, shape (t, C), that follow everything in cache.

    Project x, append the new tokens' keys and values (n_kv_head, t, d_head) to the cache,
    then let the new queries attend over everything cached with causal_mask(t, len(cache)).
    Returns the new tokens' outputs, shape (t, C): the same rows that the full causal
    grouped_query_attention gives for these positions.
    """
    x = np.asarray(x, dtype=np.float64)
    t, C = x.shape
    _check(C, n_head, n_kv_head)
    d_head = C // n_head
    n_rep = n_head // n_kv_head
    q = x @ Wq
    k = x @ Wk
    v = x @ Wv
    new_k = np.stack(_split_heads(k, n_kv_head, d_head), axis=0)
    new_v = np.stack(_split_heads(v, n_kv_head, d_head), axis=0)
    cache.append(new_k, new_v)
    S = len(cache)
    mask = causal_mask(t, S)
    q_heads = _split_heads(q, n_head, d_head)
    k_heads = [cache.keys[g] for g in range(n_kv_head)]
    v_heads = [cache.values[g] for g in range(n_kv_head)]
    merged = _attend(q_heads, k_heads, v_heads, n_rep, mask)
    return merged @ Wo


def kv_cache_bytes(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    """Bytes a KV cache needs: keys AND values, for every layer, kv head, position and
    sequence of the batch. Returns an int."""
    total = 1
    for factor in [2, n_layers, n_kv_head, d_head, seq_len, batch, bytes_per_value]:
        total = total * int(factor)
    return total
