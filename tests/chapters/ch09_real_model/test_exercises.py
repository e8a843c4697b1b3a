"""Chapter 9 exercise checks: right answers pass, wrong ones get a hint but not the answer."""
import math

import numpy as np

from qkv_viz.core.config import AttentionConfig
from qkv_viz.chapters.ch09_real_model import exercises as ch09
from qkv_viz.core.sizes import param_count

MINILM = AttentionConfig(d_model=384, n_heads=12, n_layers=6)


def _no_answer_in(fb, answer):
    assert str(answer) not in fb.message


def test_none_asks_for_an_answer():
    eff = np.ones((6, 12))
    for fb in (ch09.check_layer_params(None), ch09.check_scale_factor(None),
               ch09.check_sharpest_head(None, eff)):
        assert not fb and "Replace None" in fb.message


def test_layer_params():
    right = param_count(MINILM)
    assert ch09.check_layer_params(right)
    for wrong, word in [(param_count(MINILM, bias=False), "biases"), (6 * right, "six layers"),
                        (right + 1000, "Hint")]:
        fb = ch09.check_layer_params(wrong)
        assert not fb and word in fb.message
        _no_answer_in(fb, right)
    assert not ch09.check_layer_params("many")
    assert not ch09.check_layer_params(True)


def test_scale_factor():
    right = math.sqrt(MINILM.d_k)
    assert ch09.check_scale_factor(round(right, 2))
    assert "BERT-base" in ch09.check_scale_factor(8).message
    assert "square root" in ch09.check_scale_factor(MINILM.d_k).message
    fb = ch09.check_scale_factor(3.0)
    assert not fb
    _no_answer_in(fb, round(right, 2))


def test_sharpest_head():
    eff = np.random.default_rng(0).uniform(1, 10, size=(6, 12))
    layer, head = np.unravel_index(np.argmin(eff), eff.shape)
    assert ch09.check_sharpest_head((layer, head), eff)
    worst = np.unravel_index(np.argmax(eff), eff.shape)
    assert "opposite" in ch09.check_sharpest_head(worst, eff).message
    assert not ch09.check_sharpest_head((6, 0), eff)
    assert not ch09.check_sharpest_head("layer 2", eff)
    other = (layer, (head + 1) % 12)
    fb = ch09.check_sharpest_head(other, eff)
    assert not fb and str((layer, head)) not in fb.message
