"""Known mistakes for masks-and-heads, and forms that look different but are correct.

Each variant replaces one function of the reference; inside it, the other functions
(causal_mask, split_heads, ...) are the reference's, and so are the helpers below. Names are
short and stable; `why` says what went wrong and why it is wrong; `hint` points toward the fix
without giving the code.

Families from the research notes (attention-facts.md) and from public issue trackers, e.g.
heads split by a reshape without a transpose (reczoo/FuxiCTR#30) and heads merged without the
permute (jsbaan/transformer-from-scratch#6, ajhalthor/Transformer-Neural-Network#4).
"""

# The variants call causal_mask, masked_attention, split_heads and merge_heads, which exist
# only in the module each variant is spliced into (the reference's): hence no F821 here.
# ruff: noqa: F821

import numpy as np

from autograder.suite import Catalogue, hide, softmax

catalogue = Catalogue()


catalogue.helper(softmax)
catalogue.helper(hide)


@catalogue.helper
def head_width(X, h):
    """The width of one head; ValueError when h does not divide the width of X."""
    if h <= 0 or X.shape[1] % h:
        raise ValueError("h must divide the width")
    return X.shape[1] // h


@catalogue.helper
def attend_heads(q, k, v, mask):
    """masked_attention in every head: the stacked outputs."""
    return np.stack([masked_attention(q[i], k[i], v[i], mask)[1] for i in range(len(q))])


# -- causal_mask ----------------------------------------------------------------------------


@catalogue.mistake(
    "causal-mask-inverted",
    title="the mask is True where a token may NOT look",
    replaces="causal_mask",
    why="Your mask is True where a position must NOT look (the future) and False where it may. "
    "In this course True means 'may attend', so every token would see only its future.",
    hint="Check the convention in the docstring: True marks the positions a query may attend "
    "to, which for a causal mask are itself and everything before it.",
)
def causal_mask_inverted(n):
    return np.triu(np.ones((n, n), dtype=bool), k=1)


@catalogue.mistake(
    "causal-mask-transposed",
    title="the causal mask is transposed: the future, not the past",
    replaces="causal_mask",
    why="Your mask is the transpose of the causal mask: row i allows the columns j >= i, so each "
    "token looks at itself and the future instead of itself and the past.",
    hint="Row i is the query, column j the key. Token i may look at key j when j <= i: which "
    "triangle of the matrix is that?",
)
def causal_mask_transposed(n):
    return np.triu(np.ones((n, n), dtype=bool))


@catalogue.mistake(
    "causal-mask-strict",
    title="the diagonal is left out of the causal mask",
    replaces="causal_mask",
    why="Your mask leaves out the diagonal, so a token may not look at itself. The first token "
    "then has nothing at all to attend to.",
    hint="A token always sees itself: the diagonal belongs to the allowed part (j <= i, not "
    "j < i).",
)
def causal_mask_strict(n):
    return np.tril(np.ones((n, n), dtype=bool), k=-1)


@catalogue.mistake(
    "causal-mask-not-boolean",
    title="the mask holds numbers, not booleans",
    replaces="causal_mask",
    why="Your mask has the right pattern but holds numbers (1.0 and 0.0), not booleans. A mask "
    "of numbers does not select entries: indexing with it or inverting it with ~ goes wrong.",
    hint="Build the mask with a boolean dtype from the start, or convert it to booleans before "
    "returning it.",
)
def causal_mask_not_boolean(n):
    return np.tril(np.ones((n, n)))


# -- masked_attention -----------------------------------------------------------------------


@catalogue.mistake(
    "mask-after-softmax",
    title="the mask is applied after the softmax",
    replaces="masked_attention",
    why="You applied the mask to the weights after the softmax. The softmax had already given "
    "part of each row's weight to the masked positions, so zeroing them afterwards leaves rows "
    "that no longer sum to 1, and the allowed weights are too small.",
    hint="Mask the scores, not the weights: a masked score must become -inf before the "
    "softmax, which then gives it exactly 0 and shares the whole weight among the rest.",
)
def mask_after_softmax(Q, K, V, mask=None):
    weights = softmax(Q @ K.T / np.sqrt(Q.shape[-1]))
    weights = weights if mask is None else np.where(mask, weights, 0.0)
    return weights, weights @ V


