"""Chapter 10's computations: a three-word sentence, its shuffle, positions added, RoPE grids.

The tokens are named and hand-built (d_model = 6: "is a noun", "is an animal", "is a person",
"is an action", then two slots for an added position). ``constructed()`` builds the page's
W_q, W_k, W_v by hand so that every score term means something: the verb's query asks for a
noun (word-word), and a position part says which noun, the one just before the verb.
``projections()`` are random (seeded): the permutation claims hold for any projection.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.core.attention import scaled_dot_product_attention
from qkv_viz.core.positions import apply_rope, rope_frequencies, sinusoidal_positions
from qkv_viz.core.validate import as_array, as_rng, positive_int

EMBEDDINGS = {              # noun, animal, person, action | two slots for the position
    "dog": (1.0, 1.0, 0.0, 0.0, 0.0, 0.0),
    "bites": (0.0, 0.0, 0.0, 1.0, 0.0, 0.0),
    "man": (1.0, 0.0, 1.0, 0.0, 0.0, 0.0),
}
D_MODEL = 6
D_K = 6                     # pairs: 0 (RoPE's place part), 1 (the word match), 2 (added positions' place part)
STRENGTH = 2.0              # every hand-set entry of W_q, W_k
WIDGET_D_K_MAX = 64
WIDGET_SEED = 14            # a q whose pair 1 (0.1 rad per position at d_k = 8) carries most of q_m . k_n


def constructed(strength: float = STRENGTH):
    """The page's hand-built W_q, W_k (D_MODEL, D_K) and W_v (D_MODEL, 4), as the page builds them.

    - pair 1 (coordinates 2, 3): the verb's query asks for a noun (word-word).
    - pair 2 (4, 5): an added position (sin m, cos m) gives the query (sin m, cos m) and the key
      (sin(n + 1), cos(n + 1)), so p_m A p_n = strength^2 cos(n - m + 1): one token back is best.
    - pair 0 (0, 1): for RoPE, the verb's query (s, 0) and a noun's key (0, s): q . k = 0 unturned,
      q . (k R_(n-m)) = -s^2 sin(n - m) turned: positive just before the verb, negative just after.
    W_v passes the four word features."""
    s = float(strength)
    W_q, W_k = np.zeros((D_MODEL, D_K)), np.zeros((D_MODEL, D_K))
    W_q[3, 2] = W_k[0, 2] = s                       # action -> asks for a noun
    c, n = np.cos(1.0), np.sin(1.0)
    W_q[4:, 4:] = s * np.eye(2)
    W_k[4:, 4:] = s * np.array([[c, -n], [n, c]])   # (sin n, cos n) -> (sin(n + 1), cos(n + 1))
    W_q[3, 0] = W_k[0, 1] = s                       # RoPE's place part
    W_v = np.eye(D_MODEL, 4)
    return W_q, W_k, W_v


def positions(T: int) -> np.ndarray:
    """The toy's added positions (T, D_MODEL): the fastest sinusoid pair (sin m, cos m) in the last
    two slots, zeros over the word features."""
    P = np.zeros((positive_int("T", T), D_MODEL))
    P[:, 4:] = sinusoidal_positions(T, 2)
    return P


def sentence(words) -> np.ndarray:
    """The token vectors of ``words`` (a string or a list of the known words), shape (T, d_model)."""
    words = words.split() if isinstance(words, str) else list(words)
    unknown = [w for w in words if w not in EMBEDDINGS]
    if unknown or not words:
        raise ValueError(f"words must be some of {sorted(EMBEDDINGS)}, got {words!r}")
    return np.array([EMBEDDINGS[w] for w in words])  # (T, d_model)


def projections(seed: int = 0, d_model: int = D_MODEL, d_k: int = D_K):
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


def expected_decay(d_k: int, distances, base: float = 10000.0) -> np.ndarray:
    """E[q_m . k_n] / d_k for a key equal to its query, q with entries N(0, 1), against n - m.

    Pair i contributes |q^(i)|^2 cos(d theta_i) and E|q^(i)|^2 = 2, so the mean is the
    closed form (2 / d_k) sum_i cos(d theta_i): deterministic, no sampling. Shape (D,).
    """
    d = as_array("distances", distances, ndim=1)
    theta = rope_frequencies(positive_int("d_k", d_k), base)   # (d_k/2,)
    return np.cos(d[:, None] * theta[None, :]).sum(axis=1) * 2 / d_k   # (D, d_k/2) -> (D,)


def weights_line(words, weights, word: str) -> str:
    """One line: ``word``'s row of weights (T, T), by word in alphabetical order (the same order for
    every sentence), e.g. "dog bites man: dog's weights on bites 0.226, dog 0.520, man 0.254"."""
    names = words.split() if isinstance(words, str) else list(words)
    if word not in names:
        raise ValueError(f"word must be one of {names}, got {word!r}")
    row = as_array("weights", weights, ndim=2)[names.index(word)]
    owner = f"{word}'" if word.endswith("s") else f"{word}'s"
    return f"{' '.join(names)}: {owner} weights on " + ", ".join(   # the words in alphabetical order
        f"{w} {row[names.index(w)]:.3f}" for w in sorted(set(names)))


def widget_vectors(seed: int = WIDGET_SEED, d_k: int = WIDGET_D_K_MAX):
    """The live figure's query and key (d_k,): a random q and the key k = q (a key that matches it),
    so the curve q_m . k_n against n - m peaks at offset 0."""
    q = as_rng(seed).normal(size=d_k)
    return q, q.copy()
