"""Chapter 2 exercises: shapes, parameter counts and FLOPs of the projections."""
from __future__ import annotations

from qkv_viz.core.config import BERT_BASE, AttentionConfig
from qkv_viz.core.sizes import param_count, projection_flops
from qkv_viz.chapters.feedback import Feedback, check_close

NO_ANSWER = "Replace None with your answer, then run the cell again."

TRANSFORMER_BASE = AttentionConfig(d_model=512, n_heads=8)  # "Attention Is All You Need", base


def _exact(answer, expected: int, hint: str) -> Feedback:
    """Integer counts must match exactly (1% tolerance would accept a missed bias)."""
    if answer is None:
        return Feedback(False, NO_ANSWER)
    if isinstance(answer, bool):
        return Feedback(False, f"Give a number. Hint: {hint}")
    return check_close(answer, expected, rtol=0, atol=0.5, hint=hint,
                       praise="Exactly right.")


def check_value_shape(answer) -> Feedback:
    """Shape of V = X @ W_v for X (10, 768) and W_v (768, 32): a tuple."""
    hint = "X @ W has the rows of X and the columns of W."
    if answer is None:
        return Feedback(False, NO_ANSWER)
    try:
        shape = tuple(int(s) for s in answer)
    except (TypeError, ValueError):
        return Feedback(False, f"Give a tuple like (rows, columns). Hint: {hint}")
    if shape == (10, 32):
        return Feedback(True, "d_v can differ from d_k: only Q and K meet in a dot product.")
    return Feedback(False, f"Hint: {hint}")


def check_transformer_base_params(answer) -> Feedback:
    """Parameters of one attention layer of the original Transformer base
    (d_model 512, 8 heads), W_o and all biases included."""
    return _exact(answer, param_count(TRANSFORMER_BASE, bias=True),
                  hint="four d_model x d_model matrices plus four bias vectors of length d_model.")


def check_projection_flops(answer) -> Feedback:
    """FLOPs of the Q, K, V projections of BERT-base for n = 128 tokens."""
    return _exact(answer, projection_flops(BERT_BASE, 128),
                  hint="6 n d_model^2: one multiply-add counts as 2 FLOPs, three matrices.")
