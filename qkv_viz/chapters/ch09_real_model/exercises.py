"""Chapter 9 exercises: two functions the reader writes (each head's effective tokens; every
head's share of a real layer's output).

Every checker takes the reader's answer (``None`` until they give one) and returns a
:class:`~qkv_viz.chapters.feedback.Feedback` that says what is wrong, never the answer.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.core.multihead import MultiHeadParams, split_heads
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


# ---------------------------------------------------------------- 2. write head_outputs


def _head_outputs(x, p: MultiHeadParams, n_heads: int, scale: bool = True, torch_layout: bool = False,
                  bias: bool = True) -> np.ndarray:
    """Each head's part of the layer's output, sum_j w_ij v_j W_o^h: (H, T, d_model).

    The flags build the common mistakes for the diagnosis.
    """
    W_q, W_k, W_v = (W.T if torch_layout else W for W in (p.W_q, p.W_k, p.W_v))
    b_q, b_k, b_v = (b if bias else 0.0 for b in (p.b_q, p.b_k, p.b_v))
    q = split_heads(x @ W_q + b_q, n_heads)  # (T, d_model) @ (d_model, H*d_k) -> (H, T, d_k)
    k = split_heads(x @ W_k + b_k, n_heads)  # (H, T, d_k)
    v = split_heads(x @ W_v + b_v, n_heads)  # (H, T, d_v)
    d_k = q.shape[-1]
    scores = q @ k.swapaxes(-1, -2) / (np.sqrt(d_k) if scale else 1.0)  # (H, T, d_k) @ (H, d_k, T) -> (H, T, T)
    W_o = p.W_o.reshape(n_heads, v.shape[-1], -1)  # (H*d_v, d_model) -> (H, d_v, d_model)
    return softmax(scores, axis=-1) @ v @ W_o  # (H, T, T) @ (H, T, d_v) @ (H, d_v, d_model) -> (H, T, d_model)


def head_outputs_cases(model=None, trace=None, seed=None) -> list:
    """Cases (x (T, d_model), params, n_heads): a real layer of ``model`` on ``trace`` if given,
    then small random layers with non-zero biases (T != d_k != H, so swapped axes show)."""
    rng = np.random.default_rng(seed)
    cases = []
    if model is not None and trace is not None:
        cases.append((np.asarray(trace.hidden_states[2]), model.layers[2].attn, model.config.n_heads))
    for T, H, d_k in [(5, 3, 4), (7, 2, 3)]:
        d = H * d_k
        W_q, W_k, W_v, W_o = rng.normal(0, 0.5, size=(4, d, d))
        b_q, b_k, b_v, b_o = rng.normal(0, 0.5, size=(4, d))
        cases.append((rng.normal(size=(T, d)), MultiHeadParams(W_q, W_k, W_v, W_o, b_q, b_k, b_v, b_o, H), H))
    return cases


def _diagnose_head_outputs(got, want, case) -> str | None:
    x, p, H = case
    got = np.asarray(got, dtype=float)
    if got.shape == want.shape[1:]:
        return ("you returned one (T, d_model) array: the heads already summed? Keep one slice per head, "
                "shape (H, T, d_model).")
    if got.shape == (want.shape[0], want.shape[1], want.shape[1]):
        return "you returned the attention weights (H, T, T); the question asks for what each head adds."
    if got.shape != want.shape:
        return None
    for shift, what in [(p.b_o, "b_o"), (p.b_o / H, "b_o / H")]:
        if shift is not None and np.allclose(got, want + shift, atol=1e-6):
            return (f"you added {what} to each head; b_o belongs to the layer: it is added once, to the sum "
                    "of the heads, not to any one head.")
    mistakes = [(dict(scale=False), "the scores were not divided by sqrt(d_k)."),
                (dict(torch_layout=True), "you transposed W_q, W_k, W_v: in the book's layout they are "
                                          "already (in, out), x @ W."),
                (dict(bias=False), "you left out b_q, b_k, b_v: the real model has biases on every projection.")]
    for flags, note in mistakes:
        if np.allclose(got, _head_outputs(x, p, H, **flags), atol=1e-6):
            return note
    return None


def check_head_outputs(fn, model=None, trace=None, seed=None) -> Feedback:
    """The reader's ``fn(x, p, n_heads) -> (H, T, d_model)``: each head's part of the attention
    output, on a real layer (if ``model`` and ``trace`` are given) and on random layers."""
    return check_function(fn, _head_outputs, head_outputs_cases(model, trace, seed), name="head_outputs",
                          diagnose=_diagnose_head_outputs, shape_hints=True, atol=1e-6,
                          praise="Every head's part is right: added up, with b_o, they are the layer's output.")
