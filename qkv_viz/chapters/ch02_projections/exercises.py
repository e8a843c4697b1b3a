"""Chapter 2 exercises: write the projections, a rival longer than the token itself, count a head's blind directions.

Each ``check_*`` returns a ``Feedback`` (``qkv_viz.chapters.feedback``): right or
wrong with a hint that never gives the answer away; ``None`` means "no answer yet".
Worked solutions: ``qkv_viz.chapters.ch02_projections.solutions``.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.core.projections import qkv_projections
from qkv_viz.chapters.feedback import Feedback, check_close, check_exact, check_function, no_answer

NAMES = ("Q", "K", "V")
RIVAL_X1, RIVAL_ANGLE_DEG = np.array([3.0, 4.0]), 60.0   # exercise 2: token 1, and the angle to token 2
RANK_D_MODEL, RANK_D_K = 512, 64   # exercise 3's head: d_model = 512, d_k = 64


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


def check_rival_length(answer) -> Feedback:
    """Exercise 2: no projections, token 1 is x1 = (3, 4); a token x2 points RIVAL_ANGLE_DEG
    away from it. The smallest length |x2| above which x1 . x2 > x1 . x1."""
    norm_x1 = float(np.linalg.norm(RIVAL_X1))
    expected = norm_x1 / np.cos(np.deg2rad(RIVAL_ANGLE_DEG))  # |x1| |x2| cos(angle) = |x1|^2
    return check_close(answer, expected,
                       hint="write both scores with lengths and the angle: x1 . x2 = |x1| |x2| cos(angle), "
                            "x1 . x1 = |x1|^2. Where are they equal?",
                       praise="Longer than that, and token 1 prefers x2 to itself. After LayerNorm every "
                              "token has the same length, so cos(angle) <= 1 rules this out (Cauchy-Schwarz).")


def check_blind_directions(answer) -> Feedback:
    """Exercise 3: for d_model = 512, d_k = 64, the least number of independent directions x with
    x W_q W_k^T = 0 (directions the head's scores cannot see): d_model minus the largest rank."""
    return check_exact(answer, RANK_D_MODEL - RANK_D_K,
                       hint="W_q W_k^T is (d_model, d_k) @ (d_k, d_model): every score goes through "
                            "a bottleneck in the middle. How many directions can get through it, "
                            "and how many are there in all?",
                       praise="This head's scores depend on at most d_k directions of the "
                              f"{RANK_D_MODEL}-dimensional tokens; it is blind to all the others.")
