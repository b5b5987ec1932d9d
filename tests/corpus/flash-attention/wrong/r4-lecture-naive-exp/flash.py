"""MISTAKE: no running max at all (the first slide's softmax = exp / sum): P_ij = exp(S_ij) overflows for large scores and underflows to 0/0 below -745.
Affects: chunked_attention  (style: lecture-algorithm1)

Memory-efficient attention in NumPy: the online softmax, one block of keys at a time.
chunked_attention follows Algorithm 1 of Dao et al. (2022): the outer loop runs over the
blocks K_j, V_j (size B_c = block_size), the inner loop over the blocks Q_i (size B_r), and
O_i is kept normalised by l_i as in the paper. "HBM" is just the full arrays here.
"""

import math

import numpy as np


def attention_flops(B, H, T, d_head):
    """Floating-point operations of the attention core, Q·Kᵀ and weights·V, as an int."""
    flops_QK = 2 * T * T * d_head   # S = Q K^T
    flops_PV = 2 * T * T * d_head   # O = P V
    return int(B * H * (flops_QK + flops_PV))


def score_bytes(B, H, T, bytes_per_value=4):
    """Bytes needed to hold the (T, T) score matrix of every head of every sequence: an int."""
    return int(B * H * T * T * bytes_per_value)


def online_softmax_update(m, l, acc, scores, V_block):
    """One step of the online softmax (the update of Algorithm 1, lines 10-12, without the
    division by l_i_new: acc is the unnormalised O_i)."""
    m_i, l_i, O_i = np.asarray(m, float), np.asarray(l, float), np.asarray(acc, float)
    S_ij, V_j = np.asarray(scores, float), np.asarray(V_block, float)
    m_tilde_ij = S_ij.max(axis=-1)                              # rowmax(S_ij)
    m_i_new = np.maximum(m_i, m_tilde_ij)
    m_ref = np.where(np.isneginf(m_i_new), 0.0, m_i_new)       # -inf rows: subtract 0
    P_ij = np.exp(S_ij - m_ref[:, None])
    l_i_new = np.exp(m_i - m_ref) * l_i + P_ij.sum(axis=-1)
    O_i_new = np.exp(m_i - m_ref)[:, None] * O_i + P_ij @ V_j
    return m_i_new, l_i_new, O_i_new


def chunked_attention(Q, K, V, block_size=128, causal=False):
    """softmax(Q Kᵀ / sqrt(d)) V, visiting the keys block_size at a time (Algorithm 1)."""
    Q, K, V = np.asarray(Q, float), np.asarray(K, float), np.asarray(V, float)
    N, d = Q.shape
    N_k = K.shape[0]
    B_c = block_size
    B_r = block_size                 # tiles of queries as large as the tiles of keys
    T_c = math.ceil(N_k / B_c)
    T_r = math.ceil(N / B_r)
    tau = 1.0 / math.sqrt(d)
    # line 2: initialise O = 0, l = 0, m = -inf in HBM
    O = np.zeros((N, V.shape[1]))
    l = np.zeros(N)
    m = np.full(N, -np.inf)
    for j in range(T_c):                                   # line 5
        K_j = K[j * B_c:(j + 1) * B_c]                     # line 6
        V_j = V[j * B_c:(j + 1) * B_c]
        key_idx = np.arange(j * B_c, j * B_c + K_j.shape[0])
        for i in range(T_r):                               # line 7
            rows = slice(i * B_r, (i + 1) * B_r)
            Q_i, O_i, l_i, m_i = Q[rows], O[rows], l[rows], m[rows]   # line 8
            query_idx = np.arange(i * B_r, i * B_r + Q_i.shape[0])
            if causal and key_idx[0] > query_idx[-1]:
                continue                                   # block wholly in the future
            S_ij = tau * (Q_i @ K_j.T)                     # line 9
            if causal:
                S_ij = np.where(key_idx[None, :] <= query_idx[:, None], S_ij, -np.inf)
            P_tilde_ij = np.exp(S_ij)                      # line 10, softmax = exp / sum
            l_tilde_ij = P_tilde_ij.sum(axis=1)
            m_i_new = m_i                                  # line 11 (no max needed)
            a = np.ones_like(l_i)
            b = np.ones_like(l_i)
            l_i_new = a * l_i + b * l_tilde_ij
            # line 12: O_i <- diag(l_i_new)^-1 (diag(l_i) e^{m_i - m_i_new} O_i + e^{m~_ij - m_i_new} P~_ij V_j)
            numer = (l_i * a)[:, None] * O_i + b[:, None] * (P_tilde_ij @ V_j)
            with np.errstate(invalid="ignore", divide="ignore"):
                O_i_new = np.where(l_i_new[:, None] > 0, numer / l_i_new[:, None], 0.0)
            O[rows] = O_i_new                              # line 13: write to HBM
            l[rows] = l_i_new
            m[rows] = m_i_new
    lse = np.log(l)                                        # L_i = log(l_i)
    return O, lse
