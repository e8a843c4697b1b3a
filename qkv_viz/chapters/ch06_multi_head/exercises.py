"""Chapter 6 exercises: heads, slices and what torch stores.

Each ``check_*`` returns a ``Feedback``: right or wrong plus a hint, never the answer.
"""
from __future__ import annotations

from qkv_viz.chapters.feedback import Feedback, check_close
from qkv_viz.core.config import AttentionConfig
from qkv_viz.core.sizes import param_count

ART2 = AttentionConfig(d_model=512, n_heads=8)  # source article 2's example
BERT = AttentionConfig(d_model=768, n_heads=12)  # BERT-base
HEAD_EX2 = 3  # exercise 2 asks about this head (counting from 0)


def check_head_dim(answer) -> Feedback:
    """Exercise 1: d_k of one head when d_model = 512 is split over h = 8 heads."""
    return check_close(answer, ART2.d_k, rtol=0.0, atol=0.01,
                       hint="the heads share d_model's columns equally between them.")


def check_head_columns(answer) -> Feedback:
    """Exercise 2: [start, stop) of the columns of BERT-base's W_q (768 x 768) used by head 3."""
    d_k = BERT.d_k
    expected = [HEAD_EX2 * d_k, (HEAD_EX2 + 1) * d_k]
    return check_close(answer, expected, rtol=0.0, atol=0.01,
                       hint="give two integers [start, stop), stop excluded as in a Python slice; "
                            "heads are counted from 0 and each owns d_k consecutive columns.")


def check_in_proj_params(answer) -> Feedback:
    """Exercise 3: parameters in torch.nn.MultiheadAttention(768, 12)'s in_proj_weight + in_proj_bias."""
    expected = param_count(BERT, bias=True, include_output=False)
    return check_close(answer, expected, rtol=0.0, atol=0.5,
                       hint="in_proj_weight stacks W_q, W_k and W_v; count its entries from its "
                            "shape (print it), then add one bias per output row.")
