"""padding-and-batches' reference against PyTorch, with the same weights and masks.

As in test_oracle.py: in_proj_weight = [Wq.T; Wk.T; Wv.T], out_proj.weight = Wo.T; SDPA's
boolean mask means "may attend" like ours, nn.MultiheadAttention's masks mean "blocked".
nn.MultiheadAttention gives NaN on a row with no key, so it is compared only where every row
has one; SDPA, whose policy (output 0) is ours, covers the empty rows.
"""

import numpy as np
import pytest

from autograder.course.assignment import Assignment
from autograder.engine.mistakes import module_from_source

torch = pytest.importorskip("torch")
F = torch.nn.functional

ref = module_from_source(Assignment.load("padding-and-batches").reference_source, "reference")
C = 24


def t(x):
    return torch.from_numpy(np.asarray(x, dtype=np.float64))


def torch_mha(W, heads):
    """nn.MultiheadAttention with our x @ W weights, no biases, float64."""
    Wq, Wk, Wv, Wo = W
    mha = torch.nn.MultiheadAttention(C, heads, bias=False, batch_first=True).double()
    with torch.no_grad():
        mha.in_proj_weight.copy_(t(np.concatenate([Wq.T, Wk.T, Wv.T])))
        mha.out_proj.weight.copy_(t(Wo.T))
    return mha


def weights(rng):
    return [rng.normal(size=(C, C)) / np.sqrt(C) for _ in range(4)]


@pytest.mark.parametrize("causal", [True, False])
def test_batched_attention_matches_sdpa_with_empty_rows(causal):
    rng = np.random.default_rng(11)
    lengths = [6, 0, 3]
    Q, K, V = (
        rng.normal(size=(3, 2, 6, 8)),
        rng.normal(size=(3, 2, 6, 8)),
        rng.normal(size=(3, 2, 6, 5)),
    )
    mask = ref.attention_mask(lengths, 6, causal)[:, None]
    _, output = ref.batched_attention(Q, K, V, mask)
    expected = F.scaled_dot_product_attention(t(Q), t(K), t(V), attn_mask=torch.from_numpy(mask))
    np.testing.assert_allclose(output, expected.numpy(), rtol=1e-12, atol=1e-12)
    assert np.all(output[1] == 0)


@pytest.mark.parametrize("heads", [3, 2])
@pytest.mark.parametrize("causal", [True, False])
def test_multi_head_attention_matches_torch_at_real_positions(heads, causal):
    rng = np.random.default_rng(heads)
    lengths, T = [7, 2, 5], 7
    X, W = rng.normal(size=(3, T, C)), weights(rng)
    real = ref.padding_mask(lengths, T)
    blocked = torch.from_numpy(~np.tril(np.ones((T, T), dtype=bool))) if causal else None
    x = t(X)
    expected, _ = torch_mha(W, heads)(
        x, x, x, key_padding_mask=torch.from_numpy(~real), attn_mask=blocked, need_weights=False
    )
    got = ref.multi_head_attention(X, lengths, *W, heads, causal=causal)
    np.testing.assert_allclose(got[real], expected.detach().numpy()[real], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("T, S", [(6, 4), (4, 9)])
def test_cross_attention_matches_torch(T, S):
    rng = np.random.default_rng(T * 10 + S)
    y_lengths = [S, 1, S - 2]
    X, Y, W = rng.normal(size=(3, T, C)), rng.normal(size=(3, S, C)), weights(rng)
    blocked = torch.from_numpy(~ref.padding_mask(y_lengths, S))
    expected, _ = torch_mha(W, 3)(t(X), t(Y), t(Y), key_padding_mask=blocked, need_weights=False)
    got = ref.cross_attention(X, Y, y_lengths, *W, 3)
    np.testing.assert_allclose(got, expected.detach().numpy(), rtol=1e-10, atol=1e-12)
