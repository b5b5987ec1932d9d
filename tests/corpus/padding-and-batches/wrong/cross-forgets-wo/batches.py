"""MISTAKE: cross_attention returns the merged heads without the output projection Wo
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

NEG = -1e9   # a large negative fill (np.where-style, not added); empty rows are zeroed below


def _dtype(*arrays):
    """float32 if every input is float32 (or narrower), float64 for float64 or integer input."""
    return np.result_type(np.float32, *[np.asarray(a).dtype for a in arrays])


def padding_mask(lengths, T):
    """Return the (B, T) padding mask: entry [b, t] is True when t < lengths[b].

    Raise ValueError when a length is below 0 or above T.

    >>> padding_mask([3, 1], 4).astype(int)
    array([[1, 1, 1, 0],
           [1, 0, 0, 0]])
    """
    n = np.atleast_1d(np.asarray(lengths))
    if n.size and (n.min() < 0 or n.max() > T):
        raise ValueError("a length is below 0 or above T")
    out = np.empty((n.shape[0], T), dtype=bool)
    np.less(np.arange(T), n[:, None], out=out)
    return out


def attention_mask(lengths, T, causal=True):
    """Return the (B, T, T) mask of self-attention over a padded batch.

    Entry [b, i, j] is True when query i of sequence b may attend to key j: key j is a real
    token (j < lengths[b]) and, when causal is True, j <= i. Only keys are masked: a padded
    query row still attends to the real keys.
    """
    real = padding_mask(lengths, T)
    out = np.empty((real.shape[0], T, T), dtype=bool)
    out[...] = real[:, None, :]
    if causal:
        out &= np.tri(T, T, dtype=bool)     # np.tri: ones at and below the diagonal (j <= i)
    return out


def batched_attention(Q, K, V, mask=None):
    """Scaled dot-product attention over any number of leading (batch, head) dimensions.

    Q has shape (..., T, d), K (..., S, d) and V (..., S, d_v). mask, if given, is boolean and
    broadcasts to (..., T, S); where it is False the score becomes -inf before a numerically
    stable softmax over the keys. A query with no key allowed gets weights 0 and output 0.

    Returns (weights, output) with shapes (..., T, S) and (..., T, d_v).
    """
    dt = _dtype(Q, K, V)
    Q = np.asarray(Q, dtype=dt)
    K = np.asarray(K, dtype=dt)
    V = np.asarray(V, dtype=dt)
    w = np.matmul(Q, np.swapaxes(K, -1, -2))              # fresh buffer, reused below
    w *= dt.type(1.0 / np.sqrt(Q.shape[-1]))                # scale after the product
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        shape = np.broadcast_shapes(w.shape, mask.shape)
        if shape != w.shape:
            w = np.array(np.broadcast_to(w, shape))
        allowed = np.broadcast_to(mask, shape)
        np.copyto(w, dt.type(NEG), where=~allowed)
    else:
        allowed = None
    w -= w.max(axis=-1, keepdims=True, initial=-np.inf)
    np.exp(w, out=w)
    if allowed is not None:
        w[~allowed] = 0.0                                  # masked weights exactly 0, empty rows all 0
    z = w.sum(axis=-1, keepdims=True)
    np.divide(w, z, out=w, where=z > 0)
    output = np.matmul(w, V)
    return w, output


def _split(Z, h):
    B, N, C = Z.shape
    return np.ascontiguousarray(Z.reshape(B, N, h, C // h).transpose(0, 2, 1, 3))


def _merge_into(O, buf):
    B, h, N, dh = O.shape
    buf.reshape(B, N, h, dh)[...] = O.transpose(0, 2, 1, 3)
    return buf


def multi_head_attention(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention over a padded batch X of shape (B, T, C).

    Project X with Wq, Wk and Wv, split each into h heads of width C // h, shape
    (B, h, T, C // h), attend in every head with attention_mask(lengths, T, causal) (the same
    mask for every head), merge the heads back to (B, T, C) and multiply by Wo.
    Padded keys are never attended. Return the (B, T, C) output.
    """
    dt = _dtype(X, Wq, Wk, Wv, Wo)
    X = np.asarray(X, dtype=dt)
    B, T, C = X.shape
    W = np.concatenate([np.asarray(M, dtype=dt) for M in (Wq, Wk, Wv)], axis=1)  # (C, 3C)
    QKV = X @ W
    Qh, Kh, Vh = (_split(QKV[..., k * C:(k + 1) * C], h) for k in range(3))
    mask = attention_mask(lengths, T, causal)[:, None, :, :]
    _, O = batched_attention(Qh, Kh, Vh, mask)
    merged = _merge_into(O, np.empty((B, T, C), dtype=dt))
    return merged @ np.asarray(Wo, dtype=dt)


def cross_attention(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    """Multi-head cross-attention: the queries come from X (B, T, C), the keys and values from
    Y (B, S, C), whose sequence b has y_lengths[b] real tokens.

    Padded tokens of Y are never attended; there is no causal mask. Heads, layout and Wo as in
    multi_head_attention. Return the (B, T, C) output.
    """
    dt = _dtype(X, Y, Wq, Wk, Wv, Wo)
    X = np.asarray(X, dtype=dt)
    Y = np.asarray(Y, dtype=dt)
    B, T, C = X.shape
    S = Y.shape[1]
    Qh = _split(X @ np.asarray(Wq, dtype=dt), h)
    KV = Y @ np.concatenate([np.asarray(Wk, dtype=dt), np.asarray(Wv, dtype=dt)], axis=1)
    Kh, Vh = _split(KV[..., :C], h), _split(KV[..., C:], h)
    mask = padding_mask(y_lengths, S)[:, None, None, :]
    _, O = batched_attention(Qh, Kh, Vh, mask)
    merged = _merge_into(O, np.empty((B, T, C), dtype=dt))
    return merged
