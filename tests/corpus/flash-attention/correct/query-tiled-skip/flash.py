"""CORRECT: FlashAttention-style tiling of queries and keys, future blocks skipped, additive -1e30 mask.
Affects: attention_flops, score_bytes, online_softmax_update (a stable update written with
np.where on the shift), chunked_attention (query tiles of 256 rows, each calling
online_softmax_update per key block; causal blocks wholly in the future are skipped, blocks
wholly in the past are not masked, and the diagonal block gets an additive mask).
"""

import numpy as np

_Q_TILE = 256
_NEG = -1e30


def attention_flops(B, H, T, d_head):
    """Floating-point operations of the attention core, Q·Kᵀ and weights·V, as an int."""
    return int(4 * B * H * T * T * d_head)


def score_bytes(B, H, T, bytes_per_value=4):
    """Bytes needed to hold the (T, T) score matrix of every head of every sequence: an int."""
    return int(B * H * T * T * bytes_per_value)


def online_softmax_update(m, l, acc, scores, V_block):
    """One step of the online softmax: fold one block of keys into the running state."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape[1]:
        m_new = np.maximum(m, scores.max(axis=1))
    else:
        m_new = np.array(m, dtype=np.float64)
    shift = np.where(m_new == -np.inf, 0.0, m_new)
    alpha = np.exp(m - shift)
    p = np.exp(scores - shift[:, None])
    l_new = alpha * l + p.sum(axis=1)
    acc_new = alpha[:, None] * acc + p @ V_block
    return m_new, l_new, acc_new


def chunked_attention(Q, K, V, block_size=128, causal=False):
    """softmax(Q Kᵀ / sqrt(d)) V, tiled over the queries and over the keys."""
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    T, d = Q.shape
    S = K.shape[0]
    dv = V.shape[1]
    scale = 1.0 / np.sqrt(d)
    output = np.empty((T, dv))
    lse = np.empty(T)
    for q0 in range(0, T, _Q_TILE):
        q1 = min(q0 + _Q_TILE, T)
        q = Q[q0:q1] * scale                    # scale before the product
        m = np.full(q1 - q0, -np.inf)
        l = np.zeros(q1 - q0)
        acc = np.zeros((q1 - q0, dv))
        for k0 in range(0, S, block_size):
            k1 = min(k0 + block_size, S)
            if causal and k0 > q1 - 1:
                break                           # wholly in the future of the whole tile
            s = q @ K[k0:k1].T
            if causal and k1 - 1 > q0:          # straddles the diagonal: mask in part
                future = np.arange(k0, k1)[None, :] > np.arange(q0, q1)[:, None]
                s = s + _NEG * future
            m, l, acc = online_softmax_update(m, l, acc, s, V[k0:k1])
        output[q0:q1] = acc / l[:, None]
        lse[q0:q1] = m + np.log(l)
    return output, lse
