"""Chapter 2 exercises: write the projections, beat the self-match, bound a head's rank.

Each ``check_*`` returns a ``Feedback`` (``qkv_viz.chapters.feedback``): right or
wrong with a hint that never gives the answer away; ``None`` means "no answer yet".
Worked solutions: ``qkv_viz.chapters.ch02_projections.solutions``.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.core.projections import qkv_projections
from qkv_viz.chapters.feedback import Feedback, check_exact, check_function, no_answer

NAMES = ("Q", "K", "V")
RANK_D_MODEL, RANK_D_K = 512, 32   # exercise 3's head: d_model = 512, d_k = 32


def projection_cases(seed=None, n_cases: int = 5) -> list:
    """Fresh random (X, W_q, W_k, W_v): X (T, d_model), W_q/W_k (d_model, d_k), W_v (d_model, d_v).

    Half the cases have d_v == d_k (so swapped outputs keep their shapes and can be
    named), half have d_v != d_k. ``seed=None`` draws new cases on every call.
    """
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n_cases):
        T, d_model, d_k = (int(rng.integers(2, 7)), int(rng.integers(3, 9)), int(rng.integers(2, 6)))
        d_v = d_k if i % 2 == 0 else d_k + int(rng.integers(1, 3))
        cases.append((rng.standard_normal((T, d_model)),
                      rng.standard_normal((d_model, d_k)), rng.standard_normal((d_model, d_k)),
                      rng.standard_normal((d_model, d_v))))
    return cases


def _diagnose_projection(gots, wants, case) -> str | None:
    """Name the mix-up when one of the reader's outputs equals another expected one."""
    gots = [np.asarray(g, dtype=float) for g in gots]
    for i, g in enumerate(gots):
        if np.allclose(g, wants[i]):
            continue
        for j, w in enumerate(wants):
            if j != i and g.shape == w.shape and np.allclose(g, w):
                return (f"your {NAMES[i]} equals X @ W_{NAMES[j].lower()}: return the three in the "
                        f"order Q, K, V, each from its own matrix.")
        X = case[0]
        if g.shape == X.shape and np.allclose(g, X):
            return f"your {NAMES[i]} is X itself: it should be X projected by W_{NAMES[i].lower()}."
    return None


def check_project(fn, seed=None) -> Feedback:
    """Exercise 1: ``fn(X, W_q, W_k, W_v) -> (Q, K, V)``, run on fresh random cases."""
    return check_function(fn, qkv_projections, projection_cases(seed), name="project",
                           diagnose=_diagnose_projection,
                           praise="Your project(X, W_q, W_k, W_v) gives the package's Q, K and V "
                                  "on every random case.")


def check_longer_token_wins(X) -> Feedback:
    """Exercise 2: tokens X (T, d) with T >= 2 where, WITHOUT projections (scores X X^T),
    token 1 scores some other token strictly higher than itself."""
    if X is None:
        return no_answer()
    try:
        X = np.asarray(X, dtype=float)
    except (TypeError, ValueError):
        return Feedback(False, "Give the tokens as a 2-D array of numbers, one token per row.")
    if X.ndim != 2 or X.shape[0] < 2:
        return Feedback(False, f"Give at least two tokens as rows of a 2-D array; got shape {X.shape}.")
    if not np.all(np.isfinite(X)):
        return Feedback(False, "Your tokens contain NaN or inf.")
    scores = X @ X.T  # (T, d) @ (d, T) -> (T, T)
    others = np.delete(scores[0], 0)
    best = int(np.argmax(others)) + 1
    if others.max() > scores[0, 0] + 1e-9:
        return Feedback(True, f"token 1 scores itself {scores[0, 0]:.3g} but token {best + 1} "
                              f"{scores[0, best]:.3g}. LayerNorm gives every token the same length, "
                              "and then (Cauchy-Schwarz) this can no longer happen.")
    return Feedback(False, f"token 1 still scores itself highest ({scores[0, 0]:.3g}; best other: "
                           f"{others.max():.3g}, token {best + 1}). Hint: x1 . x2 = |x1| |x2| cos(angle), "
                           "while x1 . x1 = |x1|^2. What must token 2's length be?")


def check_max_rank(answer) -> Feedback:
    """Exercise 3: the largest possible rank of W_q W_k^T for d_model = 512, d_k = 32."""
    return check_exact(answer, RANK_D_K,
                       hint="W_q W_k^T is (d_model, d_k) @ (d_k, d_model): every score goes through "
                            "a bottleneck in the middle. Which width is it?",
                       praise="The scores of this head can only depend on that many directions "
                              f"of the {RANK_D_MODEL}-dimensional tokens.")
