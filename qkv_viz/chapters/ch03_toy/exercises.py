"""Chapter 3 exercises: the toy row, by hand.

Each ``check_*`` returns a ``Feedback``: right or wrong plus a hint, never the answer.
"""
from __future__ import annotations

from qkv_viz.chapters.feedback import Feedback, check_close
from qkv_viz.chapters.ch03_toy.toy import toy_steps


def check_scaled_scores(answer) -> Feedback:
    """Exercise 1: token 1's scores [2, 5, 1] after scaling with d_k = 2 (3 numbers)."""
    expected = toy_steps([2.0, 5.0, 1.0], d_k=2).scaled
    return check_close(answer, expected,
                       "divide each raw score by the square root of d_k (d_k = 2 here).")


def check_weights_d_k_8(answer) -> Feedback:
    """Exercise 2: the same raw scores [2, 5, 1] if the head had d_k = 8 (3 weights)."""
    expected = toy_steps([2.0, 5.0, 1.0], d_k=8).weights
    return check_close(answer, expected,
                       "the scale is now 1/sqrt(8); scale, exponentiate, then divide by the sum. "
                       "Your weights should add up to 1 and be less peaked than at d_k = 2.")


def check_output_new_v(answer) -> Feedback:
    """Exercise 3: token 1's output when V = [[2, 0], [0, 2], [4, 4]] (2 numbers), d_k = 2."""
    v = [[2.0, 0.0], [0.0, 2.0], [4.0, 4.0]]
    expected = toy_steps([2.0, 5.0, 1.0], v=v, d_k=2).output
    return check_close(answer, expected,
                       "the weights do not change when only V changes; the output is "
                       "sum_j weight_j * v_j, one number per column of V.")
