"""MISTAKE: Q and K are cast to float32 and the scores and their differences to the max are formed in float32 (a score in the thousands carries an error of ~1e-4, which exp turns into a relative error above 1e-5).
Affects: chunked_attention, online_softmax_update. (Otherwise the correct 'einsum-float32' implementation.)

The scores and their differences to the running max are formed in float64 (a float32 score
near 1000 is only good to about 3e-5, which would break the 1e-5 tolerance after exp); the
weights p, the values and the running l and acc are float32, which halves every block.
The causal mask is an additive float32 bias of 0 / -inf built from the block's indices.
"""

import numpy as np

_ACC = np.float32


def attention_flops(B, H, T, d_head):
    """Floating-point operations of the attention core, Q·Kᵀ and weights·V, as an int."""
    two_products = 2
    per_product = 2 * T * T * d_head
    return int(two_products * per_product * B * H)


def score_bytes(B, H, T, bytes_per_value=4):
    """Bytes needed to hold the (T, T) score matrix of every head of every sequence: an int."""
    values = B * H * T**2
    return int(values * bytes_per_value)


def _fold(m, l, acc, scores, V_block):
    """m float64 (T,), l float32 (T,), acc float32 (T, dv); scores float64; V_block float32."""
    block_max = np.max(scores, axis=1)
    m_new = np.fmax(m, block_max)
    m_ref = np.where(m_new == -np.inf, 0.0, m_new)
    alpha = np.exp(m - m_ref).astype(_ACC)
    diff = scores.astype(_ACC) - m_ref[:, None].astype(_ACC)
    p = np.exp(diff.astype(_ACC))               # weights in [0, 1], float32
    del diff
    l_new = np.einsum("t,t->t", alpha, l) + np.einsum("tb->t", p)
    acc_new = np.einsum("t,tv->tv", alpha, acc)
    acc_new += np.einsum("tb,bv->tv", p, V_block, optimize=True)
    return m_new, l_new, acc_new


def online_softmax_update(m, l, acc, scores, V_block):
    """One step of the online softmax: fold one block of keys into the running state.

    Returns m as float64 and l, acc as float32.
    """
    m = np.asarray(m, dtype=np.float64)
    l = np.asarray(l, dtype=_ACC)
    acc = np.asarray(acc, dtype=_ACC)
    scores = np.asarray(scores, dtype=_ACC)
    V_block = np.asarray(V_block, dtype=_ACC)
    return _fold(m, l, acc, scores, V_block)


def chunked_attention(Q, K, V, block_size=128, causal=False):
    """softmax(Q Kᵀ / sqrt(d)) V, visiting the keys block_size at a time. Returns (output, lse)."""
    Q = np.asarray(Q, dtype=_ACC)
    K = np.asarray(K, dtype=_ACC)
    V32 = np.asarray(V, dtype=_ACC)
    T, d = Q.shape
    S = K.shape[0]
    inv_sqrt_d = 1.0 / np.sqrt(d)

    m = np.full(T, -np.inf)
    l = np.zeros(T, dtype=_ACC)
    acc = np.zeros((T, V32.shape[1]), dtype=_ACC)
    q_pos = np.arange(T)[:, None]
    n_blocks = -(-S // block_size)
    for j in range(n_blocks):
        start = j * block_size
        stop = min(S, start + block_size)
        scores = np.einsum("td,bd->tb", Q, K[start:stop], optimize=True)
        scores *= inv_sqrt_d
        if causal:
            k_pos = np.arange(start, stop)[None, :]
            bias = np.where(k_pos > q_pos, -np.inf, 0.0).astype(_ACC)
            scores += bias
            del bias
        m, l, acc = _fold(m, l, acc, scores, V32[start:stop])
        del scores
    out = acc / l[:, None]
    lse = m + np.log(l.astype(np.float64))
    return out.astype(np.float64), lse
