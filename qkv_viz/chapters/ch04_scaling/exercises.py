"""Chapter 4 exercises: the gradient that reaches the keys, the backward pass through softmax; two numbers.

Each ``check_*`` returns a ``Feedback``: right or wrong plus a precise hint, never
the answer. Code checkers run the reader's function on fresh random cases (a new
generator each call unless ``seed`` is given) against the package. Answer cells
start with ``None`` ("no answer yet", not an error). Worked solutions:
``qkv_viz.chapters.ch04_scaling.solutions``.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.feedback import Feedback, check_close, check_function
from qkv_viz.core.diagnostics import softmax_grad_norm
from qkv_viz.core.softmax import softmax, softmax_jacobian

D_K_EX3, VAR_Q_EX3 = 48, 4.0  # exercise 3: a width and a query variance the page never prints
ROW_EX4 = (0.5, 0.25, 0.25)   # exercise 4: an uneven row (the even-split formula does not apply)


# ---------------------------------------------------------------- exercise 1: the gradient that reaches the keys
def key_grad_cases(n: int = 4, seed=None) -> list:
    """(q (T, d_k), k (S, d_k), grad_scores (T, S), scale): T != S, scaling on and off."""
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n):
        T, S = (int(v) for v in rng.choice(np.arange(2, 10), size=2, replace=False))
        d_k = int(rng.choice([3, 4, 16, 64]))
        cases.append((rng.normal(size=(T, d_k)), rng.normal(size=(S, d_k)), rng.normal(size=(T, S)),
                      i % 2 == 0))
    return cases


def _key_grad_reference(q, k, grad_scores, scale):
    factor = 1 / np.sqrt(q.shape[1]) if scale else 1.0
    return factor * grad_scores.T @ q  # (S, T) @ (T, d_k) -> (S, d_k)


def _diagnose_key_grad(got, want, case):
    q, k, grad_scores, scale = case
    if got.shape != want.shape:
        if got.shape == q.shape:
            return (f"your result has one row per query, {q.shape}; dL/dk has one row per key: "
                    f"{want.shape}, like k.")
        return None
    raw = grad_scores.T @ q
    if np.allclose(got, raw) and scale:
        return "this case has scale=True: the scores were divided by sqrt(d_k), and so is every derivative."
    if np.allclose(got, raw / np.sqrt(q.shape[1])) and not scale:
        return "this case has scale=False: nothing was divided, so no factor belongs in the gradient."
    if np.allclose(got, -want):
        return "the sign is flipped: a larger score s_ij grows with q_i . k_j, not against it."
    return ("score s_ij depends on key k_j through one query only, q_i: "
            "which query is it, and which index of grad_scores do you sum over?")


def check_key_grad(fn, seed=None) -> Feedback:
    """Exercise 1: ``fn(q, k, grad_scores, scale) -> (S, d_k)``, dL/dk for scores q k^T (divided by
    sqrt(d_k) when ``scale``), given grad_scores = dL/dscores (T, S)."""
    return check_function(fn, _key_grad_reference, key_grad_cases(seed=seed), name="your key_grad",
                          diagnose=_diagnose_key_grad, shape_hints=True,
                          praise="Your key_grad is the chain rule's: each key collects the queries that "
                                 "scored it, weighted by how much the loss cared about that score.")


# ---------------------------------------------------------------- exercise 2: the backward pass through softmax
def backward_cases(n: int = 5, seed=None) -> list:
    """(w (S,), grad (S,)): a row of weights (soft, sharp, one-hot) and a gradient arriving at it."""
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n):
        S = int(rng.integers(2, 10))
        spread = (0.5, 2.0, 6.0, 0.1, 40.0)[i % 5]
        cases.append((softmax(spread * rng.normal(size=S)), rng.normal(size=S)))
    return cases


def _backward_reference(w, grad):
    return softmax_jacobian(w) @ grad  # (S, S) @ (S,) -> (S,); J is symmetric, so J^T grad = J grad


def _diagnose_backward(got, want, case):
    w, grad = case
    if np.allclose(got, want, atol=1e-8):
        return None
    if np.allclose(got, -want):
        return "the sign is flipped: which of J's two terms, diag(w) or w w^T, carries the minus?"
    if np.allclose(got, w * grad):
        return "you have the diag(w) part of J only: what does the w w^T part do to grad?"
    if np.allclose(got, grad - w @ grad):
        return ("close, but a factor is missing: look at any entry of J, diagonal or not. "
                "Which number multiplies all of row i?")
    if not np.isclose(got.sum(), 0.0, atol=1e-8):
        return ("your result does not sum to 0; it must (adding the same number to every score changes "
                "no weight, so no loss can care about it).")
    return None


def check_softmax_backward(fn, seed=None) -> Feedback:
    """Exercise 2: ``fn(w, grad) -> (S,)``, the gradient at the scores J^T grad, without building J."""
    return check_function(fn, _backward_reference, backward_cases(seed=seed), name="your softmax_backward",
                          diagnose=_diagnose_backward)


# ---------------------------------------------------------------- exercises 3 and 4: numbers
def check_new_width_std(answer) -> Feedback:
    """Exercise 3: std of q . k for d_k = 48, entries of q with variance 4, of k with variance 1."""
    return check_close(answer, float(np.sqrt(D_K_EX3 * VAR_Q_EX3)), rtol=0.01, atol=0.0,
                       hint="each product q_i k_i has variance Var(q_i) Var(k_i) (independent, mean 0); "
                            "d_k such terms add up; the std is the square root of the variance.")


def check_row_grad_norm(answer) -> Feedback:
    """Exercise 4: Frobenius norm of the softmax Jacobian for the row w = [1/2, 1/4, 1/4]."""
    expected = float(softmax_grad_norm(np.array(ROW_EX4)))
    return check_close(answer, expected, rtol=1e-2, atol=0.0,
                       hint="build J = diag(w) - w w^T: the diagonal entries are w_i (1 - w_i), the others "
                            "-w_i w_j; square all 9 entries, add them up, take the square root.")
