"""MISTAKE: chunked_attention casts Q, K and V to float32 and computes the scores in float32: fine for ordinary inputs, but with inputs scaled by 30 the scores are in the thousands, float32 rounds them by about 1e-4 and the output misses the 1e-5 tolerance.
Affects: chunked_attention (attention_flops, score_bytes and online_softmax_update are correct;
einsum style with an additive -1e30 mask).
"""

import numpy as np


def attention_flops(B, H, T, d_head):
    """Floating-point operations of the attention core, Q·Kᵀ and weights·V, as an int."""
    return 4 * B * H * T**2 * d_head


def score_bytes(B, H, T, bytes_per_value=4):
    """Bytes needed to hold the (T, T) score matrix of every head of every sequence: an int."""
    return B * H * T**2 * bytes_per_value


def online_softmax_update(m, l, acc, scores, V_block):
    """One step of the online softmax (einsum for the weighted sum of values)."""
    m_new = np.maximum(m, np.max(scores, axis=1, initial=-np.inf))
    dead = np.isneginf(m_new)                   # rows that have seen only -inf
    ref = np.where(dead, 0.0, m_new)            # subtract 0 there, not -inf
    alpha = np.exp(m - ref)                     # 0 where m is still -inf
    p = np.exp(scores - ref[:, None])
    l_new = np.einsum("t,t->t", alpha, l) + np.einsum("tb->t", p)
    acc_new = np.einsum("t,tv->tv", alpha, acc) + np.einsum("tb,bv->tv", p, V_block)
    return m_new, l_new, acc_new


def chunked_attention(Q, K, V, block_size=128, causal=False):
    """softmax(Q Kᵀ / sqrt(d)) V in float32, visiting the keys block_size at a time."""
    Q = np.asarray(Q, dtype=np.float32)
    K = np.asarray(K, dtype=np.float32)
    V = np.asarray(V, dtype=np.float32)
    T, d = Q.shape
    S = K.shape[0]
    scale = np.float32(1.0 / np.sqrt(d))
    m = np.full(T, -np.inf, dtype=np.float32)
    l = np.zeros(T, dtype=np.float32)
    acc = np.zeros((T, V.shape[1]), dtype=np.float32)
    rows = np.arange(T)
    for start in range(0, S, block_size):
        stop = min(start + block_size, S)
        s = np.einsum("td,bd->tb", Q, K[start:stop], optimize=True)
        s *= scale                              # scale after the product
        if causal:
            future = np.arange(start, stop)[None, :] > rows[:, None]
            s += np.float32(-1e30) * future     # additive mask, a large negative number
            del future
        m_new = np.maximum(m, s.max(axis=1))
        alpha = np.exp(m - m_new)
        s -= m_new[:, None]
        np.exp(s, out=s)                        # s now holds p
        l *= alpha
        l += s.sum(axis=1)
        acc *= alpha[:, None]
        acc += np.einsum("tb,bv->tv", s, V[start:stop], optimize=True)
        m = m_new
        del s
    return acc / l[:, None], m + np.log(l)
