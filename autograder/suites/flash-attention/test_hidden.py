"""Hidden tests for flash-attention: 70 points of Part 2.

Dimensions are chosen to expose bugs: the query length differs from the key length, the key
width d (12) differs from the value width dv (5), and block sizes both divide the key length
and leave a shorter last block. Expected values come from the reference at grading time.
Tolerance: rtol 1e-5 and atol 1e-7 (the engine's default), except for chunked_attention,
where atol is 1e-6: its outputs are weighted means of values of size about 1, so a correct
float32 loop is off by a few 1e-7 wherever a mean comes out near 0 (measured up to about
3e-7 beyond rtol at T = 4096, causal). The handout states both.

Memory is graded at T = S = 4096, d = 64, block_size = 128: the peak that chunked_attention
allocates (tracemalloc, in the worker) must stay within 1/8 of the dense (T, S) float64
score matrix, 16 MiB against 128 MiB. The handout states the bound and how to keep to it.
"""

import numpy as np

from autograder.suite import (
    check,
    expect,
    expect_peak_below,
    expect_structure,
    measure_memory,
    parts,
    points,
)

D, DV = 12, 5
BIG, BIG_D, BIG_BLOCK = 4096, 64, 128
DENSE_BYTES = BIG * BIG * 8  # the (T, S) float64 scores alone: 128 MiB
BOUND = DENSE_BYTES // 8  # 16 MiB
WHY_BOUND = "1/8 of the 128.0 MiB that the dense (4096, 4096) float64 score matrix alone needs"
# The known mistakes that give the right values with too much memory: the only ones worth
# replaying at full size when a peak is over the bound.
MEMORY_MISTAKES = ["scores-materialised", "causal-mask-materialised"]
CHUNKED_TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}


def qkv(rng, T, S, scale=1.0):
    return (
        scale * rng.normal(size=(T, D)),
        scale * rng.normal(size=(S, D)),
        rng.normal(size=(S, DV)),
    )


# -- attention_flops: 6 ---------------------------------------------------------------------


def expect_an_int(got, call):
    """The handout's counts are ints (a NumPy integer is one too)."""
    check(
        isinstance(got, int | np.integer) and not isinstance(got, bool),
        f"{call} returned {type(got).__name__} {got!r}; the handout asks for an int",
        cause="the count is not an int: math.pow and / give floats (use ** and //)",
    )


@points(3, checks="attention_flops")
def test_attention_flops_small(student, reference):
    """4 * B * H * T^2 * d_head for small shapes (B, H, T, d_head all different)"""
    for shape in [(2, 3, 5, 7), (1, 4, 6, 3), (3, 1, 9, 2)]:
        got = student.attention_flops(*shape)
        expect_an_int(got, f"attention_flops{shape}")
        expect(got, reference.attention_flops(*shape))


@points(3, checks="attention_flops")
def test_attention_flops_real_model(student, reference):
    """a real layer: B = 8, H = 40, T = 4096, d_head = 128 (far beyond 32-bit integers)"""
    expect(student.attention_flops(8, 40, 4096, 128), reference.attention_flops(8, 40, 4096, 128))


# -- score_bytes: 6 -------------------------------------------------------------------------


@points(4, checks="score_bytes")
def test_score_bytes_values(student, reference):
    """B * H * T^2 * bytes_per_value, for float16, float32 and float64"""
    for shape, size in [((2, 3, 5), 2), ((1, 4, 6), 8), ((8, 40, 4096), 4)]:
        got = student.score_bytes(*shape, size)
        expect_an_int(got, f"score_bytes{(*shape, size)}")
        expect(got, reference.score_bytes(*shape, size))


@points(2, checks="score_bytes")
def test_score_bytes_default_is_float32(student, reference):
    """bytes_per_value defaults to 4 (float32)"""
    expect(student.score_bytes(3, 2, 7), reference.score_bytes(3, 2, 7))


# -- online_softmax_update: 20 --------------------------------------------------------------


def fresh(T, dv=DV):
    return np.full(T, -np.inf), np.zeros(T), np.zeros((T, dv))


@points(4, checks="online_softmax_update")
def test_update_first_block(student, reference, rng):
    """from the empty state (m = -inf, l = 0, acc = 0): m, l = sum exp(s - m), acc"""
    scores, V_block = rng.normal(size=(4, 6)), rng.normal(size=(6, DV))
    args = (*fresh(4), scores, V_block)
    expect(student.online_softmax_update(*args), reference.online_softmax_update(*args))


@points(5, checks="online_softmax_update")
def test_update_max_rises(student, reference, rng):
    """a block with larger scores raises m: the old l and acc are rescaled by exp(m - m_new)"""
    before = reference.online_softmax_update(
        *fresh(4), rng.normal(size=(4, 5)), rng.normal(size=(5, DV))
    )
    scores, V_block = 3 + rng.normal(size=(4, 6)), rng.normal(size=(6, DV))
    args = (*before, scores, V_block)
    expect(student.online_softmax_update(*args), reference.online_softmax_update(*args))


