"""Chapter 6 exercises: batched multi-head attention (checked against torch), what each head writes through W_o, one matrix W_v W_o per head; one head's weights from torch's packed in_proj_weight; one head of the toy picks the cat.

Each ``check_*`` returns a ``Feedback``: right or wrong plus a precise hint, never the
answer. The code checkers run the reader's function on fresh random cases (a new
random generator on every call unless ``seed`` is given) against the package, through
``qkv_viz.chapters.feedback.check_function``.
"""
from __future__ import annotations

import numpy as np
import torch

from qkv_viz.chapters.feedback import AnswerError, Feedback, as_array, check_function, no_answer
from qkv_viz.core.multihead import split_heads



def _code(fn, reference, cases, name, diagnose) -> Feedback:
    """``check_function`` with the chapter's diagnosis, asked also when a shape is wrong (an axis
    order, a missing step) before the generic shape message."""
    return check_function(fn, reference, cases, name=name, diagnose=diagnose, shape_hints=True)


def _sizes(rng):
    """A random (T, H, d_k) with all three different, so a swapped axis always shows."""
    T, H, d_k = rng.choice(np.arange(2, 9), size=3, replace=False)
    return int(T), int(H), int(d_k)


# ---------------------------------------------------------------- exercise 1: batched, torch's layout
def batched_mha_reference(x, W_q, W_k, W_v, W_o, n_heads):
    """``torch.nn.MultiheadAttention`` (batch first, no biases, float64) with our weights:
    x (B, T, d_model) -> output (B, T, d_model)."""
    d_model = x.shape[-1]
    mha = torch.nn.MultiheadAttention(d_model, n_heads, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():   # torch's nn.Linear layout (out, in) is the transpose of ours
        mha.in_proj_weight.copy_(torch.from_numpy(np.concatenate([W_q, W_k, W_v], axis=1).T))
        mha.out_proj.weight.copy_(torch.from_numpy(np.ascontiguousarray(W_o.T)))
        xt = torch.from_numpy(np.ascontiguousarray(x))
        return mha(xt, xt, xt, need_weights=False)[0].numpy()


def batched_cases(n: int = 4, seed=None):
    """Random (x (B, T, d_model), W_q, W_k, W_v, W_o, H) with B >= 2 and B, T, H, d_k all different."""
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(n):
        B, T, H, d_k = (int(v) for v in rng.choice(np.arange(2, 8), size=4, replace=False))
        d_model = H * d_k
        W = [rng.normal(size=(d_model, d_model)) / np.sqrt(d_model) for _ in range(4)]
        cases.append((rng.normal(size=(B, T, d_model)), *W, H))
    return cases


def _batched_variant(x, W_q, W_k, W_v, W_o, H, scale=None, split=None, merge=None):
    """Our numpy version, optionally with one typical mistake (used to name it)."""
    B, T, d_model = x.shape
    d_k = d_model // H
    split = split or (lambda a: a.reshape(B, T, H, d_k).transpose(0, 2, 1, 3))  # (B, T, H*d_k) -> (B, H, T, d_k)
    merge = merge or (lambda a: a.transpose(0, 2, 1, 3).reshape(B, T, d_model))  # (B, H, T, d_k) -> (B, T, H*d_k)
    q, k, v = split(x @ W_q), split(x @ W_k), split(x @ W_v)
    scores = q @ k.swapaxes(-1, -2) * (1 / np.sqrt(d_k) if scale is None else scale)   # (B, H, T, T)
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    return merge(w @ v) @ W_o                                                         # (B, T, d_model)


def _diagnose_batched(got, want, case):
    x, W_q, W_k, W_v, W_o, H = case
    B, T, d_model = x.shape
    d_k = d_model // H
    if got.shape == (B, H, T, d_k):
        return ("your result has shape (B, H, T, d_k): merge the heads back (transpose to (B, T, H, d_k), "
                "reshape to (B, T, d_model)) and multiply by W_o.")
    if got.shape != want.shape:
        return None
    mistakes = {
        "you divided the scores by sqrt(d_model); each head divides by its own sqrt(d_k) = sqrt(d_model / H).":
            dict(scale=1 / np.sqrt(d_model)),
        "the scores were not divided by sqrt(d_k).": dict(scale=1.0),
        "you reshaped straight to (B, H, T, d_k): that cuts the token rows into groups. Reshape to "
        "(B, T, H, d_k) first, then swap axes 1 and 2.": dict(split=lambda a: a.reshape(B, H, T, d_k)),
        "the merge reshaped (B, H, T, d_k) straight to (B, T, d_model): swap axes 1 and 2 back first.":
            dict(merge=lambda a: a.reshape(B, T, d_model)),
    }
    for note, mistake in mistakes.items():
        if np.allclose(got, _batched_variant(*case, **mistake)):
            return note
    return None


def check_batched_mha(fn, seed=None) -> Feedback:
    """Exercise 1: ``fn(x, W_q, W_k, W_v, W_o, n_heads)``, x (B, T, d_model) -> (B, T, d_model),
    equals ``torch.nn.MultiheadAttention`` (no biases) with those weights, on batches of 2 or more."""
    return check_function(fn, batched_mha_reference, batched_cases(seed=seed), name="your batched_mha",
                          diagnose=_diagnose_batched, shape_hints=True,
                          praise="It agrees with torch.nn.MultiheadAttention on every batch.")


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


# ---------------------------------------------------------------- exercise 3: one matrix per head
def fold_ov_reference(W_v, W_o, n_heads):
    """(H, d_model, d_model): head h's W_v^(h) W_o^(h), columns block h of W_v times rows block h of W_o."""
    d_v = W_v.shape[1] // n_heads
    v_blocks = split_heads(W_v, n_heads)  # (d_model, H*d_v) -> (H, d_model, d_v)
    o_blocks = W_o.reshape(n_heads, d_v, W_o.shape[1])  # (H*d_v, d_model) -> (H, d_v, d_model)
    return v_blocks @ o_blocks  # (H, d_model, d_v) @ (H, d_v, d_model) -> (H, d_model, d_model)


def fold_cases(n: int = 4, seed=None):
    """(W_v, W_o, n_heads) with d_v != d_model / H sometimes, so the reader must read d_v from the shapes."""
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(n):
        T, H, d_v = _sizes(rng)
        d_model = int(rng.choice([d for d in range(3, 13) if d != H * d_v]))
        cases.append((rng.normal(size=(d_model, H * d_v)), rng.normal(size=(H * d_v, d_model)), H))
    return cases


def _diagnose_fold(got, want, case):
    W_v, W_o, H = case
    if got.shape == (W_v.shape[0], W_o.shape[1]):
        return "you returned W_v @ W_o, the sum over heads; return each head's product separately, stacked."
    if got.shape != want.shape:
        return None
    d_v = W_v.shape[1] // H
    if np.allclose(got, np.stack([W_v[:, h::H] @ W_o[h::H] for h in range(H)])):
        return f"head h's columns of W_v (and rows of W_o) are the consecutive block h*d_v .. (h+1)*d_v - 1 (d_v = {d_v})."
    if np.allclose(got.sum(0), want.sum(0)):
        return "the sum over heads is right, but each part must pair head h's columns of W_v with head h's rows of W_o."
    return None


def check_fold_ov(fn, seed=None) -> Feedback:
    """Exercise 3: ``fn(W_v, W_o, n_heads)`` returns the H matrices W_v^(h) W_o^(h), (H, d_model, d_model)."""
    return _code(fn, fold_ov_reference, fold_cases(seed=seed), "your fold_ov", _diagnose_fold)


# ---------------------------------------------------------------- exercise 4: one head from torch's packed weight
def head_from_in_proj_reference(in_proj_weight, n_heads, h):
    """Head h's (W_q^(h), W_k^(h), W_v^(h)), each (d_model, d_k) in the book's ``x @ W`` layout, from
    torch's packed ``in_proj_weight`` (3*d_model, d_model): W_q, W_k, W_v stacked, each (out, in)."""
    d_k = in_proj_weight.shape[1] // n_heads
    rows = slice(h * d_k, (h + 1) * d_k)              # head h's output rows inside each of the three
    return tuple(np.ascontiguousarray(W[rows].T)      # (d_k, d_model) -> (d_model, d_k)
                 for W in np.split(in_proj_weight, 3))


def in_proj_cases(n: int = 4, seed=None):
    """(in_proj_weight (3*d_model, d_model), H, h) with H != d_k and 1 <= h < H, so an offset forgotten,
    a head counted from 1 or a missing transpose always shows."""
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(n):
        H, d_k = (int(v) for v in rng.choice(np.arange(2, 7), size=2, replace=False))
        d_model = H * d_k
        cases.append((rng.normal(size=(3 * d_model, d_model)), H, int(rng.integers(1, H))))
    return cases


def _diagnose_in_proj(got, want, case):
    W, H, h = case
    d_model = W.shape[1]
    d_k = d_model // H
    if not isinstance(got, tuple) or len(got) != 3:
        return None
    if all(g.shape == (d_k, d_model) for g in got):
        return ("each of your matrices is (d_k, d_model), torch's (out, in) layout: transpose it to this "
                "chapter's (d_model, d_k), used as x @ W.")
    if any(g.shape != w.shape for g, w in zip(got, want)):
        return None
    if all(np.allclose(g, want[0]) for g in got):
        return ("you returned head h's queries three times: W_k's rows start at row d_model of "
                "in_proj_weight and W_v's at 2*d_model.")
    per_head = [W[3 * h * d_k + i * d_k: 3 * h * d_k + (i + 1) * d_k].T for i in range(3)]
    if all(np.allclose(g, p) for g, p in zip(got, per_head)):
        return ("torch does not pack q, k, v head by head: all of W_q comes first (rows 0 .. d_model - 1), "
                "then all of W_k, then all of W_v; head h is a block of d_k rows inside each.")
    for other in (h - 1, h + 1):
        if 0 <= other < H and all(np.allclose(g, w) for g, w in
                                  zip(got, head_from_in_proj_reference(W, H, other))):
            return f"you returned head {other}'s block, not head {h}'s: heads are counted from 0."
    return None


def check_head_from_in_proj(fn, seed=None) -> Feedback:
    """Exercise 4: ``fn(in_proj_weight, n_heads, h)`` returns head h's (W_q^(h), W_k^(h), W_v^(h)),
    each (d_model, d_k) in the book's layout."""
    return check_function(fn, head_from_in_proj_reference, in_proj_cases(seed=seed),
                          name="your head_from_in_proj", diagnose=_diagnose_in_proj, shape_hints=True,
                          returns=("W_q^(h)", "W_k^(h)", "W_v^(h)"),
                          praise="It cuts torch's packed matrix exactly as MultiheadAttention's forward does.")


# ---------------------------------------------------------------- exercise 5: one head picks the cat
TOY_TOKENS = ("cat", "sat", "mat")
TOY_FEATURES = ("animal", "place", "verb", "colour", "who", "where")
TOY_X = np.array([[1., 0, 0, 1, 0, 0], [0., 0, 1, 0, 0, 0], [0., 1, 0, -1, 0, 0]])  # the page's cat, sat, mat
TOY_W_K = np.zeros((6, 2)); TOY_W_K[0, 0] = TOY_W_K[1, 1] = 1   # key column 0: animal, column 1: place
TOY_W_V = np.zeros((6, 2)); TOY_W_V[3] = 1                       # both value columns: the colour
TOY_W_O = np.zeros((2, 6)); TOY_W_O[0, 4] = TOY_W_O[1, 5] = 1   # column 0 -> "who", column 1 -> "where"
CAT_TARGET = 0.9


def one_head_sat(W_q):
    """The toy as ONE head of width 2 with the reader's W_q (6, 2): "sat"'s weights (3,) and output (6,)."""
    q = TOY_X[1] @ W_q                                  # (6,) @ (6, 2) -> (2,): "sat"'s query
    K, V = TOY_X @ TOY_W_K, TOY_X @ TOY_W_V             # (3, 2) each
    scores = K @ q / np.sqrt(2)                         # (3,)
    w = np.exp(scores - scores.max())
    w /= w.sum()
    return w, (w @ V) @ TOY_W_O                         # (3,), (2,) @ (2, 6) -> (6,)


def best_where_miss(w_cat, w_mat):
    """RMS error of the best linear "where" (any W_o and bias) over the four colourings (+-1, +-1) when one
    head passes the colours as m = w_cat c_cat + w_mat c_mat: regressing c_mat on m leaves w_cat / |w|."""
    return abs(w_cat) / np.hypot(w_cat, w_mat)


def check_one_head_for_the_cat(W_q) -> Feedback:
    """Exercise 5: a (6, 2) W_q with which one head gives "sat" at least 0.9 weight on "cat"."""
    if W_q is None:
        return no_answer()
    try:
        W, _ = as_array(W_q)
    except AnswerError as exc:
        return Feedback(False, f"W_q_cat {exc}; give a (6, 2) array of numbers.")
    if W.shape != (6, 2):
        return Feedback(False, f"W_q_cat has shape {W.shape}; it must be (d_model, 2) = (6, 2): one row per "
                               "feature, one column per query dimension.")
    if not np.all(np.isfinite(W)):
        return Feedback(False, "W_q_cat holds inf or nan; use finite numbers.")
    w, out = one_head_sat(W)
    cat, mat = w[0], w[2]
    if cat >= CAT_TARGET:
        miss = best_where_miss(cat, mat)
        return Feedback(True, f"'sat' puts {cat:.2f} of its weight on the cat and {mat:.2f} on the mat. With the "
                              f"page's W_o it writes who {out[4]:+.2f} and where {out[5]:+.2f}. No W_o does better "
                              f"for 'where': over the four colourings the head passes the colours only as "
                              f"m = {cat:.2f} c_cat + {mat:.2f} c_mat, so the best W_o still misses the mat's colour "
                              f"by {miss:.2f} (RMS; always writing 0 misses by 1). The mat's colour is lost. "
                              "One head, one row, one mixture.")
    if not np.any(W[2]):
        return Feedback(False, "'sat' has one feature, 'verb', so row 2 of W_q is its whole query; "
                               "your row 2 is zero, so every key scores 0.")
    if np.isclose(cat, mat):
        return Feedback(False, f"'sat' weighs the cat and the mat the same ({cat:.2f} each): its query scores "
                               "key column 0 (animal) and key column 1 (place) alike. Make column 0 of row 2 "
                               "larger than column 1.")
    if mat > cat:
        return Feedback(False, f"'sat' prefers the mat ({mat:.2f} against {cat:.2f}): key column 1 means "
                               "'place', column 0 'animal'.")
    return Feedback(False, f"'sat' leans to the cat, but only {cat:.2f} (0.9 wanted): its other keys score 0, "
                           "so the cat's score must be larger. Scale up your row 2.")
