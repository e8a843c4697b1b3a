"""Worked solutions to chapter 10's exercises (kept out of the reading flow). Try them first."""
from __future__ import annotations

import numpy as np


# Exercise 1: RoPE with Llama's pairing: coordinate i turns with coordinate i + d_k/2.
def rope_half(x, base=10000.0):
    """x (T, d_k) at positions 0..T-1 -> the same shape, pair (i, i + d_k/2) turned by m * theta_i."""
    T, d_k = x.shape
    h = d_k // 2
    theta = base ** (-np.arange(0, d_k, 2) / d_k)       # (h,): theta_i = base^(-2i/d_k)
    angle = np.arange(T)[:, None] * theta[None, :]      # (T, 1) * (1, h) -> (T, h)
    a, b = x[:, :h], x[:, h:]                           # (T, h) each: first and second half
    return np.concatenate([a * np.cos(angle) - b * np.sin(angle),
                           a * np.sin(angle) + b * np.cos(angle)], axis=1)   # (T, d_k)


# Exercise 2: q_m . k_n = q . (k R_(n - m)), pair by pair (row vectors, the turn on the right). For one pair (a, b) of q and
# (c, d) of k turned by phi: (a, b) . (c cos - d sin, c sin + d cos) = cos (ac + bd) - sin (ad - bc).
def relative_dot(q, k, offset, base=10000.0):
    """q (d_k,), k (d_k,), offset = n - m -> q_m . k_n (adjacent pairing), never using m or n."""
    d_k = q.shape[0]
    theta = base ** (-np.arange(0, d_k, 2) / d_k)       # (d_k/2,)
    phi = offset * theta                                # (d_k/2,): how far k is turned past q
    a, b, c, d = q[0::2], q[1::2], k[0::2], k[1::2]     # (d_k/2,) each
    return float(np.sum(np.cos(phi) * (a * c + b * d) - np.sin(phi) * (a * d - b * c)))


# Exercise 3: a rotation keeps every pair's length, whatever the angle. So compare the pair
# lengths before and after under both pairings: only the pairing that was used keeps them all.
def which_pairing(x, rotated):
    """x, rotated (T, d_k) -> "adjacent" or "half" (no base or positions needed)."""
    adjacent = np.allclose(np.hypot(x[:, 0::2], x[:, 1::2]), np.hypot(rotated[:, 0::2], rotated[:, 1::2]))
    return "adjacent" if adjacent else "half"


# Exercise 4: concatenate instead of adding. Split W_q's rows into A (they meet x) and B (they meet p),
# W_k's into C and D: [x, p] W_q = x A + p B, so the score still has four terms.
def concat_terms(x_m, p_m, x_n, p_n, W_q, W_k):
    """Word parts (d_x,), position parts (d_p,), W_q, W_k (d_x + d_p, d_k) -> the four terms (4,)."""
    d_x = len(x_m)
    A, B = W_q[:d_x], W_q[d_x:]                         # (d_x, d_k), (d_p, d_k)
    C, D = W_k[:d_x], W_k[d_x:]
    q_word, q_pos = x_m @ A, p_m @ B                    # (d_k,) each: q = q_word + q_pos
    k_word, k_pos = x_n @ C, p_n @ D
    return np.array([q_word @ k_word, q_word @ k_pos, q_pos @ k_word, q_pos @ k_pos])


# Why add the positions to X instead of concatenating them?
CONCATENATE = """\
Concatenate: x' = [x, p], of width d_model + d_p. Split W_q's rows the same way, W_q = [A; B]:
then q = x' W_q = x A + p B. That is "add a position vector" again, only the position vector is
p B, a learned projection of p. The score q_i . k_j still has the same four terms (word-word,
word-position, position-word, position-position): concatenating does not keep words and positions
apart once they are projected. It costs width (the model's vectors get longer everywhere), so the
original Transformer added p to x and let W_q, W_k learn what to do with the mixture. RoPE is the
design that keeps them apart where it matters: positions act only inside q . k, as rotations."""
