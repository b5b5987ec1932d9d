"""CORRECT: np.einsum everywhere, an additive (0 / -inf) mask, Q scaled before the product.
Affects: padding_mask, attention_mask, batched_attention, multi_head_attention, cross_attention.

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
    n = np.array(lengths, dtype=np.int64, ndmin=1)
    bad = (n < 0) | (n > T)
    if bad.any():
        raise ValueError("every length must satisfy 0 <= length <= T")
    positions = np.arange(T)
    return np.greater.outer(n, positions)          # n[b] > t  <=>  t < n[b]


def attention_mask(lengths, T, causal=True):
    """Return the (B, T, T) mask of self-attention over a padded batch.

    Entry [b, i, j] is True when query i of sequence b may attend to key j: key j is a real
    token (j < lengths[b]) and, when causal is True, j <= i. Only keys are masked: a padded
    query row still attends to the real keys.
    """
    key_real = padding_mask(lengths, T)                     # (B, T) over j
    i = np.arange(T)[:, None]
    j = np.arange(T)[None, :]
    allowed_ij = (j <= i) if causal else np.ones((T, T), dtype=bool)
    return np.einsum("bj,ij->bij", key_real, allowed_ij).astype(bool)


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
    Qs = Q / np.sqrt(Q.shape[-1])                       # scale first, then the product
    scores = np.einsum("...td,...sd->...ts", Qs, K)
    if mask is None:
        allowed = np.ones(scores.shape, dtype=bool)
    else:
        allowed = np.broadcast_to(np.asarray(mask, dtype=bool), np.broadcast_shapes(np.shape(mask), scores.shape))
        bias = np.where(allowed, 0.0, -np.inf)             # additive mask
        scores = scores + bias
    any_allowed = allowed.any(axis=-1, keepdims=True)
    # rows with allowed keys: shift by their max over allowed keys; empty rows: shift by 0
    m = np.where(any_allowed, np.max(scores, axis=-1, keepdims=True, initial=-np.inf), 0.0)
    e = np.exp(scores - m)
    z = np.einsum("...s->...", e)[..., None]
    weights = np.divide(e, z, out=np.zeros_like(e), where=any_allowed)
    output = np.einsum("...ts,...sv->...tv", weights, V)
    return weights, output


def _heads(Z, W, h):
    """Project Z (B, N, C) with W (C, C) straight into heads (B, h, N, C // h)."""
    C = W.shape[0]
    return np.einsum("bnc,chk->bhnk", Z, W.reshape(C, h, C // h))


def _out(O, Wo):
    """Merge heads O (B, h, N, dh) and apply Wo (C, C) in one contraction."""
    B, h, N, dh = O.shape
    return np.einsum("bhnk,hkc->bnc", O, Wo.reshape(h, dh, Wo.shape[1]))


def multi_head_attention(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention over a padded batch X of shape (B, T, C).

    Project X with Wq, Wk and Wv, split each into h heads of width C // h, shape
    (B, h, T, C // h), attend in every head with attention_mask(lengths, T, causal) (the same
    mask for every head), merge the heads back to (B, T, C) and multiply by Wo.
    Padded keys are never attended. Return the (B, T, C) output.
    """
    X = np.asarray(X, dtype=np.float64)
    Wq, Wk, Wv, Wo = (np.asarray(W, dtype=np.float64) for W in (Wq, Wk, Wv, Wo))
    mask = attention_mask(lengths, X.shape[1], causal)[:, None]
    _, O = batched_attention(_heads(X, Wq, h), _heads(X, Wk, h), _heads(X, Wv, h), mask)
    return _out(O, Wo)


def cross_attention(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    """Multi-head cross-attention: the queries come from X (B, T, C), the keys and values from
    Y (B, S, C), whose sequence b has y_lengths[b] real tokens.

    Padded tokens of Y are never attended; there is no causal mask. Heads, layout and Wo as in
    multi_head_attention. Return the (B, T, C) output.
    """
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    Wq, Wk, Wv, Wo = (np.asarray(W, dtype=np.float64) for W in (Wq, Wk, Wv, Wo))
    mask = padding_mask(y_lengths, Y.shape[1])[:, None, None, :]
    _, O = batched_attention(_heads(X, Wq, h), _heads(Y, Wk, h), _heads(Y, Wv, h), mask)
    return _out(O, Wo)
