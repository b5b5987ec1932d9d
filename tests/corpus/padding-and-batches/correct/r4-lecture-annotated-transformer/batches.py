"""CORRECT: lecture code ported to NumPy -- the Annotated Transformer's attention() and MultiHeadedAttention, masked_fill(mask == 0, -1e9) plus an empty-row guard.
Affects: padding_mask, attention_mask, batched_attention, multi_head_attention, cross_attention.

Attention over a batch of padded sequences, in NumPy. Conventions: right padding,
True = may attend, x @ W weights, head i owns columns i*d_k:(i+1)*d_k, a query with no
allowed key gets weights 0 and output 0.
"""

import math

import numpy as np


def _masked_fill(scores, where, value):
    out = scores.copy()
    out[np.broadcast_to(where, out.shape)] = value
    return out


def _softmax(x, dim=-1):
    x = x - x.max(axis=dim, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=dim, keepdims=True)


def subsequent_mask(size):
    "Mask out subsequent positions."
    attn_shape = (1, size, size)
    subsequent = np.triu(np.ones(attn_shape), k=1).astype(np.uint8)
    return subsequent == 0


def padding_mask(lengths, T):
    """Return the (B, T) padding mask: entry [b, t] is True when t < lengths[b].

    Raise ValueError when a length is below 0 or above T.

    >>> padding_mask([3, 1], 4).astype(int)
    array([[1, 1, 1, 0],
           [1, 0, 0, 0]])
    """
    valid_lens = np.array(lengths, dtype=np.int64).reshape(-1)
    if valid_lens.size and (valid_lens.min() < 0 or valid_lens.max() > T):
        raise ValueError(f"lengths must lie in 0..{T}, got {valid_lens.tolist()}")
    # d2l's sequence_mask: arange(maxlen)[None, :] < valid_len[:, None]
    return np.arange(T, dtype=np.int64)[None, :] < valid_lens[:, None]


def attention_mask(lengths, T, causal=True):
    """Return the (B, T, T) mask of self-attention over a padded batch.

    Entry [b, i, j] is True when query i of sequence b may attend to key j: key j is a real
    token (j < lengths[b]) and, when causal is True, j <= i. Only keys are masked: a padded
    query row still attends to the real keys.
    """
    src_mask = padding_mask(lengths, T)[:, None, :]           # (B, 1, T): keys only
    if causal:
        tgt_mask = src_mask & subsequent_mask(T)             # (B, T, T)
    else:
        tgt_mask = src_mask & np.ones((1, T, T), dtype=bool)
    return tgt_mask.astype(bool)


def batched_attention(Q, K, V, mask=None):
    """Scaled dot-product attention over any number of leading (batch, head) dimensions.

    Q has shape (..., T, d), K (..., S, d) and V (..., S, d_v). mask, if given, is boolean and
    broadcasts to (..., T, S); where it is False the score becomes -inf before a numerically
    stable softmax over the keys. A query with no key allowed gets weights 0 and output 0.

    Returns (weights, output) with shapes (..., T, S) and (..., T, d_v).
    """
    query = np.asarray(Q, dtype=np.float64)
    key = np.asarray(K, dtype=np.float64)
    value = np.asarray(V, dtype=np.float64)
    "Compute 'Scaled Dot Product Attention'"
    d_k = query.shape[-1]
    scores = np.matmul(query, np.swapaxes(key, -2, -1)) / math.sqrt(d_k)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        scores = _masked_fill(scores, mask == 0, -1e9)
    p_attn = _softmax(scores, dim=-1)
    if mask is not None:
        # -1e9 leaves an all-masked row uniform; the course wants it 0, and masked weights exactly 0
        p_attn = np.where(np.broadcast_to(mask, p_attn.shape), p_attn, 0.0)
    return p_attn, np.matmul(p_attn, value)


def _heads(x, h):
    nbatches = x.shape[0]
    d_k = x.shape[-1] // h
    # lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
    return np.swapaxes(x.reshape(nbatches, -1, h, d_k), 1, 2)


def _unheads(x):
    nbatches, h, _, d_k = x.shape
    # x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
    return np.ascontiguousarray(np.swapaxes(x, 1, 2)).reshape(nbatches, -1, h * d_k)


def multi_head_attention(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention over a padded batch X of shape (B, T, C).

    Project X with Wq, Wk and Wv, split each into h heads of width C // h, shape
    (B, h, T, C // h), attend in every head with attention_mask(lengths, T, causal) (the same
    mask for every head), merge the heads back to (B, T, C) and multiply by Wo.
    Padded keys are never attended. Return the (B, T, C) output.
    """
    x = np.asarray(X, dtype=np.float64)
    mask = attention_mask(lengths, x.shape[1], causal)
    # Same mask applied to all h heads.
    mask = mask[:, None]                                    # mask.unsqueeze(1)
    query, key, value = [_heads(x @ W, h) for W in (Wq, Wk, Wv)]
    _, out = batched_attention(query, key, value, mask=mask)
    return _unheads(out) @ Wo


def cross_attention(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    """Multi-head cross-attention: the queries come from X (B, T, C), the keys and values from
    Y (B, S, C), whose sequence b has y_lengths[b] real tokens.

    Padded tokens of Y are never attended; there is no causal mask. Heads, layout and Wo as in
    multi_head_attention. Return the (B, T, C) output.
    """
    x = np.asarray(X, dtype=np.float64)
    memory = np.asarray(Y, dtype=np.float64)
    src_mask = padding_mask(y_lengths, memory.shape[1])[:, None, :]   # (B, 1, S)
    src_mask = src_mask[:, None]                                      # unsqueeze(1): (B, 1, 1, S)
    query = _heads(x @ Wq, h)
    key, value = [_heads(memory @ W, h) for W in (Wk, Wv)]
    _, out = batched_attention(query, key, value, mask=src_mask)
    return _unheads(out) @ Wo
