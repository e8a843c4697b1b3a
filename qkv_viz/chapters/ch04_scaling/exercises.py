"""Chapter 4 exercises: how big are the scores, and what does scaling do.

Each ``check_*`` returns a ``Feedback``: right or wrong plus a hint, never the answer.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.feedback import Feedback, check_close
from qkv_viz.core.attention import resolve_scale
from qkv_viz.core.diagnostics import softmax_grad_norm

D_K_EX1 = 32  # exercise 1 and 2 use a head of this width
S_EX3 = 4     # exercise 3: a uniform row over this many keys


def check_unscaled_variance(answer) -> Feedback:
    """Exercise 1: Var(q . k) for q, k with independent unit-variance entries, d_k = 32."""
    return check_close(answer, float(D_K_EX1), rtol=0.02, atol=0.0,
                       hint="q . k is a sum of d_k products q_i k_i; each product has mean 0 "
                            "and variance 1, and variances of independent terms add up.")


def check_scale_factor(answer) -> Feedback:
    """Exercise 2: the factor that brings that variance back to 1 (multiply the scores by it)."""
    return check_close(answer, resolve_scale(True, D_K_EX1), rtol=1e-3, atol=0.0,
                       hint="multiplying a variable by c multiplies its variance by c squared.")


def check_uniform_grad_norm(answer) -> Feedback:
    """Exercise 3: Frobenius norm of the softmax Jacobian for a uniform row over S = 4 keys."""
    expected = float(softmax_grad_norm(np.full(S_EX3, 1.0 / S_EX3)))
    return check_close(answer, expected, rtol=1e-2, atol=0.0,
                       hint="the Jacobian is diag(p) - p p^T; with every p_i = 1/S the diagonal "
                            "entries are p(1 - p) and the others -p^2; square all S*S entries, add, "
                            "take the square root.")
