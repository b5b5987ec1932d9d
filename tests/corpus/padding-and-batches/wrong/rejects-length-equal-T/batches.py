"""MISTAKE: padding_mask raises ValueError when a length equals T (uses >= T instead of > T), so a full-length sequence is refused
Affects: padding_mask.

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

import math

import numpy as np


def padding_mask(lengths, T):
    """Return the (B, T) padding mask: entry [b, t] is True when t < lengths[b].

    Raise ValueError when a length is below 0 or above T.

    >>> padding_mask([3, 1], 4).astype(int)
    array([[1, 1, 1, 0],
           [1, 0, 0, 0]])
    """
    lengths = [int(n) for n in np.asarray(lengths).reshape(-1)]
    mask = np.zeros((len(lengths), T), dtype=bool)
    for b, n in enumerate(lengths):
        if n < 0 or n >= T:
            raise ValueError(f"length {n} of sequence {b} is outside [0, {T}]")
        for t in range(n):
            mask[b, t] = True
    return mask


def attention_mask(lengths, T, causal=True):
    """Return the (B, T, T) mask of self-attention over a padded batch.

    Entry [b, i, j] is True when query i of sequence b may attend to key j: key j is a real
    token (j < lengths[b]) and, when causal is True, j <= i. Only keys are masked: a padded
    query row still attends to the real keys.
    """
    real = padding_mask(lengths, T)
    B = real.shape[0]
    mask = np.zeros((B, T, T), dtype=bool)
    for b in range(B):
        for i in range(T):
            for j in range(T):
                mask[b, i, j] = bool(real[b, j]) and (not causal or j <= i)
    return mask


def _attend_one_row(q, K, V, allowed, scale):
    """Weights (S,) and output (d_v,) of a single query row."""
    S = K.shape[0]
    w = np.zeros(S)
    out = np.zeros(V.shape[1])
    scores = [float(q @ K[s]) * scale for s in range(S)]
    keep = [s for s in range(S) if allowed[s]]
    if not keep:
        return w, out
    m = max(scores[s] for s in keep)
    total = 0.0
    for s in keep:
        w[s] = math.exp(scores[s] - m)
        total += w[s]
    for s in keep:
        w[s] /= total
        out += w[s] * V[s]
    return w, out


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
    S = K.shape[-2]
    d_v = V.shape[-1]
    if mask is None:
        mask = np.ones((T, S), dtype=bool)
    mask = np.asarray(mask, dtype=bool)
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2], mask.shape[:-2])
    Qb = np.broadcast_to(Q, lead + (T, d))
    Kb = np.broadcast_to(K, lead + (S, d))
    Vb = np.broadcast_to(V, lead + (S, d_v))
    Mb = np.broadcast_to(mask, lead + (T, S))
    weights = np.zeros(lead + (T, S))
    output = np.zeros(lead + (T, d_v))
    scale = 1.0 / math.sqrt(d)
    for idx in np.ndindex(*lead):
        for t in range(T):
            w, o = _attend_one_row(Qb[idx][t], Kb[idx], Vb[idx], Mb[idx][t], scale)
            weights[idx + (t,)] = w
            output[idx + (t,)] = o
    return weights, output


def multi_head_attention(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention over a padded batch X of shape (B, T, C).

    Project X with Wq, Wk and Wv, split each into h heads of width C // h, shape
    (B, h, T, C // h), attend in every head with attention_mask(lengths, T, causal) (the same
    mask for every head), merge the heads back to (B, T, C) and multiply by Wo.
    Padded keys are never attended. Return the (B, T, C) output.
    """
    X = np.asarray(X, dtype=np.float64)
    B, T, C = X.shape
    dh = C // h
    mask = attention_mask(lengths, T, causal)
    Q, K, V = X @ Wq, X @ Wk, X @ Wv
    merged = np.zeros((B, T, C))
    for b in range(B):
        for i in range(h):
            cols = slice(i * dh, (i + 1) * dh)
            _, out = batched_attention(Q[b][:, cols], K[b][:, cols], V[b][:, cols], mask[b])
            merged[b][:, cols] = out
    return merged @ Wo


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
    dh = C // h
    real = padding_mask(y_lengths, S)
    Q, K, V = X @ Wq, Y @ Wk, Y @ Wv
    merged = np.zeros((B, T, C))
    for b in range(B):
        for i in range(h):
            cols = slice(i * dh, (i + 1) * dh)
            _, out = batched_attention(Q[b][:, cols], K[b][:, cols], V[b][:, cols], real[b])
            merged[b][:, cols] = out
    return merged @ Wo
