"""The flash-attention reference against an outside oracle: PyTorch's attention.

F.scaled_dot_product_attention (SDPA) gives the output; torch.logsumexp of the scaled scores
gives the lse. With T = S, SDPA's top-left causal alignment is the course's.
"""

import numpy as np
import pytest

from autograder.course.assignment import Assignment
from autograder.engine.mistakes import module_from_source

torch = pytest.importorskip("torch")
F = torch.nn.functional

ref = module_from_source(Assignment.load("flash-attention").reference_source, "reference")


def t(x):
    return torch.from_numpy(np.asarray(x, dtype=np.float64))


def oracle(Q, K, V, causal):
    output = F.scaled_dot_product_attention(t(Q), t(K), t(V), is_causal=causal)
    scores = t(Q) @ t(K).T / np.sqrt(Q.shape[1])
    if causal:
        scores = scores.masked_fill(~torch.ones_like(scores, dtype=torch.bool).tril(), -np.inf)
    return output.numpy(), torch.logsumexp(scores, dim=-1).numpy()


@pytest.mark.parametrize("T, S, d, dv", [(5, 12, 8, 3), (7, 13, 12, 5), (1, 300, 4, 4)])
@pytest.mark.parametrize("block_size", [1, 4, 5, 128])
def test_chunked_attention_matches_sdpa(T, S, d, dv, block_size):
    rng = np.random.default_rng(T * 1000 + S)
    Q, K, V = rng.normal(size=(T, d)), rng.normal(size=(S, d)), rng.normal(size=(S, dv))
    output, lse = ref.chunked_attention(Q, K, V, block_size=block_size)
    want_output, want_lse = oracle(Q, K, V, causal=False)
    np.testing.assert_allclose(output, want_output, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(lse, want_lse, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("T, block_size", [(11, 4), (11, 3), (16, 16), (9, 1), (40, 7)])
def test_causal_chunked_attention_matches_sdpa_is_causal(T, block_size):
    rng = np.random.default_rng(T + block_size)
    Q, K, V = rng.normal(size=(T, 8)), rng.normal(size=(T, 8)), rng.normal(size=(T, 5))
    output, lse = ref.chunked_attention(Q, K, V, block_size=block_size, causal=True)
    want_output, want_lse = oracle(Q, K, V, causal=True)
    np.testing.assert_allclose(output, want_output, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(lse, want_lse, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("causal", [False, True])
def test_large_logits_match_sdpa(causal):
    rng = np.random.default_rng(7)
    Q, K, V = (
        30 * rng.normal(size=(13, 12)),
        30 * rng.normal(size=(13, 12)),
        rng.normal(size=(13, 5)),
    )
    assert np.abs(Q @ K.T / np.sqrt(12)).max() > 709  # exp of these overflows without the max
    output, lse = ref.chunked_attention(Q, K, V, block_size=4, causal=causal)
    want_output, want_lse = oracle(Q, K, V, causal)
    np.testing.assert_allclose(output, want_output, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(lse, want_lse, rtol=1e-12)


def test_counts_match_the_shapes_torch_multiplies():
    B, H, T, d_head = 2, 3, 5, 7
    q = torch.zeros(B, H, T, d_head)
    scores = q @ q.transpose(-2, -1)
    # one multiply and one add per term of each dot product, for both products
    assert ref.attention_flops(B, H, T, d_head) == 2 * 2 * scores.numel() * d_head
    assert ref.score_bytes(B, H, T) == scores.numel() * scores.element_size()
