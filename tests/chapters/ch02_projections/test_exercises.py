"""Chapter 2 checkers: each worked solution passes, each placeholder is "no answer yet",
typical mistakes get a precise message that does not give the answer away."""
import numpy as np
import pytest

from qkv_viz.chapters.ch02_projections import exercises as ch02
from qkv_viz.chapters.ch02_projections import solutions as sol

SOLVED = [(ch02.check_project, sol.project), (ch02.check_longer_token_wins, sol.LONGER_TOKEN_X),
          (ch02.check_max_rank, sol.MAX_RANK)]


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


def test_longer_token_refuses_equal_lengths_and_explains():
    fb = ch02.check_longer_token_wins(np.array([[1.0, 0.0], [0.6, 0.8]]))  # same length: self wins
    assert not fb and "still scores itself highest" in fb.message
    assert not ch02.check_longer_token_wins(np.array([[1.0, 2.0]]))        # one token only
    assert not ch02.check_longer_token_wins([1.0, 2.0])                    # not 2-D
    assert not ch02.check_longer_token_wins(np.array([[1.0, 0.0], [1.0, 0.0]]))  # a tie is not "higher"


def test_max_rank_is_computed_not_guessed():
    rng = np.random.default_rng(0)
    W_q, W_k = (rng.standard_normal((ch02.RANK_D_MODEL, ch02.RANK_D_K)) for _ in range(2))
    assert np.linalg.matrix_rank(W_q @ W_k.T) == sol.MAX_RANK
    wrong = ch02.check_max_rank(ch02.RANK_D_MODEL)
    assert not wrong and str(sol.MAX_RANK) not in wrong.message.split("Hint")[-1]
