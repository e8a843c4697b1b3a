"""Chapter 5 exercises: per-query gradients on W_q in closed form, the init std that replaces the factor,
and the batch gradient that a gradient-norm check sees.

Each ``check_*`` returns a ``Feedback``: right or wrong plus a precise hint, never
the answer. Code exercises run the reader's function on fresh random cases
(``qkv_viz.chapters.feedback.check_function``). Worked solutions:
``qkv_viz.chapters.ch05_saturation.solutions``.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.feedback import Feedback, check_function
from qkv_viz.chapters.ch05_saturation.toy import score_grads, softmax


# ---------------------------------------------------------------- exercise 1: per-query gradients
def query_grad_norms_reference(x_q, k, d_scores, c):
    """Norm of each query's own gradient on W_q, (T,).

    x_q (T, d_model): the query tokens; k (S, d_k): the keys; d_scores (T, S): row i is
    d loss_i / d scores_i; c: the factor in scores = c (x_q W_q) k^T. Query i reaches W_q
    only through q_i = x_i W_q, so d loss_i / d W_q = outer(x_i, c d_scores_i @ k), whose
    norm is |x_i| |c d_scores_i @ k|.
    """
    d_q = c * (d_scores @ k)  # (T, S) @ (S, d_k) -> (T, d_k): d loss_i / d q_i
    return np.linalg.norm(x_q, axis=-1) * np.linalg.norm(d_q, axis=-1)  # (T,)


def query_grad_cases(n: int = 5, seed=None) -> list:
    """(x_q, k, d_scores, c): T != S != d_k != d_model, a factor that is never 1, rows of d_scores summing to 0."""
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(n):
        T, S, d_model, d_k = (int(v) for v in rng.choice(np.arange(2, 10), size=4, replace=False))
        d_scores = rng.normal(size=(T, S))
        d_scores -= d_scores.mean(axis=-1, keepdims=True)  # a softmax's backward: each row sums to 0
        c = float(1 / np.sqrt(d_k) if rng.random() < 0.5 else rng.uniform(0.05, 0.5))
        cases.append((rng.normal(size=(T, d_model)), rng.normal(size=(S, d_k)), d_scores, c))
    return cases


def _diagnose_query_grads(got, want, case):
    x_q, k, d_scores, c = case
    if np.allclose(got, want, rtol=1e-6, atol=1e-9):
        return None
    d_q = np.linalg.norm(d_scores @ k, axis=-1)
    x_norm = np.linalg.norm(x_q, axis=-1)
    if np.allclose(got, want / c):
        return "you left out the factor c: scores = c (x_q W_q) k^T, so every gradient carries c."
    if np.allclose(got, c * d_q) or np.allclose(got, d_q):
        return ("that is the norm of the gradient on q_i. W_q is one step further back: q_i = x_i W_q, "
                "so the gradient on W_q is the outer product of x_i with it (multiply by |x_i|).")
    if np.allclose(got, want ** 2) or np.allclose(got, x_norm ** 2 * (c * d_q) ** 2):
        return "you return squared norms; take the square root (np.linalg.norm)."
    return None


def check_query_grad_norms(fn, seed=None) -> Feedback:
    """Exercise 1: ``fn(x_q, k, d_scores, c)`` returns each query's |d loss_i / d W_q|, shape (T,)."""
    return check_function(fn, query_grad_norms_reference, query_grad_cases(seed=seed),
                          name="your query_grad_norms", diagnose=_diagnose_query_grads, atol=1e-9)


# ---------------------------------------------------------------- exercise 2: the control's init
def control_init_std_for(d_model: int, d_k: int, x_std: float = 1.0) -> float:
    """Init std of W_q, W_k giving unscaled scores std 1, for inputs x whose entries have std ``x_std``.

    An entry of q = x W_q has variance d_model * x_std^2 * std^2; q . k adds d_k products, so
    Var(q . k) = d_k * (d_model * x_std^2 * std^2)^2 = 1  =>  std = 1 / (x_std * sqrt(d_model) * d_k^(1/4)).
    """
    return 1.0 / (x_std * np.sqrt(d_model) * d_k ** 0.25)


def control_std_cases(n: int = 6, seed=None) -> list:
    """(d_model, d_k, x_std): widths and input sizes the chapter did not train, x_std never 1."""
    rng = np.random.default_rng(seed)
    return [(int(rng.choice([16, 32, 64, 128, 256])), int(rng.choice([8, 32, 128, 512, 2048])),
             float(rng.choice([0.5, 2.0, 3.0]))) for _ in range(n)]


