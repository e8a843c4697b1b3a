"""Worked solutions to chapter 9's exercises (outside the reading flow; tests run each one
through its checker)."""
from __future__ import annotations

import numpy as np


# 1. A row's entropy is -sum_j w_j ln w_j (0 ln 0 = 0: a causal row has exact zeros); e^entropy
#    is 1 for a one-hot row and S for a uniform one. Per head: the mean over its rows.
def effective_tokens(weights):
    """weights (..., T, S), rows summing to 1 -> (...,): e^entropy of each row, averaged over the T rows."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(weights > 0, weights * np.log(weights), 0.0)  # (..., T, S)
    entropy = -terms.sum(axis=-1)                                      # (..., T)
    return np.exp(entropy).mean(axis=-1)                               # (..., T) -> (...)


# 2. Each layer mixes the tokens: half through the heads (their mean weights), half through the
#    residual (I). R_l chains the layers, the later one on the left: R_l = A_l R_(l-1).
def rollout(weights):
    """weights (L, H, T, T) -> (L, T, T): slice l is the rollout R_l through layer l."""
    L, H, T, _ = weights.shape
    a = (weights.mean(axis=1) + np.eye(T)) / 2  # (L, T, T): heads averaged, the residual added
    r, out = np.eye(T), []
    for a_l in a:
        r = a_l @ r                              # (T, T) @ (T, T): layer l on top of the layers below
        out.append(r)
    return np.stack(out)                         # (L, T, T)
