"""MISTAKE: decode_step uses no mask at all (thinking the cache only holds the past), so within a chunk of t > 1 tokens earlier new tokens see later ones.
Affects: decode_step.
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
    n_kv = x.shape[0]
    out = np.empty((n_kv * n_rep,) + x.shape[1:], dtype=x.dtype)
    h = 0
    while h < n_kv * n_rep:
        out[h] = x[h // n_rep]
        h += 1
    return out


def causal_mask(T, S):
    """The (T, S) causal mask of T queries that are the LAST T of S positions.

    Query i sits at position i + (S - T), so it may look at key j when j <= i + (S - T):
    the mask is aligned bottom-right. With T == S it is the usual lower triangle.
    """
    mask = np.zeros((T, S), dtype=bool)
    for i in range(T):
        position = i + (S - T)
        for j in range(S):
            if j > position:
                break
            mask[i, j] = True
    return mask


def _validate(C, n_head, n_kv_head):
    ok = True
    if n_kv_head < 1 or n_head < 1:
        ok = False
    elif n_head % n_kv_head != 0:
        ok = False
    elif C % n_head != 0:
        ok = False
    if not ok:
        raise ValueError(
            f"bad head counts: C={C}, n_head={n_head}, n_kv_head={n_kv_head}")


def _heads_attention(Q, K, V, n_head, n_kv_head, d_head, mask):
    """Q (t, n_head*d_head); K, V (n_kv_head, S, d_head); mask (t, S) or None."""
    t = Q.shape[0]
    S = K.shape[1]
    n_rep = n_head // n_kv_head
    result = np.zeros((t, n_head * d_head))
    for h in range(n_head):
        g = h // n_rep
        q_h = Q[:, h * d_head:(h + 1) * d_head]
        for i in range(t):
            scores = []
            for j in range(S):
                if mask is not None and not mask[i, j]:
                    scores.append(None)
                else:
                    dot = 0.0
                    for c in range(d_head):
                        dot = dot + q_h[i, c] * K[g, j, c]
                    scores.append(dot / math.sqrt(d_head))
            present = [s for s in scores if s is not None]
            if len(present) == 0:
                continue  # all masked: weights 0, output 0
            m = max(present)
            exps = []
            for j in range(len(scores)):
                if scores[j] is None:
                    exps.append(0.0)
                else:
                    exps.append(math.exp(scores[j] - m))
            denom = sum(exps)
            for j in range(len(exps)):
                if exps[j] == 0.0:
                    continue
                w = exps[j] / denom
                for c in range(d_head):
                    result[i, h * d_head + c] += w * V[g, j, c]
    return result


def _to_kv_heads(M, n_kv_head, d_head):
    pieces = []
    for g in range(n_kv_head):
        pieces.append(M[:, g * d_head:(g + 1) * d_head])
    return np.array(pieces)


def grouped_query_attention(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    """Grouped-query self-attention of X, shape (T, C); returns (T, C).

    n_head query heads share n_kv_head heads of keys and values, n_head // n_kv_head each.
    n_kv_head == n_head is multi-head attention; n_kv_head == 1 is multi-query attention.
    Raise ValueError when n_head % n_kv_head != 0 or C % n_head != 0.
    """
    X = np.asarray(X, dtype=float)
    T = X.shape[0]
    C = X.shape[1]
    _validate(C, n_head, n_kv_head)
    d_head = C // n_head
    Q = X @ Wq
    K = _to_kv_heads(X @ Wk, n_kv_head, d_head)
    V = _to_kv_heads(X @ Wv, n_kv_head, d_head)
    mask = causal_mask(T, T) if causal else None
    heads_out = _heads_attention(Q, K, V, n_head, n_kv_head, d_head, mask)
    return heads_out @ Wo


class KVCache:
    """The keys and values of every token seen so far (one layer).

    ``KVCache()`` starts empty: ``len(cache) == 0`` and ``keys`` and ``values`` are None.
    ``append(k, v)`` takes (n_kv_head, t, d_head) arrays and grows ``keys`` and ``values``
    along t, so they are (n_kv_head, S, d_head) with S = len(cache).
    """

    def __init__(self):
        self._k_chunks = []
        self._v_chunks = []
        self._n_positions = 0

    def append(self, k, v):
        self._k_chunks.append(np.array(k))
        self._v_chunks.append(np.array(v))
        self._n_positions += np.shape(k)[1]

    @property
    def keys(self):
        if len(self._k_chunks) == 0:
            return None
        return np.concatenate(self._k_chunks, axis=1)

    @property
    def values(self):
        if len(self._v_chunks) == 0:
            return None
        return np.concatenate(self._v_chunks, axis=1)

    def __len__(self):
        return self._n_positions


def decode_step(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    """Attention for t new tokens x, shape (t, C), that follow everything in cache.

    Project x, append the new tokens' keys and values (n_kv_head, t, d_head) to the cache,
    then let the new queries attend over everything cached with causal_mask(t, len(cache)).
    Returns the new tokens' outputs, shape (t, C): the same rows that the full causal
    grouped_query_attention gives for these positions.
    """
    x = np.asarray(x, dtype=float)
    t = x.shape[0]
    C = x.shape[1]
    _validate(C, n_head, n_kv_head)
    d_head = C // n_head
    q = x @ Wq
    cache.append(_to_kv_heads(x @ Wk, n_kv_head, d_head),
                 _to_kv_heads(x @ Wv, n_kv_head, d_head))
    mask = None  # the cache only holds the past, nothing to hide
    heads_out = _heads_attention(q, cache.keys, cache.values, n_head, n_kv_head, d_head, mask)
    return heads_out @ Wo


def kv_cache_bytes(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    """Bytes a KV cache needs: keys AND values, for every layer, kv head, position and
    sequence of the batch. Returns an int."""
    per_token = 0
    for _ in range(2):  # one key and one value
        per_token += int(n_kv_head) * int(d_head) * int(bytes_per_value)
    return int(n_layers) * per_token * int(seq_len) * int(batch)