def _diagnose_control_std(got, want, case):
    d_model, d_k, x_std = case
    got = float(np.asarray(got).reshape(-1)[0]) if np.size(got) == 1 else None
    if got is None or np.isclose(got, want, rtol=1e-6, atol=0):
        return None
    spread = d_model * x_std ** 2 * got ** 2 * np.sqrt(d_k)  # std of the unscaled scores with that init
    if np.isclose(got, control_init_std_for(d_model, d_k)):
        return (f"that is the answer for inputs of std 1; here x_std = {x_std:g}, and an entry of q = x W_q "
                "has variance d_model * x_std^2 * std^2.")
    if np.isclose(got, 1 / (x_std * np.sqrt(d_model) * np.sqrt(d_k))):
        return ("you shrank each matrix by sqrt(d_k); the scores multiply W_q by W_k, so each needs only "
                "d_k ** 0.25 (their product then gets sqrt(d_k)).")
    return (f"with that std the unscaled scores would start with std {spread:.3g}, not 1 "
            f"(d_model={d_model}, d_k={d_k}, x_std={x_std:g}).")


def check_control_std(fn, seed=None) -> Feedback:
    """Exercise 2: ``fn(d_model, d_k, x_std)`` returns the init std that gives unscaled scores std 1."""
    return check_function(fn, control_init_std_for, control_std_cases(seed=seed), name="your control_std",
                          diagnose=_diagnose_control_std, atol=1e-12)


# ---------------------------------------------------------------- exercise 3: the batch gradient
def batch_grad_norm_reference(x_q, k, d_scores, c):
    """|d L / d W_q| for the mean loss L = (1/T) sum_i loss_i: the norm of the mean of the per-query outer products.

    Same arguments as exercise 1. d L / d W_q = (1/T) sum_i outer(x_i, c d_scores_i @ k) = x_q^T (c d_scores @ k) / T.
    """
    d_q = c * (d_scores @ k)                      # (T, S) @ (S, d_k) -> (T, d_k)
    return float(np.linalg.norm(x_q.T @ d_q) / x_q.shape[0])   # (d_model, T) @ (T, d_k) -> (d_model, d_k)


def _scalar(x) -> float:
    """A float from a number, an array or a torch tensor (detached first, so autograd does not warn)."""
    x = x.detach() if hasattr(x, "detach") else x
    return float(np.asarray(x).reshape(-1)[0])


def _diagnose_batch_grad(got, want, case):
    x_q, k, d_scores, c = case
    if np.size(got) != 1:
        return f"return one number (the norm of the (d_model, d_k) gradient), not an array of shape {np.shape(got)}."
    got = _scalar(got)
    if np.isclose(got, want, rtol=1e-6, atol=1e-9):
        return None
    T = x_q.shape[0]
    per_query = query_grad_norms_reference(x_q, k, d_scores, c)
    if np.isclose(got, want * T):
        return "that is the norm of the sum; the loss is the mean over the T queries (divide by T)."
    if np.isclose(got, per_query.mean()) or np.isclose(got, per_query.sum()):
        return ("that is the mean (or sum) of the per-query norms. Add the per-query gradients first, then take "
                "the norm: gradients of different queries point in different directions and partly cancel.")
    if np.isclose(got, want / c):
        return "you left out the factor c: scores = c (x_q W_q) k^T."
    return None


def start_of_training(c, seed=0, d_model=256, d_k=256, T=16):
    """One sequence at the start of chapter 5's training: (x_q, k, d_scores) for the factor ``c``.

    x (T, d_model) random tokens, W_q and W_k (d_model, d_k) of std 1/sqrt(d_model), the same draws
    for every ``c``; d_scores (T, T) = score_grads of the weights softmax(c q k^T).
    """
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(T, d_model))                                  # (T, d_model)
    W_q, W_k = rng.normal(size=(2, d_model, d_k)) / np.sqrt(d_model)   # each (d_model, d_k)
    q, k = x @ W_q, x @ W_k                                            # (T, d_model) @ (d_model, d_k) -> (T, d_k)
    return x, k, score_grads(softmax(c * q @ k.T))                     # d_scores (T, T)


WHY_SMALLER = ("It is smaller than the mean of exercise 1's norms because the per-query gradients point in different "
               "directions: added up, they partly cancel, and the norm of a sum is at most the sum of the norms.")


def check_batch_grad_norm(fn, seed=None) -> Feedback:
    """Exercise 3: ``fn(x_q, k, d_scores, c)`` returns |d L / d W_q| for the mean loss over the T queries.

    When it is right, the feedback also gives ``fn``'s value on one sequence at the start of training,
    scaled and unscaled (``start_of_training``), and says why it is smaller than the mean of exercise 1's norms.
    """
    fb = check_function(fn, batch_grad_norm_reference, query_grad_cases(seed=seed), name="your batch_grad_norm",
                        diagnose=_diagnose_batch_grad, atol=1e-9)
    if not fb.correct:
        return fb
    norms = {name: _scalar(fn(*start_of_training(c), c)) for name, c in (("scaled", 1 / 16), ("unscaled", 1.0))}
    return Feedback(True, fb.message + " On one sequence of 16 tokens at the start of training (d_k = 256), "
                    + ", ".join(f"{name} |dL/dW_q| = {v:.3g}" for name, v in norms.items()) + ". "
                    + WHY_SMALLER)
