"""Known mistakes for padding-and-batches, and forms that look different but are correct.

Each variant replaces one function of the reference; inside it, the other functions
(padding_mask, attention_mask, batched_attention, ...) are the reference's, and so are the
helpers below. `why` says what went wrong and why it is wrong; `hint` points toward the fix
without giving the code.

Families from the research notes (attention-facts.md, api-pitfalls.md): padding on the wrong
axis, a causal mask that forgets the padding and the reverse, lengths off by one, left padding
assumed, NaN on empty rows, a mask without its head axis (silent when B equals h), and
cross-attention masking the queries' side instead of the keys'.

Two mistakes that would make sense here are left out on purpose, because on every graded call
they give exactly what another entry gives, so the feedback could never tell them apart: a
multi-head attention that never applies the causal mask (the same as
`attention-mask-forgets-causal`; one that always applies it is `mha-ignores-causal`) and a
batched attention that ignores its mask (the same, through cross-attention, as
`cross-ignores-padding`), and an attention mask transposed (with causal=False the same as
`attention-mask-query-axis`, and with causal=True the same as the future left open).
"""

# The variants call padding_mask, attention_mask and batched_attention, which exist only in
# the module each variant is spliced into (the reference's): hence no F821 here.
# ruff: noqa: F821

import numpy as np

from autograder.suite import Catalogue, hide, softmax

catalogue = Catalogue()


catalogue.helper(softmax)
catalogue.helper(hide)


@catalogue.helper
def checked(lengths, T):
    """The lengths as an array; ValueError outside 0..T, as the handout asks."""
    lengths = np.asarray(lengths)
    if np.any(lengths < 0) or np.any(lengths > T):
        raise ValueError("a length is out of range")
    return lengths


