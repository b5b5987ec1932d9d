"""CORRECT: lecture code ported to NumPy -- the slides' PyTorch attention (dim=-1 helpers, transpose -> swapaxes, masked_fill) turned into an online softmax.
Affects: attention_flops, score_bytes, online_softmax_update, chunked_attention.

Memory-efficient attention in NumPy: the online softmax, one block of keys at a time.
Ported from the lecture's PyTorch cell:

    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
    scores = scores.masked_fill(mask == 0, float('-inf'))
    p_attn = scores.softmax(dim=-1)
    return torch.matmul(p_attn, v)

torch.matmul -> np.matmul, .transpose(-2, -1) -> np.swapaxes(.., -2, -1),
.max(dim=-1).values -> .max(axis=-1), masked_fill -> np.where, keepdim -> keepdims.
"""

import math

import numpy as np


def attention_flops(B, H, T, d_head):
    """Floating-point operations of the attention core, Q·Kᵀ and weights·V, as an int."""
    return 4 * int(B) * int(H) * int(T) ** 2 * int(d_head)


def score_bytes(B, H, T, bytes_per_value=4):
    """Bytes needed to hold the (T, T) score matrix of every head of every sequence: an int."""
    numel = int(B) * int(H) * int(T) * int(T)          # scores.numel()
    return numel * int(bytes_per_value)                # * scores.element_size()


def masked_fill(x, mask, value):
    """torch.Tensor.masked_fill: put `value` where mask is True."""
    return np.where(mask, value, x)


def amax(x, dim=-1, keepdim=False):
    """torch.amax."""
    return np.max(x, axis=dim, keepdims=keepdim)


def online_softmax_update(m, l, acc, scores, V_block):
    """One step of the online softmax: fold one block of keys into the running state."""
    m = np.asarray(m, dtype=np.float64)
    l = np.asarray(l, dtype=np.float64)
    acc = np.asarray(acc, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    V_block = np.asarray(V_block, dtype=np.float64)
    m_new = np.maximum(m, amax(scores, dim=-1))
    # torch.where(m_new == -inf, 0, m_new): a row that has seen only -inf subtracts 0
    m_sub = masked_fill(m_new, m_new == -math.inf, 0.0)
    alpha = np.exp(m - m_sub)
    p = scores - np.expand_dims(m_sub, -1)           # .unsqueeze(-1)
    np.exp(p, out=p)
    l_new = alpha * l + p.sum(axis=-1)
    acc_new = np.expand_dims(alpha, -1) * acc + np.matmul(p, V_block)
    return m_new, l_new, acc_new


def _block_scores(q, k_blk, d_k):
    """torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k), for one block of keys."""
    scores = np.matmul(q, np.swapaxes(k_blk, -2, -1))
    scores /= math.sqrt(d_k)
    return scores


def chunked_attention(Q, K, V, block_size=128, causal=False):
    """softmax(Q Kᵀ / sqrt(d)) V, visiting the keys block_size at a time."""
    q = np.asarray(Q, dtype=np.float64)
    k = np.asarray(K, dtype=np.float64)
    v = np.asarray(V, dtype=np.float64)
    T, d_k = q.shape
    S = k.shape[-2]
    m = np.full(T, -math.inf)
    l = np.zeros(T)
    acc = np.zeros((T, v.shape[-1]))
    rows = np.arange(T)[:, None]                      # torch.arange(T).unsqueeze(-1)
    for start in range(0, S, block_size):
        end = min(start + block_size, S)
        scores = _block_scores(q, k[start:end], d_k)
        if causal:
            cols = np.arange(start, end)[None, :]
            mask = cols <= rows                       # the lecture's tril, one block of it
            scores = masked_fill(scores, mask == 0, -math.inf)
            del mask
        m, l, acc = online_softmax_update(m, l, acc, scores, v[start:end])
        del scores
    output = acc / np.expand_dims(l, -1)
    lse = m + np.log(l)
    return output, lse
