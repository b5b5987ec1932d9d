"""Known mistakes for flash-attention, and forms that look different but are correct.

Each variant replaces one function of the reference; inside it, the other functions are the
reference's, and so are the helpers below. A mistake in online_softmax_update therefore also
shows in the reference's chunked_attention, which calls it: suite.yaml grades the two
together, and the handout says so.

Families from the issue and the research notes (api-pitfalls.md, attention-facts.md): no
rescaling when the max changes, l rescaled but not acc, a per-block max, the last partial
block lost, a causal block skipped entirely or not masked at all, lse without the max; and
two that give the right numbers with the wrong memory, caught only by the memory tests.
"""

# The variants call online_softmax_update, which exists only in the module each variant is
# spliced into (the reference's): hence no F821 here. `l` is the API's name for the sum.
# ruff: noqa: F821, E741

import numpy as np

from autograder.suite import Catalogue

catalogue = Catalogue()


@catalogue.helper
def empty_state(T, dv):
    """The online softmax before any key: m = -inf, l = 0, acc = 0."""
    return np.full(T, -np.inf), np.zeros(T), np.zeros((T, dv))


@catalogue.helper
def finite_or_zero(m):
    """The running max where it is finite, 0 where a row has seen only -inf."""
    return np.where(np.isfinite(m), m, 0.0)


@catalogue.helper
def causal_block(scores, rows, start, stop):
    """scores of query rows `rows` against keys start..stop-1, -inf where j > i."""
    i = np.arange(rows.start, rows.start + scores.shape[0])[:, None]
    j = np.arange(start, stop)[None, :]
    return np.where(j <= i, scores, -np.inf)


@catalogue.helper
def key_blocks(S, block_size):
    """(start, stop) of each block of keys; the last one may be shorter."""
    return [(start, min(start + block_size, S)) for start in range(0, S, block_size)]


@catalogue.helper
def online_pass(Q, K, V, blocks, causal, scale=None, masked=True, skip_diagonal=False):
    """m, l and acc after folding in the key `blocks` one by one, the reference's way:
    with causal=True only the rows from the block's start on take part (from its stop on,
    with skip_diagonal), and their mask is built from indices unless masked is False."""
    T = len(Q)
    scale = 1 / np.sqrt(Q.shape[1]) if scale is None else scale
    m, l, acc = empty_state(T, V.shape[1])
    for start, stop in blocks:
        rows = slice((stop if skip_diagonal else start) if causal else 0, T)
        scores = Q[rows] @ K[start:stop].T * scale
        if causal and masked:
            scores = causal_block(scores, rows, start, stop)
        state = online_softmax_update(m[rows], l[rows], acc[rows], scores, V[start:stop])
        m[rows], l[rows], acc[rows] = state
        del scores, state  # as the reference: a mistake elsewhere must not cost memory too
    return m, l, acc


# -- attention_flops ------------------------------------------------------------------------


@catalogue.mistake(
    "flops-one-product",
    title="only one of the two products is counted",
    replaces="attention_flops",
    why="You counted 2·B·H·T²·d_head, the cost of one of the two products. Attention does two "
    "of the same size: the scores Q·Kᵀ, and the weights times V.",
    hint="Count Q·Kᵀ and weights·V separately; each costs 2·T·T·d_head per head.",
)
def flops_one_product(B, H, T, d_head):
    return 2 * B * H * T * T * d_head


@catalogue.mistake(
    "flops-without-heads",
    title="the number of heads H is left out",
    replaces="attention_flops",
    why="Your count leaves out the number of heads H: every head computes its own scores and "
    "its own weighted sum.",
    hint="The cost of one head, times the number of heads, times the number of sequences.",
)
def flops_without_heads(B, H, T, d_head):
    return 4 * B * T * T * d_head


@catalogue.mistake(
    "flops-projection-formula",
    title="the projections' formula, T·d_head², instead of T²·d_head",
    replaces="attention_flops",
    why="You counted 4·B·H·T·d_head², which grows with T like the projections do. The "
    "attention core multiplies T queries by T keys: it grows with T².",
    hint="Q·Kᵀ is a (T, d_head) times (d_head, T) product: how many entries does the result "
    "have, and what does each cost?",
)
def flops_projection_formula(B, H, T, d_head):
    return 4 * B * H * T * d_head * d_head


# -- score_bytes ----------------------------------------------------------------------------


