"""Chapter 4 exercises: write the scaled scores and the softmax Jacobian; two numbers the page has not printed.

Each ``check_*`` returns a ``Feedback``: right or wrong plus a precise hint, never
the answer. Code checkers run the reader's function on fresh random cases (a new
generator each call unless ``seed`` is given) against the package. Answer cells
start with ``None``; a function whose body still returns ``None`` is "no answer
yet", not an error. Worked solutions: ``qkv_viz.chapters.ch04_scaling.solutions``.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.feedback import Feedback, check_close, check_function
from qkv_viz.core.attention import attention_scores
from qkv_viz.core.diagnostics import softmax_grad_norm
from qkv_viz.core.softmax import softmax, softmax_jacobian

STUB = "No answer yet: your function still returns None. Write its body, then run the cell again."
D_K_EX3, VAR_Q_EX3 = 48, 4.0  # exercise 3: a width and a query variance the page never prints
ROW_EX4 = (0.5, 0.25, 0.25)   # exercise 4: an uneven row (the even-split formula does not apply)


def _run_code(fn, reference, cases, name, diagnose) -> Feedback:
    """``check_function`` where a stub still returning None reads as "no answer yet"."""
    cases = list(cases)
    if callable(fn):
        try:
            first = fn(*cases[0])
        except Exception:  # noqa: BLE001 - check_function reports the reader's error precisely
            first = 0
        if first is None:
            return Feedback(False, STUB, pending=True)
    return check_function(fn, reference, cases, name=name, diagnose=diagnose)


# ---------------------------------------------------------------- exercise 1: scaled scores
def scores_cases(n: int = 5, seed=None) -> list:
    """(q (T, d_k), k (S, d_k)) with T, S, d_k all different, d_k >= 2 (so a missing scale shows)."""
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(n):
        T, S, d_k = (int(v) for v in rng.choice(np.arange(2, 12), size=3, replace=False))
        cases.append((rng.normal(size=(T, d_k)), rng.normal(size=(S, d_k))))
    return cases


def _diagnose_scores(got, want, case):  # shapes already agree (check_function tests them first)
    q, k = case
    d_k = q.shape[-1]
    if np.allclose(got, want, atol=1e-8):
        return None
    raw = q @ k.T  # (T, d_k) @ (d_k, S) -> (T, S)
    for wrong, what in ((raw, "not divided at all"), (raw / d_k, "divided by d_k instead of sqrt(d_k)"),
                        (raw * np.sqrt(d_k), "multiplied by sqrt(d_k) instead of divided")):
        if np.allclose(got, wrong):
            return f"the scores are {what} (d_k = {d_k} here): divide q @ k.T by np.sqrt(d_k)."
    if np.allclose(got, softmax(want)):
        return "you applied softmax: this function should return the scores before softmax."
    return None


def check_scaled_scores(fn, seed=None) -> Feedback:
    """Exercise 1: ``fn(q, k)`` returns q k^T / sqrt(d_k), shape (T, S)."""
    return _run_code(fn, lambda q, k: attention_scores(q, k, scale=True), scores_cases(seed=seed),
                     "your scaled_scores", _diagnose_scores)


# ---------------------------------------------------------------- exercise 2: softmax Jacobian
def jacobian_cases(n: int = 5, seed=None) -> list:
    """(p,) attention rows of random length 2..9: soft, sharp and one-hot ones."""
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n):
        S = int(rng.integers(2, 10))
        spread = (0.5, 2.0, 6.0, 0.1, 40.0)[i % 5]
        cases.append((softmax(spread * rng.normal(size=S)),))
    return cases


def _diagnose_jacobian(got, want, case):  # shapes already agree
    (p,) = case
    if np.allclose(got, want, atol=1e-8):
        return None  # right (a one-hot row has J = 0, which every wrong guess below would also match)
    if np.allclose(got, -want):
        return "the sign is flipped: J = diag(p) - p p^T (the diagonal is positive)."
    if np.allclose(got, np.diag(p)):
        return "you have diag(p) only: subtract the outer product p p^T (np.outer(p, p))."
    if np.allclose(got, -np.outer(p, p)):
        return "you have -p p^T only: add diag(p) (np.diag(p))."
    if np.allclose(got, np.diag(p) - p @ p):
        return "p @ p is a number (the dot product); you need the (S, S) outer product np.outer(p, p)."
    if not np.allclose(got.sum(axis=-1), 0, atol=1e-8):
        return ("each row of the Jacobian must sum to 0 (adding the same number to every score changes "
                "no weight); yours does not.")
    return None


def check_softmax_jacobian(fn, seed=None) -> Feedback:
    """Exercise 2: ``fn(p)`` returns the (S, S) matrix diag(p) - p p^T for a weights row p (S,)."""
    return _run_code(fn, softmax_jacobian, jacobian_cases(seed=seed), "your softmax_jacobian",
                     _diagnose_jacobian)


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
