"""MISTAKE: softmax is replaced by a naive exp(s) / sum(exp(s)) without subtracting the row max, so large scores overflow to inf/nan.
Affects: grouped_query_attention, decode_step (softmax).

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
    """Repeat each kv head n_rep times: (n_kv_head, T, d) -> (n_kv_head * n_rep, T, d)."""
    x = np.asarray(x)
    G, T, d = x.shape
    return np.broadcast_to(x[:, None], (G, n_rep, T, d)).reshape(G * n_rep, T, d)


def causal_mask(T, S):
    """The (T, S) causal mask of T queries that are the LAST T of S positions."""
    return np.tril(np.ones((T, S), dtype=bool), k=S - T)


def _heads(Y, n):
    T = Y.shape[0]
    return np.einsum("tnd->ntd", Y.reshape(T, n, -1))


def _grouped(q, k, v, n_kv_head, mask):
    """q (H, t, d); k, v (G, S, d); mask (t, S) bool or None -> (t, H*d)."""
    H, t, d = q.shape
    n_rep = H // n_kv_head
    qg = q.reshape(n_kv_head, n_rep, t, d) * (1.0 / np.sqrt(d))
    scores = np.einsum("grtd,gsd->grts", qg, k)
    if mask is not None:
        scores = scores + np.where(mask, 0.0, -np.inf)
    e = np.exp(scores)
    w = e / e.sum(axis=-1, keepdims=True)
    o = np.einsum("grts,gsd->grtd", w, v)
    return np.einsum("htd->thd", o.reshape(H, t, d)).reshape(t, H * d)


def _check(C, n_head, n_kv_head):
    if not (n_head > 0 and n_kv_head > 0) or n_head % n_kv_head:
        raise ValueError("n_kv_head must divide n_head")
    if C % n_head:
        raise ValueError("n_head must divide C")


def grouped_query_attention(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    """Grouped-query self-attention of X, shape (T, C); returns (T, C)."""
    X = np.asarray(X)
    T, C = X.shape
    _check(C, n_head, n_kv_head)
    q = _heads(np.einsum("tc,cd->td", X, Wq), n_head)
    k = _heads(np.einsum("tc,cd->td", X, Wk), n_kv_head)
    v = _heads(np.einsum("tc,cd->td", X, Wv), n_kv_head)
    mask = causal_mask(T, T) if causal else None
    return np.einsum("tc,cd->td", _grouped(q, k, v, n_kv_head, mask), Wo)


class KVCache:
    """The keys and values of every token seen so far (one layer)."""

    def __init__(self):
        self.keys = None
        self.values = None

    def append(self, k, v):
        if self.keys is None:
            self.keys = np.array(k, copy=True)
            self.values = np.array(v, copy=True)
        else:
            self.keys = np.concatenate([self.keys, k], axis=-2)
            self.values = np.concatenate([self.values, v], axis=-2)

    def __len__(self):
        return 0 if self.keys is None else int(self.keys.shape[-2])


def decode_step(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    """Attention for t new tokens x, shape (t, C), that follow everything in cache."""
    x = np.asarray(x)
    t, C = x.shape
    _check(C, n_head, n_kv_head)
    q = _heads(x @ Wq, n_head)
    cache.append(_heads(x @ Wk, n_kv_head), _heads(x @ Wv, n_kv_head))
    mask = causal_mask(t, len(cache))
    return _grouped(q, cache.keys, cache.values, n_kv_head, mask) @ Wo


def kv_cache_bytes(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    """Bytes a KV cache needs: keys AND values. Returns an int."""
    return 2 * n_layers * n_kv_head * d_head * seq_len * batch * bytes_per_value
