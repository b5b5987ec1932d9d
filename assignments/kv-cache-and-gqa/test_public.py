"""Public tests: run them with `pytest` in this folder.

They check shapes and a few properties the handout promises. Passing them does not mean full
marks: the hidden tests check values on more inputs (see README.md).
"""

import numpy as np
from gqa import (
    KVCache,
    causal_mask,
    decode_step,
    grouped_query_attention,
    kv_cache_bytes,
    repeat_kv,
)

C, N_HEAD, N_KV_HEAD = 12, 2, 1
RNG = np.random.default_rng(7)


def weights(n_kv_head=N_KV_HEAD):
    d_head = C // N_HEAD
    Wq, Wo = (RNG.normal(size=(C, C)) / np.sqrt(C) for _ in range(2))
    Wk, Wv = (RNG.normal(size=(C, n_kv_head * d_head)) / np.sqrt(C) for _ in range(2))
    return Wq, Wk, Wv, Wo


def test_repeat_kv_shape():
    assert repeat_kv(np.zeros((2, 5, 3)), 3).shape == (6, 5, 3)


def test_causal_mask_square_is_a_lower_triangle():
    assert causal_mask(3, 3).tolist() == np.tril(np.ones((3, 3), dtype=bool)).tolist()


def test_causal_mask_shape_with_a_cache():
    assert causal_mask(2, 6).shape == (2, 6) and causal_mask(2, 6).dtype == bool


def test_gqa_shape_and_first_row():
    X, W = RNG.normal(size=(4, C)), weights()
    out = grouped_query_attention(X, *W, N_HEAD, N_KV_HEAD)
    assert out.shape == (4, C)
    # the first token sees only itself, so its output is its own value projected by Wo
    v0 = X[0] @ W[2]
    assert np.allclose(out[0], np.tile(v0, N_HEAD // N_KV_HEAD) @ W[3])


def test_cache_starts_empty_and_grows():
    cache = KVCache()
    assert len(cache) == 0
    cache.append(np.zeros((1, 2, 6)), np.ones((1, 2, 6)))
    assert len(cache) == 2 and cache.keys.shape == (1, 2, 6)


def test_decoding_the_whole_prompt_at_once_equals_the_full_pass():
    X, W = RNG.normal(size=(5, C)), weights()
    full = grouped_query_attention(X, *W, N_HEAD, N_KV_HEAD)
    assert np.allclose(decode_step(X, KVCache(), *W, N_HEAD, N_KV_HEAD), full)


def test_kv_cache_bytes_is_an_int():
    assert isinstance(kv_cache_bytes(1, 1, 4, 10), int | np.integer)
