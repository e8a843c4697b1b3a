import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.image import AxesImage  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from qkv_viz import scaled_dot_product_attention
from qkv_viz.viz import plots  # noqa: E402


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
    assert sum(ax.get_visible() for ax in fig.axes) == 5  # 6 cells, one hidden
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
