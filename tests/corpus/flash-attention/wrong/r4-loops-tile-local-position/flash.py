"""MISTAKE: inside a tile of 128 queries the causal mask compares keys with the row's index in the tile (r), not its position in the sequence (q_start + r).
Affects: chunked_attention  (style: loops-row-lists)

Memory-efficient attention in NumPy: the online softmax, one block of keys at a time.
The update walks row by row and entry by entry; chunked_attention walks tiles of 128 queries
and blocks of keys, keeps a small state per tile and appends finished rows to lists.
"""

import math

import numpy as np

QUERY_TILE = 128


def attention_flops(B, H, T, d_head):
    """Floating-point operations of the attention core, Q·Kᵀ and weights·V, as an int."""
    per_product = 2 * T * T * d_head      # one multiply and one add per term
    total = 0
    for _ in range(2):                    # Q·Kᵀ, then weights·V
        total = total + per_product
    return int(total * B * H)


def score_bytes(B, H, T, bytes_per_value=4):
    """Bytes needed to hold the (T, T) score matrix of every head of every sequence: an int."""
    count = 0
    heads = B * H
    for _ in range(heads):
        count = count + T * T
    return int(count * bytes_per_value)


def online_softmax_update(m, l, acc, scores, V_block):
    """One step of the online softmax, written one row (and one score) at a time."""
    m = np.asarray(m, dtype=float)
    l = np.asarray(l, dtype=float)
    acc = np.asarray(acc, dtype=float)
    scores = np.asarray(scores, dtype=float)
    V_block = np.asarray(V_block, dtype=float)
    n_rows = len(m)
    dv = acc.shape[1]
    new_m, new_l, new_acc = [], [], []
    for i in range(n_rows):
        row = scores[i]
        old_m = float(m[i])
        biggest = old_m
        for j in range(len(row)):
            if row[j] > biggest:
                biggest = float(row[j])
        if biggest == -math.inf:
            # nothing but masked keys so far: the empty state stays empty
            new_m.append(-math.inf)
            new_l.append(0.0)
            new_acc.append(np.zeros(dv))
            continue
        alpha = math.exp(old_m - biggest)     # old_m may be -inf: exp(-inf) = 0
        total = alpha * float(l[i])
        acc_row = alpha * acc[i]
        for j in range(len(row)):
            if row[j] == -math.inf:
                continue                      # a masked key weighs nothing
            w = math.exp(float(row[j]) - biggest)
            total = total + w
            acc_row = acc_row + w * V_block[j]
        new_m.append(biggest)
        new_l.append(total)
        new_acc.append(acc_row)
    out_m = np.array(new_m, dtype=float)
    out_l = np.array(new_l, dtype=float)
    out_acc = np.array(new_acc, dtype=float).reshape(n_rows, dv)
    return out_m, out_l, out_acc


def chunked_attention(Q, K, V, block_size=128, causal=False):
    """softmax(Q Kᵀ / sqrt(d)) V, visiting the keys block_size at a time (queries 128 at a time)."""
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    V = np.asarray(V, dtype=float)
    T, d = Q.shape
    S = K.shape[0]
    dv = V.shape[1]
    scale = 1.0 / math.sqrt(d)
    out_rows = []
    lse_rows = []
    for q_start in range(0, T, QUERY_TILE):
        q_stop = min(q_start + QUERY_TILE, T)
        n_q = q_stop - q_start
        q_tile = Q[q_start:q_stop] * scale
        m = np.full(n_q, -np.inf)
        l = np.zeros(n_q)
        acc = np.zeros((n_q, dv))
        for start in range(0, S, block_size):
            stop = min(start + block_size, S)
            if causal and start > q_stop - 1:
                break                          # every key of this block is in the future
            scores = q_tile @ K[start:stop].T  # (n_q, stop - start)
            if causal and stop - 1 > q_start:  # the block reaches past some query: mask it
                cols = np.arange(start, stop)
                for r in range(n_q):
                    position = r
                    scores[r, cols > position] = -np.inf
            block_max = scores.max(axis=1)
            m_new = np.maximum(m, block_max)
            safe = m_new.copy()
            for r in range(n_q):
                if safe[r] == -np.inf:
                    safe[r] = 0.0
            alpha = np.exp(m - safe)
            scores -= safe[:, None]
            np.exp(scores, out=scores)         # scores now holds p
            l = alpha * l + scores.sum(axis=1)
            acc = alpha[:, None] * acc + scores @ V[start:stop]
            m = m_new
            del scores
        for r in range(n_q):
            out_rows.append(acc[r] / l[r])
            lse_rows.append(m[r] + math.log(l[r]))
    output = np.stack(out_rows) if out_rows else np.zeros((0, dv))
    lse = np.array(lse_rows, dtype=float)
    return output, lse
