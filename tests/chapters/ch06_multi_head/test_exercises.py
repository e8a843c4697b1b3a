import numpy as np
import pytest
import torch

from qkv_viz import head_columns
from qkv_viz.chapters.ch06_multi_head import exercises as ch06


def _answers():
    mha = torch.nn.MultiheadAttention(768, 12)
    n_in_proj = mha.in_proj_weight.numel() + mha.in_proj_bias.numel()  # counted on torch itself
    W = np.arange(768)[None, :].repeat(2, axis=0)  # column j holds the number j
    cols = head_columns(W, ch06.HEAD_EX2, 12)[0]
    return {
        ch06.check_head_dim: 512 // 8,
        ch06.check_head_columns: [int(cols[0]), int(cols[-1]) + 1],
        ch06.check_in_proj_params: n_in_proj,
    }


ANSWERS = _answers()


@pytest.mark.parametrize("check", list(ANSWERS))
def test_right_answer_is_correct(check):
    assert check(ANSWERS[check]).correct


@pytest.mark.parametrize("check", list(ANSWERS))
def test_wrong_answer_gets_hint_without_answer(check):
    right = np.atleast_1d(ANSWERS[check])
    for wrong in (right + 1, right * 2, np.append(right, 1), "many"):
        fb = check(wrong.tolist() if isinstance(wrong, np.ndarray) and wrong.size > 1 else
                   (wrong[0] if isinstance(wrong, np.ndarray) else wrong))
        assert not fb.correct
        assert "Hint" in fb.message
        for x in right:
            assert str(int(x)) not in fb.message
