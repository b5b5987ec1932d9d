"""MISTAKE: attention_mask always applies the causal rule j <= i, even when causal=False.
Affects: attention_mask (and multi_head_attention with causal=False)  (written from the 'r4-loops-math-exp' style)

Attention over a batch of padded sequences, in NumPy.

Conventions used throughout:

- A batch holds B sequences padded on the RIGHT to a common length T: sequence b has
  ``lengths[b]`` real tokens at positions 0 .. lengths[b] - 1, and padding after them.
- A mask is a boolean array; True means "may attend".
- Weight matrices are in ``x @ W`` layout, shape (C, C). Head i owns the contiguous columns
  ``i * d_head : (i + 1) * d_head``, where d_head = C // h.
- A query whose keys are all masked gets weights 0 and an output of 0.
- Outputs at padded query positions are not graded: nothing real ever reads them.
"""

import math

import numpy as np


def padding_mask(lengths, T):
    """Return the (B, T) padding mask: entry [b, t] is True when t < lengths[b].

    Raise ValueError when a length is below 0 or above T.

    >>> padding_mask([3, 1], 4).astype(int)
    array([[1, 1, 1, 0],
           [1, 0, 0, 0]])
    """
    T = int(T)
    rows = []
    for b in range(len(lengths)):
        n = int(lengths[b])
        if n < 0:
            raise ValueError("length %d of sequence %d is negative" % (n, b))
        if n > T:
            raise ValueError("length %d of sequence %d is above T = %d" % (n, b, T))
        row = []
        for t in range(T):
            if t < n:
                row.append(True)
            else:
                row.append(False)
        rows.append(row)
    if len(rows) == 0:
        return np.zeros((0, T), dtype=bool)
    return np.array(rows, dtype=bool).reshape(len(rows), T)


def attention_mask(lengths, T, causal=True):
    """Return the (B, T, T) mask of self-attention over a padded batch.

    Entry [b, i, j] is True when query i of sequence b may attend to key j: key j is a real
    token (j < lengths[b]) and, when causal is True, j <= i. Only keys are masked: a padded
    query row still attends to the real keys.
    """
    real = padding_mask(lengths, T)
    B = real.shape[0]
    T = int(T)
    out = np.zeros((B, T, T), dtype=bool)
    for b in range(B):
        for i in range(T):
            for j in range(T):
                allowed = bool(real[b, j])
                if j > i:
                    allowed = False
                out[b, i, j] = allowed
    return out


def _attend_one(q_rows, k_rows, v_rows, m_rows):
    """Attention for one (T, d) / (S, d) / (S, dv) / (T, S) slice, all with loops."""
    T = len(q_rows)
    S = len(k_rows)
    d = len(q_rows[0]) if T > 0 else (len(k_rows[0]) if S > 0 else 1)
    dv = len(v_rows[0]) if S > 0 else 0
    scale = 1.0 / math.sqrt(d)
    weight_rows = []
    out_rows = []
    for i in range(T):
        # scores of query i against every allowed key
        scores = []
        for j in range(S):
            if m_rows is not None and not m_rows[i][j]:
                scores.append(None)  # masked: acts like -inf
                continue
            total = 0.0
            for c in range(d):
                total += float(q_rows[i][c]) * float(k_rows[j][c])
            scores.append(total * scale)
        # find the largest allowed score
        biggest = None
        for s in scores:
            if s is not None and (biggest is None or s > biggest):
                biggest = s
        weights = [0.0] * S
        if biggest is not None:
            denom = 0.0
            for j in range(S):
                if scores[j] is not None:
                    weights[j] = math.exp(scores[j] - biggest)
                    denom += weights[j]
            for j in range(S):
                weights[j] = weights[j] / denom
        out = [0.0] * dv
        for j in range(S):
            if weights[j] != 0.0:
                for c in range(dv):
                    out[c] += weights[j] * float(v_rows[j][c])
        weight_rows.append(weights)
        out_rows.append(out)
    return weight_rows, out_rows