@catalogue.mistake(
    "mask-fill-zero",
    title="masked scores are set to 0 instead of -inf",
    replaces="masked_attention",
    why="You set the masked scores to 0 instead of -inf. A score of 0 still gets a weight of "
    "e^0 = 1 before normalising, so masked positions keep a share of the attention.",
    hint="What score makes the softmax give a weight of exactly 0? It is not 0.",
)
def mask_fill_zero(Q, K, V, mask=None):
    weights = softmax(hide(Q @ K.T / np.sqrt(Q.shape[-1]), mask, 0.0))
    return weights, weights @ V


@catalogue.mistake(
    "mask-inverted",
    title="the mask is used the wrong way round",
    replaces="masked_attention",
    why="You hid the positions where the mask is True and kept the others. In this course "
    "True means 'may attend', so the allowed positions were removed and the forbidden ones "
    "kept.",
    hint="Read the mask convention in the docstring again: the -inf goes where the mask is False.",
)
def mask_inverted(Q, K, V, mask=None):
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    weights = softmax(scores if mask is None else np.where(mask, -np.inf, scores))
    return weights, weights @ V


@catalogue.mistake(
    "softmax-wrong-axis",
    title="the softmax runs over the wrong axis",
    replaces="masked_attention",
    why="Your softmax normalises down the columns (over the queries) instead of along each "
    "row (over the keys), so the weights of one query do not sum to 1.",
    hint="Each query (a row of the scores) needs its own distribution over the keys: take the "
    "max, the exponentials and the sum along the last axis.",
)
def softmax_wrong_axis(Q, K, V, mask=None):
    weights = softmax(hide(Q @ K.T / np.sqrt(Q.shape[-1]), mask), axis=0)
    return weights, weights @ V


@catalogue.mistake(
    "softmax-no-max-subtraction",
    title="the softmax does not subtract the row maximum",
    replaces="masked_attention",
    why="Your softmax exponentiates the raw scores. With large scores np.exp overflows to inf "
    "and inf / inf gives NaN, although the true weights are perfectly ordinary numbers.",
    hint="Subtracting the same number from every score of a row does not change its softmax; "
    "subtract the row's maximum before exponentiating.",
)
def softmax_no_max_subtraction(Q, K, V, mask=None):
    e = np.exp(hide(Q @ K.T / np.sqrt(Q.shape[-1]), mask))
    total = e.sum(axis=-1, keepdims=True)
    weights = e / np.where(total > 0, total, 1.0)
    return weights, weights @ V


@catalogue.mistake(
    "no-empty-row-guard",
    title="a row with every key masked gives NaN",
    replaces="masked_attention",
    why="A query whose keys are all masked gets NaN: its row is all -inf, so subtracting the "
    "max gives -inf - (-inf) = NaN. The handout asks for weights 0 and output 0 there.",
    hint="Handle the row whose maximum is -inf separately (for example, subtract 0 instead), "
    "and avoid dividing by a sum of 0.",
)
def no_empty_row_guard(Q, K, V, mask=None):
    scores = hide(Q @ K.T / np.sqrt(Q.shape[-1]), mask)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights, weights @ V


@catalogue.mistake(
    "no-scale",
    title="the scores are not divided by sqrt(d_k)",
    replaces="masked_attention",
    why="You did not divide the scores by sqrt(d_k). Without the scale, the scores grow with "
    "the width and the softmax becomes too peaked.",
    hint="Scaled dot-product attention divides Q K^T by the square root of the key width "
    "before the softmax.",
)
def no_scale(Q, K, V, mask=None):
    weights = softmax(hide(Q @ K.T, mask))
    return weights, weights @ V


@catalogue.mistake(
    "scale-by-d",
    title="the scores are divided by d_k instead of sqrt(d_k)",
    replaces="masked_attention",
    why="You divided the scores by d_k instead of sqrt(d_k), which flattens the weights too much.",
    hint="The scale is the square root of the key width, not the width itself.",
)
def scale_by_d(Q, K, V, mask=None):
    weights = softmax(hide(Q @ K.T / Q.shape[-1], mask))
    return weights, weights @ V


# -- split_heads ----------------------------------------------------------------------------


@catalogue.mistake(
    "split-by-reshape",
    title="the heads are split by a reshape alone",
    replaces="split_heads",
    why="You reshaped (n, d) straight into (h, n, d_head). The shape is right, but a reshape "
    "reads the numbers in memory order, so head 0 is made of whole rows of X (several tokens) "
    "instead of the first d_head columns of every token.",
    hint="First reshape to (n, h, d_head), which cuts each row into h pieces, then move the "
    "head axis to the front.",
)
def split_by_reshape(X, h):
    return X.reshape(h, len(X), head_width(X, h))


