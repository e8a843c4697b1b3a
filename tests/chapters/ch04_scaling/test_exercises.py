import numpy as np
import pytest

from qkv_viz import softmax_jacobian
from qkv_viz.chapters.ch04_scaling import exercises as ch04
from qkv_viz.chapters.ch04_scaling.scaling import score_variance


def _answers():
    measured = score_variance([ch04.D_K_EX1], n_samples=20000, seed=0)["unscaled"][0]
    p = np.full(ch04.S_EX3, 1 / ch04.S_EX3)
    return {
        ch04.check_unscaled_variance: round(measured),  # measured, not hard-coded
        ch04.check_scale_factor: 1 / np.sqrt(ch04.D_K_EX1),
        ch04.check_uniform_grad_norm: np.linalg.norm(softmax_jacobian(p)),
    }


@pytest.mark.parametrize("check", list(_answers()))
def test_right_answer_is_correct(check):
    assert check(_answers()[check]).correct


@pytest.mark.parametrize("check", list(_answers()))
def test_wrong_answer_gets_hint_without_answer(check):
    right = float(_answers()[check])
    for wrong in (right * 1.5, right / 2, [right, right], "big"):
        fb = check(wrong)
        assert not fb.correct
        assert "Hint" in fb.message
        for fmt in ("g", ".2f", ".3f", ".4f"):
            assert format(right, fmt) not in fb.message
