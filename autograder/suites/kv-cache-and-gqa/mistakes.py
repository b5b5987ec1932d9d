"""Known mistakes for kv-cache-and-gqa, and forms that look different but are correct.

Each variant replaces one function (or one method, ``Class.method``) of the reference; the
rest stays the reference's, including its given ``softmax``. Families from the research notes
(attention-facts.md, api-pitfalls.md): np.tile for the kv heads, a top-left aligned mask in
decoding, inputs cached instead of projected keys, and factor slips in the cache size.
"""

# Variants call the reference's softmax, repeat_kv and causal_mask, which exist only in the
# module each variant is spliced into: hence no F821 here.
# ruff: noqa: F821

import numpy as np

from autograder.suite import Catalogue

catalogue = Catalogue()


@catalogue.helper
def to_heads(Z, n, d):
    """(t, n * d) -> (n, t, d): head i is columns i*d:(i+1)*d."""
    return Z.reshape(Z.shape[0], n, d).transpose(1, 0, 2)


@catalogue.helper
def from_heads(Z):
    """(n, t, d) -> (t, n * d), the inverse of to_heads."""
    return Z.transpose(1, 0, 2).reshape(Z.shape[1], -1)


@catalogue.helper
def gqa_with(
    X,
    Wq,
    Wk,
    Wv,
    Wo,
    n_head,
    n_kv_head,
    mask,
    repeat=None,
    scale=None,
    fill=-np.inf,
    after=False,
    axis=-1,
    merge=None,
):
    """Grouped-query attention with a chosen way to repeat kv heads, a chosen scale, a chosen
    fill for masked scores (or the mask applied to the weights, ``after`` the softmax), the
    softmax over a chosen axis, and a chosen way to merge the heads."""
    d = X.shape[1] // n_head
    q, k, v = (
        to_heads(X @ Wq, n_head, d),
        to_heads(X @ Wk, n_kv_head, d),
        to_heads(X @ Wv, n_kv_head, d),
    )
    repeat = repeat or (lambda z: np.repeat(z, n_head // n_kv_head, axis=0))
    scores = q @ repeat(k).transpose(0, 2, 1) / (np.sqrt(d) if scale is None else scale)
    if mask is not None and not after:
        scores = np.where(mask, scores, fill)
    top = scores.max(axis=axis, keepdims=True)
    weights = np.exp(scores - top) / np.exp(scores - top).sum(axis=axis, keepdims=True)
    if mask is not None and after:
        weights = np.where(mask, weights, 0.0)
    return (merge or from_heads)(weights @ repeat(v)) @ Wo


@catalogue.helper
def causal_gqa(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal, **how):
    """gqa_with under the reference's causal mask when ``causal``, each ``how`` passed on."""
    mask = causal_mask(len(X), len(X)) if causal else None
    return gqa_with(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, mask, **how)


@catalogue.helper
def decode_with(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head, mask_of):
    """decode_step with the mask given by mask_of(t, S)."""
    t, C = x.shape
    d = C // n_head
    cache.append(to_heads(x @ Wk, n_kv_head, d), to_heads(x @ Wv, n_kv_head, d))
    n_rep = n_head // n_kv_head
    keys, values = np.repeat(cache.keys, n_rep, axis=0), np.repeat(cache.values, n_rep, axis=0)
    scores = to_heads(x @ Wq, n_head, d) @ keys.transpose(0, 2, 1) / np.sqrt(d)
    mask = mask_of(t, len(cache))
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return from_heads(softmax(scores) @ values) @ Wo


# -- repeat_kv ------------------------------------------------------------------------------


@catalogue.mistake(
    "repeat-kv-tile",
    title="the kv heads are tiled (0, 1, 0, 1) instead of repeated (0, 0, 1, 1)",
    replaces="repeat_kv",
    why="np.tile lays the whole stack of kv heads end to end ([k0, k1, k0, k1]), so query "
    "head 1 gets kv head 1 instead of kv head 0. It only looks right with one kv head, where "
    "tile and repeat agree.",
    hint="Query head h must use kv head h // n_rep: the copies of one kv head sit next to "
    "each other. Which NumPy function repeats each element in place?",
)
def repeat_kv_tile(x, n_rep):
    return np.tile(x, (n_rep, 1, 1))


@catalogue.mistake(
    "repeat-kv-wrong-axis",
    title="the positions are repeated instead of the heads",
    replaces="repeat_kv",
    why="You repeated along the positions (axis 1) instead of the heads (axis 0), so every "
    "position appears n_rep times and the number of heads does not change.",
    hint="The heads are the first axis of (n_kv_head, T, d): repeat along axis 0.",
)
def repeat_kv_wrong_axis(x, n_rep):
    return np.repeat(x, n_rep, axis=1)


# -- causal_mask ----------------------------------------------------------------------------


@catalogue.mistake(
    "causal-mask-top-left",
    title="the causal mask is aligned top-left instead of bottom-right",
    replaces="causal_mask",
    why="Your mask is aligned top-left (query i sees keys j <= i), as if the new queries were "
    "the first positions of the sequence. In decoding they are the last ones, so a single new "
    "token would see only the first cached key.",
    hint="The T queries are the last T of S positions: query i sits at position i + (S - T).",
)
def causal_mask_top_left(T, S):
    return np.tril(np.ones((T, S), dtype=bool))


@catalogue.mistake(
    "causal-mask-strict",
    title="the causal mask leaves out the query's own position",
    replaces="causal_mask",
    why="Your mask leaves out the query's own position: a token may not look at itself, and "
    "the first token has nothing at all to attend to.",
    hint="A query sees its own key: use <=, not <, in the comparison.",
)
def causal_mask_strict(T, S):
    return np.arange(S)[None, :] < np.arange(T)[:, None] + (S - T)


@catalogue.mistake(
    "causal-mask-inverted",
    title="the causal mask is True where a query must not look",
    replaces="causal_mask",
    why="Your mask is True where a query must NOT look (its future). In this course True "
    "means 'may attend'.",
    hint="True marks the keys a query may attend to: itself and everything before it.",
)
def causal_mask_inverted(T, S):
    return np.arange(S)[None, :] > np.arange(T)[:, None] + (S - T)


@catalogue.mistake(
    "causal-mask-offset-sign",
    title="the offset S - T is added with the wrong sign",
    replaces="causal_mask",
    why="Your mask lets query i see keys j <= i + (T - S) instead of j <= i + (S - T). With as "
    "many queries as keys the offset is 0 and nothing shows, but with a cache (S > T) the new "
    "queries see fewer keys than they should, or none at all.",
    hint="The T queries are the last T of S positions: query i sits at position i + (S - T), "
    "and sees every key up to there.",
)
def causal_mask_offset_sign(T, S):
    return np.arange(S)[None, :] <= np.arange(T)[:, None] + (T - S)


# -- grouped_query_attention ----------------------------------------------------------------


@catalogue.mistake(
    "gqa-scale-by-model-width",
    title="the scores are divided by sqrt(C), not sqrt(d_head)",
    replaces="grouped_query_attention",
    why="You divided the scores by sqrt(C), the model width. Each head's scores are dot "
    "products of d_head numbers, so the scale is sqrt(d_head).",
    hint="The scale belongs to one head: d_head = C // n_head.",
)
def gqa_scale_by_model_width(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    mask = causal_mask(len(X), len(X)) if causal else None
    return gqa_with(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, mask, scale=np.sqrt(X.shape[1]))


@catalogue.mistake(
    "gqa-no-scale",
    title="the scores are not divided by sqrt(d_head)",
    replaces="grouped_query_attention",
    why="You did not divide the scores by sqrt(d_head), so the softmax is too peaked.",
    hint="Scaled dot-product attention divides each head's scores by sqrt(d_head).",
)
def gqa_no_scale(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    mask = causal_mask(len(X), len(X)) if causal else None
    return gqa_with(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, mask, scale=1.0)


@catalogue.mistake(
    "gqa-split-without-transpose",
    title="heads split by a reshape without a transpose",
    replaces="grouped_query_attention",
    why="You reshaped (T, n * d_head) straight to (n, T, d_head). That cuts the flat array "
    "into n blocks of rows, so a 'head' mixes several tokens instead of owning columns.",
    hint="Reshape to (T, n, d_head) first, then move the head axis to the front.",
)
def gqa_split_without_transpose(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    T, C = X.shape
    d = C // n_head
    q = (X @ Wq).reshape(n_head, T, d)
    k = np.repeat((X @ Wk).reshape(n_kv_head, T, d), n_head // n_kv_head, axis=0)
    v = np.repeat((X @ Wv).reshape(n_kv_head, T, d), n_head // n_kv_head, axis=0)
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(d)
    if causal:
        scores = np.where(causal_mask(T, T), scores, -np.inf)
    return from_heads(softmax(scores) @ v) @ Wo


@catalogue.mistake(
    "gqa-mask-fill-zero",
    title="masked scores are set to 0 instead of -inf",
    replaces="grouped_query_attention",
    why="You set the masked scores to 0. A score of 0 is an ordinary score: exp(0) = 1, so "
    "every future key still gets weight, often more than the allowed ones.",
    hint="A masked score must become -inf (or a very large negative number), so that its "
    "weight after the softmax is exactly 0.",
)
def gqa_mask_fill_zero(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    return causal_gqa(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal, fill=0.0)


@catalogue.mistake(
    "gqa-mask-after-softmax",
    title="the mask is applied to the weights, after the softmax",
    replaces="grouped_query_attention",
    why="You zeroed the masked weights after the softmax. The future keys then get weight 0, "
    "but the softmax has already shared the weight among all keys, so each row of the "
    "remaining weights no longer sums to 1.",
    hint="Mask the scores (to -inf) before the softmax, so that it shares the weight among the "
    "allowed keys only.",
)
def gqa_mask_after_softmax(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    return causal_gqa(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal, after=True)


@catalogue.mistake(
    "gqa-softmax-over-queries",
    title="the softmax runs over the queries, not the keys",
    replaces="grouped_query_attention",
    why="You normalised the scores over the queries (axis -2 of (n_head, T, S), or the first "
    "axis of key-major scores) instead of over the keys, so a query's weights do not sum to 1.",
    hint="Each query's row of weights is one distribution over the keys: the last axis of "
    "(n_head, T, S).",
)
def gqa_softmax_over_queries(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    return causal_gqa(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal, axis=-2)


@catalogue.mistake(
    "gqa-merge-without-transpose",
    title="heads merged by a reshape without a transpose",
    replaces="grouped_query_attention",
    why="You reshaped the heads' outputs (n_head, T, d_head) straight to (T, n_head * d_head). "
    "That cuts the flat array into rows of another length, so a row mixes several tokens "
    "instead of holding one token's heads side by side.",
    hint="Move the head axis next to d_head first, (T, n_head, d_head), then reshape.",
)
def gqa_merge_without_transpose(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    return causal_gqa(
        X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal, merge=lambda Z: Z.reshape(len(X), -1)
    )


@catalogue.mistake(
    "gqa-no-output-projection",
    title="the joined heads are returned without Wo",
    replaces="grouped_query_attention",
    why="You returned the joined heads without multiplying by Wo, the output projection that "
    "mixes what the heads found.",
    hint="After joining the heads back to (T, C), one more matrix product remains.",
)
def gqa_no_output_projection(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    mask = causal_mask(len(X), len(X)) if causal else None
    return gqa_with(X, Wq, Wk, Wv, np.eye(X.shape[1]), n_head, n_kv_head, mask)


@catalogue.mistake(
    "gqa-causal-ignored",
    title="the causal mask is never applied",
    replaces="grouped_query_attention",
    why="Your attention never applies the causal mask, so every token sees its future.",
    hint="When causal is True, mask the scores with causal_mask(T, T) before the softmax.",
)
def gqa_causal_ignored(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    return gqa_with(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, None)


# -- KVCache --------------------------------------------------------------------------------


@catalogue.mistake(
    "cache-overwrites",
    title="append replaces the cache instead of adding to it",
    replaces="KVCache.append",
    why="append replaces the cached keys and values with the new ones, so the cache only "
    "ever holds the last tokens appended and earlier context is forgotten.",
    hint="The cache must grow: join the new keys to the old ones along the positions.",
)
def cache_overwrites(self, k, v):
    self.keys, self.values = k, v


@catalogue.mistake(
    "cache-grows-heads",
    title="append adds kv heads instead of positions",
    replaces="KVCache.append",
    why="append joins the new keys along axis 0, the kv heads, so the cache gets more heads "
    "instead of more positions.",
    hint="Keys are (n_kv_head, S, d_head): the positions are axis 1.",
)
def cache_grows_heads(self, k, v):
    if self.keys is None:
        self.keys, self.values = k, v
    else:
        self.keys = np.concatenate([self.keys, k], axis=0)
        self.values = np.concatenate([self.values, v], axis=0)


@catalogue.mistake(
    "cache-keys-twice",
    title="append stores the keys where the values belong",
    replaces="KVCache.append",
    why="append stores the keys where the values belong, so attention mixes keys instead of "
    "values.",
    hint="Keep two separate arrays: keys grow with k, values with v.",
)
def cache_keys_twice(self, k, v):
    if self.keys is None:
        self.keys, self.values = k, k
    else:
        self.keys = np.concatenate([self.keys, k], axis=1)
        self.values = np.concatenate([self.values, k], axis=1)


@catalogue.mistake(
    "cache-length-counts-heads",
    title="len(cache) counts the kv heads, not the positions",
    replaces="KVCache.__len__",
    why="len(cache) returns the number of kv heads (axis 0), not the number of cached positions S.",
    hint="The cache's length is how many tokens it holds: axis 1 of (n_kv_head, S, d_head).",
)
def cache_length_counts_heads(self):
    return 0 if self.keys is None else self.keys.shape[0]


@catalogue.mistake(
    "cache-length-counts-numbers",
    title="len(cache) counts numbers, not positions",
    replaces="KVCache.__len__",
    why="len(cache) returns the number of numbers in the keys, not the number of cached positions.",
    hint="Count tokens, not entries: one position holds n_kv_head * d_head numbers.",
)
def cache_length_counts_numbers(self):
    return 0 if self.keys is None else int(self.keys.size)


# -- decode_step ----------------------------------------------------------------------------


@catalogue.mistake(
    "decode-no-mask",
    title="no mask among the new tokens",
    replaces="decode_step",
    why="No mask was applied among the new tokens. With one token per step that is harmless, "
    "but with several new tokens at once, the earlier ones see the later ones: the future "
    "leaks.",
    hint="Mask with causal_mask(t, len(cache)) after appending, even though a single new token "
    "would not need it.",
)
def decode_no_mask(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    return decode_with(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head, lambda t, S: None)


@catalogue.mistake(
    "decode-forgets-own-key",
    title="the new tokens' own keys are added after attention",
    replaces="decode_step",
    why="The new tokens attended to the cache before their own keys and values were added, "
    "so a token never sees itself (and the first step has nothing to attend to).",
    hint="Append the new keys and values first, then attend over the whole cache.",
)
def decode_forgets_own_key(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    t, C = x.shape
    d = C // n_head
    q = to_heads(x @ Wq, n_head, d)
    k, v = to_heads(x @ Wk, n_kv_head, d), to_heads(x @ Wv, n_kv_head, d)
    n_rep = n_head // n_kv_head
    keys, values = np.repeat(cache.keys, n_rep, axis=0), np.repeat(cache.values, n_rep, axis=0)
    S = len(cache)
    scores = q @ keys.transpose(0, 2, 1) / np.sqrt(d)
    scores = np.where(np.arange(S)[None, :] <= np.arange(t)[:, None] + S - t, scores, -np.inf)
    out = from_heads(softmax(scores) @ values) @ Wo
    cache.append(k, v)
    return out


@catalogue.mistake(
    "decode-no-append",
    title="the new keys and values are never stored in the cache",
    replaces="decode_step",
    why="You attended over the cached keys and the new ones, but never appended the new keys "
    "and values to the cache. Each step looks right on its own, but the cache stays as it "
    "was, so the next step has forgotten these tokens.",
    hint="decode_step updates the cache: call cache.append(k, v) with the new tokens' keys "
    "and values, then attend over everything cached.",
)
def decode_no_append(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    t, C = x.shape
    d = C // n_head
    k, v = to_heads(x @ Wk, n_kv_head, d), to_heads(x @ Wv, n_kv_head, d)
    if cache.keys is not None:
        k = np.concatenate([cache.keys, k], axis=1)
        v = np.concatenate([cache.values, v], axis=1)
    n_rep = n_head // n_kv_head
    keys, values = np.repeat(k, n_rep, axis=0), np.repeat(v, n_rep, axis=0)
    scores = to_heads(x @ Wq, n_head, d) @ keys.transpose(0, 2, 1) / np.sqrt(d)
    scores = np.where(causal_mask(t, k.shape[1]), scores, -np.inf)
    return from_heads(softmax(scores) @ values) @ Wo


@catalogue.mistake(
    "decode-attends-only-new",
    title="the new tokens attend only to each other, not to the cache",
    replaces="decode_step",
    why="You appended the new keys and values to the cache, but attended over the new tokens' "
    "own keys and values only. The cache is then never read, and each step forgets every "
    "earlier token.",
    hint="After appending, attend over everything cached: cache.keys and cache.values, with "
    "causal_mask(t, len(cache)).",
)
def decode_attends_only_new(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    t, C = x.shape
    d = C // n_head
    k, v = to_heads(x @ Wk, n_kv_head, d), to_heads(x @ Wv, n_kv_head, d)
    cache.append(k, v)
    n_rep = n_head // n_kv_head
    keys, values = np.repeat(k, n_rep, axis=0), np.repeat(v, n_rep, axis=0)
    scores = to_heads(x @ Wq, n_head, d) @ keys.transpose(0, 2, 1) / np.sqrt(d)
    scores = np.where(causal_mask(t, t), scores, -np.inf)
    return from_heads(softmax(scores) @ values) @ Wo


@catalogue.mistake(
    "decode-append-swapped",
    title="the keys and values are appended in the wrong order, append(v, k)",
    replaces="decode_step",
    why="You called cache.append(v, k): the cache then holds the values as its keys and the "
    "keys as its values, so the queries are compared with the values and the keys are mixed "
    "into the output.",
    hint="append takes the keys first: cache.append(k, v).",
)
def decode_append_swapped(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    return decode_with(x, cache, Wq, Wv, Wk, Wo, n_head, n_kv_head, causal_mask)


@catalogue.mistake(
    "decode-caches-inputs",
    title="the inputs x are cached instead of the projected keys and values",
    replaces="decode_step",
    why="You cached the token vectors x and projected them again at every step, instead of "
    "caching the projected keys and values. The outputs come out right, but the cache holds "
    "the wrong thing and each step redoes the projections the cache exists to save.",
    hint="Append x @ Wk and x @ Wv, split into kv heads (n_kv_head, t, d_head), to the cache.",
)
def decode_caches_inputs(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    t, C = x.shape
    d = C // n_head
    cache.append(x[None], x[None])
    seen = cache.keys[0]
    n_rep = n_head // n_kv_head
    keys = np.repeat(to_heads(seen @ Wk, n_kv_head, d), n_rep, axis=0)
    values = np.repeat(to_heads(seen @ Wv, n_kv_head, d), n_rep, axis=0)
    scores = to_heads(x @ Wq, n_head, d) @ keys.transpose(0, 2, 1) / np.sqrt(d)
    scores = np.where(causal_mask(t, len(seen)), scores, -np.inf)
    return from_heads(softmax(scores) @ values) @ Wo


# -- kv_cache_bytes -------------------------------------------------------------------------


@catalogue.mistake(
    "bytes-keys-only",
    title="only the keys are counted, not the values",
    replaces="kv_cache_bytes",
    why="You counted the keys but not the values: the cache stores both, so it is twice "
    "what you computed.",
    hint="A KV cache holds a key AND a value for every layer, kv head and position.",
)
def bytes_keys_only(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    return n_layers * n_kv_head * d_head * seq_len * batch * bytes_per_value


@catalogue.mistake(
    "bytes-counts-values",
    title="numbers are counted, not bytes",
    replaces="kv_cache_bytes",
    why="You counted numbers, not bytes: each number takes bytes_per_value bytes.",
    hint="Multiply the count of stored numbers by bytes_per_value.",
)
def bytes_counts_values(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    return 2 * n_layers * n_kv_head * d_head * seq_len * batch


@catalogue.mistake(
    "bytes-one-layer",
    title="one layer's cache is counted, not every layer's",
    replaces="kv_cache_bytes",
    why="You counted one layer's cache. Every layer keeps its own keys and values.",
    hint="Multiply by the number of layers.",
)
def bytes_one_layer(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    return 2 * n_kv_head * d_head * seq_len * batch * bytes_per_value


@catalogue.mistake(
    "bytes-ignores-batch",
    title="the batch size is left out",
    replaces="kv_cache_bytes",
    why="You left out the batch: each sequence in the batch has its own cache.",
    hint="Multiply by the batch size.",
)
def bytes_ignores_batch(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    return 2 * n_layers * n_kv_head * d_head * seq_len * bytes_per_value


@catalogue.mistake(
    "bytes-in-gib",
    title="gibibytes instead of bytes",
    replaces="kv_cache_bytes",
    why="You returned gibibytes (divided by 2^30), not bytes, and as a float.",
    hint="Return the count of bytes itself, an int; convert to GiB only to talk about it.",
)
def bytes_in_gib(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    return 2 * n_layers * n_kv_head * d_head * seq_len * batch * bytes_per_value / 2**30


# -- also correct ---------------------------------------------------------------------------


@catalogue.also_correct("repeat-kv-index", replaces="repeat_kv")
def repeat_kv_index(x, n_rep):
    return x[np.arange(len(x) * n_rep) // n_rep]


@catalogue.also_correct("repeat-kv-broadcast", replaces="repeat_kv")
def repeat_kv_broadcast(x, n_rep):
    n, T, d = x.shape
    return np.broadcast_to(x[:, None], (n, n_rep, T, d)).reshape(n * n_rep, T, d)


@catalogue.also_correct("causal-mask-tril-offset", replaces="causal_mask")
def causal_mask_tril_offset(T, S):
    return np.tril(np.ones((T, S), dtype=bool), k=S - T)


@catalogue.also_correct("gqa-grouped-einsum", replaces="grouped_query_attention")
def gqa_grouped_einsum(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    T, C = X.shape
    if n_head % n_kv_head or C % n_head:
        raise ValueError("bad head counts")
    d, g = C // n_head, n_head // n_kv_head
    q = (X @ Wq).reshape(T, n_kv_head, g, d)  # query heads grouped by the kv head they share
    k, v = (X @ Wk).reshape(T, n_kv_head, d), (X @ Wv).reshape(T, n_kv_head, d)
    scores = np.einsum("tkgd,skd->kgts", q, k) / np.sqrt(d)
    if causal:
        scores = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)
    out = np.einsum("kgts,skd->tkgd", softmax(scores), v)
    return out.reshape(T, C) @ Wo


@catalogue.also_correct("gqa-float32", replaces="grouped_query_attention")
def gqa_float32(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    if n_head % n_kv_head or X.shape[1] % n_head:
        raise ValueError("bad head counts")
    mask = causal_mask(len(X), len(X)) if causal else None
    X, Wq, Wk, Wv, Wo = (a.astype(np.float32) for a in (X, Wq, Wk, Wv, Wo))
    return gqa_with(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, mask)


@catalogue.also_correct("gqa-scale-q-first", replaces="grouped_query_attention")
def gqa_scale_q_first(X, Wq, Wk, Wv, Wo, n_head, n_kv_head, causal=True):
    if n_head % n_kv_head or X.shape[1] % n_head:
        raise ValueError("bad head counts")
    d = X.shape[1] // n_head
    mask = causal_mask(len(X), len(X)) if causal else None
    return gqa_with(X, Wq / np.sqrt(d), Wk, Wv, Wo, n_head, n_kv_head, mask, scale=1.0)


@catalogue.also_correct("cache-copies", replaces="KVCache.append")
def cache_copies(self, k, v):
    k, v = np.array(k), np.array(v)
    self.keys = k if self.keys is None else np.concatenate([self.keys, k], axis=-2)
    self.values = v if self.values is None else np.concatenate([self.values, v], axis=-2)


@catalogue.also_correct("decode-large-negative-fill", replaces="decode_step")
def decode_large_negative_fill(x, cache, Wq, Wk, Wv, Wo, n_head, n_kv_head):
    t, C = x.shape
    d = C // n_head
    cache.append(to_heads(x @ Wk, n_kv_head, d), to_heads(x @ Wv, n_kv_head, d))
    n_rep = n_head // n_kv_head
    keys, values = repeat_kv(cache.keys, n_rep), repeat_kv(cache.values, n_rep)
    scores = to_heads(x @ Wq, n_head, d) @ keys.transpose(0, 2, 1) / np.sqrt(d)
    scores = np.where(causal_mask(t, len(cache)), scores, -1e9)
    return from_heads(softmax(scores) @ values) @ Wo


@catalogue.also_correct("bytes-math-prod", replaces="kv_cache_bytes")
def bytes_math_prod(n_layers, n_kv_head, d_head, seq_len, batch=1, bytes_per_value=2):
    import math

    return math.prod((2, n_layers, n_kv_head, d_head, seq_len, batch, bytes_per_value))