@catalogue.mistake(
    "score-bytes-without-heads",
    title="one score matrix per sequence instead of one per head",
    replaces="score_bytes",
    why="You counted one (T, T) matrix per sequence, but every head has its own scores.",
    hint="There are B·H score matrices of T·T values each.",
)
def score_bytes_without_heads(B, H, T, bytes_per_value=4):
    return B * T * T * bytes_per_value


@catalogue.mistake(
    "score-bytes-linear-in-t",
    title="T values per head instead of T·T",
    replaces="score_bytes",
    why="You counted T values per head instead of T·T: the scores pair every query with every key.",
    hint="The score matrix of one head is T by T.",
)
def score_bytes_linear_in_t(B, H, T, bytes_per_value=4):
    return B * H * T * bytes_per_value


@catalogue.mistake(
    "score-bytes-default-float64",
    title="the default is 8 bytes per value instead of 4",
    replaces="score_bytes",
    why="Your default is 8 bytes per value (float64); the API's default is 4 (float32).",
    hint="Check the default value of bytes_per_value in the signature.",
)
def score_bytes_default_float64(B, H, T, bytes_per_value=8):
    return B * H * T * T * bytes_per_value


# -- online_softmax_update ------------------------------------------------------------------


@catalogue.mistake(
    "no-rescaling",
    title="the old state is not rescaled when the running max rises",
    replaces="online_softmax_update",
    why="When a block raises the running max, you add its terms exp(s - m_new) to l and acc "
    "without rescaling what was already there, which is still relative to the old max. The "
    "old keys then count too much.",
    hint="Before adding the new block, multiply the old l and the old acc by exp(m - m_new).",
)
def no_rescaling(m, l, acc, scores, V_block):
    m_new = np.maximum(m, scores.max(axis=1))
    p = np.exp(scores - finite_or_zero(m_new)[:, None])
    return m_new, l + p.sum(axis=1), acc + p @ V_block


@catalogue.mistake(
    "rescale-l-not-acc",
    title="l is rescaled but acc is not",
    replaces="online_softmax_update",
    why="You rescale the running sum l by exp(m - m_new) but not the accumulator acc. The two "
    "must stay relative to the same max, or acc / l is no longer the weighted mean.",
    hint="Whatever factor l is multiplied by, acc needs the same factor.",
)
def rescale_l_not_acc(m, l, acc, scores, V_block):
    m_new = np.maximum(m, scores.max(axis=1))
    shift = finite_or_zero(m_new)
    p = np.exp(scores - shift[:, None])
    return m_new, np.exp(m - shift) * l + p.sum(axis=1), acc + p @ V_block


@catalogue.mistake(
    "max-per-block",
    title="m is the maximum of this block only, not the running maximum",
    replaces="online_softmax_update",
    why="Your m is the maximum of this block only, not the running maximum over every block so "
    "far. When a block's scores are lower than earlier ones, m goes down, exp(m - m_new) grows "
    "past 1 and can overflow, and m no longer means what the handout says.",
    hint="m_new is the larger of the old m and this block's maximum (np.maximum).",
)
def max_per_block(m, l, acc, scores, V_block):
    m_new = scores.max(axis=1)
    shift = finite_or_zero(m_new)
    alpha = np.exp(finite_or_zero(m) - shift) * np.isfinite(m)
    p = np.exp(scores - shift[:, None])
    return m_new, alpha * l + p.sum(axis=1), alpha[:, None] * acc + p @ V_block


@catalogue.mistake(
    "rescale-inverted",
    title="the old state is multiplied by exp(m_new - m), the inverse",
    replaces="online_softmax_update",
    why="You multiply the old state by exp(m_new - m) instead of exp(m - m_new). When the max "
    "rises, the old terms must shrink, not grow.",
    hint="The old terms are exp(s - m); to make them exp(s - m_new), multiply by exp(m - m_new).",
)
def rescale_inverted(m, l, acc, scores, V_block):
    m_new = np.maximum(m, scores.max(axis=1))
    shift = finite_or_zero(m_new)
    alpha = np.exp(shift - finite_or_zero(m))
    p = np.exp(scores - shift[:, None])
    return m_new, alpha * l + p.sum(axis=1), alpha[:, None] * acc + p @ V_block


