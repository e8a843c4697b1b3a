import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.image import AxesImage  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from qkv_viz import scaled_dot_product_attention
from qkv_viz.viz import plots, style  # noqa: E402


@pytest.fixture(autouse=True)
def no_show_and_close(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("plot functions must not call plt.show()")

    monkeypatch.setattr(plt, "show", forbidden)
    yield
    plt.close("all")


def _weights(H=2, T=3, S=4, seed=0):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(2, H, T, 8)), rng.normal(size=(H, S, 8))
    return scaled_dot_product_attention(q[0], k, k)[1]  # (H, T, S)


def test_attention_heatmap_draws_weights_with_fixed_range_and_labels():
    w = _weights()[0]
    fig, ax = plt.subplots()
    im = plots.attention_heatmap(w, ax=ax, tokens_q=["a", "b", "c"], tokens_k=list("wxyz"),
                                 title="demo")
    assert isinstance(im, AxesImage) and im.axes is ax
    assert im.get_clim() == (0.0, 1.0)
    np.testing.assert_array_equal(im.get_array(), w)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    assert [t.get_text() for t in ax.get_xticklabels()] == list("wxyz")
    assert ax.get_title() == "demo"
    assert len(ax.texts) == w.size  # 3 x 4 <= 64 cells: values written
    assert ax.texts[0].get_text() == f"{w[0, 0]:.2f}"


def test_attention_heatmap_annotation_rule_and_new_axes():
    big = np.full((9, 8), 1 / 8)  # 72 cells > 64: no numbers by default
    im = plots.attention_heatmap(big)
    assert len(im.axes.texts) == 0
    im2 = plots.attention_heatmap(big, annotate=True)
    assert len(im2.axes.texts) == 72
    assert im.axes is not im2.axes


def test_attention_heatmap_rejects_bad_input():
    with pytest.raises(ValueError, match="tokens_k"):
        plots.attention_heatmap(np.eye(3), tokens_k=["a", "b"])
    with pytest.raises(ValueError, match="weights"):
        plots.attention_heatmap(np.ones((2, 2, 2)))


def test_scores_heatmap_is_symmetric_and_diverging():
    scores = np.array([[-3.0, 1.0], [0.5, 2.0]])
    im = plots.scores_heatmap(scores)
    assert im.get_clim() == (-3.0, 3.0)
    assert im.get_cmap().name == "RdBu_r"
    np.testing.assert_array_equal(im.get_array(), scores)
    assert len(im.axes.texts) == 4
    assert plots.scores_heatmap(scores, limit=10).get_clim() == (-10.0, 10.0)


def test_head_grid_one_image_per_head():
    w = _weights(H=5)
    images = plots.head_grid(w, ncols=2, titles=[f"h{i}" for i in range(5)])
    assert len(images) == 5
    for h, im in enumerate(images):
        np.testing.assert_array_equal(im.get_array(), w[h])
        assert im.get_clim() == (0.0, 1.0)
        assert im.axes.get_title() == f"h{h}"
    fig = images[0].figure
    panels = [ax for ax in fig.axes if ax.get_visible() and not hasattr(ax, "_colorbar")]
    assert len(panels) == 5  # 6 cells, one hidden (the colour bar is not a panel)
    with pytest.raises(ValueError, match="titles"):
        plots.head_grid(w, titles=["only one"])


def test_head_grid_uses_given_axes():
    w = _weights(H=2)
    fig, axes = plt.subplots(1, 3)
    images = plots.head_grid(w, axes=axes)
    assert [im.axes for im in images] == list(axes[:2])
    with pytest.raises(ValueError, match="axes"):
        plots.head_grid(w, axes=axes[:1])


def test_metric_vs_dk_curves_and_marker():
    d_ks = np.array([1, 2, 4, 8, 16])
    scaled, unscaled = np.linspace(0.2, 0.3, 5), np.linspace(0.2, 0.9, 5)
    artists = plots.metric_vs_dk(d_ks, scaled, unscaled, label="max weight", current=4)
    assert len(artists) == 3 and all(isinstance(a, Line2D) for a in artists)
    line_s, line_u, marker = artists
    np.testing.assert_array_equal(line_s.get_ydata(), scaled)
    np.testing.assert_array_equal(line_u.get_ydata(), unscaled)
    np.testing.assert_array_equal(marker.get_xdata(), [4, 4])
    np.testing.assert_array_equal(marker.get_ydata(), [scaled[2], unscaled[2]])
    ax = line_s.axes
    assert ax.get_xscale() == "log" and ax.get_ylabel() == "max weight"
    assert len(plots.metric_vs_dk(d_ks, scaled, unscaled)) == 2


def test_metric_vs_dk_rejects_bad_input():
    with pytest.raises(ValueError, match="current"):
        plots.metric_vs_dk([1, 2], [0, 1], [0, 1], current=3)
    with pytest.raises(ValueError, match="same shape"):
        plots.metric_vs_dk([1, 2, 4], [0, 1], [0, 1])


# -- the book's style -------------------------------------------------------------
TOKENS = "The animal didn 't cross the street because it was too tired".split()  # 12 tokens


def _colorbars(fig):
    return [ax._colorbar for ax in fig.axes if hasattr(ax, "_colorbar")]