@catalogue.mistake(
    "split-without-transpose",
    title="the head axis is not moved to the front",
    replaces="split_heads",
    why="You cut each row into h pieces but returned shape (n, h, d_head): the head axis must "
    "come first, (h, n, d_head).",
    hint="After cutting the rows into heads, swap the first two axes.",
)
def split_without_transpose(X, h):
    return X.reshape(len(X), h, head_width(X, h))


@catalogue.mistake(
    "split-interleaved",
    title="each head takes every h-th column",
    replaces="split_heads",
    why="Your heads take every h-th column (columns i, i + h, i + 2h, ...) instead of a "
    "contiguous block. Head i must own columns i * d_head up to (i + 1) * d_head.",
    hint="Cut each row into h consecutive pieces of width d_head: the head index must be the "
    "slower-changing one when you reshape the columns.",
)
def split_interleaved(X, h):
    return X.reshape(len(X), head_width(X, h), h).transpose(2, 0, 1)


@catalogue.mistake(
    "split-no-check",
    title="no ValueError when h does not divide d",
    replaces="split_heads",
    why="When h does not divide d your code silently drops the last columns instead of "
    "raising ValueError, so a wrong head count goes unnoticed.",
    hint="Before splitting, check that d is a multiple of h and raise ValueError when it is not.",
)
def split_no_check(X, h):
    d_head = X.shape[1] // h
    return np.stack([X[:, i * d_head : (i + 1) * d_head] for i in range(h)])


# -- merge_heads ----------------------------------------------------------------------------


@catalogue.mistake(
    "merge-by-reshape",
    title="the heads are merged by a reshape alone",
    replaces="merge_heads",
    why="You reshaped (h, n, d_head) straight into (n, h * d_head). A reshape reads the numbers "
    "in memory order, so a row of the result mixes several tokens of one head instead of one "
    "token of every head.",
    hint="Bring the token axis to the front first, (n, h, d_head), and only then join the last "
    "two axes.",
)
def merge_by_reshape(Xh):
    h, n, d_head = Xh.shape
    return Xh.reshape(n, h * d_head)


@catalogue.mistake(
    "merge-interleaved",
    title="the heads' columns are interleaved",
    replaces="merge_heads",
    why="Your merge puts the heads' columns side by side one at a time (column j of every head, "
    "then column j + 1, ...), instead of putting head i's block in columns i * d_head onwards.",
    hint="Head 0's whole block comes first, then head 1's: the head axis must be the "
    "slower-changing one when the last two axes are joined.",
)
def merge_interleaved(Xh):
    h, n, d_head = Xh.shape
    return Xh.transpose(1, 2, 0).reshape(n, h * d_head)


@catalogue.mistake(
    "merge-stacks-rows",
    title="the heads are stacked as rows",
    replaces="merge_heads",
    why="You joined the heads one below the other (h * n rows of width d_head) instead of side "
    "by side (n rows of width h * d_head).",
    hint="Every token keeps its own row; the heads of one token go next to each other, along "
    "the columns.",
)
def merge_stacks_rows(Xh):
    return np.concatenate(list(Xh), axis=0)


# -- multi_head_attention -------------------------------------------------------------------


@catalogue.mistake(
    "mha-no-output-projection",
    title="the output projection Wo is missing",
    replaces="multi_head_attention",
    why="You returned the merged heads without multiplying by Wo. The output projection mixes "
    "the heads; without it the result is just the heads side by side.",
    hint="After merging the heads, apply the fourth weight matrix.",
)
def mha_no_output_projection(X, Wq, Wk, Wv, Wo, h, causal=True):
    q, k, v = (split_heads(X @ W, h) for W in (Wq, Wk, Wv))
    return merge_heads(attend_heads(q, k, v, causal_mask(len(X)) if causal else None))


@catalogue.mistake(
    "mha-weights-transposed",
    title="all four weight matrices are transposed",
    replaces="multi_head_attention",
    why="You multiplied by the transposed weights (X @ W.T). The weights here are in x @ W "
    "layout: W maps a row vector of width d_model to another by right multiplication.",
    hint="Read the docstring's layout again: a projection of X is X times W as it is given.",
)
def mha_weights_transposed(X, Wq, Wk, Wv, Wo, h, causal=True):
    q, k, v = (split_heads(X @ W.T, h) for W in (Wq, Wk, Wv))
    heads = attend_heads(q, k, v, causal_mask(len(X)) if causal else None)
    return merge_heads(heads) @ Wo.T


