"""The maths of attention, in numpy only (no matplotlib, ipywidgets or torch).

Shapes follow the paper: ``T`` queries, ``S`` keys/values, ``d_model`` the
token width, ``d_k`` the query/key width, ``d_v`` the value width, ``H`` heads.
"""
from .attention import (attention_scores, causal_mask, masked_softmax, padding_mask,
                        resolve_scale, scaled_dot_product_attention)
from .config import BERT_BASE, AttentionConfig
from .diagnostics import (effective_tokens, entropy, max_weight, score_std,
                          softmax_grad_norm, summarize)
from .multihead import (MultiHeadParams, head_columns, init_multihead_params, merge_heads,
                        multi_head_attention, split_heads)
from .projections import (fuse_qkv, fused_qkv_projections, init_projection, project,
                          qkv_projections)
from .sizes import attention_flops, model_param_count, param_count, projection_flops
from .softmax import naive_softmax, softmax, softmax_jacobian

__all__ = ["attention_scores", "causal_mask", "masked_softmax", "padding_mask", "resolve_scale", "scaled_dot_product_attention", "BERT_BASE", "AttentionConfig", "effective_tokens", "entropy", "max_weight", "score_std", "softmax_grad_norm", "summarize", "MultiHeadParams", "head_columns", "init_multihead_params", "merge_heads", "multi_head_attention", "split_heads", "fuse_qkv", "fused_qkv_projections", "init_projection", "project", "qkv_projections", "attention_flops", "model_param_count", "param_count", "projection_flops", "naive_softmax", "softmax", "softmax_jacobian"]
