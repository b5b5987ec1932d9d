"""MISTAKE: masked scores are filled with -1e9 and there is no empty-row guard, so a row with no allowed key gets uniform weights 1/S
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


def padding_mask(lengths, T):
    """Return the (B, T) padding mask: entry [b, t] is True when t < lengths[b].

    Raise ValueError when a length is below 0 or above T.

    >>> padding_mask([3, 1], 4).astype(int)
    array([[1, 1, 1, 0],
           [1, 0, 0, 0]])
    """
    lengths = np.asarray(lengths)
    if lengths.ndim == 0:
        lengths = lengths[None]
    if ((lengths < 0) | (lengths > T)).any():
        raise ValueError("padding_mask: need 0 <= lengths[b] <= T")
    grid = np.broadcast_to(np.arange(T), (len(lengths), T))
    return np.less(grid, lengths[:, None])


def attention_mask(lengths, T, causal=True):
    """Return the (B, T, T) mask of self-attention over a padded batch.

    Entry [b, i, j] is True when query i of sequence b may attend to key j: key j is a real
    token (j < lengths[b]) and, when causal is True, j <= i. Only keys are masked: a padded
    query row still attends to the real keys.
    """
    real = padding_mask(lengths, T)
    rows = np.arange(T).reshape(T, 1)
    cols = np.arange(T).reshape(1, T)
    key_ok = real[:, None, :]                            # (B, 1, T)
    time_ok = np.greater_equal(rows, cols) if causal else np.full((T, T), True)
    return np.logical_and(key_ok, time_ok[None, :, :])


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
    d = K.shape[-1]
    scores = Q @ np.swapaxes(K / np.sqrt(d), -1, -2)     # the scale goes on K
    if mask is None:
        mask = np.True_
    mask = np.asarray(mask, dtype=bool)
    full = np.broadcast_shapes(scores.shape, mask.shape)
    mask = np.broadcast_to(mask, full)
    scores = np.where(mask, scores, -1e9)                # (full) with -1e9 where not allowed
    row_max = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - row_max)
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights, weights @ V


class _MultiHead:
    """Holds the four projections and the head count; call it on queries and keys/values."""

    def __init__(self, Wq, Wk, Wv, Wo, h):
        self.Wq, self.Wk, self.Wv, self.Wo = (np.asarray(W, dtype=np.float64) for W in (Wq, Wk, Wv, Wo))
        self.h = int(h)
        self.C = self.Wq.shape[0]
        self.dh = self.C // self.h

    def _heads(self, Z):
        B, N, _ = Z.shape
        return np.moveaxis(Z.reshape(B, N, self.h, self.dh), 2, 1)     # (B, h, N, dh)

    def __call__(self, Xq, Xkv, mask):
        Xq = np.asarray(Xq, dtype=np.float64)
        Xkv = np.asarray(Xkv, dtype=np.float64)
        Qh = self._heads(Xq @ self.Wq)
        Kh = self._heads(Xkv @ self.Wk)
        Vh = self._heads(Xkv @ self.Wv)
        _, O = batched_attention(Qh, Kh, Vh, mask)
        B, _, N, _ = O.shape
        return np.moveaxis(O, 1, 2).reshape(B, N, self.C) @ self.Wo


def multi_head_attention(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention over a padded batch X of shape (B, T, C).

    Project X with Wq, Wk and Wv, split each into h heads of width C // h, shape
    (B, h, T, C // h), attend in every head with attention_mask(lengths, T, causal) (the same
    mask for every head), merge the heads back to (B, T, C) and multiply by Wo.
    Padded keys are never attended. Return the (B, T, C) output.
    """
    T = np.shape(X)[1]
    keys = attention_mask(lengths, T, causal)                     # (B, T, T)
    queries = padding_mask(lengths, T)[:, :, None]                 # (B, T, 1)
    mask = (keys & queries)[:, np.newaxis]                         # padded query rows -> empty
    return _MultiHead(Wq, Wk, Wv, Wo, h)(X, X, mask)


def cross_attention(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    """Multi-head cross-attention: the queries come from X (B, T, C), the keys and values from
    Y (B, S, C), whose sequence b has y_lengths[b] real tokens.

    Padded tokens of Y are never attended; there is no causal mask. Heads, layout and Wo as in
    multi_head_attention. Return the (B, T, C) output.
    """
    S = np.shape(Y)[1]
    mask = padding_mask(y_lengths, S)[:, np.newaxis, np.newaxis, :]
    return _MultiHead(Wq, Wk, Wv, Wo, h)(X, Y, mask)
