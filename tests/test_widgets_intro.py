"""Chapter 1 and 2 pictures and widgets: drive them like a reader would."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from qkv_viz import BERT_BASE, AttentionConfig, attention_flops, param_count  # noqa: E402
from qkv_viz.library import DEMO_QUERY, demo_library, soft_lookup  # noqa: E402
from qkv_viz.widgets_intro import (QUERY_COLOR, config_calculator,  # noqa: E402
                                   library_small_multiples, library_widget, plot_flops_vs_n,
                                   plot_library, plot_projection_shapes, plot_weight_bars,
                                   size_report)


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


def test_flops_plot_lines_follow_sizes():
    ns = [64, 512, 4096]
    lines = plot_flops_vs_n(BERT_BASE, ns)
    proj, quad = lines[0].get_ydata(), lines[1].get_ydata()
    assert proj[1] == attention_flops(BERT_BASE, 512)["projections"]
    assert quad[2] / quad[1] == pytest.approx((4096 / 512) ** 2)  # quadratic in n
    assert proj[2] / proj[1] == pytest.approx(4096 / 512)  # linear in n


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


def test_size_report_matches_sizes_and_torch():
    torch = pytest.importorskip("torch")
    rows = dict(size_report(BERT_BASE, 512))
    mha = torch.nn.MultiheadAttention(768, 12)
    assert rows["whole layer, with biases"] == sum(p.numel() for p in mha.parameters())
    mha_nb = torch.nn.MultiheadAttention(768, 12, bias=False)
    assert rows["whole layer (W_q, W_k, W_v, W_o), no bias"] == sum(p.numel() for p in mha_nb.parameters())
    assert rows["FLOPs Q, K, V projections, n=512"] == 6 * 512 * 768 ** 2


def test_calculator_updates_and_survives_bad_configs():
    w = config_calculator()
    assert f"{param_count(BERT_BASE):,}" in w.table.value
    good_table = w.table.value
    w.boxes["n_heads"].value = 7  # 768 is not divisible by 7
    assert "not divisible" in w.message.value
    assert w.table.value == good_table  # last good table kept
    w.boxes["n_heads"].value = 8
    assert f"{param_count(AttentionConfig(768, 8)):,}" in w.table.value
    w.boxes["d_v"].value = 32
    assert f"{param_count(AttentionConfig(768, 8, d_k=96, d_v=32)):,}" in w.table.value
    w.boxes["n"].value = 0
    assert "n must be" in w.message.value
    w.boxes["n"].value = 16
    assert "n must be" not in w.message.value


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


def test_projection_shapes_are_to_scale_and_highlight_one_head():
    config = AttentionConfig(768, 12, d_k=64)
    rects = plot_projection_shapes(config, 128, head=5)
    assert len(rects) == 1 + 2 * config.n_heads  # X, then W_q's and Q's head blocks
    x, w_q = rects[0], rects[1:1 + config.n_heads]
    assert (x.get_width(), x.get_height()) == (config.d_model, 128)
    assert {r.get_width() for r in w_q} == {config.d_k}
    lit = [i for i, r in enumerate(w_q) if matplotlib.colors.same_color(r.get_facecolor(), QUERY_COLOR)]
    assert lit == [5]
    with pytest.raises(ValueError, match="head"):
        plot_projection_shapes(config, 128, head=12)