def test_attention_heatmap_has_a_labelled_bar_on_the_fixed_range():
    w = np.full((3, 3), 0.1)  # faint weights must stay faint: the range does not follow the data
    im = plots.attention_heatmap(w)
    assert im.get_clim() == (0.0, 1.0)
    assert im.get_cmap().name == style.WEIGHTS_CMAP
    assert im.colorbar is not None and im.colorbar.ax.get_ylabel() == "weights"
    assert (im.colorbar.vmin, im.colorbar.vmax) == (0.0, 1.0)
    ax = im.axes
    assert "queries" in ax.get_ylabel() and "keys" in ax.get_xlabel()
    assert plots.attention_heatmap(w, colorbar=False).colorbar is None


def test_cell_numbers_readable_and_contrasting():
    w = np.array([[0.95, 0.05], [0.05, 0.95]])
    ax = plots.attention_heatmap(w).axes
    sizes = [t.get_fontsize() for t in ax.texts]
    assert len(sizes) == 4 and min(sizes) >= style.MIN_FONT_PT
    colors = {t.get_text(): t.get_color() for t in ax.texts}
    assert colors["0.95"] != colors["0.05"]  # dark text on the bright cell, light on the dark one


def test_scores_heatmap_is_centred_on_zero_with_a_labelled_bar():
    scores = np.array([[-1.0, 4.0], [0.5, 2.0]])
    im = plots.scores_heatmap(scores)
    lo, hi = im.get_clim()
    assert lo == -hi == -4.0
    assert im.get_cmap().name == style.SCORES_CMAP
    assert im.norm(0.0) == pytest.approx(0.5)  # 0 is the middle colour of the diverging map
    assert im.colorbar.ax.get_ylabel() == style.SCORES_LABEL


def _grid_panels(images):
    fig = images[0].figure
    return fig, [im.axes for im in images]


def test_head_grid_wraps_at_four_with_one_shared_bar_and_fits_the_column():
    w = _weights(H=12, T=12, S=12)
    images = plots.head_grid(w, tokens_q=TOKENS, tokens_k=TOKENS, ncols=6)
    fig, panels = _grid_panels(images)
    fig.canvas.draw()
    columns = {round(ax.get_position().x0, 3) for ax in panels}
    assert len(columns) <= style.MAX_GRID_COLUMNS
    bars = _colorbars(fig)
    assert len(bars) == 1 and images[0].colorbar is bars[0]
    assert (bars[0].vmin, bars[0].vmax) == (0.0, 1.0)
    assert all(im.get_clim() == (0.0, 1.0) for im in images)
    assert fig.get_size_inches()[0] <= style.COLUMN_WIDTH + 1e-9


def test_head_grid_token_labels_are_all_there_and_at_least_8_pt():
    tokens = ("[CLS] the quick brown fox jumps over the lazy dog while a cat sat on "
              "the mat because it [SEP]").split()  # 20 tokens
    w = _weights(H=4, T=20, S=20)
    images = plots.head_grid(w, tokens_q=tokens, tokens_k=tokens)
    fig, panels = _grid_panels(images)
    fig.canvas.draw()
    for ax in panels:
        xlabels = [t for t in ax.get_xticklabels() if t.get_text()]
        assert [t.get_text() for t in xlabels] == tokens  # none thinned away
        assert min(t.get_fontsize() for t in xlabels) >= style.MIN_FONT_PT
        assert ax.get_title().startswith("head")
    first = panels[0]
    assert [t.get_text() for t in first.get_yticklabels()] == tokens
    # rows of labels do not overlap: neighbouring y labels are at least one font height apart
    boxes = [t.get_window_extent() for t in first.get_yticklabels()]
    gaps = np.diff(sorted(b.y0 for b in boxes))
    assert gaps.min() >= 0.95 * boxes[0].height
    assert fig.get_size_inches()[0] <= style.COLUMN_WIDTH + 1e-9


def test_metric_vs_dk_uses_the_style_colours():
    d_ks = np.array([1, 4, 16, 64])
    line_s, line_u, marker = plots.metric_vs_dk(d_ks, d_ks * 0 + 0.3, d_ks / 64, current=16)
    assert line_s.get_color() == style.SCALED_COLOR and line_u.get_color() == style.UNSCALED_COLOR
    legend = [t.get_text() for t in line_s.axes.get_legend().get_texts()]
    assert any("current" in t for t in legend)


def test_a_later_tight_layout_still_works():
    """Chapters call fig.tight_layout() after drawing: the figures made here must allow it."""
    im = plots.attention_heatmap(np.eye(3))
    im.figure.tight_layout()  # raises with a constrained-layout figure that has a colour bar
    fig, ax = plt.subplots()
    plots.scores_heatmap(np.eye(3), ax=ax)
    fig.tight_layout()
    assert len(_colorbars(im.figure)) == len(_colorbars(fig)) == 1


def test_a_new_heatmap_of_a_long_sentence_keeps_every_label():
    tokens = ("[CLS] the quick brown fox jumps over the lazy dog while a cat sat on "
              "the mat because it [SEP]").split()  # 20 tokens
    w = np.full((20, 20), 1 / 20)
    ax = plots.attention_heatmap(w, tokens_q=tokens, tokens_k=tokens).axes
    assert [t.get_text() for t in ax.get_yticklabels()] == tokens
    assert [t.get_text() for t in ax.get_xticklabels()] == tokens
    assert min(t.get_fontsize() for t in ax.get_yticklabels()) >= style.MIN_FONT_PT
    assert ax.figure.get_size_inches()[0] <= style.COLUMN_WIDTH
