"""Known mistakes for masks-and-heads, and forms that look different but are correct.

Each variant replaces one function of the reference. Names are short and stable; `why` says
what goes wrong in a sentence; `hint` points toward the fix without giving the code.
"""

import numpy as np

from autograder.mistakes import Catalogue

catalogue = Catalogue()


@catalogue.mistake(
    "mask-after-softmax",
    replaces="masked_attention",
    why="the mask was applied to the weights after the softmax, so the rows no longer sum "
    "to 1 and the allowed weights are wrong.",
    hint="put -inf into the masked scores before the softmax; the softmax then gives the "
    "masked positions exactly 0 and renormalises the rest.",
)
def mask_after_softmax(Q, K, V, mask=None):
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    if mask is not None:
        weights = np.where(mask, weights, 0.0)
    return weights, weights @ V