@catalogue.mistake(
    "exp-without-max",
    title="exp(score) without subtracting the running max",
    replaces="online_softmax_update",
    why="You add exp(score) to l and acc, without subtracting the running max. The state then "
    "means something else (l must be the sum of exp(s - m)), and scores above about 709 "
    "overflow to inf.",
    hint="Exponentiate scores minus the running max m_new, never the scores themselves.",
)
def exp_without_max(m, l, acc, scores, V_block):
    p = np.exp(scores)
    return np.maximum(m, scores.max(axis=1)), l + p.sum(axis=1), acc + p @ V_block


@catalogue.mistake(
    "masked-row-nan",
    title="a fully masked row gives NaN (exp(-inf - -inf))",
    replaces="online_softmax_update",
    why="A row whose scores are all -inf so far has m_new = -inf, and exp(-inf - (-inf)) is "
    "exp(NaN). The handout asks such a row to keep m = -inf, l = 0 and acc = 0.",
    hint="Subtract 0 instead of m_new where m_new is -inf; the terms are then exp(-inf) = 0.",
)
def masked_row_nan(m, l, acc, scores, V_block):
    m_new = np.maximum(m, scores.max(axis=1))
    alpha = np.exp(m - m_new)
    p = np.exp(scores - m_new[:, None])
    return m_new, alpha * l + p.sum(axis=1), alpha[:, None] * acc + p @ V_block


@catalogue.mistake(
    "update-returns-block-max",
    title="the m returned is this block's maximum, not the running maximum",
    replaces="online_softmax_update",
    why="Your l and acc are rescaled to the running maximum, but the m you return is the "
    "maximum of this block alone. The next step then rescales by the wrong amount: l and acc "
    "are kept relative to a maximum that m no longer records.",
    hint="Return m_new = max(m, the block's row maxima), the maximum l and acc were rescaled to.",
)
def update_returns_block_max(m, l, acc, scores, V_block):
    m_new = np.maximum(m, scores.max(axis=1))
    shift = finite_or_zero(m_new)
    alpha = np.exp(m - shift)
    p = np.exp(scores - shift[:, None])
    return scores.max(axis=1), alpha * l + p.sum(axis=1), alpha[:, None] * acc + p @ V_block


@catalogue.mistake(
    "update-masked-row-m-zero",
    title="a fully masked row comes back with m = 0, not -inf",
    replaces="online_softmax_update",
    why="For a row that has seen only -inf you return the shift you used (0) as its running "
    "maximum. The handout asks such a row to keep m = -inf: with m = 0, a later block whose "
    "scores are all far below 0 is rescaled against a maximum that was never seen.",
    hint="Use 0 only as the shift inside the exponentials; return m_new itself, -inf included.",
)
def update_masked_row_m_zero(m, l, acc, scores, V_block):
    shift = finite_or_zero(np.maximum(m, scores.max(axis=1)))
    alpha = np.exp(m - shift)
    p = np.exp(scores - shift[:, None])
    return shift, alpha * l + p.sum(axis=1), alpha[:, None] * acc + p @ V_block


# -- chunked_attention ----------------------------------------------------------------------


@catalogue.mistake(
    "lse-without-max",
    title="lse is log(l) without the running max added back",
    replaces="chunked_attention",
    why="Your lse is log(l), but l is the sum of exp(s - m): relative to the running max. The "
    "log-sum-exp of the scores is m + log(l).",
    hint="Add the running max back to the logarithm of the running sum.",
)
def lse_without_max(Q, K, V, block_size=128, causal=False):
    m, l, acc = online_pass(Q, K, V, key_blocks(len(K), block_size), causal)
    return acc / l[:, None], np.log(l)


@catalogue.mistake(
    "output-not-normalised",
    title="acc is returned without dividing by l",
    replaces="chunked_attention",
    why="You return the accumulator acc itself. It is the sum of exp(s - m)·v, not yet divided "
    "by the sum of the weights.",
    hint="After the last block, divide each row of acc by its running sum l.",
)
def output_not_normalised(Q, K, V, block_size=128, causal=False):
    m, l, acc = online_pass(Q, K, V, key_blocks(len(K), block_size), causal)
    return acc, m + np.log(l)


