"""Multi-head attention: one big W_q, W_k, W_v sliced into heads, and W_o.

Weights are stored the way the maths is written (``Q = X W_q``), so
``W_q`` is (d_model, n_heads * d_k); torch's ``nn.Linear`` stores the
transpose. Head h uses columns ``h*d_k : (h+1)*d_k`` of W_q and W_k.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .validate import as_array, as_rng, index_int, positive_int
from .attention import as_mask, check_mask, scaled_dot_product_attention
from .config import AttentionConfig, as_config
from .projections import init_projection, project


@dataclass
class MultiHeadParams:
    """The weights of one multi-head attention layer, in the book's ``x @ W`` layout.

    Shapes: W_q (d_model, H d_k), W_k (d_kv, H d_k), W_v (d_kv, H d_v),
    W_o (H d_v, d_model); biases b_q (H d_k,), b_k (H d_k,), b_v (H d_v,),
    b_o (d_model,) or None. d_kv is the key/value input width (= d_model for
    self-attention). ``n_heads`` (H) is how many heads the columns are split
    into; ``init_multihead_params`` and the bridges record it, so
    ``multi_head_attention`` can refuse a different count. None = unknown
    (then ``multi_head_attention`` needs ``n_heads``).
    """

    W_q: np.ndarray
    W_k: np.ndarray
    W_v: np.ndarray
    W_o: np.ndarray
    b_q: np.ndarray | None = None
    b_k: np.ndarray | None = None
    b_v: np.ndarray | None = None
    b_o: np.ndarray | None = None
    n_heads: int | None = None

    def __post_init__(self):
        if self.n_heads is not None:
            self.n_heads = positive_int("n_heads", self.n_heads)


def init_multihead_params(config: AttentionConfig, seed=None, d_kv: int | None = None) -> MultiHeadParams:
    """Random weights for ``config`` (biases zero when ``config.bias``).

    Shapes as in ``MultiHeadParams`` with H = config.n_heads; ``d_kv``
    (default d_model) is the key/value input width for cross-attention.
    """
    c = as_config(config)
    rng = as_rng(seed)
    d_kv = c.d_model if d_kv is None else positive_int("d_kv", d_kv)
    zeros = (lambda n: np.zeros(n)) if c.bias else (lambda n: None)
    return MultiHeadParams(
        W_q=init_projection(c.d_model, c.n_heads * c.d_k, rng),
        W_k=init_projection(d_kv, c.n_heads * c.d_k, rng),
        W_v=init_projection(d_kv, c.n_heads * c.d_v, rng),
        W_o=init_projection(c.n_heads * c.d_v, c.d_model, rng),
        b_q=zeros(c.n_heads * c.d_k), b_k=zeros(c.n_heads * c.d_k),
        b_v=zeros(c.n_heads * c.d_v), b_o=zeros(c.d_model), n_heads=c.n_heads)


def _divisors(n: int) -> list:
    return [d for d in range(1, n + 1) if n % d == 0]


def _check_heads_divide(what: str, shape: tuple, n_heads: int):
    if shape[-1] % n_heads:
        raise ValueError(
            f"{what} has shape {shape}: its last axis ({shape[-1]} columns) does not split into "
            f"n_heads={n_heads} equal heads. Pick n_heads among the divisors of {shape[-1]}: "
            f"{_divisors(shape[-1])[:12]}")


def split_heads(x, n_heads: int) -> np.ndarray:
    """(..., n, H*d) -> (..., H, n, d): head h gets columns h*d : (h+1)*d."""
    x = as_array("x", x, min_ndim=2)
    n_heads = positive_int("n_heads", n_heads)
    _check_heads_divide("x", x.shape, n_heads)
    d = x.shape[-1] // n_heads
    x = x.reshape(*x.shape[:-1], n_heads, d)  # (..., n, H*d) -> (..., n, H, d)
    return np.swapaxes(x, -2, -3)  # (..., n, H, d) -> (..., H, n, d)


def merge_heads(x) -> np.ndarray:
    """(..., H, n, d) -> (..., n, H*d): the concatenation of the heads."""
    x = as_array("x", x, min_ndim=3)
    x = np.swapaxes(x, -2, -3)  # (..., H, n, d) -> (..., n, H, d)
    return x.reshape(*x.shape[:-2], x.shape[-2] * x.shape[-1])  # -> (..., n, H*d)


def head_columns(W, h: int, n_heads: int) -> np.ndarray:
    """Head h's slice of a big projection: columns h*d : (h+1)*d of W.

    Shapes: W (d_in, H*d) -> (d_in, d), with d = W's columns / n_heads.
    """
    W = as_array("W", W, ndim=2)
    h, n_heads = index_int("h", h), positive_int("n_heads", n_heads)
    if not 0 <= h < n_heads:
        raise ValueError(f"head index h={h} is out of range: with n_heads={n_heads} the heads are "
                         f"numbered 0..{n_heads - 1}")
    _check_heads_divide("W", W.shape, n_heads)
    d = W.shape[1] // n_heads
    return W[:, h * d:(h + 1) * d]  # (d_in, H*d) -> (d_in, d)


def _resolve_heads(params, n_heads) -> int:
    if not isinstance(params, MultiHeadParams):
        raise TypeError(
            f"params must be a MultiHeadParams, got {type(params).__name__}: {params!r:.80}. "
            f"Build one with init_multihead_params(AttentionConfig(...)) or "
            f"MultiHeadParams(W_q=..., W_k=..., W_v=..., W_o=..., n_heads=...)")
    own = None if params.n_heads is None else positive_int("params.n_heads", params.n_heads)
    if n_heads is None:
        if own is None:
            raise ValueError("n_heads is needed: these params do not record their head count "
                             "(params.n_heads is None); pass n_heads=... or set params.n_heads")
        return own
    n_heads = positive_int("n_heads", n_heads)
    if own is not None and n_heads != own:
        raise ValueError(f"n_heads={n_heads} disagrees with the params, which were built for {own} heads "
                         f"(params.n_heads={own}); leave n_heads out or pass {own}")
    return n_heads


def _check_params(p: MultiHeadParams, H: int):
    """Check that the four matrices fit together and split into H heads."""
    W_q, W_k, W_v, W_o = (as_array(f"params.{n}", getattr(p, n), ndim=2) for n in ("W_q", "W_k", "W_v", "W_o"))
    if W_q.shape[1] != W_k.shape[1]:
        raise ValueError(f"params.W_q {W_q.shape} and params.W_k {W_k.shape} must have the same "
                         f"number of columns (H d_k) so that q . k is defined")
    if W_k.shape[0] != W_v.shape[0]:
        raise ValueError(f"params.W_k {W_k.shape} and params.W_v {W_v.shape} must have the same "
                         f"number of rows (d_kv): both read x_kv")
    if W_o.shape[0] != W_v.shape[1]:
        raise ValueError(f"params.W_o {W_o.shape} must have as many rows as params.W_v {W_v.shape} "
                         f"has columns (H d_v): it reads the concatenated heads")
    _check_heads_divide("params.W_q", W_q.shape, H)
    _check_heads_divide("params.W_v", W_v.shape, H)


def _head_mask(mask, x_q_ndim: int, scores_shape: tuple) -> np.ndarray:
    """A mask for (..., T, S) or (..., H, T, S) with a head axis where it lacks one."""
    mask = as_mask(mask)
    shown = mask.shape
    if mask.ndim >= 3 and mask.ndim == x_q_ndim:  # (..., T, S) per batch item -> (..., 1, T, S) for all heads
        mask = np.expand_dims(mask, -3)
    try:
        return check_mask(mask, scores_shape)
    except ValueError:
        T, S, lead = *scores_shape[-2:], scores_shape[:-3]
        per_item = f"{lead + (T, S)} (one per batch item, shared by the heads), " if lead else ""
        raise ValueError(
            f"mask of shape {shown} does not fit the attention weights of shape {scores_shape} "
            f"(..., H heads, T queries, S keys). Give ({T}, {S}) or ({S},) for every batch item and head, "
            f"{per_item}or the full {scores_shape}; 1 on any axis that is shared") from None


def multi_head_attention(x_q, x_kv, params: MultiHeadParams, n_heads: int | None = None,
                         mask=None, scale=True):
    """Multi-head attention of queries from ``x_q`` over keys/values from ``x_kv``.

    Self-attention: pass the same array twice. Shapes: x_q (..., T, d_model),
    x_kv (..., S, d_kv), leading axes broadcast. ``n_heads`` defaults to
    ``params.n_heads`` and must agree with it when both are known.
    mask (boolean, True = may attend): (T, S) or (S,) for everything,
    (..., T, S) with x_q's leading axes (shared by the heads), or the full
    (..., H, T, S). ``scale``: see ``resolve_scale``.
    Returns ``(output, weights)``: (..., T, d_model) and (..., H, T, S).
    """
    H = _resolve_heads(params, n_heads)
    x_q = as_array("x_q", x_q, min_ndim=2)
    x_kv = as_array("x_kv", x_kv, min_ndim=2)
    w = params
    _check_params(w, H)
    q = project(x_q, w.W_q, w.b_q, name="params.W_q", x_name="x_q")  # (..., T, d_model) -> (..., T, H*d_k)
    k = project(x_kv, w.W_k, w.b_k, name="params.W_k", x_name="x_kv")  # (..., S, d_kv) -> (..., S, H*d_k)
    v = project(x_kv, w.W_v, w.b_v, name="params.W_v", x_name="x_kv")  # (..., S, d_kv) -> (..., S, H*d_v)
    try:
        lead = np.broadcast_shapes(x_q.shape[:-2], x_kv.shape[:-2])
    except ValueError:
        raise ValueError(f"leading (batch) axes of x_q {x_q.shape} and x_kv {x_kv.shape} do not "
                         f"broadcast: each must be 1 or equal, aligned from the right") from None
    q, k, v = (split_heads(a, H) for a in (q, k, v))  # (..., n, H*d) -> (..., H, n, d)
    if mask is not None:
        mask = _head_mask(mask, x_q.ndim, lead + (H, x_q.shape[-2], x_kv.shape[-2]))
    heads, attn = scaled_dot_product_attention(q, k, v, mask=mask, scale=scale)  # (..., H, T, d_v)
    out = project(merge_heads(heads), w.W_o, w.b_o, name="params.W_o",
                  x_name="the merged heads")  # (..., T, H*d_v) @ (H*d_v, d_model) -> (..., T, d_model)
    return out, attn