@catalogue.helper
def split(Z, h):
    """(B, T, C) -> (B, h, T, C // h), head i owning columns i * d_head onwards."""
    B, T, C = Z.shape
    return Z.reshape(B, T, h, C // h).transpose(0, 2, 1, 3)


@catalogue.helper
def merge(Z):
    """(B, h, T, d_head) -> (B, T, h * d_head)."""
    B, h, T, d_head = Z.shape
    return Z.transpose(0, 2, 1, 3).reshape(B, T, h * d_head)


@catalogue.helper
def tril(T, S):
    return np.tril(np.ones((T, S), dtype=bool))


# -- padding_mask ---------------------------------------------------------------------------


@catalogue.mistake(
    "padding-mask-off-by-one",
    title="the mask is True one position too far (t <= length)",
    replaces="padding_mask",
    why="Your mask keeps one token too many: it is True at t <= lengths[b], so position "
    "lengths[b], the first padded one, counts as real. A sequence of length L has its real "
    "tokens at positions 0 to L - 1.",
    hint="Count the real positions of a sequence of length 2: which values of t are they, and "
    "which comparison with the length gives exactly those?",
)
def padding_mask_off_by_one(lengths, T):
    return np.arange(T)[None, :] <= checked(lengths, T)[:, None]


@catalogue.mistake(
    "padding-mask-left",
    title="the mask assumes left padding",
    replaces="padding_mask",
    why="Your mask assumes LEFT padding: the real tokens at the end of each row. The batches "
    "here are padded on the right, so the real tokens are the first lengths[b] positions.",
    hint="With right padding, sequence b's real tokens sit at positions 0, 1, ..., lengths[b] - 1.",
)
def padding_mask_left(lengths, T):
    return np.arange(T)[None, :] >= T - checked(lengths, T)[:, None]


@catalogue.mistake(
    "padding-mask-inverted",
    title="the mask is True at the padding, not at the real tokens",
    replaces="padding_mask",
    why="Your mask is True at the padding and False at the real tokens. In this course True "
    "means 'may attend', so the mask must be True at the real tokens.",
    hint="Check the convention in the docstring: True marks the real tokens, t < lengths[b].",
)
def padding_mask_inverted(lengths, T):
    return np.arange(T)[None, :] >= checked(lengths, T)[:, None]


@catalogue.mistake(
    "padding-mask-no-check",
    title="a length below 0 or above T is accepted",
    replaces="padding_mask",
    why="A length below 0 or above T goes through silently instead of raising ValueError, so a "
    "batch whose lengths do not fit its padding is never noticed.",
    hint="Before building the mask, check every length against 0 and T and raise ValueError "
    "when one is outside.",
)
def padding_mask_no_check(lengths, T):
    return np.arange(T)[None, :] < np.asarray(lengths)[:, None]


@catalogue.mistake(
    "padding-mask-not-boolean",
    title="the mask holds numbers (1 and 0), not booleans",
    replaces="padding_mask",
    why="Your mask has the right pattern but holds numbers (1 and 0), not booleans. A mask of "
    "numbers does not select entries: np.where, indexing and ~ all treat it differently.",
    hint="A comparison such as t < length already gives booleans; keep that dtype.",
)
def padding_mask_not_boolean(lengths, T):
    return (np.arange(T)[None, :] < checked(lengths, T)[:, None]).astype(float)


@catalogue.mistake(
    "padding-mask-wrong-axis",
    title="the mask has shape (T, B) instead of (B, T)",
    replaces="padding_mask",
    why="Your mask has shape (T, B): the positions were broadcast along the rows and the "
    "lengths along the columns. The mask is (B, T), one row per sequence.",
    hint="Put the batch axis first: the lengths as a column (B, 1) against the positions as a "
    "row (1, T).",
)
def padding_mask_wrong_axis(lengths, T):
    return np.arange(T)[:, None] < checked(lengths, T)[None, :]


# -- attention_mask -------------------------------------------------------------------------


@catalogue.mistake(
    "attention-mask-query-axis",
    title="the padding is masked on the query axis, not the key axis",
    replaces="attention_mask",
    why="Your mask puts the padding on the query axis (the rows): padded queries are masked, "
    "but every real query may still look at the padded keys. Without the causal mask, real "
    "tokens then attend to padding.",
    hint="The padding mask says which KEYS are real, so it must vary along the last axis: "
    "expand the (B, T) mask to (B, 1, T), not (B, T, 1).",
)
def attention_mask_query_axis(lengths, T, causal=True):
    order = tril(T, T) if causal else np.ones((T, T), dtype=bool)
    return padding_mask(lengths, T)[:, :, None] & order


@catalogue.mistake(
    "attention-mask-pads-queries-too",
    title="the padded queries are masked too",
    replaces="attention_mask",
    why="Your mask also masks the padded queries, so their rows are entirely False. The "
    "function asks for keys only: a padded query row still attends to the real keys.",
    hint="Apply the padding to the key axis alone; leave the rows of padded queries as they are.",
)
def attention_mask_pads_queries_too(lengths, T, causal=True):
    real = padding_mask(lengths, T)
    order = tril(T, T) if causal else np.ones((T, T), dtype=bool)
    return real[:, :, None] & real[:, None, :] & order


@catalogue.mistake(
    "attention-mask-forgets-padding",
    title="with causal=True the padding is forgotten",
    replaces="attention_mask",
    why="With causal=True your mask is the causal mask alone and forgets the padding. Real "
    "queries happen not to suffer (with right padding they never look right of themselves), "
    "but padded queries attend to padded keys, and the mask is wrong.",
    hint="The causal mask and the padding mask must both hold: combine them with &.",
)
def attention_mask_forgets_padding(lengths, T, causal=True):
    real_keys = padding_mask(lengths, T)[:, None, :]
    if causal:
        return np.broadcast_to(tril(T, T), real_keys.shape[:1] + (T, T)).copy()
    return real_keys & np.ones((T, T), dtype=bool)


@catalogue.mistake(
    "attention-mask-forgets-causal",
    title="causal=True is ignored",
    replaces="attention_mask",
    why="Your mask ignores causal=True: it masks the padding but not the future, so every "
    "token sees the real tokens after it.",
    hint="When causal is True, combine the padding mask with the lower-triangular causal mask.",
)
def attention_mask_forgets_causal(lengths, T, causal=True):
    return padding_mask(lengths, T)[:, None, :] & np.ones((T, T), dtype=bool)


@catalogue.mistake(
    "attention-mask-not-broadcast",
    title="with causal=False the (B, 1, T) key mask is returned, not the (B, T, T) mask",
    replaces="attention_mask",
    why="With causal=False your attention_mask returns the padding mask with a size-1 query "
    "axis, (B, 1, T). It would broadcast against the scores, but the handout's attention_mask "
    "returns the full (B, T, T) mask in both cases.",
    hint="Broadcast the key mask over the query axis (np.broadcast_to, or & with a (T, T) array "
    "of True) before returning it.",
)
def attention_mask_not_broadcast(lengths, T, causal=True):
    keys = padding_mask(lengths, T)[:, None, :]
    return keys & tril(T, T) if causal else keys


# -- batched_attention ----------------------------------------------------------------------


@catalogue.mistake(
    "batched-no-empty-row-guard",
    title="a query with no key allowed gets NaN instead of 0",
    replaces="batched_attention",
    why="A query with no key allowed (a sequence of length 0) gets NaN: its row is all -inf, so "
    "subtracting the max gives -inf - (-inf) = NaN. The handout asks for weights 0 and output "
    "0 there.",
    hint="Handle the row whose maximum is -inf separately (subtract 0 instead), and avoid "
    "dividing by a sum of 0.",
)
def batched_no_empty_row_guard(Q, K, V, mask=None):
    scores = hide(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), mask)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights, weights @ V


