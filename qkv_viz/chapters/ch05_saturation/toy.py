"""Chapter 5's experiment: "find your own token", trained with and without 1/sqrt(d_k).

Each example is T random tokens x (T, d_model). Query i is token i; its attention must put its
weight on key i. The value of key j is the one-hot vector e_j, so the attention output *is* the
row of weights, and ``gain * weights`` are the logits of a T-way classifier ("which key is me?").
The loss therefore sits behind the softmax, as in a real layer, and every gradient reaching
W_q and W_k passes through the softmax's Jacobian.

The notebook runs the same loop with torch.optim.Adam; this copy writes Adam out (``adam_step``,
the same arithmetic, which the tests check) and lets the tests check the chapter's claims over
several seeds; benchmarks/bench_saturation.py times it.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from qkv_viz.core.validate import positive_int, positive_number

D_MODEL, D_K, T, BATCH, GAIN, STEPS, LR = 256, 256, 16, 8, 6.0, 100, 1e-3


def softmax(s: np.ndarray) -> np.ndarray:
    """Softmax over the last axis (numpy)."""
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def score_grads(weights: np.ndarray, gain: float = GAIN) -> np.ndarray:
    """Closed form of d loss_i / d scores_i for every query, (..., T, T).

    loss_i = cross_entropy(gain * weights_i, target i). With p = softmax(gain * w_i):
    d loss_i / d w_i = gain (p - e_i), and the softmax's Jacobian diag(w) - w w^T turns a
    vector d_w into w * (d_w - w . d_w).
    """
    weights = np.asarray(weights, dtype=float)
    if weights.ndim < 2 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(f"weights must be (..., T, T), got shape {weights.shape}")
    positive_number("gain", gain)
    n = weights.shape[-1]
    d_w = gain * (softmax(gain * weights) - np.eye(n))                  # (..., T, T): d loss_i / d w_i
    return weights * (d_w - (weights * d_w).sum(-1, keepdims=True))    # (..., T, T): d loss_i / d s_i


def adam_step(W: torch.Tensor, g: torch.Tensor, m: torch.Tensor, v: torch.Tensor, t: int, lr: float) -> None:
    """One Adam step on W, in place: torch.optim.Adam at its defaults, which the page uses (the tests check it).

    m, v: running means of the gradient g and of g^2; t: the step, from 1 (bias correction).
    """
    m.lerp_(g, 0.1)                                                     # m = 0.9 m + 0.1 g
    v.mul_(0.999).addcmul_(g, g, value=0.001)                           # v = 0.999 v + 0.001 g^2
    W -= lr / (1 - 0.9 ** t) * m / (v.sqrt() / (1 - 0.999 ** t) ** 0.5 + 1e-8)


def train(c: float, lr: float = LR, init: float = 1.0, seed: int = 0, steps: int = STEPS,
          d_model: int = D_MODEL, d_k: int = D_K, n_tokens: int = T, batch: int = BATCH,
          gain: float = GAIN) -> np.ndarray:
    """Train W_q, W_k with Adam; return the accuracy of every step, (steps,).

    Adam is ``adam_step``, written out (the same arithmetic as the page's ``torch.optim.Adam`` at its defaults,
    which the tests check); ``torch.optim`` would import torch's compiler on its first step, which
    takes seconds.

    ``c`` multiplies q . k (1/sqrt(d_k): scaled; 1: the bug); ``init`` multiplies the start
    (std init / sqrt(d_model)). One seeded generator draws the start and then the batches, so
    runs that differ only in ``c``, ``lr`` or ``init`` see the same data.
    """
    positive_number("c", c)
    positive_number("lr", lr)
    positive_number("init", init)
    steps, d_model, d_k = positive_int("steps", steps), positive_int("d_model", d_model), positive_int("d_k", d_k)
    n_tokens, batch = positive_int("n_tokens", n_tokens), positive_int("batch", batch)
    gen = torch.Generator().manual_seed(seed)
    W_q = (init * torch.randn(d_model, d_k, generator=gen) / d_model ** 0.5).requires_grad_()
    W_k = (init * torch.randn(d_model, d_k, generator=gen) / d_model ** 0.5).requires_grad_()
    m = [torch.zeros_like(W_q), torch.zeros_like(W_k)]                 # Adam's running means of g ...
    v = [torch.zeros_like(W_q), torch.zeros_like(W_k)]                 # ... and of g^2
    targets = torch.arange(n_tokens).repeat(batch)                      # (batch*T,): query i finds key i
    acc = []
    for step in range(steps):
        x = torch.randn(batch, n_tokens, d_model, generator=gen)        # (B, T, d_model)
        scores = c * (x @ W_q) @ (x @ W_k).transpose(-1, -2)            # (B, T, d_k) @ (B, d_k, T) -> (B, T, T)
        weights = torch.softmax(scores, dim=-1)                         # (B, T, T)
        loss = F.cross_entropy(gain * weights.reshape(-1, n_tokens), targets)
        grads = torch.autograd.grad(loss, [W_q, W_k])
        with torch.no_grad():
            for W, g, m_W, v_W in zip([W_q, W_k], grads, m, v):
                adam_step(W, g, m_W, v_W, t=step + 1, lr=lr)
        acc.append((weights.argmax(-1).reshape(-1) == targets).float().mean().item())
    return np.array(acc)


def steps_to(acc, level: float = 0.9, window: int = 10):
    """First step at which the ``window``-step running mean of ``acc`` reaches ``level`` (None: never)."""
    acc = np.asarray(acc, dtype=float)
    window = positive_int("window", window)
    if acc.ndim != 1 or acc.size < window:
        raise ValueError(f"acc must be 1-D with at least {window} steps, got shape {acc.shape}")
    running = np.convolve(acc, np.ones(window) / window, mode="valid")
    hits = np.flatnonzero(running >= level)
    return int(hits[0] + window - 1) if hits.size else None
