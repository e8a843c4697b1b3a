import numpy as np
import pytest

from qkv_viz import softmax
from qkv_viz.chapters.ch03_toy import exercises as ch03

SCORES = np.array([2.0, 5.0, 1.0])
V_NEW = np.array([[2.0, 0.0], [0.0, 2.0], [4.0, 4.0]])


def _answers():
    w2 = softmax(SCORES / np.sqrt(2))
    return {
        ch03.check_scaled_scores: SCORES / np.sqrt(2),
        ch03.check_weights_d_k_8: softmax(SCORES / np.sqrt(8)),
        ch03.check_output_new_v: w2 @ V_NEW,  # (S,) @ (S, d_v) -> (d_v,)
    }


@pytest.mark.parametrize("check", list(_answers()))
def test_right_answer_is_correct(check):
    assert check(_answers()[check]).correct


@pytest.mark.parametrize("check", list(_answers()))
def test_wrong_answers_get_hint_without_answer(check):
    right = np.asarray(_answers()[check])
    for wrong in (right + 0.3, right[:-1], "seven", [np.nan] * right.size):
        fb = check(wrong)
        assert not fb.correct
        assert "Hint" in fb.message
        for x in right:
            for fmt in (".2f", ".3f", ".4f"):
                assert format(x, fmt) not in fb.message
