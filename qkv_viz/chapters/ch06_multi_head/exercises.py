"""Chapter 6 exercises: split_heads, what each head writes through W_o, a whole multi-head forward; sizes.

Each ``check_*`` returns a ``Feedback``: right or wrong plus a precise hint, never the
answer. The code checkers run the reader's function on fresh random cases (a new
random generator on every call unless ``seed`` is given) against the package, through
``qkv_viz.chapters.feedback.check_function``.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.feedback import Feedback, check_exact, check_function
from qkv_viz.core.attention import scaled_dot_product_attention
from qkv_viz.core.config import AttentionConfig
from qkv_viz.core.multihead import MultiHeadParams, merge_heads, multi_head_attention, split_heads
from qkv_viz.core.sizes import param_count

GPT2_MEDIUM = AttentionConfig(d_model=1024, n_heads=16)  # exercises 4 and 5 (not used on the page)
HEAD_EX4 = 9


def _code(fn, reference, cases, name, diagnose) -> Feedback:
    """``check_function``, except that a result of the wrong shape is first explained by
    ``diagnose`` (an axis order, a missing step) before the generic shape message."""
    cases = list(cases)
    for i, case in enumerate(cases if callable(fn) else []):
        try:
            got = fn(*case)
        except Exception:  # noqa: BLE001 - check_function reports the reader's error precisely
            break
        if got is None:
            break
        want = reference(*case)
        if np.shape(got) != np.shape(want):
            note = diagnose(np.asarray(got), want, case)
            if note:
                return Feedback(False, f"On case {i + 1} of {len(cases)}: {note}")
            break
    return check_function(fn, reference, cases, name=name, diagnose=diagnose)


def _sizes(rng):
    """A random (T, H, d_k) with all three different, so a swapped axis always shows."""
    T, H, d_k = rng.choice(np.arange(2, 9), size=3, replace=False)
    return int(T), int(H), int(d_k)


# ---------------------------------------------------------------- exercise 1: split_heads
def split_cases(n: int = 5, seed=None):
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(n):
        T, H, d_k = _sizes(rng)
        cases.append((rng.normal(size=(T, H * d_k)), H))
    return cases


def _diagnose_split(got, want, case):
    x, H = case
    T, d_k = x.shape[0], x.shape[1] // H
    if got.shape != want.shape and got.shape == (T, H, d_k):
        return ("your result has shape (T, H, d_k): the reshape is right, now move the head axis "
                "to the front (transpose to (H, T, d_k)).")
    if got.shape != want.shape and sorted(got.shape) == sorted(want.shape):
        return (f"wrong axis order: you return shape {got.shape}, split_heads gives (H, T, d_k) = "
                f"{want.shape} for T={T}, H={H}, d_k={d_k}.")
    if got.shape == want.shape and np.allclose(got, x.reshape(H, T, d_k)):
        return ("you reshaped straight to (H, T, d_k): that cuts the token rows into groups instead of "
                "cutting each row's columns into heads. Reshape to (T, H, d_k) first, then transpose.")
    if got.shape == want.shape and np.allclose(got, x.reshape(T, d_k, H).transpose(2, 0, 1)):
        return ("each head got every H-th column (interleaved). Head i owns the consecutive columns "
                "i*d_k .. (i+1)*d_k - 1: reshape to (T, H, d_k), not (T, d_k, H).")
    return None


def check_split_heads(fn, seed=None) -> Feedback:
    """Exercise 1: ``fn(x, n_heads)`` turns x (T, H*d_k) into (H, T, d_k) like ``split_heads``."""
    return _code(fn, split_heads, split_cases(seed=seed), "your split_heads", _diagnose_split)


# ---------------------------------------------------------------- exercise 2: W_o, head by head
def head_contributions_reference(heads, W_o):
    """What each head writes into the output: (H, T, d_model), entry h = heads[h] @ W_o[h*d_v:(h+1)*d_v].

    heads (H, T, d_v), W_o (H*d_v, d_model). Summed over h, this is merge_heads(heads) @ W_o.
    """
    H, T, d_v = heads.shape
    blocks = W_o.reshape(H, d_v, W_o.shape[-1])  # (H*d_v, d_model) -> (H, d_v, d_model): row blocks
    return heads @ blocks  # (H, T, d_v) @ (H, d_v, d_model) -> (H, T, d_model)


def contribution_cases(n: int = 5, seed=None):
    """(heads, W_o) with H, T, d_v, d_model all different, so a swapped axis always shows."""
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(n):
        H, T, d_v, d_model = (int(v) for v in rng.choice(np.arange(2, 10), size=4, replace=False))
        cases.append((rng.normal(size=(H, T, d_v)), rng.normal(size=(H * d_v, d_model))))
    return cases


def _diagnose_contributions(got, want, case):
    heads, W_o = case
    H, T, d_v = heads.shape
    if got.shape == want.shape and np.allclose(got, want):
        return None
    if got.shape == (T, W_o.shape[1]):
        return ("you returned the summed output (T, d_model); return each head's part separately, "
                "stacked: (H, T, d_model).")
    if got.shape != want.shape:
        return None
    interleaved = np.stack([heads[h] @ W_o[h::H] for h in range(H)])  # rows h, h+H, h+2H, ...
    if np.allclose(got, interleaved):
        return (f"head h's rows of W_o are the consecutive block h*d_v .. (h+1)*d_v - 1 "
                f"(d_v = {d_v}), not every H-th row.")
    if np.allclose(got.sum(0), want.sum(0)) and not np.allclose(got, want):
        return "the sum over heads is right, but the parts are not each head's own: use head h with W_o's block h."
    return None


def check_head_contributions(fn, seed=None) -> Feedback:
    """Exercise 2: ``fn(heads, W_o)`` returns (H, T, d_model), head h's output times W_o's row block h."""
    return _code(fn, head_contributions_reference, contribution_cases(seed=seed), "your head_contributions",
                 _diagnose_contributions)


# ---------------------------------------------------------------- exercise 3: the whole forward
def forward_cases(n: int = 4, seed=None):
    """Self-attention cases (x, params, n_heads) with random biases, so forgetting one shows."""
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(n):
        T, H, d_k = _sizes(rng)
        d_model = H * d_k
        W = [rng.normal(scale=d_model ** -0.5, size=(d_model, d_model)) for _ in range(4)]
        b = [rng.normal(scale=0.5, size=d_model) for _ in range(4)]
        params = MultiHeadParams(*W, *b)
        cases.append((rng.normal(size=(T, d_model)), params, H))
    return cases


def _reference_output(x, params, n_heads):
    return multi_head_attention(x, x, params, n_heads)[0]  # (T, d_model)


def _diagnose_forward(got, want, case):
    x, p, H = case
    if got.shape != want.shape:
        return None
    unscaled = multi_head_attention(x, x, p, H, scale=False)[0]
    if np.allclose(got, unscaled):
        return "your output matches attention WITHOUT the 1/sqrt(d_k) factor: divide the scores by sqrt(d_k)."
    if np.allclose(got, multi_head_attention(x, x, p, 1)[0]):
        return "your output matches ONE head of width d_model: split Q, K and V into n_heads heads."
    q, k, v = (split_heads(x @ W + b, H) for W, b in ((p.W_q, p.b_q), (p.W_k, p.b_k), (p.W_v, p.b_v)))
    no_o = merge_heads(scaled_dot_product_attention(q, k, v)[0])  # (H, T, d_k) -> (T, H*d_k), no W_o
    if np.allclose(got, no_o):
        return "your output is the merged heads before the output projection: multiply by W_o and add b_o."
    if np.allclose(got, multi_head_attention(x, x, MultiHeadParams(p.W_q, p.W_k, p.W_v, p.W_o), H)[0]):
        return "your output matches the layer without biases: add b_q, b_k, b_v after the projections and b_o at the end."
    return None


def check_multi_head_forward(fn, seed=None) -> Feedback:
    """Exercise 3: ``fn(x, params, n_heads)`` returns multi-head self-attention's output (T, d_model)."""
    return _code(fn, _reference_output, forward_cases(seed=seed), "your multi-head forward",
                 _diagnose_forward)


# ---------------------------------------------------------------- exercises 4 and 5: sizes
def check_head_columns(answer) -> Feedback:
    """Exercise 4: ``(start, stop)`` of the columns of W_q that head 9 owns when
    d_model = 1024 is split over 16 heads (heads counted from 0, stop excluded)."""
    d_k = GPT2_MEDIUM.d_k
    return check_exact(answer, (HEAD_EX4 * d_k, (HEAD_EX4 + 1) * d_k),
                       hint="find d_k first; heads are counted from 0 and each owns d_k consecutive "
                            "columns, stop excluded as in a Python slice.")


def check_in_proj_params(answer) -> Feedback:
    """Exercise 5: the numbers in ``in_proj_weight`` plus ``in_proj_bias`` of
    ``torch.nn.MultiheadAttention(1024, 16)``."""
    return check_exact(answer, param_count(GPT2_MEDIUM, bias=True, include_output=False),
                       hint="in_proj_weight stacks W_q, W_k and W_v, each (d_model, d_model) in torch's "
                            "(out, in) layout; in_proj_bias holds one number per row of it. W_o is not "
                            "part of either.")