@points(3, checks="online_softmax_update")
def test_update_max_falls(student, reference, rng):
    """a block with smaller scores leaves m where it was: m is the running max"""
    before = reference.online_softmax_update(
        *fresh(4), 3 + rng.normal(size=(4, 5)), rng.normal(size=(5, DV))
    )
    scores, V_block = rng.normal(size=(4, 3)) - 2, rng.normal(size=(3, DV))
    args = (*before, scores, V_block)
    expect(student.online_softmax_update(*args), reference.online_softmax_update(*args))


@points(3, checks="online_softmax_update")
def test_update_blocks_compose(student, rng):
    """three steps give the state of one step over all the keys together"""
    scores = rng.normal(size=(5, 10)) * 2
    V = rng.normal(size=(10, DV))
    got = fresh(5)
    for start, stop in [(0, 4), (4, 7), (7, 10)]:
        got = student.online_softmax_update(*got, scores[:, start:stop], V[start:stop])
    m_all = scores.max(axis=1)
    e = np.exp(scores - m_all[:, None])
    expect(got, (m_all, e.sum(axis=1), e @ V))


@points(3, checks="online_softmax_update")
def test_update_large_scores(student, reference, rng):
    """scores near 1000 (exp overflows above about 709): the state stays finite and correct"""
    before = reference.online_softmax_update(
        *fresh(3), 990 + rng.normal(size=(3, 4)), rng.normal(size=(4, DV))
    )
    scores, V_block = 1000 + rng.normal(size=(3, 4)), rng.normal(size=(4, DV))
    args = (*before, scores, V_block)
    got = student.online_softmax_update(*args)
    parts(got, "m", "l", "acc")
    check(
        all(np.all(np.isfinite(np.asarray(x, dtype=float))) for x in got),
        "with scores near 1000 the state has inf or NaN in it: exponentiate scores minus "
        "the running max, never the scores themselves.",
        about=got,
    )
    expect(got, reference.online_softmax_update(*args))


@points(2, checks="online_softmax_update")
def test_update_masked_row(student, reference, rng):
    """a row whose keys are all -inf so far keeps m = -inf, l = 0, acc = 0 (no NaN)"""
    scores, V_block = rng.normal(size=(3, 4)), rng.normal(size=(4, DV))
    scores[1] = -np.inf  # row 1: every key of the first block is masked
    scores[2, :2] = -np.inf
    args = (*fresh(3), scores, V_block)
    expect(student.online_softmax_update(*args), reference.online_softmax_update(*args))


# -- chunked_attention: 38 ------------------------------------------------------------------


def expect_chunked(student, reference, Q, K, V, **kwargs):
    """The output judged on its own: lse has its own test (the handout: "lse on its own"),
    so a wrong or missing lse costs that test, not every test of the output."""
    output, _ = parts(student.chunked_attention(Q, K, V, **kwargs), "output", "lse")
    want, _ = reference.chunked_attention(Q, K, V, **kwargs)
    expect(output, want, **CHUNKED_TOLERANCE)


@points(4, checks="chunked_attention")
def test_chunked_block_divides(student, reference, rng):
    """equals dense attention when block_size divides S (T = 5, S = 12, block_size = 4)"""
    expect_chunked(student, reference, *qkv(rng, 5, 12), block_size=4)


@points(5, checks="chunked_attention")
def test_chunked_partial_last_block(student, reference, rng):
    """a last block shorter than block_size (S = 13 with block_size 4 and 5) counts in full"""
    Q, K, V = qkv(rng, 6, 13)
    for block_size in (4, 5):
        expect_chunked(student, reference, Q, K, V, block_size=block_size)


@points(3, checks="chunked_attention")
def test_chunked_block_size_extremes(student, reference, rng):
    """block_size = 1 (one key at a time) and block_size larger than S (one block)"""
    Q, K, V = qkv(rng, 4, 7)
    for block_size in (1, 50):
        expect_chunked(student, reference, Q, K, V, block_size=block_size)


@points(2, checks="chunked_attention")
def test_chunked_default_block_size(student, reference, rng):
    """block_size defaults to 128 (S = 300: two full blocks and a short one)"""
    expect_chunked(student, reference, *qkv(rng, 3, 300))


@points(3, checks="chunked_attention")
def test_chunked_lse(student, reference, rng):
    """lse is log(sum_j exp(s_ij)) of each row of scaled scores, the max added back"""
    Q, K, V = qkv(rng, 5, 11, scale=2.0)
    _, lse = parts(student.chunked_attention(Q, K, V, block_size=4), "output", "lse")
    expect(lse, reference.chunked_attention(Q, K, V, block_size=4)[1], **CHUNKED_TOLERANCE)


