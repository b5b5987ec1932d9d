"""CORRECT: additive -inf mask with a log-sum-exp softmax of its own, all heads in one 4-D broadcast (no explicit repeat), scale applied to k, cache grown with np.append.
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


def _lse_softmax(scores):
    """exp(s - logsumexp(s)); rows that are entirely -inf get weights 0."""
    m = np.max(scores, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    z = np.exp(scores - m)
    s = z.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        lse = m + np.log(s)
    w = np.exp(scores - lse)
    return np.where(s > 0, w, 0.0)


def repeat_kv(x, n_rep):
    """Repeat each kv head n_rep times: (n_kv_head, T, d) -> (n_kv_head * n_rep, T, d)."""
    x = np.asarray(x)
    return np.concatenate([np.stack([h] * n_rep) for h in x], axis=0) if len(x) else x[:0]


def causal_mask(T, S):
    """The (T, S) causal mask of T queries that are the LAST T of S positions."""
    return np.triu(np.ones((T, S), dtype=bool), k=S - T + 1) == False  # noqa: E712


def _bias(mask):
    return np.where(mask, 0.0, -np.inf)


def _run(x, Wq, Wk, Wv, Wo, n_head, n_kv_head, get_kv, mask_fn):
    x = np.asarray(x)
    t, C = x.shape
    if n_kv_head < 1 or n_head < 1 or n_head % n_kv_head:
        raise ValueError("n_head % n_kv_head != 0")
    if C % n_head:
        raise ValueError("C % n_head != 0")
    d = C // n_head
    n_rep = n_head // n_kv_head
    q = (x @ Wq).reshape(t, n_kv_head, n_rep, d)                 # group, member
    k_new = (x @ Wk).reshape(t, n_kv_head, d).transpose(1, 0, 2)
    v_new = (x @ Wv).reshape(t, n_kv_head, d).transpose(1, 0, 2)
    k, v = get_kv(k_new, v_new)                                  # (G, S, d)
    S = k.shape[1]
    k_scaled = k / np.sqrt(d)
    # scores[g, r, i, j] = q[i, g, r] . k[g, j]
    scores = (q.transpose(1, 2, 0, 3)[..., :, None, :] * k_scaled[:, None, None, :, :]).sum(-1)
    mask = mask_fn(t, S)
    if mask is not None:
        scores = scores + _bias(mask)
    w = _lse_softmax(scores)
    o = w @ v[:, None]                                           # (G, R, t, d)
    return o.transpose(2, 0, 1, 3).reshape(t, C) @ Wo


def grouped_query_attention(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    """Grouped-query self-attention of X, shape (T, C); returns (T, C)."""
    return _run(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, lambda k, v: (k, v),
                causal_mask if causal else (lambda t, S: None))


class KVCache:
    """The keys and values of every token seen so far (one layer)."""

    def __init__(self):
        self.keys = None
        self.values = None

    def append(self, k, v):
        if self.keys is None:
            self.keys = np.asarray(k).copy()
            self.values = np.asarray(v).copy()
        else:
            self.keys = np.append(self.keys, k, axis=1)
            self.values = np.append(self.values, v, axis=1)

    def __len__(self):
        return 0 if self.keys is None else self.keys.shape[1]


def decode_step(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    """Attention for t new tokens x, shape (t, C), that follow everything in cache."""
    def get_kv(k_new, v_new):
        cache.append(k_new, v_new)
        return cache.keys, cache.values
    return _run(x, Wq, Wk, Wv, Wo, n_head, n_kv_head, get_kv, causal_mask)


def kv_cache_bytes(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    """Bytes a KV cache needs: keys AND values. Returns an int."""
    per_token = 2 * n_layers * n_kv_head * d_head * bytes_per_value
    return int(per_token) * int(seq_len) * int(batch)
