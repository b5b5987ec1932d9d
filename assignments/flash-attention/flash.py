"""Memory-efficient attention in NumPy: the online softmax, one block of keys at a time.

Dense attention builds the whole (T, S) matrix of scores before its softmax. Chunked attention
visits the keys in blocks and keeps, for every query row, three running quantities:

- m   (T,)     the largest score seen so far;
- l   (T,)     the sum of exp(score - m) over the keys seen so far;
- acc (T, dv)  the sum of exp(score - m) * v over the keys seen so far.

When a block raises the maximum from m to m_new, everything accumulated so far is rescaled by
exp(m - m_new), so the state always means the same thing. After the last block, acc / l is
the attention output and m + log(l) is the log-sum-exp of the row. The (T, S) scores are never
held in memory at once: only one (T, block_size) block at a time.
"""

import numpy as np


def attention_flops(B, H, T, d_head):
    """Floating-point operations of the attention core, Q·Kᵀ and weights·V, as an int.

    Each of the two products multiplies a (T, d_head) by a (d_head, T) matrix or back, which
    costs 2·T·T·d_head operations (a multiply and an add per term), in each of B·H heads:
    4·B·H·T²·d_head in all.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def score_bytes(B, H, T, bytes_per_value=4):
    """Bytes needed to hold the (T, T) score matrix of every head of every sequence: an int."""
    # YOUR CODE HERE
    raise NotImplementedError()


def online_softmax_update(m, l, acc, scores, V_block):
    """One step of the online softmax: fold one block of keys into the running state.

    m and l have shape (T,), acc has shape (T, dv); scores (T, b) are already scaled (and
    may hold -inf where a key is masked); V_block is (b, dv). Returns the new (m, l, acc):

        m_new = max(m, the row maxima of scores)
        l_new = exp(m - m_new) * l   + sum over the block of exp(scores - m_new)
        acc_new = exp(m - m_new) * acc + exp(scores - m_new) @ V_block

    A row that has seen only -inf so far keeps m = -inf, l = 0 and acc = 0 (no NaN).
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def chunked_attention(Q, K, V, block_size=128, causal=False):
    """softmax(Q Kᵀ / sqrt(d)) V, visiting the keys block_size at a time.

    Q is (T, d), K is (S, d), V is (S, dv); the last block may be shorter. With causal=True
    (then T = S), query i sees key j when j <= i; the mask of each block is built from the
    indices of its rows and columns, never as a (T, S) array.

    Returns (output, lse): the (T, dv) attention output and the (T,) log-sum-exp of each row
    of scaled scores, log(sum_j exp(q_i · k_j / sqrt(d))).
    """
    # YOUR CODE HERE
    raise NotImplementedError()
