"""MISTAKE: no guard for a row with every key masked: -inf minus -inf gives NaN weights and outputs
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
    lengths = np.asarray(lengths).reshape(-1)
    if np.any(lengths < 0) or np.any(lengths > T):
        raise ValueError(f"lengths must lie in [0, {T}], got {lengths.tolist()}")
    return np.arange(T)[None, :] < lengths[:, None]


def attention_mask(lengths, T, causal=True):
    """Return the (B, T, T) mask of self-attention over a padded batch.

    Entry [b, i, j] is True when query i of sequence b may attend to key j: key j is a real
    token (j < lengths[b]) and, when causal is True, j <= i. Only keys are masked: a padded
    query row still attends to the real keys.
    """
    real = padding_mask(lengths, T)                       # (B, T)
    mask = np.broadcast_to(real[:, None, :], (real.shape[0], T, T))
    if causal:
        mask = mask & np.tril(np.ones((T, T), dtype=bool))
    return np.array(mask, dtype=bool)


def batched_attention(Q, K, V, mask=None):
    """Scaled dot-product attention over any number of leading (batch, head) dimensions.

    Q has shape (..., T, d), K (..., S, d) and V (..., S, d_v). mask, if given, is boolean and
    broadcasts to (..., T, S); where it is False the score becomes -inf before a numerically
    stable softmax over the keys. A query with no key allowed gets weights 0 and output 0.

    Returns (weights, output) with shapes (..., T, S) and (..., T, d_v).
    """
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    V = np.asarray(V, dtype=float)
    d = Q.shape[-1]
    scores = (Q @ np.swapaxes(K, -1, -2)) / np.sqrt(d)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        scores = np.where(mask, scores, -np.inf)
    row_max = np.max(scores, axis=-1, keepdims=True, initial=-np.inf)
    e = np.exp(scores - row_max)
    weights = e / e.sum(axis=-1, keepdims=True)
    output = weights @ V
    return weights, output


def _split(Z, h):
    B, N, C = Z.shape
    return Z.reshape(B, N, h, C // h).transpose(0, 2, 1, 3)


def _merge(Z):
    B, h, N, dh = Z.shape
    return Z.transpose(0, 2, 1, 3).reshape(B, N, h * dh)


def multi_head_attention(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention over a padded batch X of shape (B, T, C).

    Project X with Wq, Wk and Wv, split each into h heads of width C // h, shape
    (B, h, T, C // h), attend in every head with attention_mask(lengths, T, causal) (the same
    mask for every head), merge the heads back to (B, T, C) and multiply by Wo.
    Padded keys are never attended. Return the (B, T, C) output.
    """
    X = np.asarray(X, dtype=float)
    T = X.shape[1]
    mask = attention_mask(lengths, T, causal)[:, None, :, :]
    Qh, Kh, Vh = (_split(X @ W, h) for W in (Wq, Wk, Wv))
    _, out = batched_attention(Qh, Kh, Vh, mask)
    return _merge(out) @ Wo


def cross_attention(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    """Multi-head cross-attention: the queries come from X (B, T, C), the keys and values from
    Y (B, S, C), whose sequence b has y_lengths[b] real tokens.

    Padded tokens of Y are never attended; there is no causal mask. Heads, layout and Wo as in
    multi_head_attention. Return the (B, T, C) output.
    """
    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float)
    S = Y.shape[1]
    mask = padding_mask(y_lengths, S)[:, None, None, :]
    Qh = _split(X @ Wq, h)
    Kh = _split(Y @ Wk, h)
    Vh = _split(Y @ Wv, h)
    _, out = batched_attention(Qh, Kh, Vh, mask)
    return _merge(out) @ Wo
