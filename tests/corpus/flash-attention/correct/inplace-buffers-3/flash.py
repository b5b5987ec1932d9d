"""CORRECT: preallocated buffers and in-place ufuncs; Q is scaled once before the products.
Functions: attention_flops, score_bytes, online_softmax_update, chunked_attention.

One (T, block_size) buffer is allocated up front and reused for every block: the scores are
written into it with matmul(out=), masked with copyto(where=), shifted and exponentiated in
place. The state is updated in place too (acc *= alpha). online_softmax_update works on
copies, so the caller's arrays are never modified.
"""

import numpy as np


def attention_flops(B, H, T, d_head):
    """Floating-point operations of the attention core, Q·Kᵀ and weights·V, as an int."""
    return 4 * B * H * T**2 * d_head


def score_bytes(B, H, T, bytes_per_value=4):
    """Bytes needed to hold the (T, T) score matrix of every head of every sequence: an int."""
    return B * H * T**2 * bytes_per_value


def _fold_inplace(m, l, acc, s, V_block, pv):
    """Fold one block into (m, l, acc) in place. s is overwritten with the weights p.

    pv is a (T, dv) scratch buffer for p @ V_block.
    """
    m_new = s.max(axis=1)
    np.maximum(m_new, m, out=m_new)
    finite = np.isfinite(m_new)
    ref = np.where(finite, m_new, 0.0)
    # alpha = exp(m - ref), written over m (m is replaced by m_new below)
    np.subtract(m, ref, out=m)
    np.exp(m, out=m)
    l *= m
    acc *= m[:, None]
    np.subtract(s, ref[:, None], out=s)
    np.exp(s, out=s)
    l += s.sum(axis=1)
    np.matmul(s, V_block, out=pv)
    acc += pv
    m[...] = m_new


def online_softmax_update(m, l, acc, scores, V_block):
    """One step of the online softmax: fold one block of keys into the running state."""
    m = np.array(m, dtype=np.float64)          # copies: the inputs stay untouched
    l = np.array(l, dtype=np.float64)
    acc = np.array(acc, dtype=np.float64)
    s = np.array(scores, dtype=np.float64)
    V_block = np.asarray(V_block, dtype=np.float64)
    pv = np.empty_like(acc)
    _fold_inplace(m, l, acc, s, V_block, pv)
    return m, l, acc


def chunked_attention(Q, K, V, block_size=128, causal=False):
    """softmax(Q Kᵀ / sqrt(d)) V, visiting the keys block_size at a time. Returns (output, lse)."""
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    T, d = np.shape(Q)
    S, dv = V.shape
    Qs = np.array(Q, dtype=np.float64)
    Qs /= np.sqrt(d)                           # scale before the product

    b = min(block_size, S)
    buf = np.empty((T, b))
    pv = np.empty((T, dv))
    m = np.full(T, -np.inf)
    l = np.zeros(T)
    acc = np.zeros((T, dv))
    rows = np.arange(T)[:, None]
    for start in range(0, S, block_size):
        stop = min(start + block_size, S)
        n = stop - start
        s = buf if n == b else np.empty((T, n))   # the last, shorter block gets its own
        np.matmul(Qs, K[start:stop].T, out=s)
        if causal:
            future = np.arange(start, stop)[None, :] > rows
            np.copyto(s, -np.inf, where=future)
            del future
        _fold_inplace(m, l, acc, s, V[start:stop], pv)
    del buf, pv
    acc /= l[:, None]
    np.log(l, out=l)
    l += m
    return acc, l
