"""The reference against an outside oracle: PyTorch's attention, with the same weights.

Mapping (see research/attention-facts.md): in_proj_weight = [Wq.T; Wk.T; Wv.T],
out_proj.weight = Wo.T. SDPA's boolean mask means "may attend" (ours too);
nn.MultiheadAttention's means "blocked", so it gets the negation.
"""

import numpy as np
import pytest

from autograder.course.assignment import Assignment
from autograder.engine.mistakes import module_from_source

torch = pytest.importorskip("torch")
F = torch.nn.functional

assignment = Assignment.load("masks-and-heads")
ref = module_from_source(assignment.reference_source, "reference")


def t(x):
    return torch.from_numpy(np.asarray(x, dtype=np.float64))


@pytest.mark.parametrize("n_q, n_k, d_k, d_v", [(6, 6, 8, 8), (4, 7, 8, 5), (1, 3, 2, 2)])
@pytest.mark.parametrize("masked", ["none", "causal", "padding"])
def test_masked_attention_matches_sdpa(n_q, n_k, d_k, d_v, masked):
    rng = np.random.default_rng(n_q * 100 + n_k)
    Q, K, V = rng.normal(size=(n_q, d_k)), rng.normal(size=(n_k, d_k)), rng.normal(size=(n_k, d_v))
    mask = None
    if masked == "causal":
        mask = np.tril(np.ones((n_q, n_k), dtype=bool))
    elif masked == "padding":
        mask = np.ones((n_q, n_k), dtype=bool)
        mask[:, -1] = False
    weights, output = ref.masked_attention(Q, K, V, mask)
    expected = F.scaled_dot_product_attention(
        t(Q), t(K), t(V), attn_mask=None if mask is None else torch.from_numpy(mask)
    )
    np.testing.assert_allclose(output, expected.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(weights.sum(axis=-1), 1, rtol=1e-12)


def test_fully_masked_row_gives_zero_like_sdpa():
    rng = np.random.default_rng(3)
    Q, K, V = (rng.normal(size=(4, 8)) for _ in range(3))
    mask = np.tril(np.ones((4, 4), dtype=bool))
    mask[2] = False
    weights, output = ref.masked_attention(Q, K, V, mask)
    expected = F.scaled_dot_product_attention(t(Q), t(K), t(V), attn_mask=torch.from_numpy(mask))
    np.testing.assert_allclose(output, expected.numpy(), atol=1e-12)
    assert np.all(weights[2] == 0) and np.all(output[2] == 0)


@pytest.mark.parametrize("d_model, heads", [(24, 3), (24, 4), (16, 2), (8, 1)])
@pytest.mark.parametrize("causal", [True, False])
def test_multi_head_attention_matches_nn_multiheadattention(d_model, heads, causal):
    rng = np.random.default_rng(d_model + heads)
    n = 6
    X = rng.normal(size=(n, d_model))
    Wq, Wk, Wv, Wo = (rng.normal(size=(d_model, d_model)) / np.sqrt(d_model) for _ in range(4))
    mha = torch.nn.MultiheadAttention(d_model, heads, bias=False, batch_first=True).double()
    with torch.no_grad():
        mha.in_proj_weight.copy_(t(np.concatenate([Wq.T, Wk.T, Wv.T])))
        mha.out_proj.weight.copy_(t(Wo.T))
    blocked = torch.from_numpy(~ref.causal_mask(n)) if causal else None
    x = t(X)[None]
    expected, _ = mha(x, x, x, attn_mask=blocked, need_weights=False)
    got = ref.multi_head_attention(X, Wq, Wk, Wv, Wo, heads, causal=causal)
    np.testing.assert_allclose(got, expected[0].detach().numpy(), rtol=1e-10, atol=1e-12)


def test_causal_mask_matches_sdpa_is_causal():
    rng = np.random.default_rng(5)
    Q, K, V = (rng.normal(size=(5, 4)) for _ in range(3))
    _, output = ref.masked_attention(Q, K, V, ref.causal_mask(5))
    expected = F.scaled_dot_product_attention(t(Q), t(K), t(V), is_causal=True)
    np.testing.assert_allclose(output, expected.numpy(), rtol=1e-12, atol=1e-12)


def test_split_and_merge_match_torch_view_and_transpose():
    X = np.arange(6 * 24, dtype=float).reshape(6, 24)
    expected = t(X).view(6, 3, 8).transpose(0, 1)
    np.testing.assert_array_equal(ref.split_heads(X, 3), expected.numpy())
    np.testing.assert_array_equal(ref.merge_heads(expected.numpy()), X)
