"""Common attention mistakes, computed next to the right answer (chapter 8).

1. Weighting V with Q instead of with softmax(Q K^T / sqrt(d_k)).
2. Assuming K and V must be the same projection.
3. Fusing W_q, W_k, W_v into one matrix: exact, and timed here; splitting the
   fused result with the wrong layout in mind (blocks [Q | K | V] versus per head
   (n, H, 3, d_head)) is not.
4. Naive softmax overflowing (see ``qkv_viz.core.softmax.naive_softmax``).
5. "Bigger q . k is better": only differences count; large ones saturate softmax.

numpy only. The timing helper measures; tests never assert on its numbers.
"""
from __future__ import annotations

import time

import numpy as np

from qkv_viz.core.validate import as_array, as_rng, positive_int
from qkv_viz.core.attention import scaled_dot_product_attention
from qkv_viz.core.diagnostics import max_weight, softmax_grad_norm
from qkv_viz.core.projections import fuse_qkv, fused_qkv_projections, init_projection, qkv_projections
from qkv_viz.core.softmax import naive_softmax, softmax

# ---------------------------------------------------------------- 1. V weighted by Q


def weight_v_with_q(q, v) -> np.ndarray:
    """The bug: ``q`` used where the attention weights belong, ``q @ v``.

    Shapes: q (T, d_k), v (S, d_v) -> (T, d_v). It only runs when d_k == S;
    otherwise a ValueError names the shapes (numpy's own message is cryptic).
    """
    q = as_array("q", q, ndim=2)
    v = as_array("v", v, ndim=2)
    if q.shape[1] != v.shape[0]:
        raise ValueError(
            f"q @ v needs q's columns (d_k={q.shape[1]}) to equal v's rows (S={v.shape[0]}): "
            f"q has shape {q.shape}, v has shape {v.shape}")
    return q @ v  # (T, d_k) @ (S=d_k, d_v) -> (T, d_v)


def compare_weighting(q, k, v, scale=True) -> dict:
    """Right attention vs the ``q @ v`` bug on the same Q, K, V.

    Returns a dict: ``right`` and ``buggy`` outputs (T, d_v), the weights each
    one uses (``right_weights`` = softmax rows, ``buggy_weights`` = q itself),
    their row sums, the max absolute and relative (Frobenius) difference.
    """
    right, weights = scaled_dot_product_attention(q, k, v, scale=scale)  # (T, d_v), (T, S)
    buggy = weight_v_with_q(q, v)  # (T, d_v)
    q = np.asarray(q, dtype=float)
    return {
        "right": right, "buggy": buggy,
        "right_weights": weights, "buggy_weights": q,
        "right_row_sums": weights.sum(axis=-1), "buggy_row_sums": q.sum(axis=-1),
        "max_abs_diff": float(np.abs(right - buggy).max()),
        "rel_diff": float(np.linalg.norm(right - buggy) / np.linalg.norm(right)),
    }


# ---------------------------------------------------------------- 2. K and V roles


def kv_role_check(x, W_q, W_k, W_v, eps: float = 0.5, seed=0) -> dict:
    """Nudge W_k, then W_v, and see what each one changes.

    K only enters the scores, V only the weighted sum, so changing W_v leaves
    the weights untouched (exactly) while changing W_k moves them.
    x (n, d_model); W_q/W_k (d_model, d_k); W_v (d_model, d_v).
    Returns max absolute changes of weights and output for each nudge.
    """
    rng = as_rng(seed)
    q, k, v = qkv_projections(x, W_q, W_k, W_v)  # (n, d_k), (n, d_k), (n, d_v)
    out0, w0 = scaled_dot_product_attention(q, k, v)
    k1 = np.asarray(x) @ (W_k + eps * rng.standard_normal(np.shape(W_k)))  # (n, d_model) @ (d_model, d_k)
    v1 = np.asarray(x) @ (W_v + eps * rng.standard_normal(np.shape(W_v)))  # (n, d_model) @ (d_model, d_v)
    out_k, w_k = scaled_dot_product_attention(q, k1, v)
    out_v, w_v = scaled_dot_product_attention(q, k, v1)
    return {
        "nudge_W_k": {"weights": float(np.abs(w_k - w0).max()), "output": float(np.abs(out_k - out0).max())},
        "nudge_W_v": {"weights": float(np.abs(w_v - w0).max()), "output": float(np.abs(out_v - out0).max())},
    }


