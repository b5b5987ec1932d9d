"""MISTAKE: the torch-like core checks the head counts with assert, so bad head counts raise AssertionError instead of ValueError.
Affects: grouped_query_attention, decode_step.
Style: written for another API, (B, H, T, d) torch-like module adapted at the edge; everything else is correct.

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


# ========================= core: written for (B, H, T, d) ===============================

def _blocked_mask(T, S):
    """Core convention: True means BLOCKED (future key), bottom-right aligned."""
    return np.triu(np.ones((T, S), dtype=bool), k=S - T + 1)


def _additive(blocked):
    """Core convention: a float bias, 0 where allowed and -inf where blocked."""
    return np.where(blocked, -np.inf, 0.0)


def _repeat_heads(x, n_rep):
    """(B, n_kv, T, d) -> (B, n_kv * n_rep, T, d), copies next to each other."""
    return np.repeat(x, n_rep, axis=1)


class _GQAModule:
    """A torch-like module: weights in (out_features, in_features) layout, call on (B, T, C)."""

    def __init__(self, q_weight, k_weight, v_weight, o_weight, n_head, n_kv_head):
        self.q_weight = q_weight  # (C, C)            y = x @ W.T
        self.k_weight = k_weight  # (n_kv*hs, C)
        self.v_weight = v_weight
        self.o_weight = o_weight
        self.n_head = n_head
        self.n_kv_head = n_kv_head

    @staticmethod
    def _linear(x, weight):
        return x @ weight.T

    def project_kv(self, x):
        """x (B, T, C) -> k, v (B, n_kv, T, hs)."""
        B, T, C = x.shape
        hs = C // self.n_head
        k = self._linear(x, self.k_weight).reshape(B, T, self.n_kv_head, hs).transpose(0, 2, 1, 3)
        v = self._linear(x, self.v_weight).reshape(B, T, self.n_kv_head, hs).transpose(0, 2, 1, 3)
        return k, v

    def __call__(self, x, past_k=None, past_v=None, bias="causal"):
        """x (B, T, C); past_k/past_v (B, n_kv, S, hs) that already INCLUDE x's keys.

        bias: "causal" for the bottom-right causal bias, or None for no mask."""
        B, T, C = x.shape
        hs = C // self.n_head
        q = self._linear(x, self.q_weight).reshape(B, T, self.n_head, hs).transpose(0, 2, 1, 3)
        if past_k is None:
            k, v = self.project_kv(x)
        else:
            k, v = past_k, past_v
        S = k.shape[2]
        n_rep = self.n_head // self.n_kv_head
        k = _repeat_heads(k, n_rep)
        v = _repeat_heads(v, n_rep)
        scores = np.einsum("bhtd,bhsd->bhts", q, k) / np.sqrt(hs)
        if bias == "causal":
            scores = scores + _additive(_blocked_mask(T, S))[None, None]
        att = softmax(scores)
        y = np.einsum("bhts,bhsd->bhtd", att, v)
        y = y.transpose(0, 2, 1, 3).reshape(B, T, C)
        return self._linear(y, self.o_weight)


def _module(Wq, Wk, Wv, Wo, C, n_head, n_kv_head):
    """Edge: the handout's x @ W weights become torch's (out, in) weights."""
    assert n_head % n_kv_head == 0, "n_kv_head must divide n_head"
    assert C % n_head == 0, "n_head must divide C"
    return _GQAModule(np.asarray(Wq).T, np.asarray(Wk).T, np.asarray(Wv).T, np.asarray(Wo).T,
                      n_head, n_kv_head)


# ========================= edge: the handout's API ======================================

def repeat_kv(x, n_rep):
    """Repeat each kv head n_rep times: (n_kv_head, T, d) -> (n_kv_head * n_rep, T, d).

    Head h of the result is head h // n_rep of x, so copies of one head sit next to each
    other: [k0, k0, k1, k1] for two kv heads and n_rep = 2.
    """
    return _repeat_heads(np.asarray(x)[None], n_rep)[0]


def causal_mask(T, S):
    """The (T, S) causal mask of T queries that are the LAST T of S positions.

    Query i sits at position i + (S - T), so it may look at key j when j <= i + (S - T):
    the mask is aligned bottom-right. With T == S it is the usual lower triangle.
    """
    return ~_blocked_mask(T, S)  # core says True = blocked; the handout says True = may attend


def grouped_query_attention(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    """Grouped-query self-attention of X, shape (T, C); returns (T, C).

    n_head query heads share n_kv_head heads of keys and values, n_head // n_kv_head each.
    n_kv_head == n_head is multi-head attention; n_kv_head == 1 is multi-query attention.
    Raise ValueError when n_head % n_kv_head != 0 or C % n_head != 0.
    """
    X = np.asarray(X)
    T, C = X.shape
    module = _module(Wq, Wk, Wv, Wo, C, n_head, n_kv_head)
    return module(X[None], bias="causal" if causal else None)[0]


class KVCache:
    """The keys and values of every token seen so far (one layer).

    ``KVCache()`` starts empty: ``len(cache) == 0`` and ``keys`` and ``values`` are None.
    ``append(k, v)`` takes (n_kv_head, t, d_head) arrays and grows ``keys`` and ``values``
    along t, so they are (n_kv_head, S, d_head) with S = len(cache).
    """

    def __init__(self):
        self._k = None  # stored batched: (1, n_kv_head, S, d_head)
        self._v = None

    def append(self, k, v):
        k = np.asarray(k)[None]
        v = np.asarray(v)[None]
        if self._k is None:
            self._k, self._v = k.copy(), v.copy()
        else:
            self._k = np.concatenate([self._k, k], axis=2)
            self._v = np.concatenate([self._v, v], axis=2)

    @property
    def keys(self):
        return None if self._k is None else self._k[0]

    @property
    def values(self):
        return None if self._v is None else self._v[0]

    def __len__(self):
        return 0 if self._k is None else self._k.shape[2]


def decode_step(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    """Attention for t new tokens x, shape (t, C), that follow everything in cache.

    Project x, append the new tokens' keys and values (n_kv_head, t, d_head) to the cache,
    then let the new queries attend over everything cached with causal_mask(t, len(cache)).
    Returns the new tokens' outputs, shape (t, C): the same rows that the full causal
    grouped_query_attention gives for these positions.
    """
    x = np.asarray(x)
    t, C = x.shape
    module = _module(Wq, Wk, Wv, Wo, C, n_head, n_kv_head)
    k, v = module.project_kv(x[None])       # (1, n_kv, t, hs)
    cache.append(k[0], v[0])                # the handout's cache takes (n_kv, t, hs)
    past_k = cache.keys[None]
    past_v = cache.values[None]
    return module(x[None], past_k, past_v, bias="causal")[0]


def kv_cache_bytes(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    """Bytes a KV cache needs: keys AND values, for every layer, kv head, position and
    sequence of the batch. Returns an int."""
    # core thinks of one cache tensor of shape (2, n_layers, batch, n_kv_head, seq_len, d_head)
    shape = (2, int(n_layers), int(batch), int(n_kv_head), int(seq_len), int(d_head))
    n_values = 1
    for s in shape:
        n_values *= s
    return n_values * int(bytes_per_value)