@catalogue.mistake(
    "projection-transposed",
    title="{which} is transposed",
    replaces="multi_head_attention",
    why="You multiplied by {which}.T where {which} belongs. The weights here are in x @ W layout: "
    "each one maps a row vector of width d_model to another by right multiplication, as it is "
    "given.",
    hint="Read the docstring's layout again: {which} multiplies from the right just as it is "
    "given, like the other three.",
    cases={"which": ["Wq", "Wk", "Wv", "Wo"]},
)
def projection_transposed(X, Wq, Wk, Wv, Wo, h, causal=True, *, which):
    W = {"Wq": Wq, "Wk": Wk, "Wv": Wv, "Wo": Wo}
    W[which] = W[which].T
    q, k, v = (split_heads(X @ W[name], h) for name in ("Wq", "Wk", "Wv"))
    heads = attend_heads(q, k, v, causal_mask(len(X)) if causal else None)
    return merge_heads(heads) @ W["Wo"]


@catalogue.mistake(
    "mha-q-k-swapped",
    title="Wq and Wk are swapped",
    replaces="multi_head_attention",
    why="You used Wk for the queries and Wq for the keys. The scores are then transposed: "
    "position i is scored by how well the others look for it, not by what it looks for.",
    hint="Queries come from Wq, keys from Wk and values from Wv; check the order in which you "
    "build and pass them.",
)
def mha_q_k_swapped(X, Wq, Wk, Wv, Wo, h, causal=True):
    q, k, v = (split_heads(X @ W, h) for W in (Wk, Wq, Wv))
    heads = attend_heads(q, k, v, causal_mask(len(X)) if causal else None)
    return merge_heads(heads) @ Wo


@catalogue.mistake(
    "mha-causal-ignored",
    title="the causal mask is never applied",
    replaces="multi_head_attention",
    why="Your multi-head attention never applies the causal mask, so every token sees the "
    "future, even with causal=True.",
    hint="Build the causal mask when causal is True and pass it to the attention of every head.",
)
def mha_causal_ignored(X, Wq, Wk, Wv, Wo, h, causal=True):
    q, k, v = (split_heads(X @ W, h) for W in (Wq, Wk, Wv))
    heads = attend_heads(q, k, v, None)
    return merge_heads(heads) @ Wo


@catalogue.mistake(
    "mha-causal-always",
    title="the causal mask is applied even with causal=False",
    replaces="multi_head_attention",
    why="Your multi-head attention applies the causal mask even when causal=False, so tokens "
    "cannot see later positions when they should.",
    hint="Only use the causal mask when the causal argument is True; otherwise attend to all "
    "positions.",
)
def mha_causal_always(X, Wq, Wk, Wv, Wo, h, causal=True):
    q, k, v = (split_heads(X @ W, h) for W in (Wq, Wk, Wv))
    heads = attend_heads(q, k, v, causal_mask(len(X)))
    return merge_heads(heads) @ Wo


@catalogue.mistake(
    "mha-ignores-h",
    title="one attention over the full width: no heads",
    replaces="multi_head_attention",
    why="Your code runs one attention over the full width and never splits into h heads. "
    "The h heads must each attend separately, with their own weights, on d_model / h columns.",
    hint="Split the projected Q, K and V into h heads, attend in each head, then merge.",
)
def mha_ignores_h(X, Wq, Wk, Wv, Wo, h, causal=True):
    mask = causal_mask(X.shape[0]) if causal else None
    return masked_attention(X @ Wq, X @ Wk, X @ Wv, mask)[1] @ Wo


@catalogue.mistake(
    "scale-by-d-model",
    title="the heads scale by sqrt(d_model) instead of sqrt(d_head)",
    replaces="multi_head_attention",
    why="Your heads divide their scores by sqrt(d_model). Each head works on d_head = d_model / "
    "h columns, so its scores must be scaled by sqrt(d_head).",
    hint="The scale belongs to the width of the vectors in the dot product, which inside a head "
    "is the head width.",
)
def scale_by_d_model(X, Wq, Wk, Wv, Wo, h, causal=True):
    q, k, v = (split_heads(X @ W, h) for W in (Wq, Wk, Wv))
    mask = causal_mask(X.shape[0]) if causal else None
    scores = [hide(q[i] @ k[i].T / np.sqrt(X.shape[1]), mask) for i in range(h)]
    return merge_heads(np.stack([softmax(s) @ v[i] for i, s in enumerate(scores)])) @ Wo


