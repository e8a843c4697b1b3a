"""Chapter 2 checkers: each worked solution passes, each placeholder is "no answer yet",
typical mistakes get a precise message that does not give the answer away."""
import numpy as np
import pytest

from qkv_viz.chapters.ch02_projections import exercises as ch02
from qkv_viz.chapters.ch02_projections import solutions as sol

SOLVED = [(ch02.check_project, sol.project), (ch02.check_rival_length, sol.RIVAL_LENGTH),
          (ch02.check_blind_directions, sol.BLIND_DIRECTIONS)]


def test_each_solution_passes_and_each_placeholder_waits():
    for check, answer in SOLVED:
        right, pending = check(answer), check(None)
        assert right.correct, right.message
        assert pending.pending and not pending.correct
        assert repr(pending).startswith("… No answer yet")  # not a red cross: nothing is wrong yet


def test_project_names_swapped_outputs():
    fb = ch02.check_project(lambda X, Wq, Wk, Wv: (X @ Wk, X @ Wq, X @ Wv), seed=0)
    assert not fb and "your Q equals X @ W_k" in fb.message


def test_project_catches_missing_return_and_transposed_weight():
    assert "forget `return`" in ch02.check_project(lambda X, Wq, Wk, Wv: None, seed=0).message
    fb = ch02.check_project(lambda X, Wq, Wk, Wv: (X @ Wq.T, X @ Wk, X @ Wv), seed=0)
    assert not fb and "raised ValueError" in fb.message


def test_project_cases_are_fresh_unless_seeded():
    a, b = ch02.projection_cases(), ch02.projection_cases()
    assert not np.array_equal(a[0][0], b[0][0]) or a[0][0].shape != b[0][0].shape
    np.testing.assert_array_equal(ch02.projection_cases(3)[1][1], ch02.projection_cases(3)[1][1])


def test_rival_length_is_where_the_rival_starts_to_win():
    angle = np.deg2rad(ch02.RIVAL_ANGLE_DEG)
    x1 = ch02.RIVAL_X1
    turn = np.array([[np.cos(angle), np.sin(angle)], [-np.sin(angle), np.cos(angle)]])  # x @ turn: +angle
    direction = x1 @ turn / np.linalg.norm(x1)                    # unit vector at the angle from x1
    for length, wins in [(sol.RIVAL_LENGTH * 1.01, True), (sol.RIVAL_LENGTH * 0.99, False)]:
        x2 = length * direction
        assert (x1 @ x2 > x1 @ x1) == wins
    wrong = ch02.check_rival_length(np.linalg.norm(x1))        # |x1|: forgets the cosine
    assert not wrong and "Hint" in wrong.message and "10" not in wrong.message
    assert not ch02.check_rival_length("ten")


def test_blind_directions_are_computed_not_guessed():
    rng = np.random.default_rng(0)
    W_q, W_k = (rng.standard_normal((ch02.RANK_D_MODEL, ch02.RANK_D_K)) for _ in range(2))
    M = W_q @ W_k.T                                                   # (512, 512)
    assert ch02.RANK_D_MODEL - np.linalg.matrix_rank(M) == sol.BLIND_DIRECTIONS
    for wrong_answer in (ch02.RANK_D_K, ch02.RANK_D_MODEL):           # the rank itself; all directions
        wrong = ch02.check_blind_directions(wrong_answer)
        assert not wrong and str(sol.BLIND_DIRECTIONS) not in wrong.message
