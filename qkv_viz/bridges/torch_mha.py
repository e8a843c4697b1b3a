"""Copy weights out of torch modules into the book's (numpy, X @ W) layout.

torch is imported lazily by the caller's module; nothing here imports it.
``nn.Linear`` stores ``weight`` as (out, in) and computes ``x @ weight.T``,
so every matrix is transposed on the way in.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.core.multihead import MultiHeadParams


def _np(t) -> np.ndarray:
    return t.detach().cpu().double().numpy()


def _maybe(t):
    return None if t is None else _np(t)


def params_from_torch_mha(mha) -> MultiHeadParams:
    """Our ``MultiHeadParams`` from a ``torch.nn.MultiheadAttention``.

    torch packs W_q, W_k, W_v into one ``in_proj_weight`` of shape
    (3 d_model, d_model) when query, key and value share d_model, and keeps
    ``q_proj_weight``/``k_proj_weight``/``v_proj_weight`` otherwise.
    """
    if getattr(mha, "in_proj_weight", None) is not None:
        W_q, W_k, W_v = (_np(w).T for w in mha.in_proj_weight.chunk(3, dim=0))  # (3d, d) -> 3 x (d, d)
    else:
        W_q, W_k, W_v = (_np(w).T for w in (mha.q_proj_weight, mha.k_proj_weight, mha.v_proj_weight))
    b = mha.in_proj_bias
    b_q, b_k, b_v = (None, None, None) if b is None else (_np(x) for x in b.chunk(3))
    return MultiHeadParams(W_q=W_q, W_k=W_k, W_v=W_v, W_o=_np(mha.out_proj.weight).T,
                            b_q=b_q, b_k=b_k, b_v=b_v, b_o=_maybe(mha.out_proj.bias),
                            n_heads=mha.num_heads)