@points(6, checks="chunked_attention")
def test_chunked_causal(student, reference, rng):
    """causal=True: query i sees key j when j <= i (T = S = 11, blocks of 4 and 3; and
    T = S = 300, blocks of 32, past any tile of 64 to 256 queries a student may make)"""
    Q, K, V = qkv(rng, 11, 11)
    for block_size in (4, 3):
        expect_chunked(student, reference, Q, K, V, block_size=block_size, causal=True)
    Q, K, V = qkv(rng, 300, 300)
    expect_chunked(student, reference, Q, K, V, block_size=32, causal=True)


@points(3, checks="chunked_attention")
def test_chunked_causal_future_cannot_leak(student, rng):
    """causal=True: changing keys and values from position 6 on leaves rows 0 to 5 unchanged"""
    Q, K, V = qkv(rng, 10, 10)
    K2, V2 = K.copy(), V.copy()
    K2[6:], V2[6:] = rng.normal(size=(4, D)), rng.normal(size=(4, DV))
    before = parts(student.chunked_attention(Q, K, V, block_size=4, causal=True), "output", "lse")
    after = parts(student.chunked_attention(Q, K2, V2, block_size=4, causal=True), "output", "lse")
    expect_structure(before[0], V)
    expect_structure(after[0], V)
    check(
        np.allclose(before[0][:6], after[0][:6], rtol=1e-9, atol=1e-12),
        "changing keys 6 to 9 changed the outputs of rows 0 to 5: the future leaks into the "
        "past. Is every key after the query masked, in every block?",
        about=before[0],
    )


@points(4, checks="chunked_attention")
def test_chunked_large_logits(student, reference, rng):
    """inputs scaled by 30, so scaled scores exceed 709 where exp overflows: still exact"""
    Q, K, V = qkv(rng, 6, 13, scale=30.0)
    K[9] = Q[2]  # a score of |q|^2 / sqrt(d), about 3000: far past where exp overflows
    got = student.chunked_attention(Q, K, V, block_size=4)
    output, lse = parts(got, "output", "lse")
    expect_structure(output, V[:6])
    check(
        np.all(np.isfinite(output)),
        "with large scores the output has inf or NaN in it: is every exponent a score minus "
        "the running max?",
        about=output,
    )
    expect(got, reference.chunked_attention(Q, K, V, block_size=4), **CHUNKED_TOLERANCE)
    # every score near -1000: exp of a score underflows to 0 unless the max is subtracted
    # from the start (a running max that starts at 0 rather than -inf never catches up)
    Q, K = -np.abs(Q), np.abs(K) + 30.0  # every score is then below -1000
    expect(
        student.chunked_attention(Q, K, V, block_size=4),
        reference.chunked_attention(Q, K, V, block_size=4),
        **CHUNKED_TOLERANCE,
    )
    # a huge score in row 0's future, in the same block: a block max taken before the causal
    # mask makes every exponent row 0 may use underflow to 0 (0/0), though the future is masked
    Q, K, V = qkv(rng, 8, 8)
    K[3] = 600.0 * Q[0]
    expect(
        student.chunked_attention(Q, K, V, block_size=4, causal=True),
        reference.chunked_attention(Q, K, V, block_size=4, causal=True),
        **CHUNKED_TOLERANCE,
    )


def expect_small_peak(student, reference, rng, causal):
    """At T = S = 4096: the right values, and a peak within BOUND."""
    Q, K, V = (rng.normal(size=(BIG, BIG_D)) for _ in range(3))
    with measure_memory() as memory:
        got = student.chunked_attention(Q, K, V, block_size=BIG_BLOCK, causal=causal)
    output, lse = parts(got, "output", "lse")
    want_output, _ = reference.chunked_attention(Q, K, V, block_size=BIG_BLOCK, causal=causal)
    right = (
        isinstance(output, np.ndarray)
        and output.shape == want_output.shape
        and np.allclose(output, want_output, **CHUNKED_TOLERANCE)
    )
    # No diagnosis here: replaying every known mistake at this size would take minutes, and
    # the tests on small inputs already say what is wrong. Only the output is judged here:
    # lse has its own test, and a wrong lse must not hide a right output's memory.
    check(
        right,
        "at T = S = 4096 the output is wrong (the other tests of chunked_attention say "
        "how), so the memory was not judged.",
    )
    expect_peak_below(memory, BOUND, WHY_BOUND, suspects=MEMORY_MISTAKES)


@points(5, checks="chunked_attention")
def test_chunked_memory(student, reference, rng):
    """T = S = 4096, d = 64, block_size 128: right, and its peak memory stays under 16 MiB"""
    expect_small_peak(student, reference, rng, causal=False)


@points(3, checks="chunked_attention")
def test_chunked_memory_causal(student, reference, rng):
    """the same with causal=True: no (T, S) mask either, the peak stays under 16 MiB"""
    expect_small_peak(student, reference, rng, causal=True)
