"""Chapter 3 exercises: write attention yourself, then three questions the page does not answer.

Each ``check_*`` returns a ``Feedback`` (``qkv_viz.chapters.feedback``): right or
wrong with a hint that never gives the answer away; ``None`` means "no answer yet".
Worked solutions: ``qkv_viz.chapters.ch03_toy.solutions``.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.core.attention import scaled_dot_product_attention
from qkv_viz.core.softmax import softmax
from qkv_viz.chapters.feedback import Feedback, check_close, check_function
from qkv_viz.chapters.ch03_toy.toy import TOY_SCORES, TOY_V, toy_steps

NEW_V = ((2.0, 0.0), (0.0, 2.0), (4.0, 4.0))   # exercise 3's values
TARGET_OUTPUT = (0.6, 0.7)                      # exercise 4's output, inside TOY_V's triangle


def attention_cases(seed=None, n_cases: int = 6) -> list:
    """Fresh random (Q, K, V) for 3 tokens: Q, K (3, d_k) with d_k in 2..6, V (3, d_v).

    Entries have standard deviation 1.5 so scaled and unscaled weights differ
    clearly. ``seed=None`` draws new cases on every call.
    """
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(n_cases):
        d_k, d_v = int(rng.integers(2, 7)), int(rng.integers(2, 5))
        cases.append(tuple(1.5 * rng.standard_normal(shape) for shape in ((3, d_k), (3, d_k), (3, d_v))))
    return cases


def _reference(Q, K, V):
    return scaled_dot_product_attention(Q, K, V)  # (output (3, d_v), weights (3, 3))


def _diagnose_attention(gots, wants, case) -> str | None:
    """Name the usual mistakes: softmax on the wrong axis, scaling forgotten or wrong,
    weights transposed, the wrong matrix mixed. None when nothing specific is found."""
    Q, K, V = case
    out, w = (np.asarray(g, dtype=float) for g in gots)
    if w.shape != (3, 3):
        return None  # the generic shape message says it
    d_k = Q.shape[1]
    scores = Q @ K.T  # (3, d_k) @ (d_k, 3) -> (3, 3)
    if not np.allclose(w.sum(axis=1), 1.0):
        if np.allclose(w.sum(axis=0), 1.0):
            return ("the COLUMNS of your weights sum to 1, not the rows. Each query's row must sum "
                    "to 1: take the softmax along axis=-1 (sum with keepdims=True).")
        return (f"the rows of your weights sum to {np.round(w.sum(axis=1), 3).tolist()}, not 1: divide "
                "each row of exp(...) by that row's sum.")
    suspects = {
        "your weights equal softmax(Q @ K.T) WITHOUT the scaling: divide the scores by "
        f"np.sqrt(d_k) (d_k = {d_k} in this case) before the softmax.": scores,
        f"your weights equal softmax(Q @ K.T / d_k): divide by the SQUARE ROOT of d_k = {d_k}.": scores / d_k,
        "your weights equal softmax(Q @ K.T * sqrt(d_k)): divide by sqrt(d_k), do not multiply.":
            scores * np.sqrt(d_k),
        "your weights are transposed: row i must be query i, i.e. Q @ K.T, not K @ Q.T.":
            scores.T / np.sqrt(d_k),
    }
    for message, wrong_scores in suspects.items():
        if np.allclose(w, softmax(wrong_scores)) and not np.allclose(w, wants[1]):
            return message
    if np.allclose(w, wants[1]) and out.shape == wants[0].shape and not np.allclose(out, wants[0]):
        if np.allclose(out, w.T @ V):
            return "your weights are right but the output is weights.T @ V; it should be weights @ V."
        return "your weights are right but the output is not weights @ V."
    if np.allclose(w, wants[1]) and out.shape != wants[0].shape:
        return (f"your weights are right but the output has shape {out.shape}; weights @ V has shape "
                f"{wants[0].shape}: did you mix Q or K instead of V?")
    return None


def _swapped_order(fn, case) -> str | None:
    """A sentence when ``fn`` returns the right (weights, output) in the wrong order."""
    try:
        got = fn(*case)
        w, out = (np.asarray(g, dtype=float) for g in got)
    except Exception:  # anything else is check_function's to describe
        return None
    want_out, want_w = _reference(*case)
    if w.shape == want_w.shape and out.shape == want_out.shape and \
            np.allclose(w, want_w) and np.allclose(out, want_out):
        return "your output and weights are right but in the wrong order: return output, weights."
    return None


def check_attention(fn, seed=None) -> Feedback:
    """Exercise 1: ``fn(Q, K, V) -> (output, weights)`` for 3 tokens, on fresh random cases."""
    cases = attention_cases(seed)
    swapped = _swapped_order(fn, cases[0]) if callable(fn) else None
    if swapped:
        return Feedback(False, swapped)
    return check_function(fn, _reference, cases, name="attention",
                          diagnose=_diagnose_attention,
                          praise="Your attention(Q, K, V) gives the package's output and weights "
                                 "on every random case: rows sum to 1, scaled by 1/sqrt(d_k).")


def check_weights_d_k_8(answer) -> Feedback:
    """Exercise 2: the weights of token 1's raw scores [2, 5, 1] if the head had d_k = 8 (3 weights)."""
    expected = toy_steps(TOY_SCORES, d_k=8).weights
    return check_close(answer, expected,
                       "the scale is now 1/sqrt(8); scale, exponentiate, then divide by the sum. "
                       "Your weights should add up to 1 and be less peaked than at d_k = 2.")


def check_output_new_v(answer) -> Feedback:
    """Exercise 3: token 1's output when V = [[2, 0], [0, 2], [4, 4]] (2 numbers), d_k = 2."""
    expected = toy_steps(TOY_SCORES, v=NEW_V, d_k=2).output
    return check_close(answer, expected,
                       "the weights do not change when only V changes; the output is "
                       "sum_j weight_j * v_j, one number per column of V.")


def check_weights_for_output(answer) -> Feedback:
    """Exercise 4: the weights (3,) that mix TOY_V into the output (0.6, 0.7)."""
    A = np.vstack([np.asarray(TOY_V, dtype=float).T, np.ones(3)])  # (3, 3): x, y and "sum to 1"
    expected = np.linalg.solve(A, np.append(TARGET_OUTPUT, 1.0))
    return check_close(answer, expected, atol=2e-3, rtol=0,
                       hint="three unknowns, three equations: w1 v1 + w2 v2 + w3 v3 = (0.6, 0.7) gives "
                            "two (one per coordinate), and the weights sum to 1 gives the third.")
