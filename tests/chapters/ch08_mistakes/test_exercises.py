"""Chapter 8 exercise checkers: right answers pass, wrong ones get a hint without the answer."""
import numpy as np

from qkv_viz.core.diagnostics import softmax_grad_norm
from qkv_viz.chapters.ch08_mistakes import exercises as ch08


def test_fused_shape():
    assert ch08.check_fused_shape((512, 1536))
    for wrong in [(1536, 512), (512, 512), (512, 192), None]:
        fb = ch08.check_fused_shape(wrong)
        assert not fb and "1536" not in fb.message


def test_overflow_limit():
    expected = float(np.log(float(np.finfo(np.float16).max)))
    assert ch08.check_overflow_limit(round(expected, 2))
    for wrong in [709.78, 88.72, float("nan"), "x"]:
        fb = ch08.check_overflow_limit(wrong)
        assert not fb and f"{expected:.2f}" not in fb.message


def test_uniform_grad_norm():
    expected = float(softmax_grad_norm(np.full(4, 0.25)))
    assert ch08.check_uniform_grad_norm(round(expected, 3))
    for wrong in [0.25, 0.5, 0.0]:
        fb = ch08.check_uniform_grad_norm(wrong)
        assert not fb and f"{expected:.3f}" not in fb.message
