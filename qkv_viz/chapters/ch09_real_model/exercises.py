"""Chapter 9 exercises: a real model's attention size, its scale factor, its sharpest head."""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.feedback import Feedback, check_close

MINILM = {"d_model": 384, "n_heads": 12, "n_layers": 6}
NO_ANSWER = "Replace None with your answer, then run the cell again."


def check_layer_params(answer) -> Feedback:
    """Attention parameters (W_q, W_k, W_v, W_o and their four biases) of ONE layer
    of all-MiniLM-L6-v2, d_model = 384, 12 heads."""
    d = MINILM["d_model"]
    expected = 4 * d * d + 4 * d
    hint = ("each of the four projections maps d_model numbers to d_model numbers, "
            "and each has one bias vector; d_model = 384.")
    if answer is None:
        return Feedback(False, NO_ANSWER)
    if not _is_number(answer):
        return Feedback(False, f"Give one integer. Hint: {hint}")
    if answer == 4 * d * d:
        return Feedback(False, "Close: you counted the matrices but not the biases. Hint: " + hint)
    if answer == MINILM["n_layers"] * expected:
        return Feedback(False, "That is all six layers; the question asks for one. Hint: " + hint)
    return check_close(answer, expected, rtol=0, atol=0.5, hint=hint,
                       praise="Four d_model x d_model matrices and four biases.")


def check_scale_factor(answer) -> Feedback:
    """The number all-MiniLM-L6-v2 divides q . k by (2 decimals)."""
    d_k = MINILM["d_model"] // MINILM["n_heads"]
    hint = "the divisor is sqrt(d_k), and d_k = d_model / n_heads for this model."
    if answer is None:
        return Feedback(False, NO_ANSWER)
    if _is_number(answer) and abs(answer - 8.0) < 1e-9:
        return Feedback(False, "8 = sqrt(64) is BERT-base's factor; this model's heads are "
                               "narrower. Hint: " + hint)
    if _is_number(answer) and abs(answer - d_k) < 1e-9:
        return Feedback(False, "That is d_k itself, not its square root. Hint: " + hint)
    return check_close(answer, float(np.sqrt(d_k)), rtol=0, atol=0.01, hint=hint,
                       praise="sqrt(32) ~ 5.66, smaller than BERT-base's 8.")


def check_sharpest_head(answer, effective_tokens) -> Feedback:
    """(layer, head) of the head with the FEWEST mean effective tokens.

    effective_tokens: the (L, H) array ``head_sharpness(trace)["effective_tokens"]``
    for the reader's sentence (the check recomputes nothing else).
    """
    eff = np.asarray(effective_tokens, dtype=float)
    hint = ("look for the smallest entry of the (layers, heads) array; "
            "np.argmin gives a flat index and np.unravel_index turns it into (layer, head).")
    if answer is None:
        return Feedback(False, NO_ANSWER)
    try:
        layer, head = (int(a) for a in answer)
    except (TypeError, ValueError):
        return Feedback(False, f"Give a pair (layer, head) of integers. Hint: {hint}")
    if not (0 <= layer < eff.shape[0] and 0 <= head < eff.shape[1]):
        return Feedback(False, f"Layers run 0..{eff.shape[0] - 1} and heads 0..{eff.shape[1] - 1}. "
                               f"Hint: {hint}")
    if np.isclose(eff[layer, head], eff.min()):
        return Feedback(True, f"That head spreads its attention over only "
                              f"{eff[layer, head]:.2f} tokens on average.")
    if np.isclose(eff[layer, head], eff.max()):
        return Feedback(False, "That is the most spread-out head, the opposite. Hint: " + hint)
    return Feedback(False, f"Hint: {hint}")


def _is_number(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)
