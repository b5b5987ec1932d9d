"""MISTAKE: the core softmax has no guard for an all -inf row: it computes exp(-inf - (-inf)) and returns NaN weights and outputs instead of 0.
Affects: batched_attention (empty rows; also cross_attention with a y_length of 0, multi_head_attention with a length 0)  (written from the 'r4-adapt-torch-seq-first-class' style)

Attention over a batch of padded sequences, in NumPy. At the edge: right padding,
True = may attend, x @ W weights (C, C), head i owns columns i*d_head:(i+1)*d_head,
a query with no allowed key gets weights 0 and output 0.
"""

import math

import numpy as np


# ---------------------------------------------------------------------------------------------
# Core: written to mimic torch.nn.MultiheadAttention(batch_first=False, bias=False).
#   query (L, N, E), key/value (S, N, E); key_padding_mask (N, S) bool, True = IGNORE;
#   attn_mask (L, S) float, added to the scores; weights stored as torch.nn.Linear (out, in).
# ---------------------------------------------------------------------------------------------
def _sdpa_core(q, k, v, blocked):
    """q (N, L, d), k (N, S, d), v (N, S, dv), blocked bool broadcasting to (N, L, S), True = blocked."""
    attn = np.einsum("nld,nsd->nls", q, k) / math.sqrt(q.shape[-1])
    if blocked is not None:
        attn = np.where(blocked, -np.inf, attn)
    row_max = attn.max(axis=-1, keepdims=True)
    empty = np.isneginf(row_max)
    attn = np.exp(attn - row_max)
    denom = attn.sum(axis=-1, keepdims=True)
    attn = attn / denom
    return attn, np.einsum("nls,nsv->nlv", attn, v)


class MultiheadAttention:
    def __init__(self, embed_dim, num_heads, q_proj_weight, k_proj_weight, v_proj_weight,
                 out_proj_weight):
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.q_proj_weight = q_proj_weight     # (out, in), used as x @ W.T
        self.k_proj_weight = k_proj_weight
        self.v_proj_weight = v_proj_weight
        self.out_proj_weight = out_proj_weight

    def __call__(self, query, key, value, key_padding_mask=None, attn_mask=None):
        L, N, E = query.shape
        S = key.shape[0]
        H, D = self.num_heads, self.head_dim
        q = query @ self.q_proj_weight.T                       # (L, N, E)
        k = key @ self.k_proj_weight.T                         # (S, N, E)
        v = value @ self.v_proj_weight.T
        # torch: q.view(L, N * H, D).transpose(0, 1)  -> (N*H, L, D)
        q = np.swapaxes(q.reshape(L, N * H, D), 0, 1)
        k = np.swapaxes(k.reshape(S, N * H, D), 0, 1)
        v = np.swapaxes(v.reshape(S, N * H, D), 0, 1)
        blocked = np.zeros((N * H, L, S), dtype=bool)
        if attn_mask is not None:                              # float mask: -inf = blocked
            blocked |= np.isneginf(attn_mask)[None, :, :]
        if key_padding_mask is not None:                       # (N, S): True = ignore
            kpm = np.repeat(key_padding_mask, H, axis=0)        # (N*H, S), n-major like view
            blocked |= kpm[:, None, :]
        w, out = _sdpa_core(q, k, v, blocked)                  # (N*H, L, D)
        out = np.swapaxes(out, 0, 1).reshape(L, N, E)          # back to (L, N, E)
        out = out @ self.out_proj_weight.T
        return out, w.reshape(N, H, L, S)


# ---------------------------------------------------------------------------------------------
# Edge: the handout's API.
# ---------------------------------------------------------------------------------------------
def padding_mask(lengths, T):
    """Return the (B, T) padding mask: entry [b, t] is True when t < lengths[b].

    Raise ValueError when a length is below 0 or above T.

    >>> padding_mask([3, 1], 4).astype(int)
    array([[1, 1, 1, 0],
           [1, 0, 0, 0]])
    """
    lens = [int(n) for n in np.asarray(lengths).reshape(-1)]
    for n in lens:
        if not 0 <= n <= T:
            raise ValueError(f"length {n} outside 0..{T}")
    out = np.zeros((len(lens), T), dtype=bool)
    for b, n in enumerate(lens):
        out[b, :n] = True
    return out


