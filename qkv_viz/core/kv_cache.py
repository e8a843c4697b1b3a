"""Generating one token at a time: the K/V cache, and K/V heads shared by query heads.

A causal self-attention layer can be run two ways that give the same numbers:

- all at once (training): T queries against T keys under ``causal_mask(T)``;
- one token per step (generating): the new token's query against the keys and
  values of every token so far, which a :class:`KVCache` keeps, one row of K and
  one of V added per step. The step needs no mask: the cache holds only the past.

``n_kv_heads`` K/V heads may serve ``n_heads`` query heads (``n_heads % n_kv_heads
== 0``): query head h reads K/V head ``h // (n_heads // n_kv_heads)``.
``n_kv_heads = n_heads`` is ordinary multi-head attention, ``1`` is multi-query
attention, anything between is grouped-query attention. Weights use the book's
``x @ W`` layout: W_q (d_model, H d_k), W_k (d_model, H_kv d_k), W_v (d_model,
H_kv d_v), W_o (H d_v, d_model).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .attention import causal_mask, scaled_dot_product_attention
from .config import AttentionConfig
from .multihead import merge_heads, split_heads
from .projections import init_projection, project
from .sizes import attention_flops
from .validate import as_array, as_rng, index_int, positive_int


def _check_groups(n_heads: int, n_kv_heads: int) -> tuple:
    n_heads, n_kv_heads = positive_int("n_heads", n_heads), positive_int("n_kv_heads", n_kv_heads)
    if n_heads % n_kv_heads:
        ok = [d for d in range(1, n_heads + 1) if n_heads % d == 0]
        raise ValueError(f"n_kv_heads={n_kv_heads} does not divide n_heads={n_heads}: every K/V head "
                         f"must serve the same number of query heads. Pick n_kv_heads among {ok}")
    return n_heads, n_kv_heads


def repeat_kv(x, n_rep: int) -> np.ndarray:
    """Each K/V head repeated ``n_rep`` times, next to itself: (..., H_kv, S, d) -> (..., H_kv n_rep, S, d).

    Head order 0, 0, ..., 1, 1, ...: query heads ``g n_rep .. (g+1) n_rep - 1`` read K/V head g
    (what ``np.repeat`` and torch's ``repeat_interleave`` do; ``np.tile`` would interleave them).
    """
    x = as_array("x", x, min_ndim=3)
    n_rep = positive_int("n_rep", n_rep)
    return np.repeat(x, n_rep, axis=-3)  # (..., H_kv, S, d) -> (..., H_kv * n_rep, S, d)


def grouped_query_attention(q, k, v, mask=None, scale=True):
    """Attention of H query heads over H_kv shared K/V heads.

    Shapes: q (..., H, T, d_k), k (..., H_kv, S, d_k), v (..., H_kv, S, d_v) with
    H a multiple of H_kv; mask as in ``scaled_dot_product_attention`` (True = may
    attend). Returns ``(output, weights)``: (..., H, T, d_v) and (..., H, T, S).
    """
    q = as_array("q", q, min_ndim=3)
    k = as_array("k", k, min_ndim=3)
    v = as_array("v", v, min_ndim=3)
    if k.shape[-3] != v.shape[-3]:
        raise ValueError(f"k and v must have the same number of K/V heads (axis -3): "
                         f"k has shape {k.shape}, v has shape {v.shape}")
    H, H_kv = q.shape[-3], k.shape[-3]
    if H % H_kv:
        raise ValueError(f"q has {H} heads (axis -3, shape {q.shape}) and k has {H_kv} "
                         f"(shape {k.shape}): the query heads must split into {H_kv} equal groups")
    n_rep = H // H_kv
    return scaled_dot_product_attention(q, repeat_kv(k, n_rep), repeat_kv(v, n_rep), mask=mask, scale=scale)


def group_kv_heads(W, n_heads: int, n_kv_heads: int) -> np.ndarray:
    """Turn a multi-head K or V projection into a shared one: average each group's columns.

    W (d_model, H d) -> (d_model, H_kv d); K/V head g is the mean of heads
    ``g n_rep .. (g+1) n_rep - 1`` (how the GQA paper, Ainslie et al. 2023, starts
    from a multi-head checkpoint before training it further).
    """
    W = as_array("W", W, ndim=2)
    n_heads, n_kv_heads = _check_groups(n_heads, n_kv_heads)
    if W.shape[1] % n_heads:
        raise ValueError(f"W has shape {W.shape}: its {W.shape[1]} columns do not split into n_heads={n_heads}")
    d = W.shape[1] // n_heads
    heads = W.reshape(W.shape[0], n_kv_heads, n_heads // n_kv_heads, d)  # (d_model, H_kv, n_rep, d)
    return heads.mean(axis=2).reshape(W.shape[0], n_kv_heads * d)  # -> (d_model, H_kv d)


@dataclass
class GQAParams:
    """One causal self-attention layer with ``n_kv_heads`` K/V heads (see the module doc)."""

    W_q: np.ndarray
    W_k: np.ndarray
    W_v: np.ndarray
    W_o: np.ndarray
    n_heads: int
    n_kv_heads: int

    def __post_init__(self):
        self.n_heads, self.n_kv_heads = _check_groups(self.n_heads, self.n_kv_heads)
        W_q, W_k, W_v, W_o = (as_array(n, getattr(self, n), ndim=2) for n in ("W_q", "W_k", "W_v", "W_o"))
        H, H_kv = self.n_heads, self.n_kv_heads
        if W_q.shape[1] % H or W_v.shape[1] % H_kv:
            raise ValueError(f"W_q {W_q.shape} must split into n_heads={H} and W_v {W_v.shape} into "
                             f"n_kv_heads={H_kv} equal heads")
        d_k, d_v = W_q.shape[1] // H, W_v.shape[1] // H_kv
        if W_k.shape != (W_q.shape[0], H_kv * d_k):
            raise ValueError(f"W_k has shape {W_k.shape}; with W_q {W_q.shape}, n_heads={H} (d_k={d_k}) and "
                             f"n_kv_heads={H_kv} it must be {(W_q.shape[0], H_kv * d_k)}")
        if W_v.shape[0] != W_q.shape[0] or W_o.shape != (H * d_v, W_q.shape[0]):
            raise ValueError(f"W_v {W_v.shape} must read d_model={W_q.shape[0]} and W_o {W_o.shape} must be "
                             f"{(H * d_v, W_q.shape[0])} (H d_v, d_model)")
        self.W_q, self.W_k, self.W_v, self.W_o = W_q, W_k, W_v, W_o

    @property
    def d_k(self) -> int:
        return self.W_q.shape[1] // self.n_heads

    @property
    def d_v(self) -> int:
        return self.W_v.shape[1] // self.n_kv_heads


def init_gqa_params(d_model: int, n_heads: int, n_kv_heads: int | None = None, seed=None) -> GQAParams:
    """Random weights (``init_projection``) with d_k = d_v = d_model / n_heads.

    ``n_kv_heads`` defaults to ``n_heads`` (multi-head attention).
    """
    d_model = positive_int("d_model", d_model)
    n_heads, n_kv_heads = _check_groups(n_heads, n_heads if n_kv_heads is None else n_kv_heads)
    d_k = AttentionConfig(d_model=d_model, n_heads=n_heads).d_k
    rng = as_rng(seed)
    return GQAParams(W_q=init_projection(d_model, n_heads * d_k, rng),
                     W_k=init_projection(d_model, n_kv_heads * d_k, rng),
                     W_v=init_projection(d_model, n_kv_heads * d_k, rng),
                     W_o=init_projection(n_heads * d_k, d_model, rng), n_heads=n_heads, n_kv_heads=n_kv_heads)


def _check_params(params) -> GQAParams:
    if not isinstance(params, GQAParams):
        raise TypeError(f"params must be a GQAParams (init_gqa_params(...)), got {type(params).__name__}")
    return params


def causal_self_attention(x, params: GQAParams):
    """All positions at once under the causal mask (how a model is trained).

    x (T, d_model) -> ``(output, weights)``: (T, d_model) and (H, T, T).
    """
    p = _check_params(params)
    x = as_array("x", x, ndim=2)
    q = split_heads(project(x, p.W_q, name="W_q"), p.n_heads)     # (T, H d_k) -> (H, T, d_k)
    k = split_heads(project(x, p.W_k, name="W_k"), p.n_kv_heads)  # (T, H_kv d_k) -> (H_kv, T, d_k)
    v = split_heads(project(x, p.W_v, name="W_v"), p.n_kv_heads)  # (T, H_kv d_v) -> (H_kv, T, d_v)
    heads, weights = grouped_query_attention(q, k, v, mask=causal_mask(len(x)))  # (H, T, d_v), (H, T, T)
    return merge_heads(heads) @ p.W_o, weights  # (T, H d_v) @ (H d_v, d_model) -> (T, d_model)


class KVCache:
    """The keys and values of every token so far: ``k`` (H_kv, t, d_k), ``v`` (H_kv, t, d_v).

    ``append`` adds one token's row to each. ``nbytes`` is what the cache holds
    (float64 here; a model in 16-bit numbers holds a quarter of it).
    """

    def __init__(self, n_kv_heads: int, d_k: int, d_v: int | None = None):
        self.n_kv_heads, self.d_k = positive_int("n_kv_heads", n_kv_heads), positive_int("d_k", d_k)
        self.d_v = self.d_k if d_v is None else positive_int("d_v", d_v)
        self.k = np.zeros((self.n_kv_heads, 0, self.d_k))  # (H_kv, 0, d_k): empty before token 0
        self.v = np.zeros((self.n_kv_heads, 0, self.d_v))

    def __len__(self) -> int:
        return self.k.shape[1]

    @property
    def nbytes(self) -> int:
        return self.k.nbytes + self.v.nbytes

    def append(self, k_new, v_new) -> None:
        """Add one token: k_new (H_kv, d_k), v_new (H_kv, d_v)."""
        k_new, v_new = as_array("k_new", k_new, ndim=2), as_array("v_new", v_new, ndim=2)
        if k_new.shape != (self.n_kv_heads, self.d_k) or v_new.shape != (self.n_kv_heads, self.d_v):
            raise ValueError(f"one token's k_new must be (n_kv_heads, d_k) = {(self.n_kv_heads, self.d_k)} and "
                             f"v_new (n_kv_heads, d_v) = {(self.n_kv_heads, self.d_v)}; got {k_new.shape}, "
                             f"{v_new.shape}")
        self.k = np.concatenate([self.k, k_new[:, None]], axis=1)  # (H_kv, t, d_k) -> (H_kv, t+1, d_k)
        self.v = np.concatenate([self.v, v_new[:, None]], axis=1)


def decode_step(x_new, cache: KVCache, params: GQAParams):
    """One generation step: the new token's q against every cached K and V, its own included.

    x_new (d_model,) -> ``(output, weights)``: (d_model,) and (H, t+1); the cache
    gains the new token's k and v first. No mask: the cache holds only the past.
    """
    p = _check_params(params)
    x_new = as_array("x_new", x_new, ndim=1)
    q = project(x_new, p.W_q, name="W_q", x_name="x_new").reshape(p.n_heads, 1, p.d_k)  # (H, 1, d_k)
    k = project(x_new, p.W_k, name="W_k", x_name="x_new").reshape(p.n_kv_heads, p.d_k)  # (H_kv, d_k)
    v = project(x_new, p.W_v, name="W_v", x_name="x_new").reshape(p.n_kv_heads, p.d_v)  # (H_kv, d_v)
    cache.append(k, v)
    heads, weights = grouped_query_attention(q, cache.k, cache.v)  # (H, 1, d_v), (H, 1, t+1)
    return heads.reshape(-1) @ p.W_o, weights[:, 0]  # (H d_v,) @ (H d_v, d_model) -> (d_model,)


def generate(x, params: GQAParams):
    """Feed the T tokens of x (T, d_model) one per step through ``decode_step``.

    Returns ``(outputs, cache)``: (T, d_model), equal to ``causal_self_attention``'s
    output, and the filled :class:`KVCache` (T tokens).
    """
    p = _check_params(params)
    x = as_array("x", x, ndim=2)
    cache = KVCache(p.n_kv_heads, p.d_k, p.d_v)
    outputs = np.stack([decode_step(x_t, cache, p)[0] for x_t in x])  # T x (d_model,) -> (T, d_model)
    return outputs, cache


def kv_cache_bytes(n_layers: int, n_kv_heads: int, head_dim: int, n_tokens: int = 1,
                   bytes_per_number: int = 2, batch: int = 1) -> int:
    """Bytes of a K/V cache: 2 (K and V) x layers x K/V heads x head width x tokens x batch x bytes per number."""
    n = [positive_int(name, value) for name, value in (
        ("n_layers", n_layers), ("n_kv_heads", n_kv_heads), ("head_dim", head_dim), ("n_tokens", n_tokens),
        ("bytes_per_number", bytes_per_number), ("batch", batch))]
    return 2 * int(np.prod(n, dtype=object))


def step_flops(d_model: int, n_heads: int, t: int, cached: bool = True) -> int:
    """FLOPs (one multiply-add = 2) of one layer's step for token t (0-based), W_o included.

    cached: q, k, v of the new token only, and its attention over the t+1 cached keys.
    Not cached: the whole prefix of t+1 tokens run again under the causal mask
    (``attention_flops(config, T=t+1)``), of which only the last row is kept: what a
    stack of layers without a cache must do, since layer l+1's keys and values for old
    tokens are projections of layer l's outputs for them. Softmax's few FLOPs per score are left out.
    """
    t = index_int("t", t)
    if t < 0:
        raise ValueError(f"t is a token index, 0 or more; got {t}")
    c = AttentionConfig(d_model=d_model, n_heads=n_heads)
    if not cached:
        return attention_flops(c, T=t + 1)["total"]
    S, H = t + 1, c.n_heads
    return (2 * c.d_model * H * (2 * c.d_k + c.d_v)   # q, k, v of one token: (1, d_model) @ (d_model, H d)
            + 2 * H * S * c.d_k + 2 * H * S * c.d_v   # (H, 1, d_k) @ (H, d_k, S); (H, 1, S) @ (H, S, d_v)
            + 2 * H * c.d_v * c.d_model)              # (1, H d_v) @ (H d_v, d_model)
