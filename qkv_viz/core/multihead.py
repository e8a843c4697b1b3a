"""Multi-head attention: one big W_q, W_k, W_v sliced into heads, and W_o.

Weights are stored the way the maths is written (``Q = X W_q``), so
``W_q`` is (d_model, n_heads * d_k); torch's ``nn.Linear`` stores the
transpose. Head h uses columns ``h*d_k : (h+1)*d_k`` of W_q and W_k.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .validate import as_array, as_rng, positive_int
from .attention import scaled_dot_product_attention
from .config import AttentionConfig
from .projections import init_projection, project


@dataclass
class MultiHeadParams:
    """W_q (d_model, H d_k), W_k (d_kv, H d_k), W_v (d_kv, H d_v), W_o (H d_v, d_model);
    biases b_q, b_k, b_v, b_o (or None). d_kv is the key/value input width
    (= d_model for self-attention)."""

    W_q: np.ndarray
    W_k: np.ndarray
    W_v: np.ndarray
    W_o: np.ndarray
    b_q: np.ndarray | None = None
    b_k: np.ndarray | None = None
    b_v: np.ndarray | None = None
    b_o: np.ndarray | None = None


def init_multihead_params(config: AttentionConfig, seed=None, d_kv: int | None = None) -> MultiHeadParams:
    """Random weights for ``config`` (biases zero when ``config.bias``)."""
    rng = as_rng(seed)
    c = config
    d_kv = c.d_model if d_kv is None else positive_int("d_kv", d_kv)
    zeros = (lambda n: np.zeros(n)) if c.bias else (lambda n: None)
    return MultiHeadParams(
        W_q=init_projection(c.d_model, c.n_heads * c.d_k, rng),
        W_k=init_projection(d_kv, c.n_heads * c.d_k, rng),
        W_v=init_projection(d_kv, c.n_heads * c.d_v, rng),
        W_o=init_projection(c.n_heads * c.d_v, c.d_model, rng),
        b_q=zeros(c.n_heads * c.d_k), b_k=zeros(c.n_heads * c.d_k),
        b_v=zeros(c.n_heads * c.d_v), b_o=zeros(c.d_model))


def split_heads(x, n_heads: int) -> np.ndarray:
    """(..., n, H*d) -> (..., H, n, d)."""
    x = as_array("x", x, min_ndim=2)
    n_heads = positive_int("n_heads", n_heads)
    if x.shape[-1] % n_heads:
        raise ValueError(f"last axis of x (shape {x.shape}) is not divisible by n_heads={n_heads}")
    d = x.shape[-1] // n_heads
    x = x.reshape(*x.shape[:-1], n_heads, d)  # (..., n, H*d) -> (..., n, H, d)
    return np.swapaxes(x, -2, -3)  # (..., n, H, d) -> (..., H, n, d)


def merge_heads(x) -> np.ndarray:
    """(..., H, n, d) -> (..., n, H*d): the concatenation of the heads."""
    x = as_array("x", x, min_ndim=3)
    x = np.swapaxes(x, -2, -3)  # (..., H, n, d) -> (..., n, H, d)
    return x.reshape(*x.shape[:-2], x.shape[-2] * x.shape[-1])  # -> (..., n, H*d)


def head_columns(W, h: int, n_heads: int) -> np.ndarray:
    """Head h's slice of a big projection: columns h*d : (h+1)*d of W (d_in, H*d)."""
    W = as_array("W", W, ndim=2)
    if not 0 <= h < n_heads:
        raise ValueError(f"head index h={h} out of range 0..{n_heads - 1}")
    d = W.shape[1] // n_heads
    return W[:, h * d:(h + 1) * d]


def multi_head_attention(x_q, x_kv, params: MultiHeadParams, n_heads: int,
                         mask=None, scale=True):
    """Multi-head attention of queries from ``x_q`` over keys/values from ``x_kv``.

    Self-attention: pass the same array twice. Shapes: x_q (..., T, d_model),
    x_kv (..., S, d_kv), mask broadcastable to (..., H, T, S) or (T, S).
    Returns ``(output, weights)``: (..., T, d_model) and (..., H, T, S).
    """
    w = params
    q = split_heads(project(x_q, w.W_q, w.b_q, name="W_q"), n_heads)  # (..., T, H*d_k) -> (..., H, T, d_k)
    k = split_heads(project(x_kv, w.W_k, w.b_k, name="W_k"), n_heads)  # (..., S, H*d_k) -> (..., H, S, d_k)
    v = split_heads(project(x_kv, w.W_v, w.b_v, name="W_v"), n_heads)  # (..., S, H*d_v) -> (..., H, S, d_v)
    if mask is not None:
        mask = np.asarray(mask)
        if mask.ndim >= 3:  # (..., T, S) without a head axis -> (..., 1, T, S)
            mask = mask if mask.ndim == q.ndim else np.expand_dims(mask, -3)
    heads, attn = scaled_dot_product_attention(q, k, v, mask=mask, scale=scale)  # (..., H, T, d_v)
    out = project(merge_heads(heads), w.W_o, w.b_o, name="W_o")  # (..., T, H*d_v) @ (H*d_v, d_model)
    return out, attn
