"""Chapter 1 pictures and widgets: drive them like a reader would."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from qkv_viz import BERT_BASE, AttentionConfig, attention_flops, param_count  # noqa: E402
from qkv_viz.chapters.ch01_library.library import DEMO_QUERY, demo_library, soft_lookup  # noqa: E402
from qkv_viz.chapters.ch01_library.widget import library_widget  # noqa: E402
from qkv_viz.chapters.ch01_library.figures import (library_small_multiples,  # noqa: E402
                                                  plot_library, plot_weight_bars)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_static_pictures_draw_what_they_return():
    lib = demo_library()
    artists = library_small_multiples(lib, DEMO_QUERY, [0.1, 1, 10])
    assert len(artists[0].figure.axes) == 4
    bars = artists[-1]
    widths = [b.get_width() for b in bars]
    np.testing.assert_allclose(widths, soft_lookup(DEMO_QUERY, lib, 10)[1])
    assert len(plot_library(lib, DEMO_QUERY)) == 2 * lib.n_books + 2
    assert plot_weight_bars([0.5, 0.5], ["a", "b"]).patches[0].axes.get_xlim() == (0, 1)


def test_library_widget_follows_the_slider():
    w = library_widget(show_plot=False)
    lib = demo_library()
    w.temperature.value = 0.01
    assert f"{1:.3f}" in w.table.value  # the top book takes (almost) all the weight
    w.temperature.value = 100
    top = soft_lookup(DEMO_QUERY, lib, 100)[1].max()
    assert f"{top:.3f}" in w.table.value
    w.query_x.value, w.query_y.value = 0.0, 2.0
    assert lib.titles[2] in w.message.value  # the food book wins now


def test_library_widget_picture_follows_the_slider_without_pyplot_figures():
    w = library_widget()
    first = w.figure.value
    assert first[:8] == b"\x89PNG\r\n\x1a\n"
    w.temperature.value = 0.05
    assert w.figure.value != first  # redrawn
    assert plt.get_fignums() == []  # nothing left open for the inline backend to show
    weights = soft_lookup(DEMO_QUERY, demo_library(), 0.05)[1]
    assert f"{weights.max():.3f}" in w.table.value
    assert library_widget(show_plot=False).figure is None


