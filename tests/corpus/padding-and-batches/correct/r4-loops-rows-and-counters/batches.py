"""CORRECT: students' loops -- one row at a time, np.dot per pair, a counter of allowed keys, -1e9 fill.
Affects: padding_mask, attention_mask, batched_attention, multi_head_attention, cross_attention.

Attention over a batch of padded sequences, in NumPy (right padding, True = may attend,
weights in x @ W layout, head i owns columns i*d_head:(i+1)*d_head, empty rows give 0).
"""

import math

import numpy as np

NEG = -1e9  # "minus infinity" for masked scores; empty rows are handled by a counter


def padding_mask(lengths, T):
    """Return the (B, T) padding mask: entry [b, t] is True when t < lengths[b].

    Raise ValueError when a length is below 0 or above T.

    >>> padding_mask([3, 1], 4).astype(int)
    array([[1, 1, 1, 0],
           [1, 0, 0, 0]])
    """
    result = np.zeros((len(lengths), T), dtype=bool)
    for b, L in enumerate(lengths):
        L = int(L)
        if L < 0 or L > T:
            raise ValueError(f"lengths[{b}] = {L} is not between 0 and T = {T}")
        for t in range(L):
            result[b, t] = True
    return result


def attention_mask(lengths, T, causal=True):
    """Return the (B, T, T) mask of self-attention over a padded batch.

    Entry [b, i, j] is True when query i of sequence b may attend to key j: key j is a real
    token (j < lengths[b]) and, when causal is True, j <= i. Only keys are masked: a padded
    query row still attends to the real keys.
    """
    pad = padding_mask(lengths, T)
    batch = []
    for b in range(pad.shape[0]):
        rows = []
        for i in range(T):
            row = pad[b].copy()          # keys only: every query row starts from the key mask
            if causal:
                for j in range(i + 1, T):
                    row[j] = False
            rows.append(row)
        if rows:
            batch.append(np.stack(rows))
        else:
            batch.append(np.zeros((0, 0), dtype=bool))
    if not batch:
        return np.zeros((0, T, T), dtype=bool)
    return np.stack(batch).astype(bool)


def _softmax_row(scores, allowed):
    """Softmax of one row, only over the allowed entries; all-masked row -> zeros."""
    n_allowed = 0
    top = NEG
    for j in range(len(scores)):
        if allowed[j]:
            n_allowed += 1
            if n_allowed == 1 or scores[j] > top:
                top = scores[j]
    w = [0.0 for _ in range(len(scores))]
    if n_allowed == 0:
        return w
    total = 0.0
    for j in range(len(scores)):
        if allowed[j]:
            w[j] = math.exp(scores[j] - top)
            total += w[j]
    for j in range(len(scores)):
        w[j] /= total
    return w


def batched_attention(Q, K, V, mask=None):
    """Scaled dot-product attention over any number of leading (batch, head) dimensions.

    Q has shape (..., T, d), K (..., S, d) and V (..., S, d_v). mask, if given, is boolean and
    broadcasts to (..., T, S); where it is False the score becomes -inf before a numerically
    stable softmax over the keys. A query with no key allowed gets weights 0 and output 0.

    Returns (weights, output) with shapes (..., T, S) and (..., T, d_v).
    """
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    T, d = Q.shape[-2:]
    S = K.shape[-2]
    dv = V.shape[-1]
    if mask is None:
        mask = np.ones((T, S), dtype=bool)
    mask = np.asarray(mask, dtype=bool)
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2],
                               mask.shape[:-2] if mask.ndim > 1 else ())
    Qf = np.broadcast_to(Q, lead + (T, d)).reshape(-1, T, d)
    Kf = np.broadcast_to(K, lead + (S, d)).reshape(-1, S, d)
    Vf = np.broadcast_to(V, lead + (S, dv)).reshape(-1, S, dv)
    Mf = np.broadcast_to(mask, lead + (T, S)).reshape(-1, T, S)

    w_list = []
    o_list = []
    for n in range(Qf.shape[0]):
        w_rows = []
        o_rows = []
        for i in range(T):
            scores = []
            for j in range(S):
                if Mf[n, i, j]:
                    scores.append(float(np.dot(Qf[n, i], Kf[n, j])) / math.sqrt(d))
                else:
                    scores.append(NEG)
            w = _softmax_row(scores, Mf[n, i])
            o = np.zeros(dv)
            for j in range(S):
                if w[j] > 0.0:
                    o = o + w[j] * Vf[n, j]
            w_rows.append(np.array(w, dtype=np.float64).reshape(S))
            o_rows.append(o)
        w_list.append(np.array(w_rows).reshape(T, S))
        o_list.append(np.array(o_rows).reshape(T, dv))
    weights = np.array(w_list).reshape(lead + (T, S))
    output = np.array(o_list).reshape(lead + (T, dv))
    return weights, output


def multi_head_attention(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    """Multi-head self-attention over a padded batch X of shape (B, T, C).

    Project X with Wq, Wk and Wv, split each into h heads of width C // h, shape
    (B, h, T, C // h), attend in every head with attention_mask(lengths, T, causal) (the same
    mask for every head), merge the heads back to (B, T, C) and multiply by Wo.
    Padded keys are never attended. Return the (B, T, C) output.
    """
    X = np.asarray(X, dtype=np.float64)
    B, T, C = X.shape
    d = C // h
    mask = attention_mask(lengths, T, causal)
    outputs = []
    for b in range(B):
        q_all = X[b] @ Wq
        k_all = X[b] @ Wk
        v_all = X[b] @ Wv
        heads = []
        for i in range(h):
            cols = slice(i * d, (i + 1) * d)
            _, o = batched_attention(q_all[:, cols], k_all[:, cols], v_all[:, cols], mask[b])
            heads.append(o)
        merged = np.concatenate(heads, axis=1)      # (T, C), head i back in its own columns
        outputs.append(merged @ Wo)
    return np.stack(outputs).reshape(B, T, C)


def cross_attention(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    """Multi-head cross-attention: the queries come from X (B, T, C), the keys and values from
    Y (B, S, C), whose sequence b has y_lengths[b] real tokens.

    Padded tokens of Y are never attended; there is no causal mask. Heads, layout and Wo as in
    multi_head_attention. Return the (B, T, C) output.
    """
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    B, T, C = X.shape
    S = Y.shape[1]
    d = C // h
    real = padding_mask(y_lengths, S)
    outputs = []
    for b in range(B):
        q_all = X[b] @ Wq
        k_all = Y[b] @ Wk
        v_all = Y[b] @ Wv
        heads = []
        for i in range(h):
            cols = slice(i * d, (i + 1) * d)
            _, o = batched_attention(q_all[:, cols], k_all[:, cols], v_all[:, cols],
                                     real[b][None, :])
            heads.append(o)
        outputs.append(np.concatenate(heads, axis=1) @ Wo)
    return np.stack(outputs).reshape(B, T, C)
