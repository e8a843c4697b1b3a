"""Parameter and FLOP counts of an attention layer.

Convention for FLOPs: one multiply-add = 2 FLOPs, so ``X @ W`` with X (T, a)
and W (a, b) costs ``2 T a b``. ``T`` counts queries, ``S`` keys/values.
"""
from __future__ import annotations

from .validate import as_bool, positive_int
from .config import AttentionConfig, as_config


def param_count(config: AttentionConfig, *, bias: bool | None = None,
                include_output: bool = True, per_head: bool = False) -> int:
    """Number of trainable parameters of one attention layer.

    bias: count bias vectors (default: ``config.bias``).
    include_output: include W_o (and its bias).
    per_head: count only one head's slice of W_q, W_k, W_v (and biases);
    W_o is shared by all heads so it is never counted per head.
    """
    c = as_config(config)
    bias = c.bias if bias is None else as_bool("bias", bias)
    include_output, per_head = as_bool("include_output", include_output), as_bool("per_head", per_head)
    heads = 1 if per_head else c.n_heads
    w_qkv = c.d_model * heads * (2 * c.d_k + c.d_v)  # W_q, W_k: d_model x d_k; W_v: d_model x d_v
    b_qkv = heads * (2 * c.d_k + c.d_v) if bias else 0
    total = w_qkv + b_qkv
    if include_output and not per_head:
        total += c.n_heads * c.d_v * c.d_model + (c.d_model if bias else 0)
    return total


def model_param_count(config: AttentionConfig, **kwargs) -> int:
    """Attention parameters over all ``config.n_layers`` layers (keywords as ``param_count``)."""
    config = as_config(config)
    return config.n_layers * param_count(config, **kwargs)


def projection_flops(config: AttentionConfig, T: int) -> int:
    """FLOPs of the Q, K, V projections of T tokens: 2 T d_model (2 H d_k + H d_v).

    With d_k = d_v = d_model / H this is the familiar 6 T d_model^2.
    """
    c = as_config(config)
    T = positive_int("T", T)
    return 2 * T * c.d_model * c.n_heads * (2 * c.d_k + c.d_v)


def attention_flops(config: AttentionConfig, T: int, S: int | None = None) -> dict:
    """FLOPs of one layer for T queries over S keys (S defaults to T).

    Returns a dict with ``projections`` (Q from T tokens, K and V from S),
    ``scores`` (Q K^T), ``weighted_sum`` (weights @ V), ``output`` (W_o) and
    ``total``. Softmax's few FLOPs per score are left out.
    """
    c = as_config(config)
    T = positive_int("T", T)
    S = T if S is None else positive_int("S", S)
    H = c.n_heads
    parts = {
        "projections": 2 * c.d_model * H * (T * c.d_k + S * (c.d_k + c.d_v)),
        "scores": 2 * H * T * S * c.d_k,  # (H, T, d_k) @ (H, d_k, S)
        "weighted_sum": 2 * H * T * S * c.d_v,  # (H, T, S) @ (H, S, d_v)
        "output": 2 * T * H * c.d_v * c.d_model,
    }
    parts["total"] = sum(parts.values())
    return parts
