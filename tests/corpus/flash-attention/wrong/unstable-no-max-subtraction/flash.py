"""MISTAKE: chunked_attention exponentiates the raw scores (no running max subtracted): l = sum exp(s), lse = log(l); overflows for large scores.
Affects: chunked_attention. (Otherwise the correct 'loops-rows-tiles' implementation.)

online_softmax_update walks the rows one at a time with scalar bookkeeping for m and l.
chunked_attention is written as two nested loops, over tiles of 64 queries and over blocks of
keys, with the update written inside the loop (per tile, so that it stays fast). Key blocks
wholly in the future of a query tile are skipped, only blocks that cross the diagonal are
masked (with a large negative number instead of -inf).
"""

import math

import numpy as np

_NEG = -1e30
_Q_TILE = 64


def attention_flops(B, H, T, d_head):
    """Floating-point operations of the attention core, Q·Kᵀ and weights·V, as an int."""
    total = 0
    for _ in range(2):  # Q·Kᵀ, then weights·V
        total += 2 * T * T * d_head
    return int(total * B * H)


def score_bytes(B, H, T, bytes_per_value=4):
    """Bytes needed to hold the (T, T) score matrix of every head of every sequence: an int."""
    return int(B * H * T * T * bytes_per_value)


def online_softmax_update(m, l, acc, scores, V_block):
    """One step of the online softmax, one query row at a time."""
    m = np.asarray(m, dtype=float)
    l = np.asarray(l, dtype=float)
    acc = np.asarray(acc, dtype=float)
    scores = np.asarray(scores, dtype=float)
    V_block = np.asarray(V_block, dtype=float)
    T, b = scores.shape
    m_out = np.empty(T)
    l_out = np.empty(T)
    acc_out = np.empty((T, V_block.shape[1]))
    for i in range(T):
        row_max = m[i]
        for j in range(b):
            if scores[i, j] > row_max:
                row_max = scores[i, j]
        m_out[i] = row_max
        if row_max == -math.inf:  # nothing but masked keys so far
            l_out[i] = 0.0
            acc_out[i] = 0.0
            continue
        alpha = math.exp(m[i] - row_max)  # exp(-inf) = 0 for an empty state
        li = alpha * l[i]
        acc_i = alpha * acc[i]
        for j in range(b):
            p = math.exp(scores[i, j] - row_max)
            if p != 0.0:
                li += p
                acc_i = acc_i + p * V_block[j]
        l_out[i] = li
        acc_out[i] = acc_i
    return m_out, l_out, acc_out


def chunked_attention(Q, K, V, block_size=128, causal=False):
    """softmax(Q Kᵀ / sqrt(d)) V, visiting the keys block_size at a time. Returns (output, lse)."""
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    V = np.asarray(V, dtype=float)
    T, d = Q.shape
    S = K.shape[0]
    scale = 1.0 / math.sqrt(d)
    output = np.empty((T, V.shape[1]))
    lse = np.empty(T)
    for q0 in range(0, T, _Q_TILE):
        q1 = min(q0 + _Q_TILE, T)
        q = Q[q0:q1]
        m = np.full(q1 - q0, -np.inf)
        l = np.zeros(q1 - q0)
        acc = np.zeros((q1 - q0, V.shape[1]))
        for k0 in range(0, S, block_size):
            k1 = min(k0 + block_size, S)
            if causal and k0 > q1 - 1:
                break  # this block and all later ones lie in the future of every query here
            s = (q @ K[k0:k1].T) * scale
            if causal and k1 - 1 > q0:  # the block crosses the diagonal of this tile
                rows = np.arange(q0, q1)[:, None]
                cols = np.arange(k0, k1)[None, :]
                s = np.where(cols <= rows, s, _NEG)
            p = np.exp(s)
            l = l + p.sum(axis=1)
            acc = acc + p @ V[k0:k1]
        output[q0:q1] = acc / l[:, None]
        lse[q0:q1] = np.log(l)
    return output, lse
