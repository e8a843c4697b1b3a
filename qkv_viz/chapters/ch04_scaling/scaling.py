"""Chapter 4's measurements: why q . k grows with d_k and what softmax does then.

Everything is measured on seeded random vectors (numpy only), never assumed:
- ``score_variance``: variance of q . k over unit-variance q, k, against d_k
  (scaled and unscaled, each measured on its own samples);
- ``init_score_std``: the same through real projections X W_q, X W_k at init;
- ``softmax_vs_logit_scale``: softmax rows as the logits are multiplied up;
- ``diagnostics_vs_dk``: sharpness and gradient of attention rows against d_k;
- ``even_split_grad_norm``: the softmax Jacobian's norm for weight shared by m keys;
- ``weights_at_dk``: one small (T, S) example for the pictures.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.core.validate import as_array, as_rng, positive_int
from qkv_viz.core.attention import attention_scores, resolve_scale
from qkv_viz.core.diagnostics import summarize
from qkv_viz.core.projections import init_projection
from qkv_viz.core.softmax import softmax

DEFAULT_D_KS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def _d_ks(d_ks) -> np.ndarray:
    """Key widths as an int array, each >= 1."""
    d_ks = [positive_int("d_ks entry", d) for d in np.ravel(np.asarray(d_ks)).tolist()]
    if not d_ks:
        raise ValueError("d_ks must hold at least one key width")
    return np.array(d_ks)


def random_qk(d_k: int, T: int, S: int, seed=0):
    """Unit-variance Gaussian queries (T, d_k) and keys (S, d_k)."""
    rng = as_rng(seed)
    d_k, T, S = positive_int("d_k", d_k), positive_int("T", T), positive_int("S", S)
    return rng.normal(size=(T, d_k)), rng.normal(size=(S, d_k))


def score_variance(d_ks=DEFAULT_D_KS, n_samples: int = 4000, seed=0) -> dict:
    """Measured variance of q . k (unscaled) and of q . k / sqrt(d_k) (scaled).

    For each d_k, ``n_samples`` independent pairs q, k ~ N(0, I_{d_k}) for the
    unscaled curve and *fresh* pairs for the scaled one, so each curve is its
    own measurement (the chapter's notebook writes this loop out in numpy).
    Theory: Var(q . k) = d_k, so Var(scaled) = 1.
    Returns dict d_k (K,), unscaled (K,), scaled (K,).
    """
    d_ks, n = _d_ks(d_ks), positive_int("n_samples", n_samples)
    rng = as_rng(seed)
    unscaled, scaled = np.empty(len(d_ks)), np.empty(len(d_ks))
    def dots(d_k):  # q and k drawn one after the other: the same numbers as one (2, n, d_k) draw,
        q = rng.normal(size=(n, d_k))  # in two blocks half as large (a kernel keeps less memory)
        k = rng.normal(size=(n, d_k))  # n independent pairs, unit-variance entries
        return np.sum(q * k, axis=-1)  # (n, d_k) * (n, d_k) -> (n,) one q . k per pair

    for i, d_k in enumerate(d_ks):
        unscaled[i] = dots(d_k).var()
        scaled[i] = (dots(d_k) / np.sqrt(d_k)).var()  # fresh pairs for the scaled curve
    return {"d_k": d_ks, "unscaled": unscaled, "scaled": scaled}


def init_score_std(d_ks=DEFAULT_D_KS, d_model: int = 256, n: int = 64, seed=0) -> dict:
    """Spread (std) of the scores Q K^T at initialisation, through real projections.

    X (n, d_model) has unit-variance entries; W_q, W_k come from ``init_projection``
    (std 1/sqrt(d_model)), so Q and K entries have variance about 1.
    Returns dict d_k (K,), unscaled (K,), scaled (K,): std over all n*n scores,
    each measured on the scores ``attention_scores`` returns.
    """
    d_ks = _d_ks(d_ks)
    d_model, n = positive_int("d_model", d_model), positive_int("n", n)
    rng = as_rng(seed)
    x = rng.normal(size=(n, d_model))
    unscaled, scaled = np.empty(len(d_ks)), np.empty(len(d_ks))
    for i, d_k in enumerate(d_ks):
        q = x @ init_projection(d_model, d_k, rng)  # (n, d_model) @ (d_model, d_k) -> (n, d_k)
        k = x @ init_projection(d_model, d_k, rng)  # (n, d_model) @ (d_model, d_k) -> (n, d_k)
        unscaled[i] = attention_scores(q, k, scale=False).std()  # (n, n) scores
        scaled[i] = attention_scores(q, k, scale=True).std()
    return {"d_k": d_ks, "unscaled": unscaled, "scaled": scaled}


def even_split_grad_norm(m) -> np.ndarray:
    """Frobenius norm of diag(p) - p p^T when p puts 1/m on each of m keys: sqrt(m - 1) / m.

    0 for m = 1 (one-hot), largest (0.5) at m = 2, then falling like 1/sqrt(m):
    the reason the softmax gradient has a hump between uniform and one-hot rows.
    """
    m = as_array("m", m, min_ndim=0)
    if np.any(m < 1):
        raise ValueError(f"m must be >= 1 (number of keys sharing the weight), got {m.tolist()}")
    return np.sqrt(m - 1) / m


def softmax_vs_logit_scale(multipliers, S: int = 8, n_rows: int = 256, seed=0) -> dict:
    """Softmax of ``c * z`` for unit-variance logits z (n_rows, S), for each c.

    c is the logits' standard deviation. Returns dict c (M,) and the row
    means of max_weight, entropy, effective_tokens, grad_norm, each (M,).
    """
    c = as_array("multipliers", multipliers, ndim=1)
    if np.any(c < 0):
        raise ValueError(f"multipliers must be >= 0, got {c.tolist()}")
    z = as_rng(seed).normal(size=(positive_int("n_rows", n_rows), positive_int("S", S)))
    rows = [summarize(ci * z, softmax(ci * z)) for ci in c]
    out = {key: np.array([r[key] for r in rows])
           for key in ("max_weight", "entropy", "effective_tokens", "grad_norm")}
    out["c"] = c
    return out


def weights_at_dk(d_k: int, T: int = 8, S: int = 8, seed=0, scale=True):
    """(scores, weights), each (T, S), for unit-variance q, k of width d_k."""
    q, k = random_qk(d_k, T, S, seed)
    scores = attention_scores(q, k, scale)  # (T, d_k) @ (d_k, S) -> (T, S), scaled or not
    return scores, softmax(scores)


def diagnostics_vs_dk(d_ks=DEFAULT_D_KS, T: int = 32, S: int = 32, seed=0, scale=True) -> dict:
    """``summarize`` of random attention rows for each d_k.

    Returns dict d_k (K,) and score_std, max_weight, entropy,
    effective_tokens, grad_norm, each (K,) (means over the T rows).
    """
    d_ks = _d_ks(d_ks)
    resolve_scale(scale, 1)  # validate early
    rows = []
    for d_k in d_ks:
        scores, weights = weights_at_dk(int(d_k), T, S, seed, scale)
        rows.append(summarize(scores, weights))
    out = {key: np.array([r[key] for r in rows]) for key in rows[0]}
    out["d_k"] = d_ks
    return out


def fit_loglog_slope(x, y) -> float:
    """Slope of log(y) against log(x) by least squares (2 = quadratic, 1 = linear)."""
    x, y = as_array("x", x, ndim=1), as_array("y", y, ndim=1)
    if x.shape != y.shape or np.any(x <= 0) or np.any(y <= 0):
        raise ValueError(f"x {x.shape} and y {y.shape} must have the same shape and be > 0")
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])
