"""Known mistakes for causal-self-attention, and forms that look different but are correct.

Each variant replaces one method of the reference's CausalSelfAttention; the other methods,
and the given ``softmax``, stay the reference's. The same versions serve as the hidden
implementations the student's own tests are graded against (autograder/engine/student_tests.py): the
mistakes are the buggy layers, the "also correct" forms and the reference the correct ones.
"""

# Variants call softmax, which exists only in the module each is spliced into: hence F821.
# ruff: noqa: F821

import numpy as np

from autograder.suite import Catalogue

catalogue = Catalogue()


@catalogue.helper
def split(layer, z):
    """(B, T, C) -> (B, n_head, T, d_head): head i is columns i*d_head:(i+1)*d_head."""
    B, T, C = z.shape
    return z.reshape(B, T, layer.n_head, C // layer.n_head).transpose(0, 2, 1, 3)


@catalogue.helper
def join(heads):
    """(B, n_head, T, d_head) -> (B, T, C), heads side by side in order."""
    B, H, T, d = heads.shape
    return heads.transpose(0, 2, 1, 3).reshape(B, T, H * d)


@catalogue.helper
def scored(layer, x, scale=None, mask=True, axis=-1):
    """attention_weights with a chosen scale, mask (True: the buffer) and softmax axis."""
    B, T, C = x.shape
    if T > layer.context_length:
        raise ValueError("too long")
    q, k = split(layer, x @ layer.W_q), split(layer, x @ layer.W_k)
    scores = q @ k.transpose(0, 1, 3, 2) / (np.sqrt(C // layer.n_head) if scale is None else scale)
    if mask is True:
        mask = layer.mask[:T, :T]
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@catalogue.helper
def fill(layer, n_embed, n_head, context_length, seed):
    """The reference's __init__ without its checks, to build a mistake from."""
    layer.n_embed, layer.n_head, layer.context_length = n_embed, n_head, context_length
    rng = np.random.default_rng(seed)
    layer.W_q, layer.W_k, layer.W_v, layer.W_o = (
        rng.normal(size=(n_embed, n_embed)) / np.sqrt(n_embed) for _ in range(4)
    )
    layer.b_o = np.zeros(n_embed)
    layer.mask = np.tril(np.ones((context_length, context_length), dtype=bool))


# -- __init__ -------------------------------------------------------------------------------


@catalogue.mistake(
    "init-no-head-check",
    title="n_head that does not divide n_embed is accepted",
    replaces="CausalSelfAttention.__init__",
    why="The layer accepts an n_head that does not divide n_embed. Nothing fails at once, but "
    "the heads cannot cut the width evenly, and the error surfaces later, far from its cause.",
    hint="Check n_embed % n_head in __init__ and raise ValueError there.",
)
def init_no_head_check(self, n_embed, n_head, context_length, seed=0):
    fill(self, n_embed, n_head, context_length, seed)


@catalogue.mistake(
    "init-mask-upper-triangular",
    title="the mask buffer is the upper triangle (the future)",
    replaces="CausalSelfAttention.__init__",
    why="The mask buffer is the upper triangle: True where a token would look at its future.",
    hint="True means 'may attend': a token may look at itself and the positions before it.",
)
def init_mask_upper_triangular(self, n_embed, n_head, context_length, seed=0):
    if n_embed % n_head:
        raise ValueError("n_head must divide n_embed")
    fill(self, n_embed, n_head, context_length, seed)
    self.mask = np.triu(np.ones((context_length, context_length), dtype=bool))


@catalogue.mistake(
    "init-mask-wrong-size",
    title="the mask buffer is n_embed positions wide, not context_length",
    replaces="CausalSelfAttention.__init__",
    why="The mask buffer is built for n_embed positions instead of context_length, so it is "
    "the wrong size for the sequences the layer must accept.",
    hint="The buffer covers the longest sequence allowed: (context_length, context_length).",
)
def init_mask_wrong_size(self, n_embed, n_head, context_length, seed=0):
    if n_embed % n_head:
        raise ValueError("n_head must divide n_embed")
    fill(self, n_embed, n_head, context_length, seed)
    self.mask = np.tril(np.ones((n_embed, n_embed), dtype=bool))


@catalogue.mistake(
    "init-mask-not-boolean",
    title="the mask buffer holds numbers, not booleans",
    replaces="CausalSelfAttention.__init__",
    why="The mask buffer holds 1.0 and 0.0 instead of booleans; as a mask of numbers it "
    "cannot be inverted with ~ or used to select entries.",
    hint="Build the buffer with dtype=bool.",
)
def init_mask_not_boolean(self, n_embed, n_head, context_length, seed=0):
    if n_embed % n_head:
        raise ValueError("n_head must divide n_embed")
    fill(self, n_embed, n_head, context_length, seed)
    self.mask = np.tril(np.ones((context_length, context_length)))


@catalogue.mistake(
    "init-weights-unscaled",
    title="the weights are drawn without the 1/sqrt(n_embed) scale",
    replaces="CausalSelfAttention.__init__",
    why="The weights are drawn from N(0, 1) without the 1 / sqrt(n_embed) scale, so the "
    "projections blow up the size of the activations by sqrt(n_embed).",
    hint="Multiply each drawn matrix by 1 / sqrt(n_embed).",
)
def init_weights_unscaled(self, n_embed, n_head, context_length, seed=0):
    if n_embed % n_head:
        raise ValueError("n_head must divide n_embed")
    fill(self, n_embed, n_head, context_length, seed)
    self.W_q, self.W_k, self.W_v, self.W_o = (
        w * np.sqrt(n_embed) for w in (self.W_q, self.W_k, self.W_v, self.W_o)
    )


@catalogue.mistake(
    "init-bias-random",
    replaces="CausalSelfAttention.__init__",
    title="the output bias drawn at random instead of starting at zeros",
    why="b_o is drawn at random like the weights. A bias starts at zeros, so that a new layer "
    "adds nothing of its own to every token's output; only training should move it.",
    hint="Draw the four weight matrices from the generator, but set b_o to np.zeros(n_embed).",
)
def init_bias_random(self, n_embed, n_head, context_length, seed=0):
    if n_embed % n_head:
        raise ValueError("n_head must divide n_embed")
    fill(self, n_embed, n_head, context_length, seed)
    self.b_o = np.random.default_rng(seed + 1).normal(size=n_embed) / np.sqrt(n_embed)


# -- attention_weights ----------------------------------------------------------------------


@catalogue.mistake(
    "scale-by-model-width",
    title="the scores are divided by sqrt(n_embed), not sqrt(d_head)",
    replaces="CausalSelfAttention.attention_weights",
    why="You divided the scores by sqrt(n_embed). Each head's scores are dot products of "
    "d_head numbers, so the scale is sqrt(d_head).",
    hint="The scale belongs to one head: d_head = n_embed // n_head.",
)
def scale_by_model_width(self, x):
    return scored(self, x, scale=np.sqrt(self.n_embed))


@catalogue.mistake(
    "no-scale",
    title="the scores are not divided by sqrt(d_head)",
    replaces="CausalSelfAttention.attention_weights",
    why="You did not divide the scores by sqrt(d_head), so the softmax is too peaked.",
    hint="Scaled dot-product attention divides q k^T by sqrt(d_head) before the softmax.",
)
def no_scale(self, x):
    return scored(self, x, scale=1.0)


@catalogue.mistake(
    "no-mask",
    title="the causal mask is never applied",
    replaces="CausalSelfAttention.attention_weights",
    why="The mask is never applied, so every token sees its future.",
    hint="Set the scores where the mask is False to -inf before the softmax.",
)
def no_mask(self, x):
    return scored(self, x, mask=None)


@catalogue.mistake(
    "mask-rebuilt",
    title="a new triangle is built on each call instead of the mask buffer",
    replaces="CausalSelfAttention.attention_weights",
    why="You built a new triangle for every call instead of slicing the layer's mask buffer, "
    "so a layer whose mask was changed (or saved and loaded) ignores it.",
    hint="Use self.mask[:T, :T]: the buffer is built once, in __init__.",
)
def mask_rebuilt(self, x):
    T = x.shape[1]
    return scored(self, x, mask=np.tril(np.ones((T, T), dtype=bool)))


@catalogue.mistake(
    "long-sequence-accepted",
    title="a sequence longer than context_length is accepted",
    replaces="CausalSelfAttention.attention_weights",
    why="A sequence longer than context_length is silently accepted with a mask built on the "
    "spot. The layer promises a ValueError: past its context it was never meant to run.",
    hint="Compare T with context_length and raise ValueError when it is larger.",
)
def long_sequence_accepted(self, x):
    T = x.shape[1]
    if T <= self.context_length:
        return scored(self, x)
    longer = CausalSelfAttention(self.n_embed, self.n_head, T)
    longer.W_q, longer.W_k = self.W_q, self.W_k
    return scored(longer, x)


@catalogue.mistake(
    "softmax-over-queries",
    title="the softmax runs over the queries, not the keys",
    replaces="CausalSelfAttention.attention_weights",
    why="The softmax normalises over the queries (axis -2) instead of the keys, so a query's "
    "weights do not sum to 1.",
    hint="Each query's row of weights is one distribution over the keys: the last axis.",
)
def softmax_over_queries(self, x):
    return scored(self, x, axis=-2)


@catalogue.mistake(
    "split-without-transpose",
    title="heads split by a reshape without a transpose",
    replaces="CausalSelfAttention.attention_weights",
    why="You reshaped (B, T, C) straight to (B, n_head, T, d_head). That cuts each sequence's "
    "numbers into blocks of rows, so a head mixes tokens instead of owning columns.",
    hint="Reshape to (B, T, n_head, d_head) first, then swap the T and head axes.",
)
def split_without_transpose(self, x):
    B, T, C = x.shape
    if T > self.context_length:
        raise ValueError("too long")
    d = C // self.n_head
    q = (x @ self.W_q).reshape(B, self.n_head, T, d)
    k = (x @ self.W_k).reshape(B, self.n_head, T, d)
    scores = np.where(self.mask[:T, :T], q @ k.transpose(0, 1, 3, 2) / np.sqrt(d), -np.inf)
    return softmax(scores)


@catalogue.mistake(
    "heads-interleaved",
    title="each head takes every n_head-th column instead of a block of d_head columns",
    replaces="CausalSelfAttention.attention_weights",
    why="You reshaped (B, T, C) to (B, T, d_head, n_head), so head i gets columns i, "
    "i + n_head, i + 2 n_head, ... instead of the contiguous block i*d_head:(i+1)*d_head. "
    "The shapes are right, but each head mixes pieces of every other head's projection.",
    hint="Reshape to (B, T, n_head, d_head): the head axis comes before the width of a head.",
)
def heads_interleaved(self, x):
    B, T, C = x.shape
    if T > self.context_length:
        raise ValueError("too long")
    d = C // self.n_head
    q = (x @ self.W_q).reshape(B, T, d, self.n_head).transpose(0, 3, 1, 2)
    k = (x @ self.W_k).reshape(B, T, d, self.n_head).transpose(0, 3, 1, 2)
    scores = np.where(self.mask[:T, :T], q @ k.transpose(0, 1, 3, 2) / np.sqrt(d), -np.inf)
    return softmax(scores)


@catalogue.mistake(
    "weights-heads-last",
    title="the weights come back as (B, T, n_head, T)",
    replaces="CausalSelfAttention.attention_weights",
    why="The weights come back as (B, T, n_head, T): the head axis is in the wrong place.",
    hint="The API asks for (B, n_head, T, T): one (T, T) table per head.",
)
def weights_heads_last(self, x):
    return scored(self, x).transpose(0, 2, 1, 3)


# -- forward --------------------------------------------------------------------------------


@catalogue.mistake(
    "no-bias",
    title="the output bias b_o is never added",
    replaces="CausalSelfAttention.forward",
    why="The output bias b_o is never added.",
    hint="The output projection is @ W_o + b_o.",
)
def no_bias(self, x):
    return join(self.attention_weights(x) @ split(self, x @ self.W_v)) @ self.W_o


@catalogue.mistake(
    "bias-before-projection",
    title="b_o is added before the projection by W_o",
    replaces="CausalSelfAttention.forward",
    why="You added b_o before multiplying by W_o, so the bias was projected too.",
    hint="The bias belongs to the output: (joined heads) @ W_o, then + b_o.",
)
def bias_before_projection(self, x):
    return (join(self.attention_weights(x) @ split(self, x @ self.W_v)) + self.b_o) @ self.W_o


@catalogue.mistake(
    "no-output-projection",
    title="the joined heads are returned without W_o",
    replaces="CausalSelfAttention.forward",
    why="You returned the joined heads without W_o, the projection that mixes what the heads "
    "found.",
    hint="After joining the heads, multiply by W_o and add b_o.",
)
def no_output_projection(self, x):
    return join(self.attention_weights(x) @ split(self, x @ self.W_v)) + self.b_o


@catalogue.mistake(
    "heads-joined-in-reverse",
    title="the heads are joined in the wrong order",
    replaces="CausalSelfAttention.forward",
    why="The heads are joined in the wrong order, so W_o's rows meet the wrong head's numbers.",
    hint="Head i's output goes to columns i*d_head:(i+1)*d_head, in order.",
)
def heads_joined_in_reverse(self, x):
    heads = self.attention_weights(x) @ split(self, x @ self.W_v)
    return join(heads[:, ::-1]) @ self.W_o + self.b_o


@catalogue.mistake(
    "values-from-keys",
    title="the values are projected with W_k instead of W_v",
    replaces="CausalSelfAttention.forward",
    why="The values were projected with W_k instead of W_v: q, k and v each have their own "
    "projection of the same input.",
    hint="Check which weight matrix makes v.",
)
def values_from_keys(self, x):
    return join(self.attention_weights(x) @ split(self, x @ self.W_k)) @ self.W_o + self.b_o


@catalogue.mistake(
    "merge-without-transpose",
    title="heads merged by a reshape without a transpose",
    replaces="CausalSelfAttention.forward",
    why="You reshaped (B, n_head, T, d_head) straight to (B, T, C), which interleaves tokens "
    "and heads instead of putting each token's heads side by side.",
    hint="Swap the head and T axes back before reshaping to (B, T, C).",
)
def merge_without_transpose(self, x):
    heads = self.attention_weights(x) @ split(self, x @ self.W_v)
    return heads.reshape(x.shape) @ self.W_o + self.b_o


# -- also correct ---------------------------------------------------------------------------


@catalogue.also_correct("init-one-draw", replaces="CausalSelfAttention.__init__")
def init_one_draw(self, n_embed, n_head, context_length, seed=0):
    if n_embed % n_head:
        raise ValueError("n_head must divide n_embed")
    self.n_embed, self.n_head, self.context_length = n_embed, n_head, context_length
    drawn = np.random.default_rng(seed).standard_normal((4, n_embed, n_embed)) / n_embed**0.5
    self.W_q, self.W_k, self.W_v, self.W_o = drawn
    self.b_o = np.zeros(n_embed)
    self.mask = np.tri(context_length, dtype=bool)


@catalogue.also_correct("weights-einsum", replaces="CausalSelfAttention.attention_weights")
def weights_einsum(self, x):
    B, T, C = x.shape
    if x.ndim != 3 or C != self.n_embed or T > self.context_length:
        raise ValueError("bad input")
    d = C // self.n_head
    q = (x @ self.W_q).reshape(B, T, self.n_head, d)
    k = (x @ self.W_k).reshape(B, T, self.n_head, d)
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(d)
    return softmax(np.where(self.mask[:T, :T], scores, -np.inf))


@catalogue.also_correct(
    "weights-large-negative-fill", replaces="CausalSelfAttention.attention_weights"
)
def weights_large_negative_fill(self, x):
    B, T, C = x.shape
    if x.ndim != 3 or C != self.n_embed or T > self.context_length:
        raise ValueError("bad input")
    q, k = split(self, x @ self.W_q), split(self, x @ self.W_k)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(C // self.n_head)
    return softmax(np.where(self.mask[:T, :T], scores, -1e9))


@catalogue.also_correct("weights-scale-q-first", replaces="CausalSelfAttention.attention_weights")
def weights_scale_q_first(self, x):
    B, T, C = x.shape
    if x.ndim != 3 or C != self.n_embed or T > self.context_length:
        raise ValueError("bad input")
    q = split(self, x @ self.W_q) / np.sqrt(C // self.n_head)
    scores = q @ split(self, x @ self.W_k).transpose(0, 1, 3, 2)
    return softmax(np.where(self.mask[:T, :T], scores, -np.inf))


@catalogue.also_correct("forward-head-loop", replaces="CausalSelfAttention.forward")
def forward_head_loop(self, x):
    weights = self.attention_weights(x)
    d = self.n_embed // self.n_head
    heads = [weights[:, i] @ (x @ self.W_v[:, i * d : (i + 1) * d]) for i in range(self.n_head)]
    return np.concatenate(heads, axis=-1) @ self.W_o + self.b_o


@catalogue.also_correct("forward-float32", replaces="CausalSelfAttention.forward")
def forward_float32(self, x):
    weights = self.attention_weights(x).astype(np.float32)
    v = split(self, x.astype(np.float32) @ self.W_v.astype(np.float32))
    return join(weights @ v) @ self.W_o.astype(np.float32) + self.b_o.astype(np.float32)
