"""MISTAKE: the causal mask of a query tile uses row indices local to the tile (0..n-1) instead of q_start..q_stop-1; invisible with a single query tile (T <= 64).
Affects: chunked_attention. (Otherwise the correct 'flash-2d-tiles' implementation.)

The queries are cut into tiles of at most 256 rows; each tile keeps its own (m, l, acc) and
visits the key blocks, calling online_softmax_update. In causal mode a key block is skipped
when it lies wholly in the future of the tile, used unmasked when it lies wholly in its past,
and masked with np.where(..., -inf) only when it crosses the diagonal.
"""

import numpy as np

Q_TILE = 64


def attention_flops(B, H, T, d_head):
    """Floating-point operations of the attention core, Q·Kᵀ and weights·V, as an int."""
    qk = 2 * T * T * d_head
    pv = 2 * T * T * d_head
    return (qk + pv) * B * H


def score_bytes(B, H, T, bytes_per_value=4):
    """Bytes needed to hold the (T, T) score matrix of every head of every sequence: an int."""
    return bytes_per_value * T * T * H * B


def online_softmax_update(m, l, acc, scores, V_block):
    """One step of the online softmax: fold one block of keys into the running state."""
    scores = np.asarray(scores, dtype=np.float64)
    m_new = np.maximum(np.asarray(m, dtype=np.float64), np.max(scores, axis=-1))
    seen = np.isfinite(m_new)
    base = np.zeros_like(m_new)
    base[seen] = m_new[seen]
    alpha = np.exp(m - base)
    p = np.exp(scores - base[:, np.newaxis])
    l_new = np.add.reduce(p, axis=-1) + alpha * l
    acc_new = np.matmul(p, V_block) + alpha[:, np.newaxis] * acc
    return m_new, l_new, acc_new


def chunked_attention(Q, K, V, block_size=128, causal=False):
    """softmax(Q Kᵀ / sqrt(d)) V, visiting the keys block_size at a time. Returns (output, lse)."""
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    T, d = Q.shape
    S = K.shape[0]
    dv = V.shape[1]
    rsqrt_d = d ** -0.5
    output = np.zeros((T, dv))
    lse = np.zeros(T)

    q_start = 0
    while q_start < T:
        q_stop = min(q_start + Q_TILE, T)
        Qt = Q[q_start:q_stop]
        n = q_stop - q_start
        m, l, acc = np.full(n, -np.inf), np.zeros(n), np.zeros((n, dv))
        k_start = 0
        while k_start < S:
            k_stop = min(k_start + block_size, S)
            if causal and k_start >= q_stop:
                break                                   # wholly in the future: skip the rest
            s = (Qt @ K[k_start:k_stop].T) * rsqrt_d
            if causal and k_stop - 1 > q_start:         # crosses the diagonal: mask in part
                qi = np.arange(q_stop - q_start).reshape(-1, 1)
                kj = np.arange(k_start, k_stop).reshape(1, -1)
                s = np.where(kj <= qi, s, -np.inf)
            m, l, acc = online_softmax_update(m, l, acc, s, V[k_start:k_stop])
            del s
            k_start = k_stop
        output[q_start:q_stop] = acc / l[:, np.newaxis]
        lse[q_start:q_stop] = m + np.log(l)
        q_start = q_stop
    return output, lse
