"""MISTAKE: the causal flag is not forwarded to the module, whose is_causal defaults to False, so no causal mask is ever applied.
Affects: multi_head_attention

Tokens are the columns of the core's arrays (shape (d, n)).  The handout's functions
transpose on the way in and on the way out; its x @ W weights become W.T for the class.
"""

import numpy as np


# ----------------------------------------------------------------- column-vector core
def _sdpa_columns(qc, kc, vc, attn_mask=None):
    """qc (d_k, n_q), kc (d_k, n_k), vc (d_v, n_k) -> weights (n_q, n_k), output columns (d_v, n_q).

    attn_mask follows F.scaled_dot_product_attention: a bool mask (True = take part in
    attention) or an additive float mask.
    """
    d_k = qc.shape[0]
    scores = (qc.T @ kc) / np.sqrt(d_k)
    if attn_mask is not None:
        attn_mask = np.asarray(attn_mask)
        if attn_mask.dtype == bool:
            bias = np.zeros(attn_mask.shape)
            bias[~attn_mask] = -np.inf
        else:
            bias = attn_mask
        scores = scores + bias
    row_max = scores.max(axis=1, keepdims=True)
    row_max[~np.isfinite(row_max)] = 0.0
    e = np.exp(scores - row_max)
    total = e.sum(axis=1, keepdims=True)
    weights = np.zeros_like(e)
    np.divide(e, total, out=weights, where=total > 0)
    return weights, vc @ weights.T


class MultiheadAttention:
    """A PyTorch-like module: weights in (out_features, in_features) layout, inputs as columns."""

    def __init__(self, q_weight, k_weight, v_weight, out_weight, num_heads):
        self.q_proj = q_weight
        self.k_proj = k_weight
        self.v_proj = v_weight
        self.out_proj = out_weight
        self.num_heads = num_heads

    def __call__(self, xc, is_causal=False):
        n = xc.shape[1]
        qc = self.q_proj @ xc                     # (d, n)
        kc = self.k_proj @ xc
        vc = self.v_proj @ xc
        qh = split_heads(qc.T, self.num_heads)    # the handout helpers work on rows
        kh = split_heads(kc.T, self.num_heads)
        vh = split_heads(vc.T, self.num_heads)
        mask = causal_mask(n) if is_causal else None
        heads = [masked_attention(qh[i], kh[i], vh[i], mask)[1] for i in range(self.num_heads)]
        merged = merge_heads(np.stack(heads))     # (n, d)
        return self.out_proj @ merged.T           # (d, n)


# ----------------------------------------------------------------- handout API
def causal_mask(n):
    """torch.ones(L, S, dtype=torch.bool).tril(diagonal=0)."""
    return np.tril(np.ones((n, n), dtype=bool), k=0)


def masked_attention(Q, K, V, mask=None):
    """Rows in, rows out: (weights (n_q, n_k), output (n_q, d_v))."""
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
    weights, out_columns = _sdpa_columns(Q.T, K.T, V.T, mask)
    return weights, out_columns.T


def split_heads(X, h):
    """(n, d) -> (h, n, d // h), via the column layout (d, n) -> (h, d // h, n)."""
    X = np.asarray(X)
    n, d = X.shape
    if h <= 0 or d % h != 0:
        raise ValueError(f"num_heads={h} does not divide embed_dim={d}")
    columns = X.T.reshape(h, d // h, n)
    return columns.transpose(0, 2, 1)


def merge_heads(Xh):
    """(h, n, d_head) -> (n, h * d_head), via the column layout (h * d_head, n)."""
    Xh = np.asarray(Xh)
    h, n, d_head = Xh.shape
    columns = Xh.transpose(0, 2, 1).reshape(h * d_head, n)
    return columns.T


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, causal=True):
    """x @ W weights -> the module's W @ x weights (transpose), rows -> columns and back."""
    X = np.asarray(X)
    module = MultiheadAttention(np.asarray(Wq).T, np.asarray(Wk).T, np.asarray(Wv).T,
                                np.asarray(Wo).T, h)
    return module(X.T).T
