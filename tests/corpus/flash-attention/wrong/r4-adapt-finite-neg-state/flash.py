"""MISTAKE: the class stores -inf as the finite -1e30 (m = max(m, -1e30)) and the wrapper never turns it back: a fully masked row comes back with m = -1e30, not -inf.
Affects: online_softmax_update  (style: adapt-class-transposed)

Memory-efficient attention in NumPy: the online softmax, one block of keys at a time.
The class keeps m and l as (T, 1) column vectors and acc as (T, dv). Each call receives the
block's scores transposed, St of shape (b, T) (one row per key), and an optional boolean
`blocked` of the same shape where True means "this key may not be seen". The public
functions transpose and reshape at the boundary.
"""

import math

import numpy as np

NEG = -1e30                                               # 'minus infinity' without inf arithmetic


def attention_flops(B, H, T, d_head):
    """Floating-point operations of the attention core, Q·Kᵀ and weights·V, as an int."""
    macs = B * H * T * T * d_head      # multiply-accumulates of one product
    return int(2 * macs) * 2           # 2 FLOPs per MAC, 2 products


def score_bytes(B, H, T, bytes_per_value=4):
    """Bytes needed to hold the (T, T) score matrix of every head of every sequence: an int."""
    return int(B) * int(H) * int(T) ** 2 * int(bytes_per_value)


class OnlineSoftmax:
    """Running softmax-weighted sum over keys, for a fixed set of T queries."""

    def __init__(self, T, dv, m=None, l=None, acc=None):
        self.m = np.full((T, 1), NEG) if m is None else np.maximum(np.array(m, dtype=float).reshape(T, 1), NEG)
        self.l = np.zeros((T, 1)) if l is None else np.array(l, dtype=float).reshape(T, 1)
        self.acc = np.zeros((T, dv)) if acc is None else np.array(acc, dtype=float).reshape(T, dv)

    def __call__(self, St, V_blk, blocked=None):
        """St: (b, T) scores, keys by queries; V_blk: (b, dv); blocked: (b, T) bool or None."""
        if blocked is not None:
            St = np.where(blocked, -np.inf, St)
        col_max = St.max(axis=0)[:, None]                 # (T, 1): max over the keys
        m_new = np.maximum(self.m, col_max)
        ref = m_new                                       # finite: never -inf
        alpha = np.exp(self.m - ref)                      # (T, 1)
        Pt = St - ref.T                                   # (b, T)
        del St
        np.exp(Pt, out=Pt)
        self.l = alpha * self.l + Pt.sum(axis=0)[:, None]
        self.acc *= alpha
        self.acc += Pt.T @ V_blk
        self.m = m_new
        return self

    def result(self):
        return self.acc / self.l, (self.m + np.log(self.l))[:, 0]


def online_softmax_update(m, l, acc, scores, V_block):
    """One step of the online softmax: fold one block of keys into the running state."""
    acc = np.asarray(acc, dtype=float)
    T, dv = acc.shape
    state = OnlineSoftmax(T, dv, m, l, acc)               # copies: the caller's arrays stay as they are
    state(np.asarray(scores, dtype=float).T, np.asarray(V_block, dtype=float))
    return state.m[:, 0], state.l[:, 0], state.acc


def chunked_attention(Q, K, V, block_size=128, causal=False):
    """softmax(Q Kᵀ / sqrt(d)) V, visiting the keys block_size at a time."""
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    V = np.asarray(V, dtype=float)
    T, d = Q.shape
    S = K.shape[0]
    state = OnlineSoftmax(T, V.shape[1])
    QT = Q.T / math.sqrt(d)                               # (d, T): queries as columns
    q_pos = np.arange(T)[None, :]                         # (1, T)
    for s0 in range(0, S, block_size):
        s1 = min(s0 + block_size, S)
        St = K[s0:s1] @ QT                                # (b, T), keys by queries
        if causal:
            blocked = np.arange(s0, s1)[:, None] > q_pos  # key after query: blocked
            St[blocked] = -np.inf                         # in place: St is our scratch block
            del blocked
        state(St, V[s0:s1])
        del St
    return state.result()
