"""MISTAKE: softmax runs over all keys first, then the masked weights are zeroed and the row renormalised: a large padded score drowns the real ones
Affects: batched_attention.

Attention over a batch of padded sequences, in NumPy.

Conventions used throughout:

- A batch holds B sequences padded on the RIGHT to a common length T: sequence b has
  ``lengths[b]`` real tokens at positions 0 .. lengths[b] - 1, and padding after them.
- A mask is a boolean array; True means "may attend".
- Weight matrices are in ``x @ W`` layout, shape (C, C). Head i owns the contiguous columns
  ``i * d_head : (i + 1) * d_head``, where d_head = C // h.
- A query whose keys are all masked gets weights 0 and an output of 0.
- Outputs at padded query positions are not graded: nothing real ever reads them.
"""

import numpy as np


def _checked_lengths(lengths, T):
    n = np.asarray(lengths).ravel().astype(np.int64)
    for value in n:
        if not 0 <= value <= T:
            raise ValueError(f"length {value} is not between 0 and T = {T}")
    return n


def padding_mask(lengths, T):
    """Return the (B, T) padding mask: entry [b, t] is True when t < lengths[b].

    Raise ValueError when a length is below 0 or above T.

    >>> padding_mask([3, 1], 4).astype(int)
    array([[1, 1, 1, 0],
           [1, 0, 0, 0]])
    """
    n = _checked_lengths(lengths, T)
    return np.arange(T) < n.reshape(-1, 1)


def attention_mask(lengths, T, causal=True):
    """Return the (B, T, T) mask of self-attention over a padded batch.

    Entry [b, i, j] is True when query i of sequence b may attend to key j: key j is a real
    token (j < lengths[b]) and, when causal is True, j <= i. Only keys are masked: a padded
    query row still attends to the real keys.
    """
    keys = padding_mask(lengths, T)
    B = keys.shape[0]
    mask = np.repeat(keys[:, np.newaxis, :], T, axis=1)
    if causal:
        future = np.triu(np.ones((T, T), dtype=bool), k=1)   # j > i
        mask[:, future] = False
    return mask


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
    scores = np.matmul(Q, np.swapaxes(K, -2, -1)) * (Q.shape[-1] ** -0.5)
    if mask is None:
        allowed = np.ones_like(scores, dtype=bool)
    else:
        allowed = np.asarray(mask, dtype=bool)
        shape = np.broadcast_shapes(scores.shape, allowed.shape)
        allowed = np.broadcast_to(allowed, shape)
        scores = np.broadcast_to(scores, shape)
    has_key = allowed.any(axis=-1, keepdims=True)
    top = scores.max(axis=-1, keepdims=True, initial=-np.inf)
    full = np.exp(scores - top)
    full = full / full.sum(axis=-1, keepdims=True)          # softmax over every key
    kept = np.where(allowed, full, 0.0)                      # then drop the masked ones
    total = kept.sum(axis=-1, keepdims=True)
    weights = np.where(has_key, kept / np.where(total > 0, total, 1.0), 0.0)
    return weights, weights @ V


class _HeadLayout:
    """Contiguous column blocks: head i owns columns i*dh:(i+1)*dh."""

    def __init__(self, C, h):
        self.C, self.h, self.dh = C, h, C // h

    def split(self, Z):                      # (N, C) -> (h, N, dh)
        return np.stack([Z[:, i * self.dh:(i + 1) * self.dh] for i in range(self.h)])

    def merge(self, O):                      # (h, N, dh) -> (N, C)
        return np.concatenate(list(O), axis=1)


def _attend_sequence(Xq, Xkv, layout, Wq, Wk, Wv, Wo, mask):
    Qh = layout.split(Xq @ Wq)
    Kh = layout.split(Xkv @ Wk)
    Vh = layout.split(Xkv @ Wv)
    _, O = batched_attention(Qh, Kh, Vh, mask)
    return layout.merge(O) @ Wo


def multi_head_attention(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention over a padded batch X of shape (B, T, C).

    Project X with Wq, Wk and Wv, split each into h heads of width C // h, shape
    (B, h, T, C // h), attend in every head with attention_mask(lengths, T, causal) (the same
    mask for every head), merge the heads back to (B, T, C) and multiply by Wo.
    Padded keys are never attended. Return the (B, T, C) output.
    """
    X = np.asarray(X, dtype=np.float64)
    B, T, C = X.shape
    n = _checked_lengths(lengths, T)
    layout = _HeadLayout(C, h)
    out = np.zeros((B, T, C))               # padded query positions stay 0
    for b in range(B):
        L = int(n[b])
        if L == 0:
            continue
        mask = attention_mask([L], L, causal)[0]        # the sequence alone, cut to length L
        out[b, :L] = _attend_sequence(X[b, :L], X[b, :L], layout, Wq, Wk, Wv, Wo, mask)
    return out


def cross_attention(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    """Multi-head cross-attention: the queries come from X (B, T, C), the keys and values from
    Y (B, S, C), whose sequence b has y_lengths[b] real tokens.

    Padded tokens of Y are never attended; there is no causal mask. Heads, layout and Wo as in
    multi_head_attention. Return the (B, T, C) output.
    """
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    B, T, C = X.shape
    S = Y.shape[1]
    m = _checked_lengths(y_lengths, S)
    layout = _HeadLayout(C, h)
    out = np.zeros((B, T, C))               # a query with no real key at all gets 0
    for b in range(B):
        M = int(m[b])
        if M == 0:
            continue
        out[b] = _attend_sequence(X[b], Y[b, :M], layout, Wq, Wk, Wv, Wo, None)
    return out
