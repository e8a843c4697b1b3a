"""Worked solutions to chapter 9's exercises (outside the reading flow; tests run each one
through its checker)."""
from __future__ import annotations

import numpy as np


# 1. The weight from `query` to `key` in every head is one (L, H) slice of the weights:
#    row = the query's position, column = the key's position. Its argmax is the head.
def find_head(weights, tokens, query, key):
    """weights (L, H, T, T), tokens (T,) strings -> (layer, head) with the largest query -> key weight."""
    i, j = tokens.index(query), tokens.index(key)
    w = weights[:, :, i, j]  # (L, H, T, T) -> (L, H)
    layer, head = np.unravel_index(np.argmax(w), w.shape)  # flat index -> (layer, head)
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


# 3. An entry of q = x W_q sums d_model terms x_m W_mi of variance 1 * std^2: Var = d_model std^2.
#    q . k sums d_k products of two such entries: Var = d_k (d_model std^2)^2; dividing by
#    sqrt(d_k) leaves std = d_model std^2 = 768 * 0.02^2.
INIT_SPREAD_BERT_BASE = round(768 * 0.02 ** 2, 2)  # 0.31

# 4. Per layer: four (1024, 1024) matrices + four biases of 1024; 24 layers. Heads do not
#    change the count: 16 heads of d_k = 64 are the same 1024 columns, sliced.
d_model, n_layers = 1024, 24
BERT_LARGE_ATTENTION_PARAMS = n_layers * (4 * d_model * d_model + 4 * d_model)  # 100,761,600