@catalogue.mistake(
    "last-partial-block-dropped",
    title="the last, shorter block of keys is dropped",
    replaces="chunked_attention",
    why="Your loop stops before the last block when block_size does not divide S, so the last "
    "S % block_size keys are never seen.",
    hint="Let the loop start a block at every multiple of block_size below S; the last block "
    "may be shorter (slicing K[start:start + block_size] stops at S by itself).",
)
def last_partial_block_dropped(Q, K, V, block_size=128, causal=False):
    S = len(K)
    blocks = [(start, start + block_size) for start in range(0, S - block_size + 1, block_size)]
    m, l, acc = online_pass(Q, K, V, blocks, causal)
    return acc / l[:, None], m + np.log(l)


@catalogue.mistake(
    "block-end-off-by-one",
    title="each block ends one key early",
    replaces="chunked_attention",
    why="Each of your blocks ends one key early (start + block_size - 1), so the last key of "
    "every block is skipped.",
    hint="A Python slice a:b already leaves b out: block k is K[k*b:(k+1)*b].",
)
def block_end_off_by_one(Q, K, V, block_size=128, causal=False):
    S = len(K)
    blocks = [(start, min(start + block_size - 1, S)) for start in range(0, S, block_size)]
    m, l, acc = online_pass(Q, K, V, [(a, b) for a, b in blocks if b > a], causal)
    return acc / l[:, None], m + np.log(l)


