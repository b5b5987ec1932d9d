"""Public tests: run them with `pytest` in this folder (your own tests in test_layer.py run
too).

They check shapes and promises of the API. Passing them does not mean full marks: the hidden
tests check values on more inputs (see README.md).
"""

import numpy as np
import pytest
from layer import CausalSelfAttention

RNG = np.random.default_rng(11)


def test_shapes():
    layer = CausalSelfAttention(16, 2, 6, seed=0)
    x = RNG.normal(size=(3, 4, 16))
    assert layer.forward(x).shape == (3, 4, 16)
    assert layer.attention_weights(x).shape == (3, 2, 4, 4)


def test_attributes():
    layer = CausalSelfAttention(16, 2, 6, seed=0)
    for name in ("W_q", "W_k", "W_v", "W_o"):
        assert getattr(layer, name).shape == (16, 16)
    assert layer.b_o.shape == (16,)
    assert layer.mask.shape == (6, 6) and layer.mask.dtype == bool


def test_first_token_attends_only_to_itself():
    layer = CausalSelfAttention(16, 2, 6, seed=0)
    weights = layer.attention_weights(RNG.normal(size=(1, 5, 16)))
    assert np.allclose(weights[0, :, 0], [1, 0, 0, 0, 0])


def test_errors():
    with pytest.raises(ValueError):
        CausalSelfAttention(16, 3, 6)
    with pytest.raises(ValueError):
        CausalSelfAttention(16, 2, 6).forward(np.zeros((1, 7, 16)))
