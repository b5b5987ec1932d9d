"""MISTAKE: the 'fully masked' flag is set once per block, not per row: if any row has seen only -inf, every row subtracts 0 instead of its m_new.
Affects: online_softmax_update  (style: loops-key-blocks)

Memory-efficient attention in NumPy: the online softmax, one block of keys at a time.
The update goes through the rows one by one (NumPy on each row, math.exp for the rescale);
chunked_attention goes through the key blocks with a counter and masks the diagonal rows one
by one.
"""

import math

import numpy as np


def attention_flops(B, H, T, d_head):
    """Floating-point operations of the attention core, Q·Kᵀ and weights·V, as an int."""
    flops = 0
    for product in ("QK^T", "PV"):
        flops += 2 * T * T * d_head
    flops *= B
    flops *= H
    return int(flops)


def score_bytes(B, H, T, bytes_per_value=4):
    """Bytes needed to hold the (T, T) score matrix of every head of every sequence: an int."""
    values = B * H * T * T
    return int(values * bytes_per_value)


def _update_rows(m, l, acc, scores, V_block):
    """The update, one query row at a time; returns fresh arrays."""
    T = len(m)
    m_out = np.empty(T)
    l_out = np.empty(T)
    acc_out = np.empty((T, acc.shape[1]))
    only_masked = False                           # flag: some row has seen only -inf
    for i in range(T):
        row = scores[i]
        row_max = row.max() if len(row) > 0 else -math.inf
        m_out[i] = max(float(m[i]), float(row_max))
        if m_out[i] == -math.inf:
            only_masked = True
    for i in range(T):
        m_new = float(m_out[i])
        ref = 0.0 if only_masked else m_new       # subtract 0 instead of m_new
        alpha = math.exp(float(m[i]) - ref)
        p = np.exp(scores[i] - ref)
        l_out[i] = alpha * l[i] + p.sum()
        acc_out[i] = alpha * acc[i] + p @ V_block
    return m_out, l_out, acc_out


def online_softmax_update(m, l, acc, scores, V_block):
    """One step of the online softmax: fold one block of keys into the running state."""
    m = np.asarray(m, dtype=float)
    l = np.asarray(l, dtype=float)
    acc = np.asarray(acc, dtype=float)
    scores = np.asarray(scores, dtype=float)
    V_block = np.asarray(V_block, dtype=float)
    return _update_rows(m, l, acc, scores, V_block)


def chunked_attention(Q, K, V, block_size=128, causal=False):
    """softmax(Q Kᵀ / sqrt(d)) V, visiting the keys block_size at a time."""
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    V = np.asarray(V, dtype=float)
    T = len(Q)
    S = len(K)
    d = Q.shape[1]
    dv = V.shape[1]
    m = np.full(T, -np.inf)
    l = np.zeros(T)
    acc = np.zeros((T, dv))
    n_blocks = 0
    start = 0
    while start < S:
        stop = start + block_size
        if stop > S:
            stop = S                              # the last block is shorter
        scores = Q @ K[start:stop].T
        scores /= math.sqrt(d)
        if causal:
            # rows before `start` see none of these keys; the rows on the diagonal see some
            scores[:start] = -np.inf
            for r in range(start, min(stop - 1, T)):
                first_hidden = r + 1 - start      # column of key r + 1 inside the block
                scores[r, first_hidden:] = -np.inf
        block_max = scores.max(axis=1)
        m_new = np.maximum(m, block_max)
        safe = np.where(m_new == -np.inf, 0.0, m_new)
        alpha = np.exp(m - safe)
        scores -= safe[:, None]
        np.exp(scores, out=scores)
        l *= alpha
        l += scores.sum(axis=1)
        acc *= alpha[:, None]
        acc += scores @ V[start:stop]
        m = m_new
        del scores
        n_blocks += 1
        start = stop
    output = acc / l[:, None]
    lse = m + np.log(l)
    return output, lse
