"""Hidden tests for kv-cache-and-gqa: 70 points of Part 2.

Dimensions expose bugs: C = 24 with 4 query heads gives d_head = 6, so d_head, sqrt(d_head),
C and sqrt(C) all differ; 2 kv heads (n_rep = 2) tell np.repeat from np.tile, which agree for
one kv head; T >= 7. Weights are N(0, 1/C), so a float32 implementation stays within the
tolerance. Expected values come from the reference at grading time.

decode_step is graded with the student's own KVCache (the handout says so): the cache is
their object, living in the worker, and the tests read its keys and values after each step.
"""

import numpy as np

from autograder.suite import check, expect, expect_structure, points, raises

C, HEADS, KV_HEADS, T = 24, 4, 2, 7
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}  # four projections: room for a float32 answer


def weights(rng, n_head=HEADS, n_kv_head=KV_HEADS, c=C):
    d_head = c // n_head
    square = [rng.normal(size=(c, c)) / np.sqrt(c) for _ in range(2)]
    narrow = [rng.normal(size=(c, n_kv_head * d_head)) / np.sqrt(c) for _ in range(2)]
    return square[0], narrow[0], narrow[1], square[1]  # Wq, Wk, Wv, Wo


# -- repeat_kv: 8 ---------------------------------------------------------------------------


@points(2, checks="repeat_kv")
def test_repeat_kv_shape(student, reference, rng):
    """(n_kv_head, T, d) -> (n_kv_head * n_rep, T, d)"""
    x = rng.normal(size=(2, 5, 3))
    expect_structure(student.repeat_kv(x, 3), reference.repeat_kv(x, 3))


@points(4, checks="repeat_kv")
def test_repeat_kv_order(student, reference, rng):
    """query head h gets kv head h // n_rep: copies of one head sit next to each other"""
    x = rng.normal(size=(3, 4, 2))
    expect(student.repeat_kv(x, 2), reference.repeat_kv(x, 2))


@points(2, checks="repeat_kv")
def test_repeat_kv_edge_cases(student, reference, rng):
    """n_rep = 1 changes nothing, and a single kv head is copied n_rep times"""
    x = rng.normal(size=(3, 4, 2))
    expect(student.repeat_kv(x, 1), x)
    one = rng.normal(size=(1, 4, 2))
    expect(student.repeat_kv(one, 4), reference.repeat_kv(one, 4))


# -- causal_mask: 8 -------------------------------------------------------------------------


@points(2, checks="causal_mask")
def test_causal_mask_square(student, reference):
    """causal_mask(T, T) is the usual lower triangle, a (T, T) boolean array"""
    expect(student.causal_mask(5, 5), reference.causal_mask(5, 5))


@points(4, checks="causal_mask")
def test_causal_mask_bottom_right(student, reference):
    """with fewer queries than keys, query i sees key j when j <= i + (S - T)"""
    for t, s in ((3, 7), (1, 6)):  # (3, 7) first: it tells more mask mistakes apart
        expect(student.causal_mask(t, s), reference.causal_mask(t, s))


@points(2, checks="causal_mask")
def test_causal_mask_one_query_sees_everything(student):
    """a single new query sees every cached key, itself included"""
    mask = student.causal_mask(1, 9)
    expect_structure(mask, np.ones((1, 9), dtype=bool))
    check(np.all(mask), "causal_mask(1, 9) should be all True: the new token is the last.", mask)


# -- grouped_query_attention: 18 ------------------------------------------------------------


@points(7, checks="grouped_query_attention")
def test_gqa_values(student, reference, rng):
    """4 query heads sharing 2 kv heads, causal"""
    X, W = rng.normal(size=(T, C)), weights(rng)
    got = student.grouped_query_attention(X, *W, HEADS, KV_HEADS)
    expect(got, reference.grouped_query_attention(X, *W, HEADS, KV_HEADS), **TOLERANCE)