@catalogue.mistake(
    "batched-mask-fill-zero",
    title="masked scores are set to 0 instead of -inf",
    replaces="batched_attention",
    why="You set the masked scores to 0 instead of -inf. A score of 0 still gets a weight of "
    "e^0 = 1 before normalising, so padded keys keep a share of the attention.",
    hint="What score makes the softmax give a weight of exactly 0? It is not 0.",
)
def batched_mask_fill_zero(Q, K, V, mask=None):
    weights = softmax(hide(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), mask, 0.0))
    return weights, weights @ V


@catalogue.mistake(
    "batched-mask-after-softmax",
    title="the mask is applied after the softmax",
    replaces="batched_attention",
    why="You applied the mask to the weights after the softmax. The softmax had already given "
    "part of each row's weight to the masked keys, so the rows no longer sum to 1.",
    hint="Mask the scores, not the weights: -inf before the softmax.",
)
def batched_mask_after_softmax(Q, K, V, mask=None):
    weights = softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]))
    weights = weights if mask is None else np.where(mask, weights, 0.0)
    return weights, weights @ V


@catalogue.mistake(
    "batched-softmax-wrong-axis",
    title="the softmax runs over the queries, not the keys",
    replaces="batched_attention",
    why="Your softmax normalises over the queries (axis -2) instead of over the keys (the last "
    "axis), so the weights of one query do not sum to 1.",
    hint="Each query needs its own distribution over the keys: take the max, the exponentials "
    "and the sum along axis -1.",
)
def batched_softmax_wrong_axis(Q, K, V, mask=None):
    weights = softmax(hide(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), mask), axis=-2)
    return weights, weights @ V


@catalogue.mistake(
    "batched-no-max-subtraction",
    title="the softmax does not subtract the max (overflow)",
    replaces="batched_attention",
    why="Your softmax exponentiates the raw scores. With large scores np.exp overflows to inf "
    "and inf / inf gives NaN, although the true weights are ordinary numbers.",
    hint="Subtracting the same number from every score of a row does not change its softmax; "
    "subtract the row's maximum (over the allowed keys) before exponentiating.",
)
def batched_no_max_subtraction(Q, K, V, mask=None):
    e = np.exp(hide(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), mask))
    total = e.sum(axis=-1, keepdims=True)
    weights = e / np.where(total > 0, total, 1.0)
    return weights, weights @ V


@catalogue.mistake(
    "batched-no-scale",
    title="the scores are not divided by sqrt(d)",
    replaces="batched_attention",
    why="You did not divide the scores by sqrt(d). Without the scale the scores grow with the "
    "width and the softmax becomes too peaked.",
    hint="Scaled dot-product attention divides Q K^T by the square root of the last dimension "
    "of Q before the softmax.",
)
def batched_no_scale(Q, K, V, mask=None):
    weights = softmax(hide(Q @ np.swapaxes(K, -1, -2), mask))
    return weights, weights @ V


