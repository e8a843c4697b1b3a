"""Chapter 7 exercise checkers: right answers pass, wrong ones get a hint without the answer."""
import numpy as np

from qkv_viz.core.attention import causal_mask, masked_softmax
from qkv_viz.chapters.ch07_masks import exercises as ch07


def _no_answer_in(msg, *answers):
    return all(str(a) not in msg for a in answers)


def test_cross_weights_shape():
    assert ch07.check_cross_weights_shape((4, 5, 9))
    for wrong in [(4, 9, 5), (5, 9), "abc", (1, 2, 3)]:
        fb = ch07.check_cross_weights_shape(wrong)
        assert not fb and _no_answer_in(fb.message, "(4, 5, 9)")


def test_causal_allowed():
    expected = int(causal_mask(6).sum())
    assert ch07.check_causal_allowed(expected)
    fb = ch07.check_causal_allowed(36)
    assert not fb and _no_answer_in(fb.message, expected)


def test_padded_weights():
    expected = masked_softmax(np.array([[1.0, 2, 3, 4]]), np.array([[True, True, False, False]]))[0]
    assert ch07.check_padded_weights(expected.round(3).tolist())
    for wrong in [[0.25] * 4, [0.0321, 0.0871, 0.2369, 0.6439], [0.5, 0.5], "x"]:
        fb = ch07.check_padded_weights(wrong)
        assert not fb and _no_answer_in(fb.message, round(expected[0], 3), round(expected[1], 3))
