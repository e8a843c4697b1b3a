"""Chapter 8 exercises: a fused matrix's shape, float16's overflow limit, a stable softmax
written by the reader, and a bug to find in a given attention function.

Every checker takes the reader's answer (``None`` until they give one) and
returns a :class:`~qkv_viz.chapters.feedback.Feedback` that never reveals the answer.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.core.attention import scaled_dot_product_attention
from qkv_viz.core.softmax import softmax
from qkv_viz.chapters.feedback import Feedback, check_close, check_exact, check_function

# ---------------------------------------------------------------- 1. fused shape

FUSED_HINT = "x @ W_qkv must give Q, K and V side by side; how wide is each of them for all heads?"


def check_fused_shape(answer) -> Feedback:
    """d_model = 512, 8 heads of d_k = d_v = 64. Shape (rows, columns) of the fused W_qkv
    in the book's x @ W layout?"""
    expected = (512, 3 * 8 * 64)
    if answer is not None and _as_int_tuple(answer) == expected[::-1]:
        return Feedback(False, "That is torch's (out, in) layout; the book writes x @ W. Hint: " + FUSED_HINT)
    return check_exact(answer, expected, FUSED_HINT, praise="Three (512, 512) blocks side by side.")


def _as_int_tuple(answer):
    try:
        return tuple(int(a) for a in answer)
    except (TypeError, ValueError):
        return None


# ---------------------------------------------------------------- 2. float16 limit


def check_overflow_limit(answer) -> Feedback:
    """Half precision: past which logit x (2 decimals) does exp(x) overflow in float16?"""
    expected = float(np.log(float(np.finfo(np.float16).max)))
    return check_close(answer, expected, rtol=0, atol=0.01,
                       hint="exp(x) overflows once x passes the natural log of the largest number "
                            "the type can hold; np.finfo(np.float16) tells you that number.")


# ---------------------------------------------------------------- 3. write a stable softmax

BROADCAST_HINT = (" Hint: reduce with keepdims=True, e.g. s.max(axis=-1, keepdims=True) has shape (T, 1), "
                  "which broadcasts against (T, S); without it the shape is (T,).")


def _run_checker(fn, reference, cases, name, diagnose, praise) -> Feedback:
    """check_function with numpy's overflow warnings silenced (the feedback names the overflow)
    and a keepdims hint added to a broadcasting error."""
    with np.errstate(all="ignore"):
        fb = check_function(fn, reference, cases, name=name, diagnose=diagnose, praise=praise)
    if not fb and "could not be broadcast" in fb.message:
        return Feedback(False, fb.message.rstrip() + BROADCAST_HINT)
    return fb


def softmax_cases(seed=None) -> list:
    """Fresh logits for the softmax checker: small rows, a batch of rows, and huge logits.

    Returns a list of 1-tuples: (4,) around 0, (3, 5) around 0, (2, 6) around
    1000 (naive exp overflows) and (2, 3) around -1000 (naive exp underflows to 0/0).
    """
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=4),), (rng.normal(size=(3, 5)),),
            (1000.0 + 3 * rng.normal(size=(2, 6)),), (-1000.0 + rng.normal(size=(2, 3)),)]


def _diagnose_softmax(got, want, case) -> str | None:
    (s,) = case
    if not np.all(np.isfinite(got)):
        around = float(np.round(np.median(s), -2))  # these cases sit near 0, 1000 or -1000
        return (f"overflow: your function gives NaN/inf for logits around {around:.0f} (exp(1000) is inf "
                f"and exp(-1000) is 0 in float64). Subtract each row's max before exp "
                f"(keepdims=True): the answer does not change, and no exponent is above 0.")
    sums = got.sum(axis=-1)
    if not np.allclose(sums, 1.0, atol=1e-6):
        if got.ndim == 2 and np.allclose(got.sum(axis=0), 1.0, atol=1e-6):
            return "the columns sum to 1, not the rows: normalise over the last axis (axis=-1)."
        return (f"the rows sum to {np.round(sums, 3).tolist()}, not 1: divide by the row sum "
                f"(axis=-1, keepdims=True).")
    return None


def check_stable_softmax(fn, seed=None) -> Feedback:
    """The reader's ``fn(s)``: softmax over the last axis, finite even for logits near +-1000."""
    return _run_checker(fn, lambda s: softmax(s, axis=-1), softmax_cases(seed), "your softmax", _diagnose_softmax,
                        "Finite and right for small logits, a batch of rows, and logits near ±1000.")


# ---------------------------------------------------------------- 4. find the bug


def attention_buggy(q, k, v):
    """Attention with ONE bug (the exercise). q (T, d_k), k (S, d_k), v (S, d_v) -> (T, d_v)."""
    d_k = q.shape[-1]
    scores = q @ k.T / np.sqrt(d_k)                 # (T, d_k) @ (d_k, S) -> (T, S)
    weights = np.exp(scores - scores.max())         # (T, S), every exponent <= 0
    weights = weights / weights.sum(axis=0)         # (T, S) / (S,)
    return weights @ v                              # (T, S) @ (S, d_v) -> (T, d_v)


def attention_cases(seed=None) -> list:
    """Fresh (q, k, v) triples with T != S and d_k != d_v, so no bug hides behind equal sizes."""
    rng = np.random.default_rng(seed)
    cases = []
    for T, S, d_k, d_v in [(3, 5, 4, 2), (6, 4, 8, 3), (2, 7, 16, 5)]:
        cases.append((rng.normal(size=(T, d_k)), rng.normal(size=(S, d_k)), rng.normal(size=(S, d_v))))
    return cases


def _reference_attention(q, k, v):
    return scaled_dot_product_attention(q, k, v)[0]


def _diagnose_attention(got, want, case) -> str | None:
    q, k, v = case
    if np.allclose(got, attention_buggy(q, k, v)):
        return ("your function returns exactly what attention_buggy returns. Each QUERY's weights "
                "must add up to 1: check which axis the sum runs over.")
    if np.allclose(got, scaled_dot_product_attention(q, k, v, scale=False)[0]):
        return "you dropped the 1/sqrt(d_k): the bug was elsewhere, keep the scaling."
    return None


def check_attention_fixed(fn, seed=None) -> Feedback:
    """The reader's corrected ``fn(q, k, v) -> (T, d_v)`` against the package's attention."""
    return _run_checker(fn, _reference_attention, attention_cases(seed), "your attention", _diagnose_attention,
                        "Each query's weights now sum to 1, and the output matches the package.")
