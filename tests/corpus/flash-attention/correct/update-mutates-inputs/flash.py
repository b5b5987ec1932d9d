"""MISTAKE: online_softmax_update updates the caller's m, l and acc arrays in place (l *= alpha, acc *= ...) and returns them, so the state passed in is destroyed.
Affects: online_softmax_update.
"""

import numpy as np


def attention_flops(B, H, T, d_head):
    """Floating-point operations of the attention core, Q·Kᵀ and weights·V, as an int."""
    return 4 * B * H * T * T * d_head


def score_bytes(B, H, T, bytes_per_value=4):
    """Bytes needed to hold the (T, T) score matrix of every head of every sequence: an int."""
    return B * H * T * T * bytes_per_value


def online_softmax_update(m, l, acc, scores, V_block):
    """One step of the online softmax: fold one block of keys into the running state."""
    m_new = np.maximum(m, scores.max(axis=1))
    shift = np.where(np.isneginf(m_new), 0.0, m_new)  # fully masked rows: subtract 0
    alpha = np.exp(m - shift)
    p = np.exp(scores - shift[:, None])
    l *= alpha
    l += p.sum(axis=1)
    acc *= alpha[:, None]
    acc += p @ V_block
    m[...] = m_new
    return m, l, acc


def chunked_attention(Q, K, V, block_size=128, causal=False):
    """softmax(Q Kᵀ / sqrt(d)) V, visiting the keys block_size at a time."""
    T, d = Q.shape
    S = K.shape[0]
    scale = 1.0 / np.sqrt(d)
    m = np.full(T, -np.inf)
    l = np.zeros(T)
    acc = np.zeros((T, V.shape[1]))
    rows = np.arange(T)[:, None]
    for start in range(0, S, block_size):
        stop = min(start + block_size, S)
        scores = Q @ K[start:stop].T * scale
        if causal:
            cols = np.arange(start, stop)[None, :]
            scores = np.where(cols <= rows, scores, -np.inf)
        m, l, acc = online_softmax_update(m, l, acc, scores, V[start:stop])
    return acc / l[:, None], m + np.log(l)
