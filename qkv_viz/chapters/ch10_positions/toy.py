"""Chapter 10's computations: a three-word sentence, its shuffle, positions added, RoPE grids.

The tokens are named and hand-built (d_model = 4: "is a noun", "is an animal",
"is a person", "is an action"); the projections are random (seeded), because the
chapter's claims hold for any projection.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.core.attention import scaled_dot_product_attention
from qkv_viz.core.positions import apply_rope, rope_dots_by_offset
from qkv_viz.core.validate import as_array, as_rng, positive_int

EMBEDDINGS = {              # noun, animal, person, action
    "dog": (1.0, 1.0, 0.0, 0.0),
    "bites": (0.0, 0.0, 0.0, 1.0),
    "man": (1.0, 0.0, 1.0, 0.0),
}
D_MODEL = 4
WIDGET_D_K_MAX = 64


def sentence(words) -> np.ndarray:
    """The token vectors of ``words`` (a string or a list of the known words), shape (T, d_model)."""
    words = words.split() if isinstance(words, str) else list(words)
    unknown = [w for w in words if w not in EMBEDDINGS]
    if unknown or not words:
        raise ValueError(f"words must be some of {sorted(EMBEDDINGS)}, got {words!r}")
    return np.array([EMBEDDINGS[w] for w in words])  # (T, d_model)


def projections(seed: int = 0, d_model: int = D_MODEL, d_k: int = D_MODEL):
    """Random W_q, W_k, W_v, each (d_model, d_k), entries N(0, 1/d_model)."""
    rng = as_rng(seed)
    return tuple(rng.normal(size=(d_model, d_k)) / np.sqrt(d_model) for _ in range(3))


def self_attention(X, W_q, W_k, W_v):
    """Self-attention of the rows of X (T, d_model): (output (T, d_k), weights (T, T))."""
    X = as_array("X", X, ndim=2)
    Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (T, d_model) @ (d_model, d_k) -> (T, d_k)
    return scaled_dot_product_attention(Q, K, V)


def score_terms(X, P, W_q, W_k) -> dict:
    """The four terms of (X + P) W_q W_k^T (X + P)^T, each (T, T), in the order of the formula."""
    X, P = as_array("X", X, ndim=2), as_array("P", P, ndim=2)
    if X.shape != P.shape:
        raise ValueError(f"X and P must have the same shape: X {X.shape}, P {P.shape}")
    A = W_q @ W_k.T  # (d_model, d_k) @ (d_k, d_model) -> (d_model, d_model)
    return {"word-word": X @ A @ X.T, "word-position": X @ A @ P.T,
            "position-word": P @ A @ X.T, "position-position": P @ A @ P.T}


def dot_grid(q, k, T: int, base: float = 10000.0, pairing: str = "adjacent") -> np.ndarray:
    """q_m . k_n for m, n in 0..T-1: the same q and k put at every position and rotated. (T, T)."""
    q, k = as_array("q", q, ndim=1), as_array("k", k, ndim=1)
    T = positive_int("T", T)
    Qm = apply_rope(np.tile(q, (T, 1)), base=base, pairing=pairing)  # (T, d_k): q at 0..T-1
    Kn = apply_rope(np.tile(k, (T, 1)), base=base, pairing=pairing)  # (T, d_k)
    return Qm @ Kn.T                                                  # (T, d_k) @ (d_k, T) -> (T, T)


def decay_curves(d_k: int, distances, base: float = 10000.0, n_samples: int = 500, seed: int = 0):
    """Mean of q_m . k_n / d_k over random q (entries N(0, 1)), as a function of n - m.

    Returns (matching, unrelated), each (D,): ``k = q`` (a key that matches its
    query) and an independent random ``k``.
    """
    rng = as_rng(seed)
    d = as_array("distances", distances, ndim=1)
    matching, unrelated = np.zeros(d.shape), np.zeros(d.shape)
    for _ in range(positive_int("n_samples", n_samples)):
        q, k = rng.normal(size=(2, d_k))
        matching += rope_dots_by_offset(q, q, d, base) / d_k
        unrelated += rope_dots_by_offset(q, k, d, base) / d_k
    return matching / n_samples, unrelated / n_samples


def widget_vectors(seed: int = 0, d_k: int = WIDGET_D_K_MAX):
    """The live figure's query and key (d_k,): k = 0.8 q + 0.6 z, a key that mostly matches q."""
    rng = as_rng(seed)
    q, z = rng.normal(size=(2, d_k))
    return q, 0.8 * q + 0.6 * z
