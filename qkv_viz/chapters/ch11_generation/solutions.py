"""Worked solutions of chapter 11's exercises, outside the reading flow.

``tests/chapters/ch11_generation/test_exercises.py`` checks that each one passes its checker.
"""
from __future__ import annotations

import numpy as np


def window_step(q, k_new, v_new, K_cache, V_cache, window):
    """Exercise 1. Append the new token's row, keep the last ``window`` rows, then attend over them."""
    K = np.vstack([K_cache, k_new])[-window:]           # (t, d_k) -> (t+1, d_k) -> at most (window, d_k)
    V = np.vstack([V_cache, v_new])[-window:]           # the oldest row leaves once the window is full
    scores = K @ q / np.sqrt(len(q))                    # (S, d_k) @ (d_k,) -> (S,), no mask
    weights = np.exp(scores - scores.max())
    weights /= weights.sum()
    return weights @ V, K, V                            # (S,) @ (S, d_v) -> (d_v,)


def gqa_step(q, k_new, v_new, K_cache, V_cache):
    """Exercise 2. Grow the H_kv-head caches; repeat each K/V head for its group only to attend."""
    H, d_k = q.shape
    K = np.concatenate([K_cache, k_new[:, None]], axis=1)   # (H_kv, t, d_k) -> (H_kv, t+1, d_k)
    V = np.concatenate([V_cache, v_new[:, None]], axis=1)   # (H_kv, t, d_v) -> (H_kv, t+1, d_v)
    rep = H // K.shape[0]
    K_rep, V_rep = np.repeat(K, rep, axis=0), np.repeat(V, rep, axis=0)   # -> (H, t+1, .): 0, 0, 1, 1, ...
    scores = (K_rep @ q[:, :, None])[:, :, 0] / np.sqrt(d_k)  # (H, t+1, d_k) @ (H, d_k, 1) -> (H, t+1)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return (weights[:, None] @ V_rep)[:, 0], K, V           # (H, 1, t+1) @ (H, t+1, d_v) -> (H, d_v)


def llama2_70b_cache():
    """Exercise 3. 2 (K, V) x 80 layers x 8 K/V heads x 128 x 4,096 tokens x 2 bytes = 1.25 GiB."""
    return 2 * 80 * 8 * 128 * 4096 * 2


def bidirectional_cache():
    """Exercise 4. Only layer 0's: its K and V are projections of each token's own input vector.
    From layer 1 on they are projections of layer-0 outputs, and without a causal mask each old
    token's output is a weighted sum that now includes the new token."""
    return "b"


def train_one_kv(seed=3, steps=300):
    """Exercise 5. The page's train() with W_k, W_v one head wide (d_model, d_k); k and v are split
    into one head, and enable_gqa=True lets both query heads read it."""
    import torch
    import torch.nn.functional as F

    from qkv_viz.chapters.ch11_generation.generation import SENTENCES, VOCAB
    ID = {w: i for i, w in enumerate(VOCAB)}
    ids = torch.tensor([[ID[w] for w in s.split()] for s in SENTENCES])   # (2, 7)
    d_model, H, d_k = 6, 2, 4

    def weight(*shape):                              # the page's small start
        return (0.3 * torch.randn(*shape, dtype=torch.float64)).requires_grad_()

    def to_heads(y, n_heads):                        # (2, 7, n_heads*d_k) -> (2, n_heads, 7, d_k)
        n_sentences, T, _ = y.shape
        return y.reshape(n_sentences, T, n_heads, d_k).transpose(1, 2)

    torch.manual_seed(seed)
    E_t = weight(len(VOCAB), d_model)                # (8, 6)
    W_q_t = weight(d_model, H * d_k)                 # (6, 8): H query heads
    W_k_t = weight(d_model, d_k)                     # (6, 4): one K/V head
    W_v_t = weight(d_model, d_k)                     # (6, 4)
    W_o_t = weight(H * d_k, d_model)                 # (8, 6)
    opt = torch.optim.Adam([E_t, W_q_t, W_k_t, W_v_t, W_o_t], lr=0.03)
    for _ in range(steps):
        x = E_t[ids]                                 # (2, 7, d_model)
        q = to_heads(x @ W_q_t, H)                   # (2, H, 7, d_k)
        k = to_heads(x @ W_k_t, 1)                   # (2, 1, 7, d_k)
        v = to_heads(x @ W_v_t, 1)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)   # (2, H, 7, d_k)
        out = out.transpose(1, 2).reshape(len(ids), -1, H * d_k)                          # (2, 7, H*d_k)
        logits = out @ W_o_t @ E_t.T                 # (2, 7, V)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, len(VOCAB)), ids[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item(), tuple(w.detach().numpy() for w in (E_t, W_q_t, W_k_t, W_v_t, W_o_t))
