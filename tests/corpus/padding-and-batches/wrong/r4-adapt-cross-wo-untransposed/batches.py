"""MISTAKE: cross_attention hands Wo to the W @ x core without transposing it (the other three matrices are converted).
Affects: cross_attention  (written from the 'r4-adapt-column-vectors-additive' style)

Attention over a batch of padded sequences, in NumPy. The handout's conventions hold at the
edge: right padding, True = may attend, x @ W weights of shape (C, C), head i owns columns
i*d_head:(i+1)*d_head, a query with no allowed key gets weights 0 and output 0.
"""

import numpy as np


# ---------------------------------------------------------------------------------------------
# Core, from my notes for the linear-algebra course: tokens are COLUMNS, a layer is y = W x,
# a mask is ADDITIVE (0 = keep, -inf = blocked) and is laid out (keys, queries).
# ---------------------------------------------------------------------------------------------
def _col_softmax(Z):
    """Softmax down each column of Z (keys, queries); a column that is all -inf becomes 0."""
    top = Z.max(axis=-2, keepdims=True)
    dead = ~np.isfinite(top)
    E = np.exp(Z - np.where(dead, 0.0, top))
    tot = E.sum(axis=-2, keepdims=True)
    return np.where(dead, 0.0, E / np.where(tot == 0.0, 1.0, tot))


def _col_attend(Qc, Kc, Vc, additive):
    """Qc (..., d, T), Kc (..., d, S), Vc (..., dv, S), additive (..., S, T).

    Returns A (..., S, T) with columns summing to 1 and out (..., dv, T) = Vc @ A.
    """
    d = Qc.shape[-2]
    Z = np.swapaxes(Kc, -1, -2) @ Qc / np.sqrt(d)      # (..., S, T): z[s, t] = k_s . q_t
    Z = Z + additive
    A = _col_softmax(Z)
    return A, Vc @ A


class ColumnMultiHead:
    """y = Wo * concat_i attend(Wq_i x, Wk_i y, Wv_i y); weights stored as (out, in)."""

    def __init__(self, Wq, Wk, Wv, Wo, h):
        self.Wq, self.Wk, self.Wv, self.Wo = Wq, Wk, Wv, Wo    # (out, in) layout
        self.h = h

    def __call__(self, x_cols, y_cols, additive):
        """x_cols (B, C, T), y_cols (B, C, S), additive (B, S, T) -> (B, C, T)."""
        B, C, T = x_cols.shape
        S = y_cols.shape[-1]
        d = C // self.h
        Qc = (self.Wq @ x_cols).reshape(B, self.h, d, T)   # rows i*d:(i+1)*d = head i
        Kc = (self.Wk @ y_cols).reshape(B, self.h, d, S)
        Vc = (self.Wv @ y_cols).reshape(B, self.h, d, S)
        _, out = _col_attend(Qc, Kc, Vc, additive[:, None, :, :])
        return self.Wo @ out.reshape(B, self.h * d, T)


# ---------------------------------------------------------------------------------------------
# Edge: the handout's API (rows are tokens, x @ W, boolean masks with True = may attend).
# ---------------------------------------------------------------------------------------------
def _to_additive(allowed):
    """bool, True = may attend  ->  float, 0 where allowed and -inf where blocked."""
    return np.where(allowed, 0.0, -np.inf)


def padding_mask(lengths, T):
    """Return the (B, T) padding mask: entry [b, t] is True when t < lengths[b].

    Raise ValueError when a length is below 0 or above T.

    >>> padding_mask([3, 1], 4).astype(int)
    array([[1, 1, 1, 0],
           [1, 0, 0, 0]])
    """
    L = np.asarray(lengths, dtype=np.int64).reshape(-1, 1)   # a column of lengths
    if np.any(L < 0) or np.any(L > T):
        raise ValueError("lengths must be between 0 and T")
    t = np.arange(T).reshape(1, -1)
    return (t < L).astype(bool)


def attention_mask(lengths, T, causal=True):
    """Return the (B, T, T) mask of self-attention over a padded batch.

    Entry [b, i, j] is True when query i of sequence b may attend to key j: key j is a real
    token (j < lengths[b]) and, when causal is True, j <= i. Only keys are masked: a padded
    query row still attends to the real keys.
    """
    real = padding_mask(lengths, T)
    i = np.arange(T)[:, None]
    j = np.arange(T)[None, :]
    allowed = real[:, None, :] & ((j <= i) if causal else np.ones((T, T), dtype=bool))[None]
    return np.array(allowed, dtype=bool)


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
    T, S = Q.shape[-2], K.shape[-2]
    # rows -> columns
    Qc, Kc, Vc = (np.swapaxes(a, -1, -2) for a in (Q, K, V))
    if mask is None:
        additive = np.zeros((S, T))
    else:
        mask = np.asarray(mask, dtype=bool)
        full = np.broadcast_shapes(mask.shape, Q.shape[:-1] + (S,))     # at least (..., T, S)
        mask = np.broadcast_to(mask, full)
        additive = np.swapaxes(_to_additive(mask), -1, -2)               # (..., S, T)
    A, out = _col_attend(Qc, Kc, Vc, additive)
    # columns -> rows
    return np.swapaxes(A, -1, -2), np.swapaxes(out, -1, -2)


def multi_head_attention(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention over a padded batch X of shape (B, T, C).

    Project X with Wq, Wk and Wv, split each into h heads of width C // h, shape
    (B, h, T, C // h), attend in every head with attention_mask(lengths, T, causal) (the same
    mask for every head), merge the heads back to (B, T, C) and multiply by Wo.
    Padded keys are never attended. Return the (B, T, C) output.
    """
    X = np.asarray(X, dtype=np.float64)
    T = X.shape[1]
    mha = ColumnMultiHead(np.asarray(Wq).T, np.asarray(Wk).T, np.asarray(Wv).T,
                          np.asarray(Wo).T, h)               # x @ W  ==  (W.T @ x.T).T
    x_cols = np.swapaxes(X, 1, 2)                            # (B, C, T)
    allowed = attention_mask(lengths, T, causal)             # (B, T queries, T keys)
    additive = np.swapaxes(_to_additive(allowed), 1, 2)      # (B, keys, queries)
    return np.swapaxes(mha(x_cols, x_cols, additive), 1, 2)  # (B, T, C)


def cross_attention(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    """Multi-head cross-attention: the queries come from X (B, T, C), the keys and values from
    Y (B, S, C), whose sequence b has y_lengths[b] real tokens.

    Padded tokens of Y are never attended; there is no causal mask. Heads, layout and Wo as in
    multi_head_attention. Return the (B, T, C) output.
    """
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    T, S = X.shape[1], Y.shape[1]
    mha = ColumnMultiHead(np.asarray(Wq).T, np.asarray(Wk).T, np.asarray(Wv).T,
                          np.asarray(Wo), h)
    real = padding_mask(y_lengths, S)                         # (B, S)
    additive = np.repeat(_to_additive(real)[:, :, None], T, axis=2)   # (B, S keys, T queries)
    out = mha(np.swapaxes(X, 1, 2), np.swapaxes(Y, 1, 2), additive)
    return np.swapaxes(out, 1, 2)