@catalogue.mistake(
    "causal-diagonal-block-skipped",
    title="with causal=True the block on the diagonal is skipped",
    replaces="chunked_attention",
    why="With causal=True you skip every block that a query can see only in part (the block on "
    "the diagonal), as if it were wholly in the future. Each query then misses its own key and "
    "the keys just before it, and the first queries see nothing at all.",
    hint="Only blocks that start after the query are wholly in the future. The block on the "
    "diagonal must be visited, with the keys j > i masked.",
)
def causal_diagonal_block_skipped(Q, K, V, block_size=128, causal=False):
    blocks = key_blocks(len(K), block_size)
    m, l, acc = online_pass(Q, K, V, blocks, causal, masked=False, skip_diagonal=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return acc / l[:, None], m + np.log(l)


@catalogue.mistake(
    "causal-diagonal-block-unmasked",
    title="with causal=True the block on the diagonal is not masked",
    replaces="chunked_attention",
    why="With causal=True you leave out the blocks wholly in the future, but you do not mask "
    "the block on the diagonal: there, query i still sees the keys j > i of its own block.",
    hint="Inside the block on the diagonal, compare the query's position i with each key's "
    "position j and mask j > i.",
)
def causal_diagonal_block_unmasked(Q, K, V, block_size=128, causal=False):
    m, l, acc = online_pass(Q, K, V, key_blocks(len(K), block_size), causal, masked=False)
    return acc / l[:, None], m + np.log(l)


@catalogue.mistake(
    "causal-mask-block-local",
    title="the causal mask compares positions inside the block, not in the sequence",
    replaces="chunked_attention",
    why="Your causal mask compares the query's position with the key's position inside its "
    "block (0 to block_size - 1) instead of its position in the sequence, so from the second "
    "block on, queries see keys of the future.",
    hint="Key j of the block that starts at `start` is key start + j of the sequence.",
)
def causal_mask_block_local(Q, K, V, block_size=128, causal=False):
    T, S = len(Q), len(K)
    m, l, acc = empty_state(T, V.shape[1])
    for start in range(0, S, block_size):
        stop = min(start + block_size, S)
        scores = Q @ K[start:stop].T / np.sqrt(Q.shape[1])
        if causal:
            keep = np.arange(stop - start)[None, :] <= np.arange(T)[:, None]
            scores = np.where(keep, scores, -np.inf)
        m, l, acc = online_softmax_update(m, l, acc, scores, V[start:stop])
    return acc / l[:, None], m + np.log(l)


@catalogue.mistake(
    "chunked-scale-twice",
    title="the scores are divided by sqrt(d) twice (by d)",
    replaces="chunked_attention",
    why="Your scores are divided by sqrt(d) twice, so by d in all. The online softmax is "
    "exact, but of scores that are too small: the weights come out too flat.",
    hint="Scale Q·Kᵀ once, by 1 / sqrt(d): either Q before the product or the scores after it.",
)
def chunked_scale_twice(Q, K, V, block_size=128, causal=False):
    scale = 1 / Q.shape[1]
    m, l, acc = online_pass(Q, K, V, key_blocks(len(K), block_size), causal, scale=scale)
    return acc / l[:, None], m + np.log(l)


@catalogue.mistake(
    "chunked-mask-fill-zero",
    title="masked scores are set to 0 instead of -inf",
    replaces="chunked_attention",
    why="You multiplied the scores by the causal mask, so a future key gets the score 0 "
    "instead of -inf. A score of 0 still gets the weight exp(0 - m), so the future leaks in.",
    hint="What score makes exp give a weight of exactly 0? It is -inf, not 0: use np.where.",
)
def chunked_mask_fill_zero(Q, K, V, block_size=128, causal=False):
    T = len(Q)
    m, l, acc = empty_state(T, V.shape[1])
    for start, stop in key_blocks(len(K), block_size):
        scores = Q @ K[start:stop].T / np.sqrt(Q.shape[1])
        if causal:
            scores = scores * (np.arange(start, stop)[None, :] <= np.arange(T)[:, None])
        m, l, acc = online_softmax_update(m, l, acc, scores, V[start:stop])
    return acc / l[:, None], m + np.log(l)


@catalogue.mistake(
    "chunked-without-scale",
    title="the scores are not divided by sqrt(d)",
    replaces="chunked_attention",
    why="You did not divide the scores by sqrt(d). The online softmax is exact, but of the "
    "wrong scores: this is still scaled dot-product attention.",
    hint="Scale Q·Kᵀ of every block by 1 / sqrt(d), d being the width of the queries and keys.",
)
def chunked_without_scale(Q, K, V, block_size=128, causal=False):
    m, l, acc = online_pass(Q, K, V, key_blocks(len(K), block_size), causal, scale=1.0)
    return acc / l[:, None], m + np.log(l)


@catalogue.mistake(
    "scores-materialised",
    title="the whole (T, S) score matrix is built at once",
    replaces="chunked_attention",
    why="Your function computes the right numbers, but builds the whole (T, S) matrix of scores "
    "at once, as dense attention does. At T = S = 4096 that matrix alone is 128 MiB, eight "
    "times the bound: avoiding it is the whole point of the online softmax.",
    hint="Loop over the keys in blocks of block_size, and keep only the running m, l and acc "
    "between blocks; never hold more than one (T, block_size) block of scores.",
)
def scores_materialised(Q, K, V, block_size=128, causal=False):
    scores = Q @ K.T / np.sqrt(Q.shape[1])
    if causal:
        scores = np.where(np.tril(np.ones(scores.shape, dtype=bool)), scores, -np.inf)
    m = scores.max(axis=1)
    weights = np.exp(scores - m[:, None])
    l = weights.sum(axis=1)
    return weights @ V / l[:, None], m + np.log(l)


@catalogue.mistake(
    "causal-mask-materialised",
    title="the whole (T, S) causal mask is built at once",
    replaces="chunked_attention",
    why="Your blocks are right, but with causal=True you first build the whole (T, S) causal "
    "mask (np.tril) and slice it per block. At T = S = 4096 that mask alone is 16 MiB: the "
    "mask costs as much memory as the bound allows for everything.",
    hint="Build each block's mask from the indices of its rows and columns, e.g. by comparing "
    "np.arange over the query positions with np.arange over the block's key positions.",
)
def causal_mask_materialised(Q, K, V, block_size=128, causal=False):
    T, S = len(Q), len(K)
    allowed = np.tril(np.ones((T, S), dtype=bool)) if causal else None
    m, l, acc = empty_state(T, V.shape[1])
    for start in range(0, S, block_size):
        stop = min(start + block_size, S)
        scores = Q @ K[start:stop].T / np.sqrt(Q.shape[1])
        if causal:
            scores = np.where(allowed[:, start:stop], scores, -np.inf)
        m, l, acc = online_softmax_update(m, l, acc, scores, V[start:stop])
        del scores
    return acc / l[:, None], m + np.log(l)


# -- also correct: different code, same mathematics -----------------------------------------


@catalogue.also_correct("flops-two-products", replaces="attention_flops")
def flops_two_products(B, H, T, d_head):
    per_product = 2 * T * T * d_head  # a multiply and an add per term
    return B * H * (per_product + per_product)


@catalogue.also_correct("score-bytes-numpy-int64", replaces="score_bytes")
def score_bytes_numpy_int64(B, H, T, bytes_per_value=4):
    return int(np.prod([B, H, T, T, bytes_per_value], dtype=np.int64))


@catalogue.also_correct("update-in-place", replaces="online_softmax_update")
def update_in_place(m, l, acc, scores, V_block):
    m_new = np.maximum(m, scores.max(axis=1))
    shift = finite_or_zero(m_new)
    alpha = np.exp(m - shift)
    p = scores - shift[:, None]
    np.exp(p, out=p)
    acc *= alpha[:, None]
    acc += np.einsum("tb,bv->tv", p, V_block)
    l *= alpha
    l += p.sum(axis=1)
    return m_new, l, acc


@catalogue.also_correct("chunked-queries-tiled", replaces="chunked_attention")
def chunked_queries_tiled(Q, K, V, block_size=128, causal=False):
    """FlashAttention's two loops: query blocks outside, key blocks inside; a causal key
    block that starts after the query block's last row is skipped."""
    T, S = len(Q), len(K)
    output, lse = np.zeros((T, V.shape[1])), np.zeros(T)
    for q0 in range(0, T, block_size):
        q1 = min(q0 + block_size, T)
        m, l, acc = empty_state(q1 - q0, V.shape[1])
        for start in range(0, q1 if causal else S, block_size):
            stop = min(start + block_size, S)
            scores = Q[q0:q1] @ K[start:stop].T / np.sqrt(Q.shape[1])
            if causal:
                scores = causal_block(scores, slice(q0, q1), start, stop)
            m, l, acc = online_softmax_update(m, l, acc, scores, V[start:stop])
        output[q0:q1], lse[q0:q1] = acc / l[:, None], m + np.log(l)
    return output, lse


@catalogue.also_correct("chunked-mask-every-block", replaces="chunked_attention")
def chunked_mask_every_block(Q, K, V, block_size=128, causal=False):
    """Every row takes part in every block; the causal mask is added as -1e30, not -inf."""
    T, S = len(Q), len(K)
    m, l, acc = empty_state(T, V.shape[1])
    queries = np.arange(T)[:, None]
    for start in range(0, S, block_size):
        stop = min(start + block_size, S)
        scores = Q @ K[start:stop].T / np.sqrt(Q.shape[1])
        if causal:
            scores += np.where(np.arange(start, stop)[None, :] <= queries, 0.0, -1e30)
        m, l, acc = online_softmax_update(m, l, acc, scores, V[start:stop])
        del scores
    return acc / l[:, None], m + np.log(l)


@catalogue.also_correct("chunked-own-loop", replaces="chunked_attention")
def chunked_own_loop(Q, K, V, block_size=128, causal=False):
    """The online softmax written out inline, with the scale applied to q first."""
    T, S = len(Q), len(K)
    m, l, acc = empty_state(T, V.shape[1])
    q = Q / np.sqrt(Q.shape[1])
    for start in range(0, S, block_size):
        stop = min(start + block_size, S)
        s = q @ K[start:stop].T
        if causal:
            s[np.arange(start, stop)[None, :] > np.arange(T)[:, None]] = -np.inf
        m_new = np.maximum(m, s.max(axis=1))
        alpha = np.exp(m - m_new)
        s -= m_new[:, None]
        np.exp(s, out=s)
        l = alpha * l + s.sum(axis=1)
        acc = alpha[:, None] * acc + s @ V[start:stop]
        m = m_new
        del s
    return acc / l[:, None], m + np.log(l)


@catalogue.also_correct("chunked-float32", replaces="chunked_attention")
def chunked_float32(Q, K, V, block_size=128, causal=False):
    Q, K, V = (np.asarray(a, dtype=np.float32) for a in (Q, K, V))
    T, S = len(Q), len(K)
    m = np.full(T, -np.inf, dtype=np.float32)
    l, acc = np.zeros(T, dtype=np.float32), np.zeros((T, V.shape[1]), dtype=np.float32)
    for start in range(0, S, block_size):
        stop = min(start + block_size, S)
        rows = slice(start, T) if causal else slice(0, T)
        scores = Q[rows] @ K[start:stop].T / np.float32(np.sqrt(Q.shape[1]))
        if causal:
            scores = causal_block(scores, rows, start, stop)
        state = online_softmax_update(m[rows], l[rows], acc[rows], scores, V[start:stop])
        m[rows], l[rows], acc[rows] = state
        del scores
    return acc / l[:, None], m + np.log(l)