def batched_attention(Q, K, V, mask=None):
    """Scaled dot-product attention over any number of leading (batch, head) dimensions.

    Q has shape (..., T, d), K (..., S, d) and V (..., S, d_v). mask, if given, is boolean and
    broadcasts to (..., T, S); where it is False the score becomes -inf before a numerically
    stable softmax over the keys. A query with no key allowed gets weights 0 and output 0.

    Returns (weights, output) with shapes (..., T, S) and (..., T, d_v).
    """
    Q = np.asarray(Q, dtype=float)
    K = np.asarray(K, dtype=float)
    V = np.asarray(V, dtype=float)
    T, d = Q.shape[-2], Q.shape[-1]
    S, dv = K.shape[-2], V.shape[-1]
    shapes = [Q.shape[:-2], K.shape[:-2], V.shape[:-2]]
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        shapes.append(mask.shape[:-2] if mask.ndim >= 2 else ())
    lead = np.broadcast_shapes(*shapes)
    Qb = np.broadcast_to(Q, lead + (T, d)).reshape(-1, T, d)
    Kb = np.broadcast_to(K, lead + (S, d)).reshape(-1, S, d)
    Vb = np.broadcast_to(V, lead + (S, dv)).reshape(-1, S, dv)
    if mask is not None:
        Mb = np.broadcast_to(mask, lead + (T, S)).reshape(-1, T, S)
    all_w = []
    all_o = []
    for n in range(Qb.shape[0]):
        m_rows = Mb[n].tolist() if mask is not None else None
        w, o = _attend_one(Qb[n].tolist(), Kb[n].tolist(), Vb[n].tolist(), m_rows)
        all_w.append(w)
        all_o.append(o)
    weights = np.array(all_w, dtype=float).reshape(lead + (T, S))
    output = np.array(all_o, dtype=float).reshape(lead + (T, dv))
    return weights, output


def _split_heads(P, h):
    """(B, T, C) -> (B, h, T, d_head), head i taking columns i*d:(i+1)*d, with loops."""
    B, T, C = P.shape
    d = C // h
    out = np.zeros((B, h, T, d))
    for b in range(B):
        for i in range(h):
            for t in range(T):
                for c in range(d):
                    out[b, i, t, c] = P[b, t, i * d + c]
    return out


def _merge_heads(O):
    """(B, h, T, d_head) -> (B, T, h * d_head), with loops."""
    B, h, T, d = O.shape
    out = np.zeros((B, T, h * d))
    for b in range(B):
        for t in range(T):
            for i in range(h):
                for c in range(d):
                    out[b, t, i * d + c] = O[b, i, t, c]
    return out


def multi_head_attention(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention over a padded batch X of shape (B, T, C).

    Project X with Wq, Wk and Wv, split each into h heads of width C // h, shape
    (B, h, T, C // h), attend in every head with attention_mask(lengths, T, causal) (the same
    mask for every head), merge the heads back to (B, T, C) and multiply by Wo.
    Padded keys are never attended. Return the (B, T, C) output.
    """
    X = np.asarray(X, dtype=float)
    B, T, C = X.shape
    Qh = _split_heads(X @ Wq, h)
    Kh = _split_heads(X @ Wk, h)
    Vh = _split_heads(X @ Wv, h)
    mask = attention_mask(lengths, T, causal)
    # give the mask a head axis, one copy per head, built by hand
    mask4 = np.zeros((B, h, T, T), dtype=bool)
    for b in range(B):
        for i in range(h):
            mask4[b, i] = mask[b]
    _, O = batched_attention(Qh, Kh, Vh, mask4)
    return _merge_heads(O) @ Wo


def cross_attention(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    """Multi-head cross-attention: the queries come from X (B, T, C), the keys and values from
    Y (B, S, C), whose sequence b has y_lengths[b] real tokens.

    Padded tokens of Y are never attended; there is no causal mask. Heads, layout and Wo as in
    multi_head_attention. Return the (B, T, C) output.
    """
    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float)
    B, T, C = X.shape
    S = Y.shape[1]
    real = padding_mask(y_lengths, S)
    mask4 = np.zeros((B, h, T, S), dtype=bool)
    for b in range(B):
        for i in range(h):
            for t in range(T):
                for s in range(S):
                    mask4[b, i, t, s] = real[b, s]
    _, O = batched_attention(_split_heads(X @ Wq, h), _split_heads(Y @ Wk, h),
                             _split_heads(Y @ Wv, h), mask4)
    return _merge_heads(O) @ Wo
