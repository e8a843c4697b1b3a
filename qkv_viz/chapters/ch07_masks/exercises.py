"""Chapter 7 exercises: cross-attention shapes, causal and padding masks."""
from __future__ import annotations

import numpy as np

from qkv_viz.core.attention import causal_mask, masked_softmax
from qkv_viz.chapters.feedback import Feedback, check_close


def check_cross_weights_shape(answer) -> Feedback:
    """A decoder with T=5 target tokens cross-attends over an encoder output of
    S=9 source tokens, with 4 heads. Give the shape of the attention weights
    as a tuple (heads, rows, columns)."""
    expected = (4, 5, 9)
    hint = ("each head has its own map; rows are queries (who asks: which side is that?), "
            "columns are keys (who is looked at).")
    try:
        answer = tuple(int(a) for a in answer)
    except (TypeError, ValueError):
        return Feedback(False, f"Give a tuple of three integers. Hint: {hint}")
    if answer == expected:
        return Feedback(True, "Queries come from the decoder, keys from the encoder: a rectangular map per head.")
    if sorted(answer) == sorted(expected):
        return Feedback(False, f"Right numbers, wrong order. Hint: {hint}")
    return Feedback(False, f"Hint: {hint}")


def check_causal_allowed(answer) -> Feedback:
    """How many (query, key) pairs may attend under causal_mask(6)?"""
    expected = int(causal_mask(6).sum())
    return check_close(answer, expected, rtol=0, atol=0.5,
                       hint="query i sees keys 0..i; add up how many keys each of the 6 rows sees.")


def check_padded_weights(answer) -> Feedback:
    """Scores [1, 2, 3, 4] for one query; the last two keys are padding.
    Give the four attention weights (as a list)."""
    scores = np.array([[1.0, 2.0, 3.0, 4.0]])
    mask = np.array([[True, True, False, False]])
    expected = masked_softmax(scores, mask)[0]
    return check_close(answer, expected, atol=2e-3,
                       hint="padded keys get weight exactly 0; softmax runs over the real keys only, "
                            "so the remaining weights still add up to 1.")
