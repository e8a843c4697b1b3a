"""qkv-viz: Query, Key and Value, computed and drawn.

The maths (numpy only) is importable from here; plots and widgets live in
``qkv_viz.plots`` and ``qkv_viz.widgets`` so importing the core stays light.
"""
from .attention import (attention_scores, causal_mask, masked_softmax, padding_mask,
                        resolve_scale, scaled_dot_product_attention)
from .config import BERT_BASE, AttentionConfig
from .diagnostics import (effective_tokens, entropy, max_weight, score_std,
                          softmax_grad_norm, summarize)
from .multihead import (MultiHeadWeights, head_weight, init_multihead, merge_heads,
                        multi_head_attention, split_heads)
from .projections import (fuse_qkv, fused_qkv_projections, init_weight, project,
                          qkv_projections)
from .sizes import attention_flops, model_param_count, param_count, projection_flops
from .softmax import naive_softmax, softmax, softmax_jacobian

__version__ = "0.1.0"
