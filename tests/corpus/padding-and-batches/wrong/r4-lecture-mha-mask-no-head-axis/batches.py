"""MISTAKE: multi_head_attention passes the (B, T, T) mask to (B, h, T, T) scores without a head axis, so it lines up with the head axis (head i gets sequence i's mask when B == h, an error otherwise).
Affects: multi_head_attention  (written from the 'r4-lecture-masked-fill-port' style)

Attention over a batch of padded sequences, in NumPy. Follows the lecture slides
(minGPT-style CausalSelfAttention) line by line, with torch calls replaced by NumPy ones.
Conventions: right padding, True = may attend, x @ W weights, contiguous heads,
a query with no allowed key gets weights 0 and output 0.
"""

import math

import numpy as np


# --- tiny torch-like helpers ---------------------------------------------------------------
def masked_fill(x, mask, value):
    """torch.Tensor.masked_fill: put value where mask is True."""
    return np.where(mask, value, x)


def softmax(x, dim=-1):
    """torch.softmax(x, dim), numerically stable, and 0 for a row that is all -inf."""
    x_max = np.max(x, axis=dim, keepdims=True)
    x_max = np.where(np.isfinite(x_max), x_max, 0.0)      # all -inf row: avoid inf - inf
    e = np.exp(x - x_max)
    denom = np.sum(e, axis=dim, keepdims=True)
    return e / np.where(denom == 0.0, 1.0, denom)        # 0 / 1 = 0 on an empty row


def transpose(x, dim0, dim1):
    """torch.Tensor.transpose(dim0, dim1): swap two axes only."""
    return np.swapaxes(x, dim0, dim1)


# --- the assignment ---------------------------------------------------------------------------
def padding_mask(lengths, T):
    """Return the (B, T) padding mask: entry [b, t] is True when t < lengths[b].

    Raise ValueError when a length is below 0 or above T.

    >>> padding_mask([3, 1], 4).astype(int)
    array([[1, 1, 1, 0],
           [1, 0, 0, 0]])
    """
    lengths = np.asarray(lengths).reshape(-1).astype(np.int64)
    if (lengths < 0).any() or (lengths > T).any():
        raise ValueError("every length must be in [0, T]")
    positions = np.arange(T)                           # torch.arange(T)
    return positions[None, :] < lengths[:, None]       # (B, T), broadcast compare


def attention_mask(lengths, T, causal=True):
    """Return the (B, T, T) mask of self-attention over a padded batch.

    Entry [b, i, j] is True when query i of sequence b may attend to key j: key j is a real
    token (j < lengths[b]) and, when causal is True, j <= i. Only keys are masked: a padded
    query row still attends to the real keys.
    """
    key_padding = padding_mask(lengths, T)             # (B, T)
    B = key_padding.shape[0]
    mask = np.broadcast_to(key_padding[:, None, :], (B, T, T))   # varies along the keys
    if causal:
        bias = np.tril(np.ones((T, T), dtype=bool))    # the lecture's registered "bias" buffer
        mask = mask & bias[None, :, :]
    return np.ascontiguousarray(mask, dtype=bool)


def batched_attention(Q, K, V, mask=None):
    """Scaled dot-product attention over any number of leading (batch, head) dimensions.

    Q has shape (..., T, d), K (..., S, d) and V (..., S, d_v). mask, if given, is boolean and
    broadcasts to (..., T, S); where it is False the score becomes -inf before a numerically
    stable softmax over the keys. A query with no key allowed gets weights 0 and output 0.

    Returns (weights, output) with shapes (..., T, S) and (..., T, d_v).
    """
    q = np.asarray(Q, dtype=np.float64)
    k = np.asarray(K, dtype=np.float64)
    v = np.asarray(V, dtype=np.float64)
    # att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    att = (q @ transpose(k, -2, -1)) * (1.0 / math.sqrt(k.shape[-1]))
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        att = masked_fill(att, ~mask, float("-inf"))
    att = softmax(att, dim=-1)
    y = att @ v                                          # (..., T, S) x (..., S, d_v)
    return att, y


def multi_head_attention(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention over a padded batch X of shape (B, T, C).

    Project X with Wq, Wk and Wv, split each into h heads of width C // h, shape
    (B, h, T, C // h), attend in every head with attention_mask(lengths, T, causal) (the same
    mask for every head), merge the heads back to (B, T, C) and multiply by Wo.
    Padded keys are never attended. Return the (B, T, C) output.
    """
    x = np.asarray(X, dtype=np.float64)
    B, T, C = x.shape                                    # batch size, sequence length, n_embd
    n_head = h
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    k = transpose(k.reshape(B, T, n_head, C // n_head), 1, 2)   # (B, nh, T, hs)
    q = transpose(q.reshape(B, T, n_head, C // n_head), 1, 2)   # (B, nh, T, hs)
    v = transpose(v.reshape(B, T, n_head, C // n_head), 1, 2)   # (B, nh, T, hs)
    mask = attention_mask(lengths, T, causal)                  # (B, T, T)
    _, y = batched_attention(q, k, v, mask)                     # (B, nh, T, hs)
    y = transpose(y, 1, 2).reshape(B, T, C)                     # re-assemble all head outputs
    y = y @ Wo                                                  # output projection
    return y


def cross_attention(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    """Multi-head cross-attention: the queries come from X (B, T, C), the keys and values from
    Y (B, S, C), whose sequence b has y_lengths[b] real tokens.

    Padded tokens of Y are never attended; there is no causal mask. Heads, layout and Wo as in
    multi_head_attention. Return the (B, T, C) output.
    """
    x = np.asarray(X, dtype=np.float64)
    y_in = np.asarray(Y, dtype=np.float64)
    B, T, C = x.shape
    S = y_in.shape[1]
    n_head = h
    q = transpose((x @ Wq).reshape(B, T, n_head, C // n_head), 1, 2)      # (B, nh, T, hs)
    k = transpose((y_in @ Wk).reshape(B, S, n_head, C // n_head), 1, 2)   # (B, nh, S, hs)
    v = transpose((y_in @ Wv).reshape(B, S, n_head, C // n_head), 1, 2)   # (B, nh, S, hs)
    mask = padding_mask(y_lengths, S)[:, None, None, :]                   # (B, 1, 1, S)
    _, y = batched_attention(q, k, v, mask)                               # (B, nh, T, hs)
    y = transpose(y, 1, 2).reshape(B, T, C)
    return y @ Wo