# -- also correct: different code, same mathematics -----------------------------------------


@catalogue.also_correct("causal-mask-compare-indices", replaces="causal_mask")
def causal_mask_compare_indices(n):
    return np.arange(n)[:, None] >= np.arange(n)[None, :]


@catalogue.also_correct("attention-einsum", replaces="masked_attention")
def attention_einsum(Q, K, V, mask=None):
    weights = softmax(hide(np.einsum("qd,kd->qk", Q, K) / np.sqrt(Q.shape[-1]), mask))
    return weights, np.einsum("qk,kv->qv", weights, V)


@catalogue.also_correct("attention-loop", replaces="masked_attention")
def attention_loop(Q, K, V, mask=None):
    weights = np.zeros((Q.shape[0], K.shape[0]))
    for i in range(Q.shape[0]):
        allowed = [j for j in range(K.shape[0]) if mask is None or mask[i, j]]
        if not allowed:
            continue
        scores = [float(Q[i] @ K[j]) / np.sqrt(Q.shape[1]) for j in allowed]
        top = max(scores)
        e = [np.exp(s - top) for s in scores]
        for j, x in zip(allowed, e, strict=True):
            weights[i, j] = x / sum(e)
    return weights, weights @ V


@catalogue.also_correct("attention-large-negative-fill", replaces="masked_attention")
def attention_large_negative_fill(Q, K, V, mask=None):
    weights = softmax(hide(Q @ K.T / np.sqrt(Q.shape[-1]), mask, -1e9))
    if mask is not None:
        weights = weights * mask  # a fully masked row would otherwise be uniform
    return weights, weights @ V


@catalogue.also_correct("attention-additive-mask", replaces="masked_attention")
def attention_additive_mask(Q, K, V, mask=None):
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + np.where(mask, 0.0, -np.inf)
    weights = softmax(scores)
    return weights, weights @ V


@catalogue.also_correct("attention-renormalise-after-masking", replaces="masked_attention")
def attention_renormalise_after_masking(Q, K, V, mask=None):
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    allowed = np.ones(scores.shape, dtype=bool) if mask is None else mask
    top = np.where(allowed, scores, -np.inf).max(axis=-1, keepdims=True)
    e = np.exp(np.minimum(scores - np.where(np.isfinite(top), top, 0.0), 0.0)) * allowed
    total = e.sum(axis=-1, keepdims=True)
    weights = e / np.where(total > 0, total, 1.0)
    return weights, weights @ V


@catalogue.also_correct("attention-scale-q-first", replaces="masked_attention")
def attention_scale_q_first(Q, K, V, mask=None):
    weights = softmax(hide((Q / np.sqrt(Q.shape[-1])) @ K.T, mask))
    return weights, weights @ V


@catalogue.also_correct("attention-scale-split-over-q-and-k", replaces="masked_attention")
def attention_scale_split_over_q_and_k(Q, K, V, mask=None):
    root = Q.shape[-1] ** 0.25
    weights = softmax(hide((Q / root) @ (K / root).T, mask))
    return weights, weights @ V


@catalogue.also_correct("attention-float32", replaces="masked_attention")
def attention_float32(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=np.float32) for a in (Q, K, V))
    weights = softmax(hide(Q @ K.T / np.float32(np.sqrt(Q.shape[-1])), mask))
    return weights, weights @ V


@catalogue.also_correct("split-by-slicing", replaces="split_heads")
def split_by_slicing(X, h):
    d_head = head_width(X, h)
    return np.stack([X[:, i * d_head : (i + 1) * d_head] for i in range(h)])


@catalogue.also_correct("merge-by-concatenating", replaces="merge_heads")
def merge_by_concatenating(Xh):
    return np.concatenate(list(Xh), axis=1)


@catalogue.also_correct("mha-einsum-all-heads", replaces="multi_head_attention")
def mha_einsum_all_heads(X, Wq, Wk, Wv, Wo, h, causal=True):
    q, k, v = (split_heads(X @ W, h) for W in (Wq, Wk, Wv))
    scores = np.einsum("hqd,hkd->hqk", q, k) / np.sqrt(q.shape[-1])
    weights = softmax(hide(scores, causal_mask(X.shape[0]) if causal else None))
    return merge_heads(np.einsum("hqk,hkd->hqd", weights, v)) @ Wo