def match_carry_toy(n_types: int = 3, d_content: int = 2, seed=0):
    """Tokens whose vector is [type one-hot | content]: match on type, carry content.

    Returns ``x`` (n_types, n_types + d_content), a query ``x_q`` (1, same)
    looking for type 0, and the three projections: W_q = W_k read the type
    part (scaled by 4 so the match is sharp), W_v reads the content part.
    """
    n_types, d_content = positive_int("n_types", n_types), positive_int("d_content", d_content)
    rng = as_rng(seed)
    d_model = n_types + d_content
    x = np.concatenate([np.eye(n_types), rng.normal(size=(n_types, d_content))], axis=1)  # (n, d_model)
    x_q = np.zeros((1, d_model))
    x_q[0, 0] = 1.0  # "I want a type-0 token"; its content part is empty
    W_type = np.zeros((d_model, n_types))
    W_type[:n_types] = 4.0 * np.eye(n_types)  # picks the type part
    W_content = np.zeros((d_model, d_content))
    W_content[n_types:] = np.eye(d_content)  # picks the content part
    return x, x_q, W_type, W_type.copy(), W_content


def tied_vs_separate(x, x_q, W_q, W_k, W_v) -> dict:
    """Cross-attend from ``x_q`` over ``x`` with separate K, V and with V tied to K (W_v = W_k).

    Returns the weights (1, n) and outputs of both, plus ``target``: the
    content the query should retrieve when it matches perfectly.
    """
    q, k, v = (np.asarray(x_q) @ W_q, np.asarray(x) @ W_k, np.asarray(x) @ W_v)  # (1,d_k),(n,d_k),(n,d_v)
    out_sep, w_sep = scaled_dot_product_attention(q, k, v)
    out_tied, w_tied = scaled_dot_product_attention(q, k, k)  # V := K, the misconception
    return {"weights_separate": w_sep, "output_separate": out_sep,
            "weights_tied": w_tied, "output_tied": out_tied,
            "target": v[np.argmax(w_sep[0])]}


# ---------------------------------------------------------------- 3. fused projection


def fused_vs_separate(x, W_q, W_k, W_v) -> float:
    """Max absolute difference between three projections and one fused matmul + split."""
    separate = qkv_projections(x, W_q, W_k, W_v)
    fused = fused_qkv_projections(x, fuse_qkv(W_q, W_k, W_v), np.shape(W_q)[1], np.shape(W_v)[1])
    return float(max(np.abs(a - b).max() for a, b in zip(separate, fused)))


def split_fused_right(qkv, d: int):
    """Split x @ W_qkv (n, 3d) into Q, K, V: three consecutive column blocks, each (n, d)."""
    qkv = as_array("qkv", qkv, ndim=2)
    d = positive_int("d", d)
    if qkv.shape[1] != 3 * d:
        raise ValueError(f"qkv must have 3*d = {3 * d} columns, got shape {qkv.shape}")
    return tuple(np.split(qkv, 3, axis=-1))  # (n, 3d) -> 3 x (n, d)


def _per_head_input(name: str, a, n_heads) -> tuple[np.ndarray, int]:
    """``a`` as a 2-D float array whose width is 3 * n_heads * d_head; returns (a, d_head)."""
    a = as_array(name, a, ndim=2)
    n_heads = positive_int("n_heads", n_heads)
    if a.shape[1] % (3 * n_heads):
        raise ValueError(f"{name}'s width {a.shape[1]} (shape {a.shape}) is not 3 * n_heads = {3 * n_heads} "
                         f"times a head size")
    return a, a.shape[1] // (3 * n_heads)


def interleave_heads(W_qkv, n_heads: int) -> np.ndarray:
    """Reorder a block-layout fused matrix [W_q | W_k | W_v] (d_model, 3 H d_head) into the
    per-head layout (d_model, H, 3, d_head), flattened back to (d_model, 3 H d_head): for
    each head its q, then k, then v columns (how BLOOM and Megatron-LM store theirs)."""
    W_qkv, d_head = _per_head_input("W_qkv", W_qkv, n_heads)
    d_model, width = W_qkv.shape
    blocks = W_qkv.reshape(d_model, 3, n_heads, d_head)      # (d_model, 3, H, d_head)
    return blocks.transpose(0, 2, 1, 3).reshape(d_model, width)   # (d_model, H, 3, d_head) -> (d_model, 3 H d_head)