@points(3, checks="grouped_query_attention")
def test_gqa_not_causal(student, reference, rng):
    """causal=False lets every token see every other"""
    X, W = rng.normal(size=(T, C)), weights(rng)
    got = student.grouped_query_attention(X, *W, HEADS, KV_HEADS, causal=False)
    want = reference.grouped_query_attention(X, *W, HEADS, KV_HEADS, causal=False)
    expect(got, want, **TOLERANCE)
    # large scores (inputs x30: scaled scores in the thousands) stay exact, as the given
    # stable softmax keeps them
    got = student.grouped_query_attention(30.0 * X, *W, HEADS, KV_HEADS, causal=False)
    want = reference.grouped_query_attention(30.0 * X, *W, HEADS, KV_HEADS, causal=False)
    expect(got, want, **TOLERANCE)


@points(3, checks="grouped_query_attention")
def test_gqa_with_as_many_kv_heads_is_multi_head(student, reference, rng):
    """n_kv_head == n_head is plain multi-head attention"""
    X, W = rng.normal(size=(T, C)), weights(rng, n_kv_head=HEADS)
    got = student.grouped_query_attention(X, *W, HEADS, HEADS)
    expect(got, reference.grouped_query_attention(X, *W, HEADS, HEADS), **TOLERANCE)


@points(3, checks="grouped_query_attention")
def test_gqa_with_one_kv_head_is_multi_query(student, reference, rng):
    """n_kv_head == 1 is multi-query attention"""
    X, W = rng.normal(size=(T, C)), weights(rng, n_kv_head=1)
    got = student.grouped_query_attention(X, *W, HEADS, 1)
    expect(got, reference.grouped_query_attention(X, *W, HEADS, 1), **TOLERANCE)


@points(2, checks="grouped_query_attention")
def test_gqa_eight_heads_in_two_groups(student, reference, rng):
    """8 query heads in 2 groups of 4, on a wider model (C = 48); and ValueError when
    n_kv_head does not divide n_head, or n_head does not divide C"""
    X, W = rng.normal(size=(5, 48)), weights(rng, n_head=8, n_kv_head=2, c=48)
    got = student.grouped_query_attention(X, *W, 8, 2)
    expect(got, reference.grouped_query_attention(X, *W, 8, 2), **TOLERANCE)
    X = rng.normal(size=(T, C))
    for n_head, n_kv_head in ((4, 3), (5, 1)):
        d_head = C // n_head
        W = [rng.normal(size=(C, n)) for n in (C, n_kv_head * d_head, n_kv_head * d_head, C)]
        with raises("ValueError"):  # an assert gives AssertionError
            student.grouped_query_attention(X, *W, n_head, n_kv_head)


# -- KVCache: 12 ----------------------------------------------------------------------------


def filled(student, rng, chunks=(3, 1)):
    """A student cache with chunks of keys and values appended, and what it should hold."""
    cache = student.KVCache()
    k = [rng.normal(size=(KV_HEADS, t, 6)) for t in chunks]
    v = [rng.normal(size=(KV_HEADS, t, 6)) for t in chunks]
    for ki, vi in zip(k, v, strict=True):
        cache.append(ki, vi)
    return cache, np.concatenate(k, axis=1), np.concatenate(v, axis=1)


@points(5, checks="KVCache.append")
def test_cache_keys_grow_along_positions(student, rng):
    """after appending 2 then 2 tokens, keys are (n_kv_head, 4, d_head), in order"""
    cache, keys, _ = filled(student, rng, chunks=(2, 2))
    expect(cache.keys, keys)


@points(3, checks="KVCache.append")
def test_cache_values_kept_apart(student, rng):
    """values grow with v, separately from the keys"""
    cache, _, values = filled(student, rng, chunks=(2, 2, 2))
    expect(cache.values, values)


@points(4, checks="KVCache.__len__")
def test_cache_length_counts_positions(student, rng):
    """len(KVCache()) is 0, and len(cache) is S after appending S positions in all"""
    empty = len(student.KVCache())
    check(empty == 0, f"len(KVCache()) is {empty}, not 0.")
    # only through append: the handout lets no caller set keys or values
    # 2 then 3: a cache that keeps only the last chunk (3) and one that counts kv heads (2)
    # give different wrong lengths, so the feedback can tell the two apart
    cache, _, _ = filled(student, rng, chunks=(2, 3))
    count = len(cache)
    check(count == 5, f"after appending 2 then 3 positions, len(cache) is {count}, not 5.", count)


# -- decode_step: 16 ------------------------------------------------------------------------


