"""Chapter 4's figures: what they draw is the data they were given, with labelled colours, inside the column."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from qkv_viz.chapters.ch04_scaling import figures, scaling  # noqa: E402
from qkv_viz.viz import style  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _colorbars(fig):
    return [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]


def test_variance_figure_plots_the_measurements():
    d_ks = [1, 4, 16, 64]
    unscaled, scaled = np.array([1.1, 3.9, 16.5, 63.0]), np.array([0.9, 1.02, 0.97, 1.01])
    fig = figures.variance_figure(d_ks, unscaled, scaled)
    (ax,) = fig.axes
    points = {ln.get_label(): ln for ln in ax.lines}
    np.testing.assert_array_equal(points["measured, " + figures.LABELS[False]].get_ydata(), unscaled)
    np.testing.assert_array_equal(points["measured, " + figures.LABELS[True]].get_ydata(), scaled)
    assert points["measured, " + figures.LABELS[True]].get_color() == style.SCALED_COLOR
    assert fig.get_size_inches()[0] <= style.COLUMN_WIDTH


def test_small_multiples_draw_the_pages_weights_with_one_colour_bar():
    pairs = {d_k: [scaling.weights_at_dk(d_k, 5, 6, seed=2, scale=s)[1] for s in (True, False)] for d_k in (1, 16)}
    fig = figures.small_multiples(pairs)
    heatmaps = [ax for ax in fig.axes if ax.images]
    assert len(heatmaps) == 4 and len(_colorbars(fig)) == 1
    assert all(ax.images[0].get_clim() == (0.0, 1.0) for ax in heatmaps)
    np.testing.assert_allclose(heatmaps[3].images[0].get_array(), pairs[16][1])  # bottom right: unscaled 16
    assert "unscaled" in heatmaps[3].get_title() and "16" in heatmaps[3].get_title()
    assert fig.get_size_inches()[0] <= style.COLUMN_WIDTH
    with pytest.raises(ValueError, match="weights_by_dk"):
        figures.small_multiples({})
    with pytest.raises(ValueError, match="pair"):
        figures.small_multiples({4: [pairs[1][0]]})


def test_curve_figures_plot_given_values():
    on = scaling.diagnostics_vs_dk([1, 8, 64], T=8, S=8, scale=True)
    off = scaling.diagnostics_vs_dk([1, 8, 64], T=8, S=8, scale=False)
    fig = figures.diagnostics_figure(on, off, S=8)
    np.testing.assert_array_equal(fig.axes[1].lines[1].get_ydata(), off["max_weight"])
    np.testing.assert_array_equal(fig.axes[2].lines[1].get_ydata(), off["grad_norm"])
    assert fig.axes[1].lines[2].get_ydata()[0] == pytest.approx(1 / 8)   # the uniform row's max weight
    legend = fig.legends[0]                                      # one legend, below the panels: it hides no curve
    assert [t.get_text() for t in legend.get_texts()] == ["scaled (row mean)", "unscaled (row mean)",
                                                          "uniform row: 1/S = 1/8"]
    assert all(ax.get_legend() is None for ax in fig.axes)
    assert min(t.get_fontsize() for t in legend.get_texts()) >= 9   # legible at the column
    assert len(figures.diagnostics_figure(on, off).legends[0].get_texts()) == 2   # no S: no uniform line
    assert all(f.get_size_inches()[0] <= style.COLUMN_WIDTH for f in map(plt.figure, plt.get_fignums()))
    ref = [ln for ln in fig.axes[0].lines if ln.get_gid() == "sqrt_d_k"]     # the spread panel's sqrt(d_k) line
    assert len(ref) == 1 and np.allclose(ref[0].get_ydata(), np.sqrt([1, 8, 64]))
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()][:3] == ["0.5", "1", "2"]   # plain ticks, no 2^n


def test_score_histograms_show_both_versions_with_their_std():
    from qkv_viz.chapters.ch04_scaling.figures import score_histograms
    rng = np.random.default_rng(0)
    dots = {4: rng.normal(scale=2, size=2000), 512: rng.normal(scale=22.6, size=2000)}
    fig = score_histograms(dots)
    assert len(fig.axes) == 2
    assert not fig.axes[0].child_axes                                    # d_k = 4: both bells readable
    (zoom,) = fig.axes[1].child_axes                                     # d_k = 512: the scaled sliver zoomed
    assert zoom.get_xlim()[1] == pytest.approx(4 * (dots[512] / np.sqrt(512)).std())
    labels = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert labels[0] == f"unscaled: std {dots[512].std():.2f}"
    assert labels[1] == f"scaled: std {(dots[512] / np.sqrt(512)).std():.2f}"
    # each panel its own x-range: the d_k = 4 panel is not squeezed to the d_k = 512 one's
    assert fig.axes[0].get_xlim()[1] == pytest.approx(4 * dots[4].std())
    assert fig.axes[1].get_xlim()[1] == pytest.approx(4 * dots[512].std())
    # counts per bin, each set in its own bins: both bells reach about the same height (no flat unscaled one)
    tallest = [max(p.get_height() for p in container) for container in fig.axes[1].containers]
    assert 0.7 < tallest[0] / tallest[1] < 1.4
    with pytest.raises(ValueError, match="dots_by_dk"):
        score_histograms({})

