"""Worked solutions to chapter 9's exercises (outside the reading flow; tests run each one
through its checker)."""
from __future__ import annotations

import numpy as np


# 1. Head h moves w_ij (v_j W_o^h) from key j into query i's output; its length is the weight
#    times the length of the KEY j's value after head h's d_v rows of W_o.
def moving_head(weights, values, W_o, tokens, query, key):
    """weights (L, H, T, T), values (L, H, T, d_v), W_o (L, H*d_v, d_model) -> (layer, head)."""
    i, j = tokens.index(query), tokens.index(key)
    L, H, T, d_v = values.shape
    W_o_h = W_o.reshape(L, H, d_v, -1)                       # (L, H*d_v, d_model) -> (L, H, d_v, d_model)
    v_j = values[:, :, j, None, :]                           # (L, H, 1, d_v): the key's value, every head
    norm_j = np.linalg.norm(v_j @ W_o_h, axis=-1)[..., 0]    # (L, H, 1, d_v) @ (L, H, d_v, d_model) -> (L, H)
    moved = weights[:, :, i, j] * norm_j                     # (L, H)
    layer, head = np.unravel_index(np.argmax(moved), moved.shape)  # flat index -> (layer, head)
    return int(layer), int(head)


# 2. Head h adds sum_j w_ij (v_j W_o^h): its weights times its values, through its d_v rows of
#    W_o. The layer's output is the sum over the heads plus b_o (added once, to the sum).
def head_outputs(x, p, n_heads):
    """x (T, d_model), p: MultiHeadParams -> (H, T, d_model), each head's part of the output."""
    T, d_model = x.shape
    q = (x @ p.W_q + p.b_q).reshape(T, n_heads, -1).transpose(1, 0, 2)  # (T, H*d_k) -> (H, T, d_k)
    k = (x @ p.W_k + p.b_k).reshape(T, n_heads, -1).transpose(1, 0, 2)  # (H, T, d_k)
    v = (x @ p.W_v + p.b_v).reshape(T, n_heads, -1).transpose(1, 0, 2)  # (H, T, d_v)
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])  # (H, T, d_k) @ (H, d_k, T) -> (H, T, T)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)  # softmax over the keys
    W_o = p.W_o.reshape(n_heads, -1, d_model)  # (H*d_v, d_model) -> (H, d_v, d_model)
    return weights @ v @ W_o  # (H, T, T) @ (H, T, d_v) @ (H, d_v, d_model) -> (H, T, d_model)
