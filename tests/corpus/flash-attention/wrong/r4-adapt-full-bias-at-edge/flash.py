"""MISTAKE: the wrapper builds the usual (T, S) additive causal mask once (np.triu of -inf) and the core slices it per block: 128 MiB, over the memory bound.
Affects: chunked_attention  (style: adapt-bhtd-additive)

Memory-efficient attention in NumPy: the online softmax, one block of keys at a time.
The core (`_flash_bhtd`, `_update_bhtd`) works on (B, H, T, d) arrays as a multi-head layer
would, with an additive mask (0 where a key is visible, -inf where it is not) added to each
block of scores. The public functions add two leading axes of size 1 and take them off again.
"""

import math

import numpy as np


def _core_shape_numel(shape):
    n = 1
    for s in shape:
        n *= int(s)
    return n


def attention_flops(B, H, T, d_head):
    """Floating-point operations of the attention core, Q·Kᵀ and weights·V, as an int."""
    qk = 2 * _core_shape_numel((B, H, T, T)) * int(d_head)   # (B,H,T,d) @ (B,H,d,T)
    pv = 2 * _core_shape_numel((B, H, T, T)) * int(d_head)   # (B,H,T,T) @ (B,H,T,d)
    return qk + pv


def score_bytes(B, H, T, bytes_per_value=4):
    """Bytes needed to hold the (T, T) score matrix of every head of every sequence: an int."""
    return _core_shape_numel((B, H, T, T)) * int(bytes_per_value)


# ----------------------------------------------------------------------------- the core
def _update_bhtd(m, l, acc, scores, v_blk):
    """m, l: (B, H, T); acc: (B, H, T, dv); scores: (B, H, T, b); v_blk: (B, H, b, dv)."""
    m_new = np.maximum(m, scores.max(axis=-1))
    ref = np.where(np.isneginf(m_new), 0.0, m_new)
    alpha = np.exp(m - ref)
    p = scores - ref[..., None]
    np.exp(p, out=p)
    l_new = alpha * l + p.sum(axis=-1)
    acc_new = alpha[..., None] * acc + p @ v_blk
    return m_new, l_new, acc_new


def _causal_bias(q_pos, k_pos):
    """Additive mask (1, 1, Tq, b): 0 where key <= query, -inf where the key is in the future."""
    bias = np.zeros((1, 1, q_pos.size, k_pos.size))
    bias[0, 0][k_pos[None, :] > q_pos[:, None]] = -np.inf
    return bias


def _flash_bhtd(q, k, v, block, attn_bias):
    Bn, Hn, T, d = q.shape
    S = k.shape[-2]
    m = np.full((Bn, Hn, T), -np.inf)
    l = np.zeros((Bn, Hn, T))
    acc = np.zeros((Bn, Hn, T, v.shape[-1]))
    q_pos = np.arange(T)
    for s0 in range(0, S, block):
        s1 = min(s0 + block, S)
        scores = q @ np.swapaxes(k[..., s0:s1, :], -1, -2)
        scores *= 1.0 / math.sqrt(d)
        if attn_bias is not None:
            scores += attn_bias[..., s0:s1]
        m, l, acc = _update_bhtd(m, l, acc, scores, v[..., s0:s1, :])
        del scores
    out = acc / l[..., None]
    lse = m + np.log(l)
    return out, lse


# ------------------------------------------------------------------------- the edge
def online_softmax_update(m, l, acc, scores, V_block):
    """One step of the online softmax: fold one block of keys into the running state."""
    m4 = np.asarray(m, dtype=float)[None, None]
    l4 = np.asarray(l, dtype=float)[None, None]
    acc4 = np.asarray(acc, dtype=float)[None, None]
    s4 = np.asarray(scores, dtype=float)[None, None]
    v4 = np.asarray(V_block, dtype=float)[None, None]
    m_new, l_new, acc_new = _update_bhtd(m4, l4, acc4, s4, v4)
    return m_new[0, 0], l_new[0, 0], acc_new[0, 0]


def chunked_attention(Q, K, V, block_size=128, causal=False):
    """softmax(Q Kᵀ / sqrt(d)) V, visiting the keys block_size at a time."""
    q = np.asarray(Q, dtype=float)[None, None]
    k = np.asarray(K, dtype=float)[None, None]
    v = np.asarray(V, dtype=float)[None, None]
    attn_bias = None
    if causal:                                     # the (B, H, T, S) additive mask of the other API
        attn_bias = np.triu(np.full((q.shape[-2], k.shape[-2]), -np.inf), k=1)[None, None]
    out, lse = _flash_bhtd(q, k, v, int(block_size), attn_bias)
    return out[0, 0], lse[0, 0]
