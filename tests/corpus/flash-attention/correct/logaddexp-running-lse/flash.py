"""CORRECT: attention keeps a running log-sum-exp with np.logaddexp and a normalised output.
Functions: attention_flops, score_bytes, online_softmax_update, chunked_attention.

chunked_attention does not keep m and l separately: it keeps lse = m + log(l) directly,
merging each block's own log-sum-exp with np.logaddexp, and the output normalised by the
running sum (o <- exp(lse_old - lse_new) * o + exp(s - lse_new) @ V). Every exponent is <= 0,
so it is as stable as the m/l form. online_softmax_update computes the naive formulas under
np.errstate and repairs the -inf - (-inf) rows with np.where afterwards. Scores are computed
as Q Kᵀ first and scaled after the product; the causal mask is an additive -1e30 bias.
"""

import numpy as np


def attention_flops(B, H, T, d_head):
    """Floating-point operations of the attention core, Q·Kᵀ and weights·V, as an int."""
    return int(B * H * 4 * d_head * T * T)


def score_bytes(B, H, T, bytes_per_value=4):
    """Bytes needed to hold the (T, T) score matrix of every head of every sequence: an int."""
    return int(bytes_per_value * B * H * T * T)


def online_softmax_update(m, l, acc, scores, V_block):
    """One step of the online softmax: fold one block of keys into the running state."""
    m = np.asarray(m, dtype=np.float64)
    m_new = np.maximum(m, np.asarray(scores).max(axis=1))
    with np.errstate(invalid="ignore"):
        alpha = np.exp(m - m_new)                  # NaN where m = m_new = -inf
        p = np.exp(scores - m_new[:, None])        # NaN where scores = m_new = -inf
    alpha = np.where(np.isnan(alpha), 0.0, alpha)
    p = np.where(np.isnan(p), 0.0, p)
    l_new = l * alpha + p.sum(axis=1)
    acc_new = acc * alpha[:, None] + p @ V_block
    return m_new, l_new, acc_new


def chunked_attention(Q, K, V, block_size=128, causal=False):
    """softmax(Q Kᵀ / sqrt(d)) V, visiting the keys block_size at a time. Returns (output, lse)."""
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    T, d = Q.shape
    S = K.shape[0]
    sqrt_d = np.sqrt(d)
    lse = np.full(T, -np.inf)
    out = np.zeros((T, V.shape[1]))
    q_idx = np.arange(T).reshape(T, 1)
    for start in range(0, S, block_size):
        stop = min(start + block_size, S)
        s = Q @ K[start:stop].T
        s /= sqrt_d                                     # scale after the product
        if causal:
            bias = (np.arange(start, stop).reshape(1, -1) > q_idx) * -1e30
            s += bias
            del bias
        block_max = s.max(axis=1, keepdims=True)
        s -= block_max
        np.exp(s, out=s)                                # s now holds exp(score - block_max)
        block_lse = block_max[:, 0] + np.log(s.sum(axis=1))
        new_lse = np.logaddexp(lse, block_lse)
        out *= np.exp(lse - new_lse)[:, None]
        s *= np.exp(block_max[:, 0] - new_lse)[:, None]  # = exp(score - new_lse) <= 1
        out += s @ V[start:stop]
        lse = new_lse
        del s
    return out, lse