def split_per_head(qkv, n_heads: int):
    """Split a per-head fused result (n, 3 H d_head), laid out (n, H, 3, d_head), into
    q, k, v of shape (H, n, d_head) each (heads first, ready for attention)."""
    qkv, d_head = _per_head_input("qkv", qkv, n_heads)
    n, width = qkv.shape
    q, k, v = qkv.reshape(n, n_heads, 3, d_head).transpose(2, 1, 0, 3)   # (n, H, 3, d_head) -> (3, H, n, d_head)
    return q, k, v


def split_per_head_as_blocks(qkv, n_heads: int):
    """The bug: the block split ``np.split(qkv, 3, axis=-1)`` (then heads) applied to a
    per-head layout. Same shapes as :func:`split_per_head`, no error, wrong columns."""
    qkv, d_head = _per_head_input("qkv", qkv, n_heads)
    n, width = qkv.shape
    return tuple(a.reshape(n, n_heads, d_head).transpose(1, 0, 2)   # (n, H d_head) -> (H, n, d_head)
                 for a in np.split(qkv, 3, axis=-1))


def _time_once(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def time_fused_vs_separate(n: int = 512, d_model: int = 768, repeats: int = 7, seed=0) -> dict:
    """Median wall time (ms) of one fused matmul vs three separate ones.

    x (n, d_model); W_q, W_k, W_v (d_model, d_model); the fused matrix
    (d_model, 3 d_model) is built once, outside the timing. The two variants
    alternate inside each repeat so machine-load drift hits both alike. Raw
    ``@`` is timed (no input checks), float64, numpy's BLAS on this machine.
    Returns ``{"fused_ms", "separate_ms", "ratio" (separate / fused), "n",
    "d_model", "repeats"}``.
    """
    n, d_model, repeats = (positive_int(a, b) for a, b in (("n", n), ("d_model", d_model), ("repeats", repeats)))
    rng = as_rng(seed)
    x = rng.standard_normal((n, d_model))
    W_q, W_k, W_v = (init_projection(d_model, d_model, rng) for _ in range(3))
    W_qkv = fuse_qkv(W_q, W_k, W_v)  # (d_model, 3 d_model)
    fused = lambda: x @ W_qkv  # noqa: E731  (n, d_model) @ (d_model, 3 d_model) -> (n, 3 d_model)
    separate = lambda: (x @ W_q, x @ W_k, x @ W_v)  # noqa: E731  3 x (n, d_model) @ (d_model, d_model)
    fused(), separate()  # warm-up
    t_fused, t_sep = [], []
    for _ in range(repeats):
        t_fused.append(_time_once(fused))
        t_sep.append(_time_once(separate))
    f, s = float(np.median(t_fused)), float(np.median(t_sep))
    return {"fused_ms": f, "separate_ms": s, "ratio": s / f, "n": n, "d_model": d_model, "repeats": repeats}


# ---------------------------------------------------------------- 4. naive softmax


def overflow_sweep(top_logits, offsets=(-1.0, -2.0)) -> dict:
    """Naive vs stable softmax of [c, c + offsets...] for each c in ``top_logits``.

    The differences between the logits stay fixed, so the right answer is the
    same for every c. Returns ``top_logits`` (K,), ``naive_top`` and
    ``stable_top`` (K,): the weight each gives to the top logit (NaN where the
    naive one overflowed).
    """
    c = as_array("top_logits", top_logits, ndim=1)
    offsets = as_array("offsets", offsets, ndim=1)
    logits = np.concatenate([c[:, None], c[:, None] + offsets[None, :]], axis=1)  # (K, 1 + len(offsets))
    return {"top_logits": c, "naive_top": naive_softmax(logits)[:, 0], "stable_top": softmax(logits)[:, 0]}


# ---------------------------------------------------------------- 5. bigger scores


def saturation_sweep(scores, factors) -> dict:
    """Multiply one row of scores by each factor; softmax; measure sharpness.

    scores (S,), factors (K,) -> dict of ``factors``, ``weights`` (K, S),
    ``max_weight`` (K,) and ``grad_norm`` (K,), the Frobenius norm of the
    softmax Jacobian (0 = saturated: no gradient reaches the scores).
    """
    scores = as_array("scores", scores, ndim=1)
    factors = as_array("factors", factors, ndim=1)
    weights = softmax(factors[:, None] * scores[None, :])  # (K, 1) * (1, S) -> (K, S)
    return {"factors": factors, "weights": weights,
            "max_weight": max_weight(weights), "grad_norm": softmax_grad_norm(weights)}