@catalogue.mistake(
    "batched-max-before-masking",
    title="the row maximum (or the softmax) is taken over the masked keys too",
    replaces="batched_attention",
    why="You subtracted a row maximum taken over every key, masked ones included (or took the "
    "softmax over every key and dropped the masked weights afterwards). When a masked key has "
    "a much larger score than the real ones, the real keys' exponentials all underflow to 0, "
    "and the row loses its weights although the true ones are ordinary numbers.",
    hint="Mask first (-inf on the masked scores), then take each row's maximum over what is "
    "left: the softmax must never see a masked key.",
)
def batched_max_before_masking(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    top = scores.max(axis=-1, keepdims=True)
    e = np.exp(hide(scores, mask) - top)
    total = e.sum(axis=-1, keepdims=True)
    weights = e / np.where(total > 0, total, 1.0)
    return weights, weights @ V


@catalogue.mistake(
    "batched-global-max",
    title="the softmax subtracts the maximum of all the scores, not of each row",
    replaces="batched_attention",
    why="You subtracted one maximum, over the whole score tensor, instead of each row's own. "
    "A row whose scores are all far below that maximum underflows: every exponential is 0 and "
    "0 / 0 gives NaN, although its true weights are ordinary numbers.",
    hint="Take the maximum along the keys, keeping the axis (axis=-1, keepdims=True), so that "
    "every row is shifted by its own largest allowed score.",
)
def batched_global_max(Q, K, V, mask=None):
    scores = hide(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), mask)
    allowed = np.isfinite(scores)
    e = np.exp(scores - np.max(scores, initial=-np.inf, where=allowed))
    total = e.sum(axis=-1, keepdims=True)
    weights = np.where(allowed.any(axis=-1, keepdims=True), e / total, 0.0)
    return weights, weights @ V


# -- multi_head_attention -------------------------------------------------------------------


