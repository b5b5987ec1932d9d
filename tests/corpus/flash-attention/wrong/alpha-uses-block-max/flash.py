"""MISTAKE: alpha is exp(m - max of this block) instead of exp(m - m_new): wrong whenever the block does not raise the max.
Affects: online_softmax_update (and chunked_attention through it). (Otherwise the correct 'vectorised-where' implementation.)

Memory-efficient attention in NumPy: the online softmax, one block of keys at a time.
The update lives in a function so that its temporaries are freed when it returns, and the
loop deletes each block of scores once it has been folded in.
"""

import numpy as np


def attention_flops(B, H, T, d_head):
    """Floating-point operations of the attention core, Q·Kᵀ and weights·V, as an int."""
    return 4 * int(B) * int(H) * int(T) * int(T) * int(d_head)


def score_bytes(B, H, T, bytes_per_value=4):
    """Bytes needed to hold the (T, T) score matrix of every head of every sequence: an int."""
    return int(B) * int(H) * int(T) * int(T) * int(bytes_per_value)


def online_softmax_update(m, l, acc, scores, V_block):
    """One step of the online softmax: fold one block of keys into the running state."""
    m = np.asarray(m, dtype=np.float64)
    l = np.asarray(l, dtype=np.float64)
    acc = np.asarray(acc, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    V_block = np.asarray(V_block, dtype=np.float64)

    m_new = np.maximum(m, scores.max(axis=1))
    # rows that have seen only -inf: subtract 0 instead of -inf (no NaN)
    shift = np.where(np.isneginf(m_new), 0.0, m_new)
    block_max = scores.max(axis=1)
    alpha = np.exp(m - np.where(np.isneginf(block_max), 0.0, block_max))
    p = scores - shift[:, None]
    np.exp(p, out=p)
    l_new = alpha * l + p.sum(axis=1)
    acc_new = p @ V_block
    del p
    acc_new += alpha[:, None] * acc
    return m_new, l_new, acc_new


def chunked_attention(Q, K, V, block_size=128, causal=False):
    """softmax(Q Kᵀ / sqrt(d)) V, visiting the keys block_size at a time. Returns (output, lse)."""
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    T, d = Q.shape
    S = K.shape[0]
    dv = V.shape[1]
    if causal and T != S:
        raise ValueError("causal attention needs T == S")
    scale = 1.0 / np.sqrt(d)

    m = np.full(T, -np.inf)
    l = np.zeros(T)
    acc = np.zeros((T, dv))
    rows = np.arange(T)
    for start in range(0, S, block_size):
        stop = min(start + block_size, S)
        scores = Q @ K[start:stop].T
        scores *= scale
        if causal:
            cols = np.arange(start, stop)
            scores = np.where(cols[None, :] <= rows[:, None], scores, -np.inf)
        m, l, acc = online_softmax_update(m, l, acc, scores, V[start:stop])
        del scores
    acc /= l[:, None]
    lse = m + np.log(l)
    return acc, lse