def attention_mask(lengths, T, causal=True):
    """Return the (B, T, T) mask of self-attention over a padded batch.

    Entry [b, i, j] is True when query i of sequence b may attend to key j: key j is a real
    token (j < lengths[b]) and, when causal is True, j <= i. Only keys are masked: a padded
    query row still attends to the real keys.
    """
    key_padding_mask = ~padding_mask(lengths, T)               # torch convention: True = ignore
    blocked = np.repeat(key_padding_mask[:, None, :], T, axis=1)
    if causal:
        blocked = blocked | np.triu(np.ones((T, T), dtype=bool), k=1)[None]
    return ~blocked                                            # back to True = may attend


def batched_attention(Q, K, V, mask=None):
    """Scaled dot-product attention over any number of leading (batch, head) dimensions.

    Q has shape (..., T, d), K (..., S, d) and V (..., S, d_v). mask, if given, is boolean and
    broadcasts to (..., T, S); where it is False the score becomes -inf before a numerically
    stable softmax over the keys. A query with no key allowed gets weights 0 and output 0.

    Returns (weights, output) with shapes (..., T, S) and (..., T, d_v).
    """
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    T, d = Q.shape[-2:]
    S, dv = K.shape[-2], V.shape[-1]
    shapes = [Q.shape[:-2], K.shape[:-2], V.shape[:-2]]
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        shapes.append(mask.shape[:-2])
    lead = np.broadcast_shapes(*shapes)
    # the core wants exactly one leading axis N
    q = np.broadcast_to(Q, lead + (T, d)).reshape(-1, T, d)
    k = np.broadcast_to(K, lead + (S, d)).reshape(-1, S, d)
    v = np.broadcast_to(V, lead + (S, dv)).reshape(-1, S, dv)
    blocked = None
    if mask is not None:
        blocked = ~np.broadcast_to(mask, lead + (T, S)).reshape(-1, T, S)
    w, out = _sdpa_core(q, k, v, blocked)
    return w.reshape(lead + (T, S)), out.reshape(lead + (T, dv))


def multi_head_attention(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention over a padded batch X of shape (B, T, C).

    Project X with Wq, Wk and Wv, split each into h heads of width C // h, shape
    (B, h, T, C // h), attend in every head with attention_mask(lengths, T, causal) (the same
    mask for every head), merge the heads back to (B, T, C) and multiply by Wo.
    Padded keys are never attended. Return the (B, T, C) output.
    """
    X = np.asarray(X, dtype=np.float64)
    B, T, C = X.shape
    layer = MultiheadAttention(C, h, np.asarray(Wq).T, np.asarray(Wk).T, np.asarray(Wv).T,
                               np.asarray(Wo).T)               # x @ W == x @ (W.T).T
    x = np.swapaxes(X, 0, 1)                                   # (T, B, C), sequence first
    key_padding_mask = ~padding_mask(lengths, T)
    attn_mask = None
    if causal:
        attn_mask = np.where(np.triu(np.ones((T, T), dtype=bool), k=1), -np.inf, 0.0)
    out, _ = layer(x, x, x, key_padding_mask=key_padding_mask, attn_mask=attn_mask)
    return np.swapaxes(out, 0, 1)                              # (B, T, C)


def cross_attention(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    """Multi-head cross-attention: the queries come from X (B, T, C), the keys and values from
    Y (B, S, C), whose sequence b has y_lengths[b] real tokens.

    Padded tokens of Y are never attended; there is no causal mask. Heads, layout and Wo as in
    multi_head_attention. Return the (B, T, C) output.
    """
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    C = X.shape[2]
    S = Y.shape[1]
    layer = MultiheadAttention(C, h, np.asarray(Wq).T, np.asarray(Wk).T, np.asarray(Wv).T,
                               np.asarray(Wo).T)
    memory = np.swapaxes(Y, 0, 1)                              # (S, B, C)
    out, _ = layer(np.swapaxes(X, 0, 1), memory, memory,
                   key_padding_mask=~padding_mask(y_lengths, S))
    return np.swapaxes(out, 0, 1)