@catalogue.mistake(
    "mha-ignores-padding",
    title="the lengths are never used: no padding mask",
    replaces="multi_head_attention",
    why="Your multi-head attention never uses the lengths: it applies the causal mask (or "
    "nothing) and no padding mask. With causal=True that hides the bug, but with "
    "causal=False real tokens attend to the padding.",
    hint="Build the mask with attention_mask(lengths, T, causal), so that padded keys are "
    "masked whether or not the attention is causal.",
)
def mha_ignores_padding(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    T = X.shape[1]
    q, k, v = (split(X @ W, h) for W in (Wq, Wk, Wv))
    _, heads = batched_attention(q, k, v, tril(T, T) if causal else None)
    return merge(heads) @ Wo


@catalogue.mistake(
    "mha-mask-without-head-axis",
    title="the (B, T, T) mask is given no head axis",
    replaces="multi_head_attention",
    why="Your (B, T, T) mask was given to scores of shape (B, h, T, T) without a head axis. "
    "NumPy lines up the trailing axes, so the batch axis of the mask met the HEAD axis of the "
    "scores: with B = h it raised no error, and head i of every sequence used sequence i's "
    "mask.",
    hint="Insert a size-1 head axis so that the mask is (B, 1, T, T), the same for every head "
    "of a sequence.",
)
def mha_mask_without_head_axis(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    q, k, v = (split(X @ W, h) for W in (Wq, Wk, Wv))
    _, heads = batched_attention(q, k, v, attention_mask(lengths, X.shape[1], causal))
    return merge(heads) @ Wo


@catalogue.mistake(
    "mha-split-by-reshape",
    title="heads split by a reshape without a transpose",
    replaces="multi_head_attention",
    why="You reshaped (B, T, C) straight into (B, h, T, d_head). The shape is right, but a "
    "reshape reads the numbers in memory order, so a head holds pieces of several tokens "
    "instead of d_head columns of every token.",
    hint="Reshape to (B, T, h, d_head) first, which cuts each token into h pieces, then move "
    "the head axis before the token axis.",
)
def mha_split_by_reshape(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    B, T, C = X.shape
    q, k, v = ((X @ W).reshape(B, h, T, C // h) for W in (Wq, Wk, Wv))
    _, heads = batched_attention(q, k, v, attention_mask(lengths, T, causal)[:, None])
    return merge(heads) @ Wo


@catalogue.mistake(
    "mha-merge-without-transpose",
    title="heads merged by a reshape without a transpose",
    replaces="multi_head_attention",
    why="You reshaped the heads (B, h, T, d_head) straight into (B, T, C). A reshape reads "
    "the numbers in memory order, so a row of the result mixes several tokens of one head "
    "instead of one token of every head.",
    hint="Bring the token axis before the head axis, (B, T, h, d_head), and only then join the "
    "last two axes.",
)
def mha_merge_without_transpose(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    B, T, C = X.shape
    q, k, v = (split(X @ W, h) for W in (Wq, Wk, Wv))
    _, heads = batched_attention(q, k, v, attention_mask(lengths, T, causal)[:, None])
    return heads.reshape(B, T, C) @ Wo


@catalogue.mistake(
    "mha-scale-by-model-width",
    title="the scores are divided by sqrt(C), not sqrt(d_head)",
    replaces="multi_head_attention",
    why="Your heads divide their scores by sqrt(C), the model width. Each head works on "
    "d_head = C / h columns, so its scores must be scaled by sqrt(d_head).",
    hint="The scale belongs to the width of the vectors in the dot product, which inside a "
    "head is the head width.",
)
def mha_scale_by_model_width(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    B, T, C = X.shape
    q, k, v = (split(X @ W, h) for W in (Wq, Wk, Wv))
    scores = hide(
        q @ np.swapaxes(k, -1, -2) / np.sqrt(C), attention_mask(lengths, T, causal)[:, None]
    )
    return merge(softmax(scores) @ v) @ Wo


@catalogue.mistake(
    "mha-no-output-projection",
    title="the merged heads are returned without Wo",
    replaces="multi_head_attention",
    why="You returned the merged heads without multiplying by Wo. The output projection mixes "
    "the heads; without it the result is just the heads side by side.",
    hint="After merging the heads, apply the fourth weight matrix.",
)
def mha_no_output_projection(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    q, k, v = (split(X @ W, h) for W in (Wq, Wk, Wv))
    _, heads = batched_attention(q, k, v, attention_mask(lengths, X.shape[1], causal)[:, None])
    return merge(heads)


@catalogue.mistake(
    "mha-ignores-causal",
    title="causal=False is never passed on: the attention is always causal",
    replaces="multi_head_attention",
    why="Your multi-head attention builds its mask without passing causal on, so it takes "
    "attention_mask's default, causal=True, and with causal=False each token still sees only "
    "the ones before it.",
    hint="Pass the causal argument through: attention_mask(lengths, T, causal).",
)
def mha_ignores_causal(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    q, k, v = (split(X @ W, h) for W in (Wq, Wk, Wv))
    _, heads = batched_attention(q, k, v, attention_mask(lengths, X.shape[1])[:, None])
    return merge(heads) @ Wo


@catalogue.mistake(
    "mha-heads-interleaved",
    title="each head takes every h-th column instead of a block of d_head columns",
    replaces="multi_head_attention",
    why="You split the columns as (d_head, h) instead of (h, d_head), so head i gets columns "
    "i, i + h, i + 2h, ... instead of the block i * d_head to (i + 1) * d_head. Merging the "
    "same way gives the columns back, but each head attends with the wrong features.",
    hint="Reshape (B, T, C) to (B, T, h, d_head), heads before the head width, then move the "
    "head axis forward.",
)
def mha_heads_interleaved(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    B, T, C = X.shape
    q, k, v = ((X @ W).reshape(B, T, C // h, h).transpose(0, 3, 1, 2) for W in (Wq, Wk, Wv))
    _, heads = batched_attention(q, k, v, attention_mask(lengths, T, causal)[:, None])
    return heads.transpose(0, 2, 3, 1).reshape(B, T, C) @ Wo


# -- cross_attention ------------------------------------------------------------------------


@catalogue.mistake(
    "cross-masks-x-padding",
    title="the padding of X (the queries) is masked, not that of Y",
    replaces="cross_attention",
    why="Your mask hides positions of X, the queries (the rows), instead of the padded tokens "
    "of Y, the keys (the columns). Every query may still look at Y's padding.",
    hint="In cross-attention the keys come from Y, so the padding mask is built from y_lengths "
    "over Y's S positions and goes on the last axis: (B, 1, 1, S).",
)
def cross_masks_x_padding(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    T = X.shape[1]
    q, k, v = split(X @ Wq, h), split(Y @ Wk, h), split(Y @ Wv, h)
    _, heads = batched_attention(q, k, v, padding_mask(y_lengths, T)[:, None, :, None])
    return merge(heads) @ Wo


@catalogue.mistake(
    "cross-mask-without-head-axis",
    title="Y's (B, S) padding mask is given no head axis",
    replaces="cross_attention",
    why="Your key mask has shape (B, 1, S), with no head axis, against scores of shape "
    "(B, h, T, S). NumPy lines it up with the head axis: when B equals h it raises no error "
    "and head i uses sequence i's mask; otherwise the shapes do not broadcast.",
    hint="Insert size-1 axes for the heads and the queries, so that the mask is (B, 1, 1, S).",
)
def cross_mask_without_head_axis(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    q, k, v = split(X @ Wq, h), split(Y @ Wk, h), split(Y @ Wv, h)
    _, heads = batched_attention(q, k, v, padding_mask(y_lengths, Y.shape[1])[:, None, :])
    return merge(heads) @ Wo


@catalogue.mistake(
    "cross-ignores-padding",
    title="no mask: the queries attend to Y's padding",
    replaces="cross_attention",
    why="Your cross-attention applies no mask, so the queries attend to Y's padded tokens.",
    hint="Mask Y's padded keys: a padding mask from y_lengths over Y's S positions, expanded "
    "to (B, 1, 1, S).",
)
def cross_ignores_padding(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    q, k, v = split(X @ Wq, h), split(Y @ Wk, h), split(Y @ Wv, h)
    _, heads = batched_attention(q, k, v)
    return merge(heads) @ Wo


@catalogue.mistake(
    "cross-causal",
    title="a causal mask in cross-attention",
    replaces="cross_attention",
    why="Your cross-attention applies a causal mask. Query t of X and key s of Y belong to "
    "different sequences: s is not 'the future' of t, and every real key of Y may be attended.",
    hint="Cross-attention needs the padding mask of Y only, no causal mask.",
)
def cross_causal(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    T, S = X.shape[1], Y.shape[1]
    q, k, v = split(X @ Wq, h), split(Y @ Wk, h), split(Y @ Wv, h)
    mask = padding_mask(y_lengths, S)[:, None, None, :] & tril(T, S)
    _, heads = batched_attention(q, k, v, mask)
    return merge(heads) @ Wo


@catalogue.mistake(
    "cross-keys-values-swapped",
    title="the keys are built with Wv and the values with Wk",
    replaces="cross_attention",
    why="You built the keys with Wv and the values with Wk. The scores then compare the queries "
    "with the wrong projection of Y, and the output mixes the wrong vectors.",
    hint="Keys come from Y @ Wk and values from Y @ Wv.",
)
def cross_keys_values_swapped(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    q, k, v = split(X @ Wq, h), split(Y @ Wv, h), split(Y @ Wk, h)
    mask = padding_mask(y_lengths, Y.shape[1])[:, None, None, :]
    _, heads = batched_attention(q, k, v, mask)
    return merge(heads) @ Wo


@catalogue.mistake(
    "cross-queries-from-y",
    title="the queries come from Y and the keys and values from X",
    replaces="cross_attention",
    why="Your queries come from Y and your keys and values from X: the output then has one row "
    "per token of Y, shape (B, S, C), instead of one per token of X.",
    hint="X asks (queries, with Wq); Y answers (keys and values, with Wk and Wv).",
)
def cross_queries_from_y(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    q, k, v = split(Y @ Wq, h), split(X @ Wk, h), split(X @ Wv, h)
    _, heads = batched_attention(q, k, v)
    return merge(heads) @ Wo


# -- also correct: different code, same mathematics -----------------------------------------


@catalogue.also_correct("padding-mask-loop", replaces="padding_mask")
def padding_mask_loop(lengths, T):
    rows = []
    for length in lengths:
        if not 0 <= length <= T:
            raise ValueError(f"length {length} is outside 0..{T}")
        rows.append([t < length for t in range(T)])
    return np.array(rows, dtype=bool).reshape(len(rows), T)


@catalogue.also_correct("attention-mask-index-comparisons", replaces="attention_mask")
def attention_mask_index_comparisons(lengths, T, causal=True):
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    key_is_real = j[None] < checked(lengths, T)[:, None, None]
    return key_is_real & (j <= i) if causal else key_is_real & (i >= 0)


@catalogue.also_correct("batched-einsum", replaces="batched_attention")
def batched_einsum(Q, K, V, mask=None):
    scores = np.einsum("...td,...sd->...ts", Q, K) / np.sqrt(Q.shape[-1])
    weights = softmax(hide(scores, mask))
    return weights, np.einsum("...ts,...sv->...tv", weights, V)


@catalogue.also_correct("batched-large-negative-fill", replaces="batched_attention")
def batched_large_negative_fill(Q, K, V, mask=None):
    weights = softmax(hide(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), mask, -1e9))
    if mask is not None:
        weights = weights * mask  # a fully masked row would otherwise be uniform
    return weights, weights @ V


@catalogue.also_correct("batched-additive-mask", replaces="batched_attention")
def batched_additive_mask(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + np.where(mask, 0.0, -np.inf)
    weights = softmax(scores)
    return weights, weights @ V


@catalogue.also_correct("batched-float32", replaces="batched_attention")
def batched_float32(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=np.float32) for a in (Q, K, V))
    scores = Q @ np.swapaxes(K, -1, -2) / np.float32(np.sqrt(Q.shape[-1]))
    weights = softmax(hide(scores, mask))
    return weights, weights @ V


@catalogue.also_correct("mha-pads-queries-too", replaces="multi_head_attention")
def mha_pads_queries_too(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    T = X.shape[1]
    q, k, v = (split(X @ W, h) for W in (Wq, Wk, Wv))
    real_queries = padding_mask(lengths, T)[:, :, None]  # padded rows: output 0, not graded
    mask = (attention_mask(lengths, T, causal) & real_queries)[:, None]
    _, heads = batched_attention(q, k, v, mask)
    return merge(heads) @ Wo


@catalogue.also_correct("mha-each-sequence-alone", replaces="multi_head_attention")
def mha_each_sequence_alone(X, lengths, Wq, Wk, Wv, Wo, h, causal=True):
    out = np.zeros(X.shape)
    for b, length in enumerate(checked(lengths, X.shape[1])):
        if length == 0:
            continue  # nothing real: padded outputs are not graded
        x = X[b : b + 1, :length]
        q, k, v = (split(x @ W, h) for W in (Wq, Wk, Wv))
        _, heads = batched_attention(q, k, v, tril(length, length) if causal else None)
        out[b, :length] = (merge(heads) @ Wo)[0]
    return out


@catalogue.also_correct("cross-each-sequence-alone", replaces="cross_attention")
def cross_each_sequence_alone(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    out = np.zeros(X.shape)
    for b, length in enumerate(checked(y_lengths, Y.shape[1])):
        if length == 0:
            continue  # no key: weights 0 and output 0
        q, k, v = (
            split(X[b : b + 1] @ Wq, h),
            split(Y[b : b + 1, :length] @ Wk, h),
            split(Y[b : b + 1, :length] @ Wv, h),
        )
        out[b] = (merge(batched_attention(q, k, v)[1]) @ Wo)[0]
    return out


@catalogue.mistake(
    "cross-no-output-projection",
    title="the merged heads are returned without Wo",
    replaces="cross_attention",
    why="Your cross-attention returns the merged heads without multiplying by Wo. The output "
    "projection mixes the heads; without it the result is just the heads side by side.",
    hint="After merging the heads, apply the fourth weight matrix, as multi_head_attention does.",
)
def cross_no_output_projection(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    q, k, v = split(X @ Wq, h), split(Y @ Wk, h), split(Y @ Wv, h)
    _, heads = batched_attention(q, k, v, padding_mask(y_lengths, Y.shape[1])[:, None, None, :])
    return merge(heads)


@catalogue.also_correct("cross-einsum-heads", replaces="cross_attention")
def cross_einsum_heads(X, Y, y_lengths, Wq, Wk, Wv, Wo, h):
    B, T, C = X.shape
    S, d = Y.shape[1], C // h
    q = (X @ Wq).reshape(B, T, h, d)
    k, v = ((Y @ W).reshape(B, S, h, d) for W in (Wk, Wv))
    scores = np.einsum("bthd,bshd->bhts", q, k) / np.sqrt(d)
    weights = softmax(hide(scores, padding_mask(y_lengths, S)[:, None, None, :]))
    return np.einsum("bhts,bshd->bthd", weights, v).reshape(B, T, C) @ Wo
