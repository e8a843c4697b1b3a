"""Chapter 3 checkers: each worked solution passes, each placeholder is "no answer yet",
the usual mistakes in attention(Q, K, V) are named precisely, hints never give the answer."""
import numpy as np
import pytest

from qkv_viz import softmax
from qkv_viz.chapters.ch03_toy import exercises as ch03
from qkv_viz.chapters.ch03_toy import solutions as sol

SOLVED = [(ch03.check_attention, sol.attention), (ch03.check_weights_d_k_8, sol.WEIGHTS_D_K_8),
          (ch03.check_output_new_v, sol.OUTPUT_NEW_V),
          (ch03.check_weights_for_output, sol.WEIGHTS_FOR_OUTPUT)]
NUMERIC = SOLVED[1:]


@pytest.mark.parametrize("check, answer", SOLVED)
def test_solution_passes(check, answer):
    fb = check(answer)
    assert fb.correct, fb.message


@pytest.mark.parametrize("check", [c for c, _ in SOLVED])
def test_placeholder_is_pending_not_an_error(check):
    fb = check(None)
    assert not fb.correct and fb.pending and "No answer yet" in repr(fb)


@pytest.mark.parametrize("check, answer", NUMERIC)
def test_wrong_numbers_get_a_hint_without_the_answer(check, answer):
    right = np.asarray(answer, dtype=float)
    for wrong in (right + 0.3, right[:-1], "seven", [np.nan] * right.size):
        fb = check(wrong)
        assert not fb.correct and "Hint" in fb.message
        for x in right:
            for fmt in (".2f", ".3f", ".4f"):
                assert format(x, fmt) not in fb.message


def _softmax_rows(s):
    return softmax(s, axis=-1)


MISTAKES = {
    "WITHOUT the scaling": lambda Q, K, V: (_softmax_rows(Q @ K.T) @ V, _softmax_rows(Q @ K.T)),
    "SQUARE ROOT": lambda Q, K, V: (_softmax_rows(Q @ K.T / Q.shape[1]) @ V,
                                    _softmax_rows(Q @ K.T / Q.shape[1])),
    "COLUMNS": lambda Q, K, V: (softmax(Q @ K.T / np.sqrt(Q.shape[1]), axis=0) @ V,
                                softmax(Q @ K.T / np.sqrt(Q.shape[1]), axis=0)),
    "transposed": lambda Q, K, V: (_softmax_rows(K @ Q.T / np.sqrt(Q.shape[1])) @ V,
                                   _softmax_rows(K @ Q.T / np.sqrt(Q.shape[1]))),
    "weights.T @ V": lambda Q, K, V: (sol.attention(Q, K, V)[1].T @ V, sol.attention(Q, K, V)[1]),
    "did you forget `return`": lambda Q, K, V: None,
    "returned 1 value": lambda Q, K, V: sol.attention(Q, K, V)[0],
    "wrong order": lambda Q, K, V: sol.attention(Q, K, V)[::-1],
}


@pytest.mark.parametrize("phrase", list(MISTAKES))
def test_attention_mistakes_are_named(phrase):
    fb = ch03.check_attention(MISTAKES[phrase], seed=1)
    assert not fb.correct
    assert phrase in fb.message, fb.message


def test_unnormalised_rows_report_their_sums():
    fb = ch03.check_attention(lambda Q, K, V: (np.exp(Q @ K.T) @ V, np.exp(Q @ K.T)), seed=2)
    assert not fb and "rows of your weights sum to" in fb.message


def test_attention_cases_are_fresh_and_show_the_scaling():
    a, b = ch03.attention_cases(), ch03.attention_cases()
    assert any(x[0].shape != y[0].shape or not np.allclose(x[0], y[0]) for x, y in zip(a, b))
    for Q, K, V in ch03.attention_cases(seed=0):
        assert Q.shape[0] == K.shape[0] == V.shape[0] == 3 and Q.shape[1] >= 2
        scaled, unscaled = softmax(Q @ K.T / np.sqrt(Q.shape[1])), softmax(Q @ K.T)
        assert not np.allclose(scaled, unscaled)  # so "forgot the scaling" can be told apart


def test_target_output_is_the_stated_mix():
    from qkv_viz.chapters.ch03_toy.toy import TOY_V
    np.testing.assert_allclose(sol.WEIGHTS_FOR_OUTPUT @ TOY_V, ch03.TARGET_OUTPUT)
    assert sol.WEIGHTS_FOR_OUTPUT.sum() == pytest.approx(1.0)
