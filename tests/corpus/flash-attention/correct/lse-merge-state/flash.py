"""CORRECT: chunked attention keeps (normalised output, log-sum-exp) per row and merges blocks with logaddexp.
Affects: attention_flops, score_bytes, online_softmax_update (standard (m, l, acc) update with
an errstate-free guard), chunked_attention (another state: out = acc / l and lse = m + log l,
merged block by block; in causal mode only the rows that can see the block are updated).
"""

import numpy as np


def attention_flops(B, H, T, d_head):
    """Floating-point operations of the attention core, Q·Kᵀ and weights·V, as an int."""
    B, H, T, d_head = (int(x) for x in (B, H, T, d_head))
    return (2 * T * d_head * T) * 2 * H * B


def score_bytes(B, H, T, bytes_per_value=4):
    """Bytes needed to hold the (T, T) score matrix of every head of every sequence: an int."""
    B, H, T, bytes_per_value = (int(x) for x in (B, H, T, bytes_per_value))
    return bytes_per_value * T * T * H * B


def online_softmax_update(m, l, acc, scores, V_block):
    """One step of the online softmax: fold one block of keys into the running state."""
    m = np.asarray(m, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    block_max = np.full(m.shape, -np.inf)
    if scores.shape[1]:
        block_max = scores.max(axis=1)
    m_new = np.fmax(m, block_max)
    seen = m_new > -np.inf
    shift = np.zeros_like(m_new)
    shift[seen] = m_new[seen]
    alpha = np.exp(m - shift)
    p = np.exp(scores - shift[:, None])
    l_new = l * alpha + np.sum(p, axis=1)
    acc_new = acc * alpha[:, None] + np.dot(p, V_block)
    return m_new, l_new, acc_new


def _block_softmax(s, v):
    """Normalised output and log-sum-exp of one block of scores (every row has a finite score)."""
    mx = s.max(axis=1)
    s = s - mx[:, None]
    np.exp(s, out=s)
    total = s.sum(axis=1)
    out = s @ v
    out /= total[:, None]
    return out, mx + np.log(total)


def chunked_attention(Q, K, V, block_size=128, causal=False):
    """softmax(Q Kᵀ / sqrt(d)) V, merging per-block softmaxes through their log-sum-exp."""
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    T, d = Q.shape
    S = K.shape[0]
    out = np.zeros((T, V.shape[1]))
    lse = np.full(T, -np.inf)
    for start in range(0, S, block_size):
        stop = min(start + block_size, S)
        r0 = start if causal else 0             # rows before `start` see nothing of this block
        s = Q[r0:] @ K[start:stop].T
        s /= np.sqrt(d)
        if causal:
            rows = np.arange(r0, T)[:, None]
            cols = np.arange(start, stop)[None, :]
            s[cols > rows] = -np.inf
        o_blk, lse_blk = _block_softmax(s, V[start:stop])
        del s
        lse_old = lse[r0:]
        lse_new = np.logaddexp(lse_old, lse_blk)
        w_old = np.exp(lse_old - lse_new)       # 0 for a row that had seen nothing yet
        w_blk = np.exp(lse_blk - lse_new)
        out[r0:] *= w_old[:, None]
        o_blk *= w_blk[:, None]
        out[r0:] += o_blk
        lse[r0:] = lse_new
    return out, lse
