"""The class-based references against PyTorch: grouped-query attention against SDPA with
enable_gqa (which repeats kv heads as np.repeat does), decoding with a KV cache against the
full causal pass, and the causal self-attention layer against nn.MultiheadAttention."""

import numpy as np
import pytest

from autograder.course.assignment import Assignment
from autograder.engine.mistakes import module_from_source

torch = pytest.importorskip("torch")
F = torch.nn.functional


def reference(slug):
    return module_from_source(Assignment.load(slug).reference_source, f"reference {slug}")


gqa, layer = reference("kv-cache-and-gqa"), reference("causal-self-attention")


def projections(rng, C, n_head, n_kv_head):
    d = C // n_head
    Wq, Wo = (rng.normal(size=(C, C)) / np.sqrt(C) for _ in range(2))
    Wk, Wv = (rng.normal(size=(C, n_kv_head * d)) / np.sqrt(C) for _ in range(2))
    return Wq, Wk, Wv, Wo


@pytest.mark.parametrize("n_head, n_kv_head", [(4, 2), (4, 4), (4, 1), (8, 2)])
@pytest.mark.parametrize("causal", [True, False])
def test_grouped_query_attention_matches_sdpa(n_head, n_kv_head, causal):
    rng = np.random.default_rng(n_head * 10 + n_kv_head)
    T, C = 7, 48
    d = C // n_head
    X = rng.normal(size=(T, C))
    Wq, Wk, Wv, Wo = projections(rng, C, n_head, n_kv_head)

    def heads(Z, n):
        return torch.from_numpy(Z).reshape(T, n, d).transpose(0, 1)[None]

    q, k, v = heads(X @ Wq, n_head), heads(X @ Wk, n_kv_head), heads(X @ Wv, n_kv_head)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)[0]
    want = out.transpose(0, 1).reshape(T, C).numpy() @ Wo
    got = gqa.grouped_query_attention(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=causal)
    np.testing.assert_allclose(got, want, atol=1e-12)


@pytest.mark.parametrize("chunks", [[1] * 6, [3, 1, 2], [6]])
def test_decoding_with_a_cache_equals_the_full_causal_pass(chunks):
    rng = np.random.default_rng(len(chunks))
    X, W = rng.normal(size=(6, 24)), projections(rng, 24, 4, 2)
    cache, rows, start = gqa.KVCache(), [], 0
    for size in chunks:
        rows.append(gqa.decode_step(X[start : start + size], cache, *W, 4, 2))
        start += size
    full = gqa.grouped_query_attention(X, *W, 4, 2)
    np.testing.assert_allclose(np.concatenate(rows), full, atol=1e-12)
    assert len(cache) == 6 and cache.keys.shape == (2, 6, 6)


def test_the_layer_matches_multihead_attention():
    rng = np.random.default_rng(3)
    L = layer.CausalSelfAttention(24, 3, 10, seed=0)
    L.b_o = rng.normal(size=24)
    x = rng.normal(size=(2, 7, 24))
    mha = torch.nn.MultiheadAttention(24, 3, bias=True, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.from_numpy(np.concatenate([L.W_q.T, L.W_k.T, L.W_v.T])))
        mha.in_proj_bias.zero_()
        mha.out_proj.weight.copy_(torch.from_numpy(L.W_o.T))
        mha.out_proj.bias.copy_(torch.from_numpy(L.b_o))
        xs = torch.from_numpy(x)
        blocked = torch.from_numpy(~L.mask[:7, :7])  # MHA's boolean mask means "blocked"
        out, weights = mha(xs, xs, xs, attn_mask=blocked, average_attn_weights=False)
    np.testing.assert_allclose(L.forward(x), out.numpy(), atol=1e-12)
    np.testing.assert_allclose(L.attention_weights(x), weights.numpy(), atol=1e-12)
