"""CORRECT: the running state lives in a small class; np.where masks; Q is scaled before the product.
Affects: attention_flops, score_bytes, online_softmax_update (through the OnlineSoftmax class),
chunked_attention (one OnlineSoftmax object stepped once per block).
"""

import math

import numpy as np


def attention_flops(B, H, T, d_head):
    """Floating-point operations of the attention core, Q·Kᵀ and weights·V, as an int."""
    qk = 2 * T * T * d_head
    pv = 2 * T * T * d_head
    return int(B) * int(H) * int(qk + pv)


def score_bytes(B, H, T, bytes_per_value=4):
    """Bytes needed to hold the (T, T) score matrix of every head of every sequence: an int."""
    return math.prod(int(x) for x in (B, H, T, T, bytes_per_value))


class OnlineSoftmax:
    """Running (max, sum, weighted sum) of every query row, relative to the running max."""

    def __init__(self, m, l, acc):
        self.max = np.array(m, dtype=np.float64)
        self.total = np.array(l, dtype=np.float64)
        self.weighted = np.array(acc, dtype=np.float64)

    @classmethod
    def empty(cls, T, dv):
        return cls(np.full(T, -np.inf), np.zeros(T), np.zeros((T, dv)))

    def step(self, scores, values):
        block_max = np.max(scores, axis=1, initial=-np.inf)
        new_max = np.where(block_max > self.max, block_max, self.max)
        finite = np.isfinite(new_max)
        shift = np.where(finite, new_max, 0.0)
        rescale = np.exp(self.max - shift)
        weights = scores - shift[:, None]
        np.exp(weights, out=weights)
        self.total = rescale * self.total + weights.sum(axis=1)
        self.weighted *= rescale[:, None]       # the state's own arrays: update in place
        self.weighted += weights @ values
        self.max = new_max
        return self

    def output(self):
        return self.weighted / self.total[:, None]

    def lse(self):
        return self.max + np.log(self.total)

    def as_tuple(self):
        return self.max, self.total, self.weighted


def online_softmax_update(m, l, acc, scores, V_block):
    """One step of the online softmax: fold one block of keys into the running state."""
    state = OnlineSoftmax(m, l, acc)
    return state.step(np.asarray(scores, dtype=np.float64), np.asarray(V_block)).as_tuple()


def chunked_attention(Q, K, V, block_size=128, causal=False):
    """softmax(Q Kᵀ / sqrt(d)) V, visiting the keys block_size at a time."""
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    T, d = Q.shape
    S = K.shape[0]
    Qs = Q / math.sqrt(d)                       # scale the queries once, before the product
    state = OnlineSoftmax.empty(T, V.shape[1])
    q_idx = np.arange(T).reshape(T, 1)
    start = 0
    while start < S:
        stop = min(start + block_size, S)
        block = Qs @ K[start:stop].T
        if causal:
            k_idx = np.arange(start, stop).reshape(1, -1)
            block = np.where(k_idx <= q_idx, block, -np.inf)
        state.step(block, V[start:stop])
        del block
        start = stop
    return state.output(), state.lse()