def decode(module, X, chunks, W, n_head=HEADS, n_kv_head=KV_HEADS):
    """Feed X to module's decode_step in chunks; return the cache and each step's rows."""
    cache, rows, start = module.KVCache(), [], 0
    for size in chunks:
        rows.append(module.decode_step(X[start : start + size], cache, *W, n_head, n_kv_head))
        start += size
    return cache, rows


@points(4, checks="decode_step")
def test_decode_one_token_at_a_time(student, reference, rng):
    """token by token, every step's output equals the full causal attention's row"""
    X, W = rng.normal(size=(T, C)), weights(rng)
    _, got = decode(student, X, [1] * T, W)
    _, want = decode(reference, X, [1] * T, W)
    for g, w in zip(got, want, strict=True):
        expect(g, w, **TOLERANCE)


@points(3, checks="decode_step")
def test_decode_uneven_chunks(student, reference, rng):
    """a prompt of 3 tokens, then 1, then 4 at once: the same rows as the full pass"""
    X, W = rng.normal(size=(8, C)), weights(rng)
    _, got = decode(student, X, [3, 1, 4], W)
    _, want = decode(reference, X, [3, 1, 4], W)
    for g, w in zip(got, want, strict=True):
        expect(g, w, **TOLERANCE)


@points(3, checks="decode_step")
def test_decode_after_a_filled_cache(student, reference, rng):
    """with a prompt's keys and values already cached, new tokens see them and themselves"""
    X, W = rng.normal(size=(7, C)), weights(rng)
    prompt, _ = decode(reference, X[:4], [4], W)
    cache = student.KVCache()
    cache.append(prompt.keys, prompt.values)
    for start, stop in ((4, 6), (6, 7)):
        got = student.decode_step(X[start:stop], cache, *W, HEADS, KV_HEADS)
        want = reference.decode_step(X[start:stop], prompt, *W, HEADS, KV_HEADS)
        expect(got, want, **TOLERANCE)


@points(3, checks="decode_step")
def test_decode_caches_projected_keys_and_values(student, reference, rng):
    """after decoding, the cache holds x @ Wk and x @ Wv split into kv heads"""
    X, W = rng.normal(size=(5, C)), weights(rng)
    cache, _ = decode(student, X, [2, 3], W)
    want, _ = decode(reference, X, [2, 3], W)
    expect(cache.keys, want.keys)
    expect(cache.values, want.values)


@points(3, checks="decode_step")
def test_decode_multi_head_and_multi_query(student, reference, rng):
    """decoding works with n_kv_head = n_head and with n_kv_head = 1"""
    X = rng.normal(size=(4, C))
    for n_kv in (HEADS, 1):
        W = weights(rng, n_kv_head=n_kv)
        _, got = decode(student, X, [2, 1, 1], W, n_kv_head=n_kv)
        _, want = decode(reference, X, [2, 1, 1], W, n_kv_head=n_kv)
        for g, w in zip(got, want, strict=True):
            expect(g, w, **TOLERANCE)


# -- kv_cache_bytes: 8 ----------------------------------------------------------------------


@points(4, checks="kv_cache_bytes")
def test_bytes_of_a_batch(student, reference):
    """keys and values, every layer, kv head, position and sequence, times the bytes"""
    args = dict(n_layers=24, n_kv_head=4, d_head=96, seq_len=3000, batch=3, bytes_per_value=4)
    expect(student.kv_cache_bytes(**args), reference.kv_cache_bytes(**args))


@points(2, checks="kv_cache_bytes")
def test_bytes_defaults(student, reference):
    """batch 1 and 2 bytes per value by default"""
    expect(student.kv_cache_bytes(12, 6, 80, 1000), reference.kv_cache_bytes(12, 6, 80, 1000))


@points(2, checks="kv_cache_bytes")
def test_bytes_are_a_whole_number(student):
    """returns an int (a NumPy integer is fine), not a float"""
    got = student.kv_cache_bytes(2, 2, 8, 16)
    check(
        isinstance(got, int | np.integer) and not isinstance(got, bool),
        f"kv_cache_bytes(2, 2, 8, 16) returned {got!r}; a number of bytes is an int.",
        got,
        cause="the count is not an int: a / division or a float factor makes it a float "
        "(// or int() keeps a whole number)",
    )
