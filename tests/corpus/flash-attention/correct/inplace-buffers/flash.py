"""CORRECT: preallocated buffers and in-place NumPy operations (out=, *=, copyto with where=).
Affects: attention_flops, score_bytes, online_softmax_update (works on copies, in place),
chunked_attention (one preallocated (T, block_size) score buffer reused for every block).
"""

import numpy as np


def attention_flops(B, H, T, d_head):
    """Floating-point operations of the attention core, Q·Kᵀ and weights·V, as an int."""
    flops_per_head = 2 * (2 * T * T * d_head)
    return int(B * H * flops_per_head)


def score_bytes(B, H, T, bytes_per_value=4):
    """Bytes needed to hold the (T, T) score matrix of every head of every sequence: an int."""
    values = B * H * T * T
    return int(values * bytes_per_value)


def _fold(m, l, acc, s, V_block):
    """Fold the block of scores s into (m, l, acc) in place. s is overwritten with the weights."""
    m_new = s.max(axis=1) if s.shape[1] else np.full_like(m, -np.inf)
    np.maximum(m_new, m, out=m_new)
    ref = m_new.copy()
    ref[np.isneginf(ref)] = 0.0                 # fully masked rows: subtract 0, not -inf
    alpha = np.subtract(m, ref)
    np.exp(alpha, out=alpha)
    np.subtract(s, ref[:, None], out=s)
    np.exp(s, out=s)                            # s is now p
    l *= alpha
    l += s.sum(axis=1)
    acc *= alpha[:, None]
    acc += s @ V_block
    m[...] = m_new


def online_softmax_update(m, l, acc, scores, V_block):
    """One step of the online softmax. The inputs are not modified: the work is done on copies."""
    dtype = np.result_type(m, l, acc, scores, V_block, np.float64)
    m_out = np.array(m, dtype=dtype)
    l_out = np.array(l, dtype=dtype)
    acc_out = np.array(acc, dtype=dtype)
    s = np.array(scores, dtype=dtype)
    _fold(m_out, l_out, acc_out, s, np.asarray(V_block, dtype=dtype))
    return m_out, l_out, acc_out


def chunked_attention(Q, K, V, block_size=128, causal=False):
    """softmax(Q Kᵀ / sqrt(d)) V, visiting the keys block_size at a time in a reused buffer."""
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    T, d = Q.shape
    S = K.shape[0]
    scale = 1.0 / np.sqrt(d)
    b = max(1, min(block_size, S))
    buffer = np.empty((T, b))
    m = np.full(T, -np.inf)
    l = np.zeros(T)
    acc = np.zeros((T, V.shape[1]))
    query_pos = np.arange(T)[:, None]
    for start in range(0, S, block_size):
        stop = min(start + block_size, S)
        s = buffer[:, : stop - start]
        np.matmul(Q, K[start:stop].T, out=s)
        s *= scale
        if causal:
            future = np.arange(start, stop)[None, :] > query_pos
            np.copyto(s, -np.inf, where=future)
            del future
        _fold(m, l, acc, s, V[start:stop])
    output = acc
    output /= l[:, None]
    lse = np.log(l)
    lse += m
    return output, lse
