"""MISTAKE: the grouped einsum splits the query heads as (n_rep, n_kv_head) instead of (n_kv_head, n_rep), so query head h uses kv head h % n_kv_head (np.tile order).
Affects: grouped_query_attention, decode_step (via _col_attention).
Style: written for another API, column-vector W @ x core adapted at the edge; everything else is correct.

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

import numpy as np


def softmax(scores):
    """A stable softmax over the last axis; a row that is all -inf gets weights 0 (given)."""
    top = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1.0)


# ===================== core: column vectors, (features, tokens) ========================

def _col_heads(M, n, d):
    """M (n*d, T) with head h in rows h*d:(h+1)*d -> (n, d, T)."""
    return M.reshape(n, d, M.shape[1])


def _col_attention(Qc, Kc, Vc, n_head, n_kv_head, allowed):
    """Qc (C, t), Kc, Vc (n_kv*d, S) columns; allowed (t, S) bool or None -> (C, t)."""
    C, t = Qc.shape
    d = C // n_head
    n_rep = n_head // n_kv_head
    q = _col_heads(Qc, n_head, d).reshape(n_rep, n_kv_head, d, t)   # grouped, no repeat
    k = _col_heads(Kc, n_kv_head, d)                                  # (g, d, S)
    v = _col_heads(Vc, n_kv_head, d)
    scores = np.einsum("rgdt,gds->rgts", q, k) / np.sqrt(d)           # (r, g, t, S)
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    w = softmax(scores)
    out = np.einsum("rgts,gds->rgdt", w, v)                           # (r, g, d, t)
    return out.reshape(C, t)


def _check(C, n_head, n_kv_head):
    if n_kv_head < 1 or n_head < 1 or n_head % n_kv_head:
        raise ValueError("n_head must be a multiple of n_kv_head")
    if C % n_head:
        raise ValueError("C must be a multiple of n_head")


# ===================== edge: the handout's API ==========================================

def repeat_kv(x, n_rep):
    """Repeat each kv head n_rep times: (n_kv_head, T, d) -> (n_kv_head * n_rep, T, d).

    Head h of the result is head h // n_rep of x, so copies of one head sit next to each
    other: [k0, k0, k1, k1] for two kv heads and n_rep = 2.
    """
    x = np.asarray(x)
    idx = np.arange(x.shape[0] * n_rep) // n_rep
    return x[idx]


def causal_mask(T, S):
    """The (T, S) causal mask of T queries that are the LAST T of S positions.

    Query i sits at position i + (S - T), so it may look at key j when j <= i + (S - T):
    the mask is aligned bottom-right. With T == S it is the usual lower triangle.
    """
    return np.subtract.outer(np.arange(T) + (S - T), np.arange(S)) >= 0


def grouped_query_attention(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    """Grouped-query self-attention of X, shape (T, C); returns (T, C).

    n_head query heads share n_kv_head heads of keys and values, n_head // n_kv_head each.
    n_kv_head == n_head is multi-head attention; n_kv_head == 1 is multi-query attention.
    Raise ValueError when n_head % n_kv_head != 0 or C % n_head != 0.
    """
    X = np.asarray(X)
    T, C = X.shape
    _check(C, n_head, n_kv_head)
    Xc = X.T                                   # edge: rows -> columns
    Qc = Wq.T @ Xc                             # (X @ W).T == W.T @ X.T
    Kc = Wk.T @ Xc
    Vc = Wv.T @ Xc
    allowed = causal_mask(T, T) if causal else None
    Yc = _col_attention(Qc, Kc, Vc, n_head, n_kv_head, allowed)
    return (Wo.T @ Yc).T                       # edge: columns -> rows


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
        k = np.array(k, copy=True)
        v = np.array(v, copy=True)
        self.keys = k if self.keys is None else np.concatenate([self.keys, k], axis=1)
        self.values = v if self.values is None else np.concatenate([self.values, v], axis=1)

    def __len__(self):
        return 0 if self.keys is None else int(self.keys.shape[1])


def _heads_to_cols(a):
    """(n_kv, S, d) -> (n_kv*d, S) columns."""
    n, S, d = a.shape
    return a.transpose(0, 2, 1).reshape(n * d, S)


def _cols_to_heads(M, n):
    """(n*d, t) -> (n, t, d)."""
    d = M.shape[0] // n
    return M.reshape(n, d, M.shape[1]).transpose(0, 2, 1)


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
    xc = x.T
    Qc = Wq.T @ xc
    cache.append(_cols_to_heads(Wk.T @ xc, n_kv_head), _cols_to_heads(Wv.T @ xc, n_kv_head))
    Kc = _heads_to_cols(cache.keys)
    Vc = _heads_to_cols(cache.values)
    Yc = _col_attention(Qc, Kc, Vc, n_head, n_kv_head, causal_mask(t, len(cache)))
    return (Wo.T @ Yc).T


def kv_cache_bytes(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    """Bytes a KV cache needs: keys AND values, for every layer, kv head, position and
    sequence of the batch. Returns an int."""
    return 2 * int(n_layers) * int(n_kv_head) * int(d_head) * int(seq_len) * int(batch) \
        * int(bytes_per_value)
