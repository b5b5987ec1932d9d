"""MISTAKE: the merged heads are returned without the final multiplication by Wo.
Affects: multi_head_attention
"""

import math

import numpy as np


def causal_mask(n):
    """Return the (n, n) causal mask: True where j <= i."""
    mask = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(i + 1):
            mask[i, j] = True
    return mask


def masked_attention(Q, K, V, mask=None):
    """Scaled dot-product attention; returns (weights, output)."""
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    V = np.asarray(V, dtype=float)
    n_q, d_k = Q.shape
    n_k = K.shape[0]
    d_v = V.shape[1]
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)

    weight_rows = []
    output_rows = []
    for i in range(n_q):
        scores = np.zeros(n_k)
        for j in range(n_k):
            scores[j] = np.dot(Q[i], K[j]) / math.sqrt(d_k)

        # first pass: count the keys this query may see, and find their maximum
        count = 0
        biggest = -math.inf
        for j in range(n_k):
            ok = True if mask is None else bool(mask[i, j])
            if ok:
                count += 1
                if scores[j] > biggest:
                    biggest = scores[j]

        row = np.zeros(n_k)
        if count > 0:
            total = 0.0
            for j in range(n_k):
                ok = True if mask is None else bool(mask[i, j])
                if ok:
                    row[j] = math.exp(scores[j] - biggest)
                    total += row[j]
            for j in range(n_k):
                row[j] = row[j] / total
        # count == 0: fully masked row, weights and output stay 0

        out = np.zeros(d_v)
        for j in range(n_k):
            if row[j] > 0:
                out = out + row[j] * V[j]
        weight_rows.append(row)
        output_rows.append(out)

    weights = np.array(weight_rows, dtype=float).reshape(n_q, n_k)
    output = np.array(output_rows, dtype=float).reshape(n_q, d_v)
    return weights, output


def split_heads(X, h):
    """(n, d) -> (h, n, d // h); head i gets columns i*d//h .. (i+1)*d//h."""
    X = np.asarray(X)
    d = X.shape[1]
    if h <= 0 or d % h != 0:
        raise ValueError("the number of heads must divide the width")
    width = d // h
    heads = []
    for i in range(h):
        start = i * width
        heads.append(X[:, start:start + width])
    return np.stack(heads)


def merge_heads(Xh):
    """(h, n, d_head) -> (n, h * d_head), the inverse of split_heads."""
    Xh = np.asarray(Xh)
    pieces = []
    for i in range(len(Xh)):
        pieces.append(Xh[i])
    return np.concatenate(pieces, axis=1)


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention of X (n, d_model); returns (n, d_model)."""
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    Q = np.dot(X, Wq)
    K = np.dot(X, Wk)
    V = np.dot(X, Wv)
    Q_heads = split_heads(Q, h)
    K_heads = split_heads(K, h)
    V_heads = split_heads(V, h)
    mask = None
    if causal:
        mask = causal_mask(n)
    outputs = []
    for head in range(h):
        _, out = masked_attention(Q_heads[head], K_heads[head], V_heads[head], mask)
        outputs.append(out)
    merged = merge_heads(np.stack(outputs))
    return merged
