"""Chapter 4 exercises: max weight and ||J|| against d_k, the backward pass through softmax; two numbers.

Each ``check_*`` returns a ``Feedback``: right or wrong plus a precise hint, never
the answer. Code checkers run the reader's function on fresh random cases (a new
generator each call unless ``seed`` is given) against the package. Answer cells
start with ``None`` ("no answer yet", not an error). Worked solutions:
``qkv_viz.chapters.ch04_scaling.solutions``.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.feedback import Feedback, check_close, check_function
from qkv_viz.core.attention import attention_scores
from qkv_viz.core.diagnostics import max_weight, softmax_grad_norm
from qkv_viz.core.softmax import softmax, softmax_jacobian

D_K_EX3, VAR_Q_EX3 = 48, 4.0  # exercise 3: a width and a query variance the page never prints
ROW_EX4 = (0.5, 0.25, 0.25)   # exercise 4: an uneven row (the even-split formula does not apply)


# ---------------------------------------------------------------- exercise 1: max weight and ||J|| against d_k
def sweep_cases(n: int = 4, seed=None) -> list:
    """(q (T, D), k (S, D), d_ks, scale): wide vectors, T != S, a few widths <= D, scaling on or off."""
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n):
        T, S = (int(v) for v in rng.choice(np.arange(3, 12), size=2, replace=False))
        D = int(rng.choice([16, 32, 64]))
        d_ks = [d for d in (1, 2, 4, 8, 16, 32, 64) if d <= D]
        cases.append((rng.normal(size=(T, D)), rng.normal(size=(S, D)), d_ks, i % 2 == 0))
    return cases


def _sweep_reference(q, k, d_ks, scale):
    """Row means of max weight and ||diag(p) - p p^T||_F at each width (the core's functions)."""
    top, norm = [], []
    for d_k in d_ks:
        weights = softmax(attention_scores(q[:, :d_k], k[:, :d_k], scale))  # (T, d_k) @ (d_k, S) -> (T, S)
        top.append(max_weight(weights).mean())
        norm.append(softmax_grad_norm(weights).mean())
    return np.array(top), np.array(norm)


def _diagnose_sweep(gots, wants, case):
    q, k, d_ks, scale = case
    got_top, got_norm = (np.asarray(g, dtype=float) for g in gots)
    if got_top.shape != wants[0].shape or got_norm.shape != wants[1].shape:
        return None
    if np.allclose(got_top, wants[1]) and np.allclose(got_norm, wants[0]):
        return "your two curves are swapped: return (max weight, ||J||), in that order."
    other = _sweep_reference(q, k, d_ks, not scale)
    if np.allclose(got_top, other[0]) and not np.allclose(got_top, wants[0]):
        return (f"your curves are those {'without' if scale else 'with'} the factor 1/sqrt(d_k): "
                f"this case has scale={scale}.")
    wide = _sweep_reference(q, k, [q.shape[1]] * len(d_ks), scale)
    if np.allclose(got_top, wide[0]) and len(d_ks) > 1:
        return "every width gives the same numbers: use only the first d_k columns, q[:, :d_k] and k[:, :d_k]."
    if np.all(got_top <= 1) and np.allclose(got_top, wants[0]) and not np.allclose(got_norm, wants[1]):
        return ("your max weights are right but not ||J||: build J = diag(p) - p p^T for each row p, "
                "take sqrt of the sum of its squared entries, then the mean over the rows.")
    return None


def check_sweep(fn, seed=None) -> Feedback:
    """Exercise 1: ``fn(q, k, d_ks, scale) -> (max_weight, grad_norm)``, each (len(d_ks),): row means
    of the largest weight and of ||diag(p) - p p^T||_F, using the first d_k columns of q (T, D) and k (S, D)."""
    return check_function(fn, _sweep_reference, sweep_cases(seed=seed), name="your sweep",
                          diagnose=_diagnose_sweep,
                          praise="Your sweep gives the package's max weight and ||J|| at every width, "
                                 "with and without the factor.")


# ---------------------------------------------------------------- exercise 2: the backward pass through softmax
def backward_cases(n: int = 5, seed=None) -> list:
    """(p (S,), grad (S,)): a row of weights (soft, sharp, one-hot) and a gradient arriving at it."""
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n):
        S = int(rng.integers(2, 10))
        spread = (0.5, 2.0, 6.0, 0.1, 40.0)[i % 5]
        cases.append((softmax(spread * rng.normal(size=S)), rng.normal(size=S)))
    return cases


def _backward_reference(p, grad):
    return softmax_jacobian(p) @ grad  # (S, S) @ (S,) -> (S,); J is symmetric, so J^T grad = J grad


def _diagnose_backward(got, want, case):
    p, grad = case
    if np.allclose(got, want, atol=1e-8):
        return None
    if np.allclose(got, -want):
        return "the sign is flipped: the result is p * (grad - p . grad)."
    if np.allclose(got, p * grad):
        return "you have diag(p) @ grad only: subtract p times the number p . grad as well."
    if np.allclose(got, grad - p @ grad):
        return "multiply by p elementwise: each score's gradient is p_i (grad_i - p . grad)."
    if not np.isclose(got.sum(), 0.0, atol=1e-8):
        return ("your result does not sum to 0; it must (adding the same number to every score changes "
                "no weight, so no loss can care about it).")
    return None


def check_softmax_backward(fn, seed=None) -> Feedback:
    """Exercise 2: ``fn(p, grad) -> (S,)``, the gradient at the scores J^T grad, without building J."""
    return check_function(fn, _backward_reference, backward_cases(seed=seed), name="your softmax_backward",
                          diagnose=_diagnose_backward)


# ---------------------------------------------------------------- exercises 3 and 4: numbers
def check_new_width_std(answer) -> Feedback:
    """Exercise 3: std of q . k for d_k = 48, entries of q with variance 4, of k with variance 1."""
    return check_close(answer, float(np.sqrt(D_K_EX3 * VAR_Q_EX3)), rtol=0.01, atol=0.0,
                       hint="each product q_i k_i has variance Var(q_i) Var(k_i) (independent, mean 0); "
                            "d_k such terms add up; the std is the square root of the variance.")


def check_row_grad_norm(answer) -> Feedback:
    """Exercise 4: Frobenius norm of the softmax Jacobian for the row p = [1/2, 1/4, 1/4]."""
    expected = float(softmax_grad_norm(np.array(ROW_EX4)))
    return check_close(answer, expected, rtol=1e-2, atol=0.0,
                       hint="build J = diag(p) - p p^T: the diagonal entries are p_i (1 - p_i), the others "
                            "-p_i p_j; square all 9 entries, add them up, take the square root.")
