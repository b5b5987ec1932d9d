"""CORRECT: explicit Python loops (row by row in the update, query tiles x key blocks in the attention).
Affects: attention_flops, score_bytes, online_softmax_update, chunked_attention (all written
with plain Python loops and scalar math where reasonable).
"""

import math

import numpy as np


def attention_flops(B, H, T, d_head):
    """Floating-point operations of the attention core, Q·Kᵀ and weights·V, as an int."""
    per_product = 2 * int(T) * int(T) * int(d_head)  # one multiply and one add per term
    total = 0
    for _ in range(2):  # Q Kᵀ, then weights V
        total += per_product
    return int(B) * int(H) * total


def score_bytes(B, H, T, bytes_per_value=4):
    """Bytes needed to hold the (T, T) score matrix of every head of every sequence: an int."""
    return int(B) * int(H) * int(T) * int(T) * int(bytes_per_value)


def online_softmax_update(m, l, acc, scores, V_block):
    """One step of the online softmax, one query row at a time."""
    m = np.asarray(m)
    l = np.asarray(l)
    acc = np.asarray(acc)
    scores = np.asarray(scores)
    V_block = np.asarray(V_block)
    dtype = np.result_type(m, l, acc, scores, V_block, np.float64)
    T = scores.shape[0]
    m_out = np.empty(T, dtype=dtype)
    l_out = np.empty(T, dtype=dtype)
    acc_out = np.empty((T, acc.shape[1]), dtype=dtype)
    for i in range(T):
        row = scores[i]
        m_row = float(m[i])
        if row.size:
            m_row = max(m_row, float(row.max()))
        if m_row == -math.inf:  # nothing but masked keys so far
            m_out[i] = -math.inf
            l_out[i] = 0.0
            acc_out[i] = 0.0
            continue
        alpha = math.exp(float(m[i]) - m_row)  # exp(-inf) = 0 for an empty row
        p = np.exp(row - m_row)
        l_out[i] = alpha * float(l[i]) + p.sum()
        acc_out[i] = alpha * acc[i] + p @ V_block
        m_out[i] = m_row
    return m_out, l_out, acc_out


def chunked_attention(Q, K, V, block_size=128, causal=False):
    """softmax(Q Kᵀ / sqrt(d)) V, visiting the keys block_size at a time (queries tiled too)."""
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    T, d = Q.shape
    S = K.shape[0]
    dv = V.shape[1]
    scale = 1.0 / math.sqrt(d)
    q_tile = 512
    output = np.empty((T, dv))
    lse = np.empty(T)
    for q_start in range(0, T, q_tile):
        q_stop = min(q_start + q_tile, T)
        q = Q[q_start:q_stop]
        n = q_stop - q_start
        m = np.full(n, -np.inf)
        l = np.zeros(n)
        acc = np.zeros((n, dv))
        for start in range(0, S, block_size):
            if causal and start >= q_stop:
                break  # every later key is in the future of every query of the tile
            stop = min(start + block_size, S)
            s = (q @ K[start:stop].T) * scale
            if causal and stop - 1 > q_start:
                rows = np.arange(q_start, q_stop)[:, None]
                cols = np.arange(start, stop)[None, :]
                s = np.where(cols <= rows, s, -np.inf)
            m_new = np.maximum(m, s.max(axis=1))
            alpha = np.exp(m - m_new)
            p = np.exp(s - m_new[:, None])
            l = alpha * l + p.sum(axis=1)
            acc = alpha[:, None] * acc + p @ V[start:stop]
            m = m_new
        output[q_start:q_stop] = acc / l[:, None]
        lse[q_start:q_stop] = m + np.log(l)
    return output, lse
