"""Chapter 3's triangle: each output sits where its weights put it, and the weights are its
barycentric coordinates."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import qkv_viz as qv  # noqa: E402
from qkv_viz.chapters.ch03_toy.figures import barycentric, plot_value_triangle  # noqa: E402
from qkv_viz.chapters.ch03_toy.toy import TOY_K, TOY_Q, TOY_V  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_outputs_are_drawn_at_weights_at_v_and_recover_the_weights():
    out, weights = qv.scaled_dot_product_attention(TOY_Q, TOY_K, TOY_V)
    artists = plot_value_triangle(TOY_V, weights)
    points = [a for a in artists if isinstance(a, matplotlib.lines.Line2D) and len(a.get_xdata()) == 1]
    drawn = np.array([[a.get_xdata()[0], a.get_ydata()[0]] for a in points])[3:]  # after the 3 corners
    np.testing.assert_allclose(drawn, out)
    for o, w in zip(out, weights):
        np.testing.assert_allclose(barycentric(o, TOY_V), w)


def test_explained_output_writes_its_mix():
    _, weights = qv.scaled_dot_product_attention(TOY_Q, TOY_K, TOY_V)
    texts = [a.get_text() for a in plot_value_triangle(TOY_V, weights, explain=1)
             if isinstance(a, matplotlib.text.Text)]
    assert any(f"{weights[1, 0]:.2f} v1 + {weights[1, 1]:.2f} v2" in t for t in texts)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="V must be"):
        plot_value_triangle(np.ones((4, 2)), np.full((1, 4), 0.25))
    with pytest.raises(ValueError, match="sum to 1"):
        plot_value_triangle(TOY_V, np.ones((1, 3)))
