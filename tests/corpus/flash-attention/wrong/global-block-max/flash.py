"""MISTAKE: the block max is taken over the whole block (np.max(scores), a scalar) instead of per row, so m is not each row's running max (and rows far below the global max underflow).
Affects: online_softmax_update (and chunked_attention through it). (Otherwise the correct 'class-normalised-state' implementation.)

RunningSoftmax keeps, per query row, the running max m, the sum l and the *normalised*
output o (FlashAttention-2 keeps acc unnormalised; this keeps it divided by l at every step).
acc is recovered as o * l whenever the handout's (m, l, acc) is needed. In causal mode, the
block of keys starting at `start` is only folded into rows start.. (the earlier rows would see
nothing but masked keys), and the mask is an additive 0 / -inf bias on the block's rows.
"""

import numpy as np


def attention_flops(B, H, T, d_head):
    """Floating-point operations of the attention core, Q·Kᵀ and weights·V, as an int."""
    flops_per_head = 2 * (2 * T * T * d_head)
    return B * H * flops_per_head


def score_bytes(B, H, T, bytes_per_value=4):
    """Bytes needed to hold the (T, T) score matrix of every head of every sequence: an int."""
    n_scores = B * H * T * T
    return n_scores * bytes_per_value


class RunningSoftmax:
    """Online-softmax state of T query rows: m (T,), l (T,), o (T, dv) with o = acc / l."""

    def __init__(self, T, dv):
        self.m = np.full(T, -np.inf)
        self.l = np.zeros(T)
        self.o = np.zeros((T, dv))

    @classmethod
    def from_state(cls, m, l, acc):
        self = cls.__new__(cls)
        self.m = np.array(m, dtype=np.float64)
        self.l = np.array(l, dtype=np.float64)
        acc = np.asarray(acc, dtype=np.float64)
        safe_l = np.where(self.l > 0, self.l, 1.0)
        self.o = np.where(self.l[:, None] > 0, acc / safe_l[:, None], 0.0)
        return self

    @property
    def acc(self):
        return self.o * self.l[:, None]

    def fold(self, scores, V_block, rows=slice(None)):
        """Fold scaled scores (n_rows, b) of the rows `rows` with V_block (b, dv)."""
        m, l, o = self.m[rows], self.l[rows], self.o[rows]
        m_new = np.maximum(m, np.max(scores))
        ref = np.where(m_new > -np.inf, m_new, 0.0)
        alpha = np.exp(m - ref)
        p = scores - ref[:, None]
        np.exp(p, out=p)                          # in place: one block fewer alive
        l_new = alpha * l + np.sum(p, axis=1)
        pv = p @ V_block
        del p
        safe = np.where(l_new > 0, l_new, 1.0)
        # o_new = (alpha * l * o + p @ V) / l_new
        pv += (alpha * l)[:, None] * o
        pv /= safe[:, None]
        self.m[rows] = m_new
        self.l[rows] = l_new
        self.o[rows] = pv

    def result(self):
        return self.o, self.m + np.log(self.l)


def online_softmax_update(m, l, acc, scores, V_block):
    """One step of the online softmax: fold one block of keys into the running state."""
    state = RunningSoftmax.from_state(m, l, acc)
    state.fold(np.asarray(scores, dtype=np.float64), np.asarray(V_block, dtype=np.float64))
    return state.m, state.l, state.acc


def chunked_attention(Q, K, V, block_size=128, causal=False):
    """softmax(Q Kᵀ / sqrt(d)) V, visiting the keys block_size at a time. Returns (output, lse)."""
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    T, d = Q.shape
    S = K.shape[0]
    Qs = Q * (1.0 / np.sqrt(d))
    state = RunningSoftmax(T, V.shape[1])
    for start in range(0, S, block_size):
        stop = min(start + block_size, S)
        if causal:
            q = Qs[start:]                       # rows before `start` see none of these keys
            s = q @ K[start:stop].T
            i = np.arange(start, T)[:, None]
            j = np.arange(start, stop)[None, :]
            s += np.where(j <= i, 0.0, -np.inf)
            state.fold(s, V[start:stop], rows=slice(start, None))
        else:
            s = Qs @ K[start:stop].T
            state.fold(s, V[start:stop])
        del s
    return state.result()
