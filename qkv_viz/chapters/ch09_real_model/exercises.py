"""Chapter 9 exercises: two functions the reader writes (each head's effective tokens;
attention rollout through the layers).

Every checker takes the reader's answer (``None`` until they give one) and returns a
:class:`~qkv_viz.chapters.feedback.Feedback` that says what is wrong, never the answer.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.core.softmax import softmax
from qkv_viz.chapters.feedback import Feedback, check_function

# ---------------------------------------------------------------- 1. write effective_tokens


def _row_entropy(w, log=np.log) -> np.ndarray:
    """Each row's entropy, 0 log 0 taken as 0: (..., S) -> (...)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.where(w > 0, w * log(np.where(w > 0, w, 1.0)), 0.0).sum(axis=-1)


def _effective_tokens(weights) -> np.ndarray:
    """e^entropy of each row, averaged over the rows (queries): (..., T, S) -> (...)."""
    return np.exp(_row_entropy(np.asarray(weights, dtype=float))).mean(axis=-1)


def effective_tokens_cases(trace=None, seed=None) -> list:
    """Cases: the real ``trace``'s weights (L, H, T, T) if given; random heads (H, T, S) with
    T != S; causal heads (rows with exact zeros: 0 log 0 must count as 0); one-hot and uniform rows."""
    rng = np.random.default_rng(seed)
    cases = [] if trace is None else [(np.asarray(trace.weights),)]
    cases.append((softmax(2 * rng.normal(size=(3, 4, 6)), axis=-1),))  # (H, T, S) = (3, 4, 6)
    causal = np.exp(2 * rng.normal(size=(2, 5, 5))) * np.tri(5)  # (2, 5, 5): exact zeros above the diagonal
    cases.append((causal / causal.sum(axis=-1, keepdims=True),))
    one_hot, uniform = np.eye(4)[[2, 0, 3]], np.full((3, 4), 0.25)  # (3, 4) each
    cases.append((np.stack([one_hot, uniform]),))  # (2, 3, 4): 1 and 4 effective tokens
    return cases


def _diagnose_effective_tokens(got, want, case) -> str | None:
    (weights,) = case
    w = np.asarray(weights, dtype=float)
    got = np.asarray(got, dtype=float)
    if got.shape == w.shape[:-1]:
        return "you returned one number per row (query); average them over the rows: one number per head."
    if got.shape != want.shape:
        return None
    if np.isnan(got).any() and (w == 0).any():
        return ("NaN where a row has exact zeros (a causal head): 0 * log 0 is NaN in numpy, but it counts "
                "as 0 in the entropy. np.where(w > 0, w * np.log(w), 0) (in np.errstate) avoids it.")
    h = _row_entropy(w)  # (..., T)
    for value, note in [(h.mean(-1), "you returned the entropy; effective tokens is e to the entropy."),
                        (np.exp(h.mean(-1)), "you averaged the entropy over the rows, then took exp; take "
                                             "exp of each row's entropy first, then average."),
                        (np.exp(_row_entropy(w, np.log2)).mean(-1), "you used log2: e^entropy needs the "
                                                                    "natural log, np.log."),
                        (np.exp(-h).mean(-1), "a sign: the entropy is MINUS sum w log w (>= 0), so a "
                                              "one-hot row gives 1 and a uniform row S.")]:
        if np.allclose(got, value, atol=1e-6, equal_nan=True):
            return note
    return None


def check_effective_tokens(fn, trace=None, seed=None) -> Feedback:
    """The reader's ``fn(weights) -> (...)``: weights (..., T, S) -> e^entropy of each row,
    averaged over the rows; on the real ``trace`` (if given) and on made-up heads."""
    return check_function(fn, _effective_tokens, effective_tokens_cases(trace, seed), name="effective_tokens",
                          diagnose=_diagnose_effective_tokens, shape_hints=True, atol=1e-6,
                          praise="Right: 1 for a head that looks at one key, S for one that spreads evenly, "
                                 "on the real model and on made-up heads.")


# ---------------------------------------------------------------- 2. write rollout


def _rollout(weights, residual: bool = True, halve: bool = True, mean: bool = True,
             chain: bool = True, later_left: bool = True) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema, 2020): (L, H, T, T) -> (L, T, T), slice l is R_l.

    A_l = (mean over heads of W_l + I) / 2; R_0 = A_0, R_l = A_l R_{l-1}. The flags build
    the common mistakes for the diagnosis.
    """
    w = np.asarray(weights, dtype=float)
    T = w.shape[-1]
    a = w.mean(axis=1) if mean else w.sum(axis=1)  # (L, T, T): the heads averaged
    if residual:
        a = a + np.eye(T)
    if residual and halve:
        a = a / 2  # rows sum to 1 again
    out, r = [], np.eye(T)
    for a_l in a:
        r = (a_l @ r if later_left else r @ a_l) if chain else a_l
        out.append(r)
    return np.stack(out)


def rollout_cases(trace=None, seed=None) -> list:
    """Cases: the real ``trace``'s weights (L, H, T, T) if given, then random ones (L, H, T, T)
    with L >= 2 and H >= 2 (so the order of the product and mean-versus-sum show)."""
    rng = np.random.default_rng(seed)
    cases = [] if trace is None else [(np.asarray(trace.weights),)]
    for shape in [(3, 2, 4, 4), (2, 3, 5, 5)]:
        cases.append((softmax(2 * rng.normal(size=shape), axis=-1),))
    return cases


def _diagnose_rollout(got, want, case) -> str | None:
    (weights,) = case
    got = np.asarray(got, dtype=float)
    if got.shape == want.shape[1:]:
        return "you returned one (T, T) array; return R_l for every layer l, shape (L, T, T)."
    if got.shape == np.shape(weights):
        return "you kept the heads; average them first: one (T, T) matrix per layer."
    if got.shape != want.shape:
        return None
    mistakes = [(dict(residual=False), "you left out the residual: each layer's matrix is (mean of the heads + I) / 2."),
                (dict(halve=False), "you added I but did not halve: (mean + I) / 2 keeps every row summing to 1."),
                (dict(mean=False), "you summed the heads; average them (np.mean over the heads' axis)."),
                (dict(later_left=False), "the product is in the wrong order: R_l = A_l @ R_(l-1), the later layer "
                                         "on the left (row i of A_l mixes the rows below it)."),
                (dict(chain=False), "each slice is only its own layer's (mean + I) / 2: chain them, "
                                    "R_l = A_l @ R_(l-1).")]
    for flags, note in mistakes:
        if np.allclose(got, _rollout(weights, **flags), atol=1e-6):
            return note
    if not np.allclose(got.sum(-1), 1, atol=1e-6):
        return "the rows of R_l should sum to 1 (every factor's rows do)."
    return None


def check_rollout(fn, trace=None, seed=None) -> Feedback:
    """The reader's ``fn(weights) -> (L, T, T)``: attention rollout, slice l is R_l, on the real
    ``trace``'s weights (if given) and on made-up ones."""
    return check_function(fn, _rollout, rollout_cases(trace, seed), name="rollout",
                          diagnose=_diagnose_rollout, shape_hints=True, atol=1e-6,
                          praise="Right: R_l, heads averaged and the residual kept, layer on layer, on the real "
                                 "model and on made-up weights.")
