"""MISTAKE: copy-paste slip: cross_attention projects the keys of Y with Wq instead of Wk.
Affects: cross_attention.

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
        raise ValueError(f"every length must lie in 0 .. {T}, got {lengths.tolist()}")
    return np.arange(T)[None, :] < lengths[:, None]


def attention_mask(lengths, T, causal=True):
    """Return the (B, T, T) mask of self-attention over a padded batch.

    Entry [b, i, j] is True when query i of sequence b may attend to key j: key j is a real
    token (j < lengths[b]) and, when causal is True, j <= i. Only keys are masked: a padded
    query row still attends to the real keys.
    """
    real = padding_mask(lengths, T)  # (B, T)
    mask = np.repeat(real[:, None, :], T, axis=1)  # (B, T, T), varies along the keys
    if causal:
        mask &= np.tril(np.ones((T, T), dtype=bool))
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
    d = Q.shape[-1]
    scores = (Q @ np.swapaxes(K, -1, -2)) / np.sqrt(d)
    if mask is not None:
        scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    row_max = np.max(scores, axis=-1, keepdims=True, initial=-np.inf)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)  # empty rows: subtract nothing
    e = np.exp(scores - row_max)
    total = e.sum(axis=-1, keepdims=True)
    weights = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    output = weights @ V
    return weights, output


def _split_heads(A, h):
    B, T, C = A.shape
    return A.reshape(B, T, h, C // h).transpose(0, 2, 1, 3)  # (B, h, T, d_head)


def _merge_heads(A):
    B, h, T, d_head = A.shape
    return A.transpose(0, 2, 1, 3).reshape(B, T, h * d_head)


def multi_head_attention(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention over a padded batch X of shape (B, T, C).

    Project X with Wq, Wk and Wv, split each into h heads of width C // h, shape
    (B, h, T, C // h), attend in every head with attention_mask(lengths, T, causal) (the same
    mask for every head), merge the heads back to (B, T, C) and multiply by Wo.
    Padded keys are never attended. Return the (B, T, C) output.
    """
    X = np.asarray(X, dtype=np.float64)
    B, T, C = X.shape
    Q = _split_heads(X @ Wq, h)
    K = _split_heads(X @ Wk, h)
    V = _split_heads(X @ Wv, h)
    mask = attention_mask(lengths, T, causal)[:, None, :, :]  # (B, 1, T, T): same for every head
    _, heads = batched_attention(Q, K, V, mask)
    return _merge_heads(heads) @ Wo


def cross_attention(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    """Multi-head cross-attention: the queries come from X (B, T, C), the keys and values from
    Y (B, S, C), whose sequence b has y_lengths[b] real tokens.

    Padded tokens of Y are never attended; there is no causal mask. Heads, layout and Wo as in
    multi_head_attention. Return the (B, T, C) output.
    """
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    S = Y.shape[1]
    Q = _split_heads(X @ Wq, h)
    K = _split_heads(Y @ Wq, h)
    V = _split_heads(Y @ Wv, h)
    mask = padding_mask(y_lengths, S)[:, None, None, :]  # (B, 1, 1, S): keys of Y only
    _, heads = batched_attention(Q, K, V, mask)
    return _merge_heads(heads) @ Wo
