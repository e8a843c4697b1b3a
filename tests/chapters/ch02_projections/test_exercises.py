"""Chapter 2 checkers: exact counts pass, near misses fail, hints never give the answer."""
import pytest

from qkv_viz import AttentionConfig, param_count, projection_flops, BERT_BASE
from qkv_viz.chapters.ch02_projections import exercises as ch02


def _no_answer(fb, expected):
    assert not fb
    assert str(expected) not in fb.message and f"{expected:,}" not in fb.message


def test_value_shape():
    assert ch02.check_value_shape((10, 32))
    assert not ch02.check_value_shape((10, 64))
    assert not ch02.check_value_shape("ten")


def test_transformer_base_params_against_torch():
    torch = pytest.importorskip("torch")
    expected = sum(p.numel() for p in torch.nn.MultiheadAttention(512, 8).parameters())
    assert expected == param_count(AttentionConfig(512, 8))
    assert ch02.check_transformer_base_params(expected)
    _no_answer(ch02.check_transformer_base_params(expected - 4 * 512), expected)  # biases missed
    _no_answer(ch02.check_transformer_base_params(True), expected)


def test_projection_flops():
    expected = projection_flops(BERT_BASE, 128)
    assert ch02.check_projection_flops(expected)
    _no_answer(ch02.check_projection_flops(expected // 2), expected)  # one multiply-add = 1 FLOP


def test_none_asks_for_an_answer():
    for check in (ch02.check_value_shape, ch02.check_transformer_base_params,
                  ch02.check_projection_flops):
        fb = check(None)
        assert not fb and "Replace None" in fb.message
