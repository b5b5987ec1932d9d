"""CORRECT: np.einsum everywhere; float32 for the weights, the running sums and the value product.
Affects: attention_flops, score_bytes, online_softmax_update (einsum, computed in the dtype of
its inputs), chunked_attention (einsum; the scores and the running max stay float64, because
inputs scaled by 30 give scores in the thousands where float32 rounding (about 1e-4) would
exceed the tolerance, but p = exp(s - m) in [0, 1], l, acc and p @ V are float32; additive
-1e30 mask).
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
    """softmax(Q Kᵀ / sqrt(d)) V, the weights and sums in float32, block_size keys at a time."""
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V32 = np.asarray(V, dtype=np.float32)
    T, d = Q.shape
    S = K.shape[0]
    scale = 1.0 / np.sqrt(d)
    m = np.full(T, -np.inf)                     # float64: it is of the size of the scores
    l = np.zeros(T, dtype=np.float32)
    acc = np.zeros((T, V32.shape[1]), dtype=np.float32)
    rows = np.arange(T)
    for start in range(0, S, block_size):
        stop = min(start + block_size, S)
        s = np.einsum("td,bd->tb", Q, K[start:stop], optimize=True)
        s *= scale                              # scale after the product
        if causal:
            future = np.arange(start, stop)[None, :] > rows[:, None]
            s += -1e30 * future                 # additive mask, a large negative number
            del future
        m_new = np.maximum(m, s.max(axis=1))
        alpha = np.exp(m - m_new).astype(np.float32)
        s -= m_new[:, None]
        p = np.exp(s, dtype=np.float32)         # weights in [0, 1]: float32 is enough
        del s
        l *= alpha
        l += np.einsum("tb->t", p)
        acc *= alpha[:, None]
        acc += np.einsum("tb,bv->tv", p, V32[start:stop], optimize=True)
        m = m_new
        del p
    return acc / l[:, None], m + np.log(l)
