"""CORRECT: students' loops -- nested for loops over Python lists, rows appended then stacked, math.exp softmax.
Affects: causal_mask, masked_attention, split_heads, merge_heads, multi_head_attention.

Masked and invalid positions are skipped entry by entry, so masked weights are set to
exactly 0.0 and a fully masked row stays all zeros (weights and output).
"""

import math
import operator

import numpy as np


def causal_mask(n):
    """Return the (n, n) causal mask: True where j <= i."""
    n = operator.index(n)
    rows = []
    for i in range(n):
        row = []
        for j in range(n):
            if j <= i:
                row.append(True)
            else:
                row.append(False)
        rows.append(row)
    return np.array(rows, dtype=bool).reshape(n, n)


def _softmax_row(scores, allowed):
    """Stable softmax over the allowed entries of one row; the others get exactly 0.0."""
    best = None
    for j in range(len(scores)):
        if allowed[j]:
            if best is None or scores[j] > best:
                best = scores[j]
    weights = [0.0] * len(scores)
    if best is None:
        # nobody to look at: PyTorch's policy, an all-zero row
        return weights
    total = 0.0
    for j in range(len(scores)):
        if allowed[j]:
            weights[j] = math.exp(scores[j] - best)
            total += weights[j]
    for j in range(len(scores)):
        if allowed[j]:
            weights[j] = weights[j] / total
    return weights


def masked_attention(Q, K, V, mask=None):
    """Scaled dot-product attention; returns (weights, output)."""
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    V = np.asarray(V, dtype=float)
    n_q = Q.shape[0]
    n_k = K.shape[0]
    d_k = Q.shape[1]
    d_v = V.shape[1]
    scale = 1.0 / math.sqrt(d_k)

    q_rows = Q.tolist()
    k_rows = K.tolist()
    v_rows = V.tolist()
    if mask is not None:
        mask_rows = np.broadcast_to(np.asarray(mask, dtype=bool), (n_q, n_k)).tolist()

    all_weights = []
    all_outputs = []
    for i in range(n_q):
        scores = []
        for j in range(n_k):
            s = 0.0
            for t in range(d_k):
                s += q_rows[i][t] * k_rows[j][t]
            scores.append(s * scale)
        if mask is None:
            allowed = [True] * n_k
        else:
            allowed = mask_rows[i]
        w = _softmax_row(scores, allowed)
        out = [0.0] * d_v
        for j in range(n_k):
            if w[j] != 0.0:
                for t in range(d_v):
                    out[t] += w[j] * v_rows[j][t]
        all_weights.append(w)
        all_outputs.append(out)

    weights = np.array(all_weights, dtype=float).reshape(n_q, n_k)
    output = np.array(all_outputs, dtype=float).reshape(n_q, d_v)
    return weights, output


def split_heads(X, h):
    """(n, d) -> (h, n, d // h); head i gets columns i*d//h .. (i+1)*d//h."""
    X = np.asarray(X)
    h = operator.index(h)
    n, d = X.shape
    if h <= 0 or d % h != 0:
        raise ValueError(f"h = {h} does not divide d = {d}")
    d_head = d // h
    heads = []
    for i in range(h):
        rows = []
        for r in range(n):
            row = []
            for c in range(i * d_head, (i + 1) * d_head):
                row.append(X[r, c])
            rows.append(row)
        heads.append(rows)
    return np.array(heads, dtype=X.dtype).reshape(h, n, d_head)


def merge_heads(Xh):
    """(h, n, d_head) -> (n, h * d_head), the inverse of split_heads."""
    Xh = np.asarray(Xh)
    h, n, d_head = Xh.shape
    rows = []
    for r in range(n):
        row = []
        for i in range(h):
            for c in range(d_head):
                row.append(Xh[i, r, c])
        rows.append(row)
    return np.array(rows, dtype=Xh.dtype).reshape(n, h * d_head)


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention of X (n, d_model); returns (n, d_model)."""
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    Q = X @ np.asarray(Wq, dtype=float)
    K = X @ np.asarray(Wk, dtype=float)
    V = X @ np.asarray(Wv, dtype=float)
    Qh = split_heads(Q, h)
    Kh = split_heads(K, h)
    Vh = split_heads(V, h)
    if causal:
        mask = causal_mask(n)
    else:
        mask = None
    head_outputs = []
    for i in range(len(Qh)):
        weights, out = masked_attention(Qh[i], Kh[i], Vh[i], mask)
        head_outputs.append(out)
    merged = merge_heads(np.array(head_outputs))
    return merged @ np.asarray(Wo, dtype=float)
