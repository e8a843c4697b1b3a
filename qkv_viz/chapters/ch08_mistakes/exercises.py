"""Chapter 8 exercises: fused projection shape, float16 softmax overflow, saturation gradient."""
from __future__ import annotations

import numpy as np

from qkv_viz.core.diagnostics import softmax_grad_norm
from qkv_viz.chapters.feedback import Feedback, check_close


def check_fused_shape(answer) -> Feedback:
    """d_model = 512, 8 heads of d_k = d_v = 64. Shape of the fused W_qkv
    (rows, columns) in the book's x @ W layout?"""
    expected = (512, 3 * 8 * 64)
    hint = "x @ W_qkv must give Q, K and V side by side; how wide is each of them for all heads?"
    try:
        answer = tuple(int(a) for a in answer)
    except (TypeError, ValueError):
        return Feedback(False, f"Give a tuple of two integers. Hint: {hint}")
    if answer == expected:
        return Feedback(True, "Three (512, 512) blocks side by side.")
    if answer == expected[::-1]:
        return Feedback(False, "That is torch's (out, in) layout; the book writes x @ W. Hint: " + hint)
    return Feedback(False, f"Hint: {hint}")


def check_overflow_limit(answer) -> Feedback:
    """Half precision: past which logit x (2 decimals) does exp(x) overflow in float16?"""
    expected = float(np.log(float(np.finfo(np.float16).max)))
    return check_close(answer, expected, rtol=0, atol=0.01,
                       hint="exp(x) overflows once x passes the natural log of the largest number "
                            "the type can hold; np.finfo(np.float16) tells you that number.")


def check_uniform_grad_norm(answer) -> Feedback:
    """softmax_grad_norm of a uniform attention row over S = 4 keys (3 decimals)."""
    expected = float(softmax_grad_norm(np.full(4, 0.25)))
    return check_close(answer, expected, rtol=0, atol=2e-3,
                       hint="write J = diag(p) - p p^T for p = [1/4]*4 and take the square root "
                            "of the sum of its squared entries.")
